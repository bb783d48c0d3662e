import Foundation
import Lade
@testable import LadePipeline
import Testing

@Suite("Seeding: lade seed's runner, in process")
struct SeedRunnerTests {
    static let flag = "com.example.catalog.seed.v1"

    /// The repository's example job, writing to `store` instead of out/.
    func exampleJob(store: URL, type: StoreReference.Kind = .sqlite) throws -> Job {
        var job = try Job(contentsOf: PipelineFixtures.root.appendingPathComponent("jobs/seed-catalog.yaml"))
        job.store = StoreReference(kind: type, url: store)
        return job
    }

    /// A seed job read from YAML whose paths are relative to `directory`.
    func seedJob(_ steps: String, store: URL, flag: String = flag, directory: URL, writer: ImportWriterChoice = .auto) throws -> Job {
        try PipelineFixtures.job("""
            kind: seed
            flag: \(flag)
            model: \(PipelineFixtures.catalog.path)
            store: { type: sqlite, path: \(store.path) }
            writer: \(writer.rawValue)
            steps:
            \(steps)
            """, directory: directory)
    }

    func seed(_ job: Job) throws -> SeedReport {
        try SeedRunner(job: job, options: SeedOptions(handlesSignals: false)).run()
    }

    func count(_ entity: String, in store: URL, type: StoreReference.Kind = .sqlite) throws -> Int {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try PipelineFixtures.catalogModel())
        let opened = try coordinator.addPersistentStore(type: type, at: store, readOnly: true)
        return try opened.count(StoreFetchRequest(entityName: entity))
    }

    func metadata(_ store: URL) throws -> [String: PropertyListValue] {
        try PersistentStoreCoordinator.metadataForPersistentStore(at: store)
    }

    /// Each product's sku and its category's name.
    func productCategories(in store: URL) throws -> [String: String] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try PipelineFixtures.catalogModel())
        try coordinator.addPersistentStore(type: .sqlite, at: store, readOnly: true)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return try context.performAndWait {
            var pairs: [String: String] = [:]
            for product in try context.fetch(FetchRequest(entityName: "Product")) {
                pairs[product.attributeValue(forKey: "sku")?.canonicalText ?? "?"] = product.object(forKey: "category")?.attributeValue(forKey: "name")?.canonicalText ?? "-"
            }
            return pairs
        }
    }

    /// A store at `temp/catalog.sqlite` that already holds one category (seeded under another flag).
    func storeWithCategory(_ name: String, in temp: URL) throws -> URL {
        let store = temp.appendingPathComponent("catalog.sqlite")
        try write("name,sortOrder\n\(name),1\n", to: temp.appendingPathComponent("legacy.csv"))
        #expect(try seed(try seedJob("  - { source: legacy.csv, entity: Category, key: [name] }", store: store, flag: "legacy", directory: temp)).status == .seeded)
        return store
    }

    /// The reason of an aborted seed (an issue is recorded for any other outcome).
    func abortReason(_ report: SeedReport) -> String {
        guard case .aborted(let reason) = report.status else {
            Issue.record("expected an abort, got \(report.status)")
            return ""
        }
        return reason
    }

    /// Each category's name and sort order.
    func sortOrders(in store: URL) throws -> [String: String] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try PipelineFixtures.catalogModel())
        let opened = try coordinator.addPersistentStore(type: .sqlite, at: store, readOnly: true)
        var orders: [String: String] = [:]
        for row in try opened.fetch(StoreFetchRequest(entityName: "Category")) {
            orders[row.attributes["name"]?.canonicalText ?? "?"] = row.attributes["sortOrder"]?.canonicalText ?? "-"
        }
        return orders
    }

    func write(_ text: String, to url: URL) throws {
        try Data(text.utf8).write(to: url)
    }

    @Test("the example job seeds a new store with 15 categories, 10 products in their categories, and the flag")
    func exampleSeedsNewStore() throws {
        let temp = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let store = temp.appendingPathComponent("out/catalog.sqlite")
        let report = try seed(try exampleJob(store: store))
        #expect(report.status == .seeded)
        #expect(report.storeCreated)
        #expect(try count("Category", in: store) == 15)
        #expect(try count("Product", in: store) == 10)
        let categories = try productCategories(in: store)
        #expect(categories["STARTER-01"] == "Tools")
        #expect(categories["STARTER-07"] == "Électricité")
        #expect(categories.values.allSatisfy { $0 != "-" })

        let flag = try #require(SeedFlag(try metadata(store)[Self.flag]))
        #expect(flag.job == "seed-catalog.yaml")
        #expect(flag.steps.map(\.entity) == ["Category", "Product"])
        #expect(flag.steps.map(\.inserted) == [15, 10])
        #expect(flag.steps.map(\.rows) == [15, 10])
        #expect(abs(flag.seededAt.timeIntervalSinceNow) < 60)
        #expect(report.seedFlag == flag)
    }

    @Test("a seeded store is already seeded: the second run changes nothing and reports the first run's flag")
    func secondRunIsAlreadySeeded() throws {
        let temp = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let store = temp.appendingPathComponent("catalog.sqlite")
        let job = try exampleJob(store: store)
        let first = try seed(job)
        let before = try metadata(store)
        let second = try seed(job)
        #expect(second.status == .alreadySeeded)
        #expect(!second.storeCreated)
        #expect(second.steps.isEmpty)
        #expect(second.flagValue == first.flagValue)
        #expect(try metadata(store) == before)
        #expect(try count("Product", in: store) == 10)
    }

    @Test("a run that finds no flag, then gets the lock after another run seeded the store, reads the flag again and leaves it")
    func flagReadAgainUnderTheLock() throws {
        let temp = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let store = temp.appendingPathComponent("catalog.sqlite")
        let job = try exampleJob(store: store)
        var options = SeedOptions(handlesSignals: false)
        options.beforeLock = {
            // Another run seeds the store between this run's first look and its lock.
            let other = try SeedRunner(job: job, options: SeedOptions(handlesSignals: false)).run()
            #expect(other.status == .seeded)
        }
        let report = try SeedRunner(job: job, options: options).run()
        #expect(report.status == .alreadySeeded)
        #expect(!report.storeCreated)
        #expect(SeedFlag(try metadata(store)[Self.flag])?.steps.map(\.inserted) == [15, 10])
        #expect(try count("Product", in: store) == 10)
    }

    @Test("check reads the metadata only: no store and no flag are not seeded, the flag is", arguments: StoreReference.Kind.fileTypes)
    func check(type: StoreReference.Kind) throws {
        let temp = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let store = temp.appendingPathComponent("catalog.\(type.rawValue)")
        let job = try exampleJob(store: store, type: type)
        let missing = try SeedRunner(job: job).check()
        #expect(missing.status == .notSeeded)
        #expect(!missing.storeExists)
        #expect(!FileManager.default.fileExists(atPath: store.path))

        let coordinator = PersistentStoreCoordinator(managedObjectModel: try PipelineFixtures.catalogModel())
        try coordinator.addPersistentStore(type: type, at: store)
        let unflagged = try SeedRunner(job: job).check()
        #expect(unflagged.status == .notSeeded)
        #expect(unflagged.storeExists)

        #expect(try seed(job).status == .seeded)
        let seeded = try SeedRunner(job: job).check()
        #expect(seeded.status == .alreadySeeded)
        #expect(seeded.checkOnly)
        #expect(seeded.seedFlag?.steps.map(\.inserted) == [15, 10])
        #expect(try count("Category", in: store, type: type) == 15)
    }

    @Test("flags are versioned: a store seeded with v1 takes a v2 job and then carries both flags")
    func versionedFlags() throws {
        let temp = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let store = temp.appendingPathComponent("catalog.sqlite")
        #expect(try seed(try exampleJob(store: store)).status == .seeded)
        try write("name,sortOrder\nSeasonal,200\nTools,5\n", to: temp.appendingPathComponent("categories-v2.csv"))
        let v2 = try seedJob("""
              - { source: categories-v2.csv, entity: Category, key: [name], mode: insert }
            """, store: store, flag: "com.example.catalog.seed.v2", directory: temp)
        let report = try seed(v2)
        #expect(report.status == .seeded)
        #expect(report.steps.first?.inserted == 1)
        #expect(try count("Category", in: store) == 16)
        let metadata = try metadata(store)
        #expect(metadata[Self.flag] != nil)
        #expect(SeedFlag(metadata["com.example.catalog.seed.v2"])?.steps.first?.inserted == 1)
        #expect(try seed(v2).status == .alreadySeeded)
    }

    @Test("later steps find objects of earlier steps (unsaved until the one commit) and objects already in the store")
    func relationshipsAcrossStepsAndStore() throws {
        let temp = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let store = try storeWithCategory("Legacy", in: temp)

        try write("name,sortOrder\nTools,0\nGarden,10\n", to: temp.appendingPathComponent("categories.csv"))
        try write("""
            {"sku": "P-001", "name": "Hammer", "category": "Tools"}
            {"sku": "P-002", "name": "Old hammer", "category": "Legacy"}
            {"sku": "P-003", "name": "Rake", "category": "Garden"}

            """, to: temp.appendingPathComponent("products.ndjson"))
        // A third step on an earlier step's entity: it updates the unsaved object by key.
        try write("name,sortOrder\nTools,7\nLegacy,2\n", to: temp.appendingPathComponent("order.csv"))
        let report = try seed(try seedJob("""
              - { source: categories.csv, entity: Category, key: [name] }
              - source: products.ndjson
                entity: Product
                key: [sku]
                relationships: { category: { from: category, match: name, required: true } }
              - { source: order.csv, entity: Category, key: [name] }
            """, store: store, directory: temp))
        #expect(report.status == .seeded, "\(report.text())")
        #expect(report.steps.map(\.inserted) == [2, 3, 0])
        #expect(try productCategories(in: store) == ["P-001": "Tools", "P-002": "Legacy", "P-003": "Garden"])
        #expect(try count("Category", in: store) == 3)
        #expect(try sortOrders(in: store) == ["Tools": "7", "Garden": "10", "Legacy": "2"])
    }

    @Test("a rejected row stops the seed: file, line, column, field, value and reason; an existing store is left as it was")
    func rejectedRowWritesNothing() throws {
        let temp = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let store = try storeWithCategory("Legacy", in: temp)
        let before = try metadata(store)

        try write("name,sortOrder\nTools,0\nGarden,10\nKitchen,-5\nBath,30\n", to: temp.appendingPathComponent("categories.csv"))
        let report = try seed(try seedJob("  - { source: categories.csv, entity: Category, key: [name] }", store: store, directory: temp))
        let reason = abortReason(report)
        #expect(reason.hasPrefix("categories.csv:4:2: field 'sortOrder': "), "\(reason)")
        #expect(reason.contains("-5"), "\(reason)")
        #expect(reason.contains("minimum") || reason.contains("at least"), "\(reason)")
        #expect(try metadata(store) == before)
        #expect(try count("Category", in: store) == 1)
        #expect(!report.storeCreated)
        #expect(FileManager.default.fileExists(atPath: store.path))
    }

    @Test("a rejected row in a later step leaves no store behind when the run created it")
    func rejectedRowRemovesNewStore() throws {
        let temp = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let store = temp.appendingPathComponent("new/catalog.sqlite")
        try write("name,sortOrder\nTools,0\n", to: temp.appendingPathComponent("categories.csv"))
        try write("""
            {"sku": "P-001", "name": "Hammer", "category": "Tools"}
            {"sku": "P-002", "name": "Lamp", "category": "Lighting"}

            """, to: temp.appendingPathComponent("products.ndjson"))
        let report = try seed(try seedJob("""
              - { source: categories.csv, entity: Category, key: [name] }
              - source: products.ndjson
                entity: Product
                key: [sku]
                relationships: { category: { from: category, match: name, required: true } }
            """, store: store, directory: temp))
        let reason = abortReason(report)
        #expect(reason.hasPrefix("products.ndjson:2: field 'category': "), "\(reason)")
        #expect(reason.contains("no Category has name 'Lighting'"), "\(reason)")
        #expect(report.storeCreated)
        for suffix in ["", "-wal", "-shm"] {
            #expect(!FileManager.default.fileExists(atPath: store.path + suffix))
        }
        #expect(report.text().contains("nothing was written (the new store was removed)"))
    }

    @Test("a row the store refuses (a broken uniqueness constraint) writes neither the rows nor the flag, and names the row: at the commit (objects) or at its batch (batch inserts)",
          arguments: [ImportWriterChoice.objects, .batch])
    func refusedCommitWritesNothing(writer: ImportWriterChoice) throws {
        let temp = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let store = try storeWithCategory("Tools", in: temp)
        let before = try metadata(store)
        // No key: every row inserts, and "Tools" breaks Category's uniqueness constraint at the save.
        try write("name,sortOrder\nGarden,10\nTools,20\nBath,30\n", to: temp.appendingPathComponent("categories.csv"))
        let report = try seed(try seedJob("  - { source: categories.csv, entity: Category }", store: store, directory: temp, writer: writer))
        #expect(report.writer == writer)
        let reason = abortReason(report)
        #expect(reason.hasPrefix(writer == .objects ? "categories.csv:3: the store refused the seed: " : "categories.csv:3: another Category already has the same name"), "\(reason)")
        #expect(reason.contains("uniqueness"), "\(reason)")
        #expect(try metadata(store) == before)
        #expect(try count("Category", in: store) == 1)
    }

    @Test("XML and binary stores are seeded in one atomic write, and only once", arguments: [StoreReference.Kind.xml, .binary])
    func atomicStores(type: StoreReference.Kind) throws {
        let temp = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let store = temp.appendingPathComponent("catalog.\(type.rawValue)")
        let job = try exampleJob(store: store, type: type)
        #expect(try seed(job).status == .seeded)
        let bytes = try Data(contentsOf: store)
        #expect(try seed(job).status == .alreadySeeded)
        #expect(try Data(contentsOf: store) == bytes)
        #expect(try count("Product", in: store, type: type) == 10)
        #expect(SeedFlag(try metadata(store)[Self.flag])?.steps.map(\.inserted) == [15, 10])
    }

    @Test("a seed job takes no 'policy: skip', and lade seed takes only seed jobs")
    func jobChecks() throws {
        #expect(throws: JobError.self) {
            try PipelineFixtures.job("""
                kind: seed
                flag: f
                model: ../samples/Catalog.xcdatamodeld
                store: { path: x.sqlite }
                onError: { policy: skip }
                steps: [{ source: a.csv, entity: Category }]
                """)
        }
        do {
            _ = try PipelineFixtures.job("kind: seed\nflag: f\nmodel: m\nstore: { path: x.sqlite }\nonError: { policy: skip }\nsteps: [{ source: a.csv, entity: E }]\n")
        } catch let error as JobError {
            #expect(error.description.contains("test.yaml:5:10: onError: a seed is all or nothing"), "\(error)")
        }
        let importJob = try PipelineFixtures.job("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: a.csv\nentity: E\n")
        #expect(throws: JobError.self) { try SeedRunner(job: importJob).run() }
    }
}
