import Foundation
import Lade
import Testing

@Suite("lade seed, run as a process")
struct SeedCLITests {
    static let issueExample = """
        kind: seed
        flag: com.example.catalog.seed.v1
        model: ../samples/Catalog.xcdatamodeld
        store: { type: sqlite, path: ../out/catalog.sqlite }
        steps:
          - source: { path: ../samples/seed/categories.csv }
            entity: Category
            key: [name]
          - source: { path: ../samples/seed/products.ndjson }
            entity: Product
            key: [sku]
            relationships:
              category: { from: category, match: name, required: true }
        """

    static func storeType(_ type: String) -> PersistentStoreCoordinator.StoreType {
        switch type {
        case "xml": .xml
        case "binary": .binary
        default: .sqlite
        }
    }

    @Test("jobs/seed-catalog.yaml is the issue's example, and works as written")
    func exampleAsWritten() throws {
        let text = try String(contentsOf: LadeProcess.root.appendingPathComponent("jobs/seed-catalog.yaml"), encoding: .utf8)
        #expect(text.contains(Self.issueExample + "\n"))
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        let job = try workspace.job("seed-catalog.yaml", text)
        let validated = try LadeProcess.run(["validate", job], in: workspace.root)
        #expect(validated.status == 0, "\(validated.stderr)")
        #expect(validated.stdout.contains("flag com.example.catalog.seed.v1: set with every step's rows in one commit"), "\(validated.stdout)")
        let result = try LadeProcess.run(["seed", job], in: workspace.root)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("seeded \(workspace.out.path)/catalog.sqlite (created) and set com.example.catalog.seed.v1, in one commit"), "\(result.stdout)")
        #expect(result.stdout.contains("step 2: ../samples/seed/products.ndjson → Product: rows 10, inserted 10"), "\(result.stdout)")
        let counts = try SeedStoreContents.counts(workspace.out.appendingPathComponent("catalog.sqlite"), type: .sqlite)
        #expect(counts?.categories == 15)
        #expect(counts?.products == 10)
    }

    @Test("the example seed by batch inserts (auto) and by objects: every table the same but Z_METADATA, the report naming the writer")
    func bothWriters() throws {
        let text = try String(contentsOf: LadeProcess.root.appendingPathComponent("jobs/seed-catalog.yaml"), encoding: .utf8)
        var tables: [String: [String: [String]]] = [:]
        for writer in ["auto", "objects"] {
            let workspace = try SeedWorkspace()
            defer { workspace.remove() }
            let job = try workspace.job("seed-catalog.yaml", text + "writer: \(writer)\n")
            let result = try LadeProcess.run(["seed", job, "--report", workspace.root.appendingPathComponent("report.json").path], in: workspace.root)
            #expect(result.status == 0, "\(result.stderr)")
            let report = try JSONSerialization.jsonObject(with: Data(contentsOf: workspace.root.appendingPathComponent("report.json"))) as? [String: Any]
            #expect(report?["writer"] as? String == (writer == "auto" ? "batch" : "objects"), "\(String(describing: report))")
            tables[writer] = try StoreReading.tables(workspace.out.appendingPathComponent("catalog.sqlite"), excluding: ["Z_METADATA"])
        }
        #expect(tables["auto"]?["ZPRODUCT"]?.count == 10)
        #expect(tables["auto"] == tables["objects"])
    }

    @Test("a second seed leaves the store exactly as it was (data and metadata); --check writes nothing and answers 3, then 0",
          arguments: ["sqlite", "xml", "binary"])
    func seedTwice(type: String) throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        let job = try workspace.job("seed.yaml", Self.issueExample.replacingOccurrences(of: "{ type: sqlite, path: ../out/catalog.sqlite }", with: "{ type: \(type), path: ../out/catalog.\(type) }"))
        let store = workspace.out.appendingPathComponent("catalog.\(type)")

        let unseeded = try LadeProcess.run(["seed", job, "--check"])
        #expect(unseeded.status == 3, "\(unseeded.stderr)")
        #expect(unseeded.stdout.contains("is not seeded: there is no store"))
        #expect(!FileManager.default.fileExists(atPath: store.path))

        let first = try LadeProcess.run(["seed", job])
        #expect(first.status == 0, "\(first.stderr)")
        let afterFirst = try StoreSnapshot.of(store)
        let files = try FileManager.default.contentsOfDirectory(atPath: workspace.out.path).sorted()

        let report = workspace.out.appendingPathComponent("second.json")
        let second = try LadeProcess.run(["seed", job, "--report", report.path])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("is already seeded (com.example.catalog.seed.v1 on "), "\(second.stdout)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
        #expect(json["status"] as? String == "already-seeded")
        #expect((json["steps"] as? [Any])?.isEmpty == true)
        #expect(try StoreSnapshot.of(store) == afterFirst)

        let seeded = try LadeProcess.run(["seed", job, "--check"])
        #expect(seeded.status == 0, "\(seeded.stderr)")
        #expect(seeded.stdout.contains("is seeded: it carries com.example.catalog.seed.v1 on "), "\(seeded.stdout)")
        #expect(try StoreSnapshot.of(store) == afterFirst)
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.out.path).sorted() == files + ["second.json"])
        let counts = try SeedStoreContents.counts(store, type: Self.storeType(type))
        #expect(counts?.categories == 15 && counts?.products == 10)
    }

    @Test("a bad row exits 1 naming file, line, column, field, value and reason; nothing is written")
    func badRow() throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        try Data("name,sortOrder\nTools,0\nGarden,ten\n".utf8).write(to: workspace.data.appendingPathComponent("categories.csv"))
        let job = try workspace.job("seed.yaml", """
            kind: seed
            flag: bad.v1
            model: ../samples/Catalog.xcdatamodeld
            store: { path: ../out/catalog.sqlite }
            steps:
              - { source: ../data/categories.csv, entity: Category, key: [name] }
            """)
        let result = try LadeProcess.run(["seed", job])
        #expect(result.status == 1)
        #expect(result.stderr.contains("lade: error: ../data/categories.csv:3:2: field 'sortOrder': "), "\(result.stderr)")
        #expect(result.stderr.contains("ten"), "\(result.stderr)")
        #expect(result.stderr.contains("not seeded: nothing was written (the new store was removed)"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.out.appendingPathComponent("catalog.sqlite").path))
    }

    @Test("SIGTERM during a seed stops it before the commit: exit 143, nothing written")
    func terminated() throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        try workspace.generateCatalog(categories: 50, products: 20_000)
        let job = try workspace.job("seed.yaml", workspace.generatedJob(flag: "big.v1", store: "big.sqlite", type: "sqlite"))
        let child = try LadeChild(["seed", job, "--progress", "0.05"])
        #expect(child.wait(forError: "products.ndjson: "), "\(child.stderr)")
        child.send(SIGTERM)
        #expect(child.finish() == 143, "\(child.stderr)")
        #expect(child.stderr.contains("stopped by a signal before the commit: nothing was written (the new store was removed)"), "\(child.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.out.appendingPathComponent("big.sqlite").path))
    }

    @Test("two seeds started together on one store (or a moment apart): exactly one applies it, the other finds it seeded or locked", .slow)
    func twoAtOnce() throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        try workspace.generateCatalog(categories: 20, products: 2000)
        var outcomes: [String: Int] = [:]
        // Fixed delays before the second start: together, then apart (inside the first run, after it).
        for (round, delay) in [0.0, 0.0, 0.0, 0.1, 0.4, 0.8, 2.0].enumerated() {
            let store = "race-\(round).sqlite"
            let job = try workspace.job("race-\(round).yaml", workspace.generatedJob(flag: "race.v1", store: store, type: "sqlite"))
            let reports = (0..<2).map { workspace.out.appendingPathComponent("race-\(round)-\($0).json") }
            let first = try LadeChild(["seed", job, "--report", reports[0].path])
            if delay > 0 { usleep(UInt32(delay * 1_000_000)) }
            let children = [first, try LadeChild(["seed", job, "--report", reports[1].path])]
            let statuses = children.map { $0.finish() }
            var applied = 0
            for (index, child) in children.enumerated() {
                let status = statuses[index]
                if status == 75 {
                    #expect(child.stderr.contains("is locked by another lade run"), "\(child.stderr)")
                    outcomes["locked", default: 0] += 1
                    continue
                }
                #expect(status == 0, "\(child.stderr)")
                let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: reports[index])) as? [String: Any])
                let name = try #require(json["status"] as? String)
                #expect(name == "seeded" || name == "already-seeded")
                if name == "seeded" { applied += 1 }
                outcomes[name, default: 0] += 1
            }
            #expect(applied == 1, "round \(round): \(statuses), \(children.map(\.stderr))")
            let counts = try SeedStoreContents.counts(workspace.out.appendingPathComponent(store), type: .sqlite)
            #expect(counts?.categories == 20 && counts?.products == 2000)
        }
        print("two seeds on one store, 7 rounds: \(outcomes.sorted { $0.key < $1.key })")
    }

    @Test("a seed on a store whose lock another run holds exits 75 and writes nothing")
    func locked() throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        let job = try workspace.job("seed.yaml", Self.issueExample)
        let store = workspace.out.appendingPathComponent("catalog.sqlite")
        // What another lade run holds: an flock on <store>.lade-lock.
        let descriptor = open(store.path + ".lade-lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        #expect(descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        defer { close(descriptor) }
        let result = try LadeProcess.run(["seed", job])
        #expect(result.status == 75)
        #expect(result.stderr.contains("is locked by another lade run"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store.path))
    }

    // MARK: Apple's hashes

    /// CoreDataPlus's SampleModel3 bundle and its compiled .momd, found through the corpus manifest.
    static func sampleModel3() -> (model: URL, momd: URL)? {
        guard let manifest = try? String(contentsOf: Corpus.file("MANIFEST.jsonl"), encoding: .utf8) else { return nil }
        var model: URL?
        var momd: URL?
        for line in manifest.split(separator: "\n") {
            guard let entry = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  entry["repo"] as? String == "alemar11/CoreDataPlus", let path = entry["path"] as? String
            else { continue }
            let file = Corpus.file("alemar11/CoreDataPlus").appendingPathComponent(path)
            if path.hasSuffix("SampleModel3/SampleModel3.xcdatamodeld/.xccurrentversion") { model = file.deletingLastPathComponent() }
            if path.hasSuffix("SampleModel3/Fixtures/SampleModel3.momd/VersionInfo.plist") { momd = file.deletingLastPathComponent() }
        }
        guard let model, let momd, FileManager.default.fileExists(atPath: momd.path) else { return nil }
        return (model, momd)
    }

    @Test("a store seeded with --momd carries exactly the hashes of the .momd's VersionInfo.plist (CoreDataPlus SampleModel3)",
          .needsCorpus)
    func appleHashes() throws {
        let (model, momd) = try #require(Self.sampleModel3())
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        try Data("name,petName\nAlessandro,Lily\nAndrea,\nMaria,Milo\n".utf8).write(to: workspace.data.appendingPathComponent("users.csv"))
        let job = try workspace.job("users.yaml", """
            kind: seed
            flag: com.example.users.seed.v1
            model: \(model.path)
            store: { type: sqlite, path: ../out/users.sqlite }
            steps:
              - { source: ../data/users.csv, entity: User, key: [name] }
            """)
        let result = try LadeProcess.run(["seed", job, "--momd", momd.path])
        #expect(result.status == 0, "\(result.stderr)")

        let plist = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: momd.appendingPathComponent("VersionInfo.plist")), format: nil) as? [String: Any])
        let current = try #require(plist["NSManagedObjectModel_CurrentVersionName"] as? String)
        let expected = try #require((plist["NSManagedObjectModel_VersionHashes"] as? [String: Any])?[current] as? [String: Data])
        let store = workspace.out.appendingPathComponent("users.sqlite")
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: store)
        #expect(StoreMetadata.versionHashes(in: metadata) == expected)
        #expect(expected.count == 1 && expected["User"]?.count == 32)
        #expect(metadata[StoreMetadata.Key.ladeVersionHashKind] == nil)
        #expect(metadata["com.example.users.seed.v1"] != nil)

        // Without --momd the same seed carries Lade's own hashes: the flag is what brings Apple's.
        try workspace.job("users-lade.yaml", try String(contentsOfFile: job, encoding: .utf8).replacingOccurrences(of: "users.sqlite", with: "users-lade.sqlite"))
        let plain = try LadeProcess.run(["seed", workspace.jobs.appendingPathComponent("users-lade.yaml").path])
        #expect(plain.status == 0, "\(plain.stderr)")
        let ladeMetadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: workspace.out.appendingPathComponent("users-lade.sqlite"))
        #expect(StoreMetadata.versionHashes(in: ladeMetadata) != expected)
        #expect(ladeMetadata[StoreMetadata.Key.ladeVersionHashKind] != nil)
    }

    @Test("an NDJSON step whose first record lacks a listed field is seeded, as lade run and lade validate take it (its keys are not a header)")
    func ndjsonKeysAreNotAHeader() throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        try Data("""
            {"code": "A1"}
            {"code": "B2", "email": "b@example.com"}

            """.utf8).write(to: workspace.data.appendingPathComponent("suppliers.ndjson"))
        let job = try workspace.job("suppliers.yaml", """
            kind: seed
            flag: com.example.suppliers.v1
            model: ../samples/Catalog.xcdatamodeld
            store: { type: sqlite, path: ../out/suppliers.sqlite }
            steps:
              - source: { path: ../data/suppliers.ndjson }
                entity: Supplier
                key: [code]
                fields: { code: code, email: email }
            """)
        let validate = try LadeProcess.run(["validate", job], in: workspace.jobs)
        #expect(validate.status == 0, "\(validate.stderr)")
        let seed = try LadeProcess.run(["seed", job], in: workspace.jobs)
        #expect(seed.status == 0, "\(seed.stderr)")
        let rows = try SQLiteConnection(path: workspace.out.appendingPathComponent("suppliers.sqlite").path, mode: .readOnly)
            .rows("SELECT ZCODE, ZEMAIL FROM ZSUPPLIER ORDER BY ZCODE")
        #expect(rows == [[.text("A1"), .null], [.text("B2"), .text("b@example.com")]])
    }
}
