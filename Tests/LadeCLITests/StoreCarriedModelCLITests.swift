import Foundation
import Lade
import LadeTestSupport
import LadeTestTraits
import Testing

/// Commands given a store and no model read the model the store carries (`Z_MODELCACHE`), run
/// as processes on stores Apple's Core Data wrote and on stores Lade wrote.
@Suite("a store's own model, where no model is named")
struct StoreCarriedModelCLITests {
    /// A corpus store that carries a model cache, and the model source it was written from
    /// where the corpus has one.
    struct CachedStore: CustomStringConvertible, Sendable {
        let store: String
        let model: String?
        var description: String { URL(fileURLWithPath: store).lastPathComponent }
    }

    static let cachedStores = [
        CachedStore(store: "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V1.sqlite",
                    model: "alemar11/CoreDataPlus/Tests/Resources/SampleModel/SampleModel.xcdatamodeld"),
        CachedStore(store: "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V2.sqlite",
                    model: "alemar11/CoreDataPlus/Tests/Resources/SampleModel/SampleModel.xcdatamodeld"),
        CachedStore(store: "alemar11/CoreDataPlus/Tests/Resources/SampleModel3/Fixtures/SampleModel3_V1.sqlite",
                    model: "alemar11/CoreDataPlus/Tests/Resources/SampleModel3/SampleModel3.xcdatamodeld"),
        CachedStore(store: "alemar11/CoreDataPlus/Tests/Resources/SampleModel2/Fixtures/SampleModel2_V1.sqlite", model: nil),
        CachedStore(store: "alemar11/CoreDataPlus/Tests/Resources/SampleModel2/Fixtures/SampleModel2_V2.sqlite", model: nil),
        CachedStore(store: "bignerdranch/CoreDataStack/Sample Model/Deprecated/TestModel.sqlite",
                    model: "bignerdranch/CoreDataStack/Sample Model/Deprecated/Sample.xcdatamodeld"),
    ]

    /// A writable copy of a corpus store (with its `-wal` and `-shm` when it has them).
    func copy(_ relative: String, into sandbox: ImportSandbox) throws -> String {
        let source = Corpus.file(relative).path
        let store = sandbox.url(URL(fileURLWithPath: source).lastPathComponent).path
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: source + suffix) {
            try copyWritable(atPath: source + suffix, toPath: store + suffix)
        }
        return store
    }

    /// The number of rows of each entity, by `Z_ENT`, read from the tables themselves (not
    /// through any model), and `Z_PRIMARYKEY`'s names; history entities (16000 and up) left out.
    func rowCounts(_ store: String) throws -> (counts: [Int64: Int], names: [Int64: String]) {
        let connection = try SQLiteConnection(path: store, mode: .readOnly)
        var names: [Int64: String] = [:]
        for row in try connection.rows("SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY WHERE Z_ENT < 16000") {
            if case .integer(let number) = row[0], case .text(let name) = row[1] { names[number] = name }
        }
        var counts: [Int64: Int] = Dictionary(uniqueKeysWithValues: names.keys.map { ($0, 0) })
        for table in try connection.tableNames() where table.hasPrefix("Z") && !table.hasPrefix("Z_") {
            let columns = try connection.rows("SELECT name FROM pragma_table_info('\(table)')").compactMap { row -> String? in
                if case .text(let name) = row[0] { return name }
                return nil
            }
            guard columns.contains("Z_ENT") else { continue }
            for row in try connection.rows("SELECT Z_ENT, COUNT(*) FROM \"\(table)\" GROUP BY Z_ENT") {
                if case .integer(let number) = row[0], case .integer(let count) = row[1], names[number] != nil {
                    counts[number, default: 0] += Int(count)
                }
            }
        }
        return (counts, names)
    }

    /// The files an export wrote, by name.
    func exported(_ directory: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            files[name] = try Data(contentsOf: directory.appendingPathComponent(name))
        }
        return files
    }

    @Test("every corpus store with a model cache is inspected and exported with no model", .needsCorpus,
          arguments: cachedStores)
    func openWithoutModel(_ cached: CachedStore) throws {
        let sandbox = try ImportSandbox()
        let store = try copy(cached.store, into: sandbox)
        let (counts, primaryKeyNames) = try rowCounts(store)
        let carried = try ManagedObjectModel(carriedByStoreAt: URL(fileURLWithPath: store))

        let inspected = try LadeProcess.run(["inspect", store, "--json"])
        try #require(inspected.status == 0, "\(inspected.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(inspected.stdout.utf8)) as? [String: Any])
        #expect(report["model"] as? String == "Z_MODELCACHE")
        let entities = try #require(report["entities"] as? [[String: Any]])
        // Listed in entity-number order: the n-th is Z_ENT n.
        let names = entities.compactMap { $0["name"] as? String }
        #expect(Set(names) == Set(carried.entityNames))
        #expect(entities.compactMap { $0["count"] as? Int } == counts.keys.sorted().map { counts[$0]! })
        // Z_PRIMARYKEY names each entity as the model does, but for an entity renamed by a
        // migration (SampleModel_V2: ExpensiveSportCar became LuxuryCar, its renaming
        // identifier), whose row Core Data leaves under the old name.
        let renamed = Dictionary(uniqueKeysWithValues: carried.entities.compactMap { entity in
            entity.renamingIdentifier.map { (entity.name, $0) } })
        for (number, name) in names.enumerated() {
            let recorded = primaryKeyNames[Int64(number + 1)]
            #expect(recorded == name || recorded == renamed[name], "Z_ENT \(number + 1): \(name), Z_PRIMARYKEY says \(recorded ?? "nothing")")
        }

        let out = sandbox.url("out")
        let export = try LadeProcess.run(["export", store, "--format", "ndjson", "--out", out.path])
        try #require(export.status == 0, "\(export.stderr)")
        let files = try exported(out)
        #expect(Set(files.keys) == Set(carried.entities.filter { !$0.isAbstract }.map { "\($0.name).ndjson" }))
        for (number, name) in names.enumerated() where files["\(name).ndjson"] != nil {
            let lines = String(decoding: files["\(name).ndjson"]!, as: UTF8.self).split(separator: "\n")
            #expect(lines.count == counts[Int64(number + 1)], "\(name): \(lines.count) lines")
        }

        guard let model = cached.model else { return }
        let bundle = Corpus.file(model).path
        let matched = try LadeProcess.run(["inspect", store, "--model", bundle, "--json"])
        try #require(matched.status == 0, "\(matched.stderr)")
        let matchedReport = try #require(try JSONSerialization.jsonObject(with: Data(matched.stdout.utf8)) as? [String: Any])
        let version = try #require(matchedReport["modelVersion"] as? String)
        let withModel = sandbox.url("out-model")
        let exportWithModel = try LadeProcess.run(["export", store, "--model", bundle, "--model-version", version,
                                                   "--format", "ndjson", "--out", withModel.path])
        try #require(exportWithModel.status == 0, "\(exportWithModel.stderr)")
        let modelFiles = try exported(withModel)
        #expect(modelFiles.keys.sorted() == files.keys.sorted())
        for (name, data) in files { #expect(modelFiles[name] == data, "\(name) differs with the model file given") }
    }

    @Test("fetch, check and convert read a store's own model", .needsCorpus)
    func otherCommands() throws {
        let sandbox = try ImportSandbox()
        let store = try copy("alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V1.sqlite", into: sandbox)
        let fetched = try LadeProcess.run(["fetch", store, "--entity", "Person", "--format", "json"])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect((try JSONSerialization.jsonObject(with: Data(fetched.stdout.utf8)) as? [Any])?.count == 20)
        let checked = try LadeProcess.run(["check", store])
        #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")
        let xml = sandbox.url("copy.xml").path
        let converted = try LadeProcess.run(["convert", store, xml])
        #expect(converted.status == 0, "\(converted.stderr)")
        // An XML store carries no model: reading it back needs the model named.
        let refused = try LadeProcess.run(["fetch", xml, "--entity", "Person"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("an XML store carries none"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--model MODEL"), "\(refused.stderr)")
        #expect(refused.stderr.contains("[store.noModel]"), "\(refused.stderr)")
    }

    @Test("a store with no model cache, given with no model, is refused with how to name its model", .needsCorpus)
    func storeWithoutCache() throws {
        let sandbox = try ImportSandbox()
        let store = try copy("fruitsamples/iPhoneCoreDataRecipes/RecipeData/Recipes.sqlite", into: sandbox)
        for arguments in [["inspect", store], ["export", store, "--format", "csv", "--out", sandbox.url("out").path], ["check", store]] {
            let result = try LadeProcess.run(arguments)
            #expect(result.status == 1, "\(arguments[0]): \(result.stderr)")
            #expect(result.stderr.contains("this store carries none: it has no model cache (Z_MODELCACHE)"), "\(arguments[0]): \(result.stderr)")
            #expect(result.stderr.contains("`--model MODEL`"), "\(arguments[0]): \(result.stderr)")
        }
        let versionWithoutModel = try LadeProcess.run(["export", store, "--model-version", "2", "--format", "csv", "--out", sandbox.url("out").path])
        #expect(versionWithoutModel.status == 64, "\(versionWithoutModel.stderr)")
    }

    @Test("a job that names no model runs into a store that carries one, and is refused for a new store")
    func jobWithoutModel() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", "sku,name,price\nAB-001,Bolt,9.90\n")
        let created = try sandbox.lade(["init", sandbox.store.path, "--model", ImportSandbox.catalogModel.path])
        try #require(created.status == 0, "\(created.stderr)")
        let job = """
            kind: import
            store: { path: catalog.sqlite }
            source: { path: products.csv }
            entity: Product
            key: [sku]

            """
        try sandbox.write("job.yaml", job)
        let (result, _) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try StoreReading.column(sandbox.store, "SELECT ZNAME FROM ZPRODUCT") == [.text("Bolt")])

        try sandbox.write("new.yaml", job.replacingOccurrences(of: "catalog.sqlite", with: "new.sqlite"))
        let refused = try sandbox.lade(["run", "new.yaml"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("a new store needs its model named"), "\(refused.stderr)")
        #expect(refused.stderr.contains("`model: PATH`"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.url("new.sqlite").path))
    }
}

extension StoreCarriedModelCLITests {
    @Test("lade migrate infers from the store's own model when the bundle lacks the version that wrote it")
    func migrateFromCarriedModel() throws {
        let sandbox = try ImportSandbox()
        let catalog = ImportSandbox.catalogModel
        let store = sandbox.url("old.sqlite").path
        let created = try sandbox.lade(["init", store, "--model", catalog.path, "--model-version", "Catalog"])
        try #require(created.status == 0, "\(created.stderr)")
        // The app's bundle, shipped without its first version.
        let bundle = sandbox.url("Shipped.xcdatamodeld")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: catalog.appendingPathComponent("Catalog 2.xcdatamodel"), to: bundle.appendingPathComponent("Catalog 2.xcdatamodel"))
        let planned = try sandbox.lade(["migrate", store, "--model", bundle.path, "--dry-run"])
        #expect(planned.status == 0, "\(planned.stderr)")
        #expect(planned.stdout.contains("the store's own model (Z_MODELCACHE) → Catalog 2"), "\(planned.stdout)")
        let migrated = try sandbox.lade(["migrate", store, "--model", bundle.path])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        // Now at Catalog 2, and carrying Catalog 2's model: it opens with no model named.
        let inspected = try sandbox.lade(["inspect", store, "--model", bundle.path, "--json"])
        #expect(inspected.stdout.contains("\"modelVersion\" : \"Catalog 2\""), "\(inspected.stdout)\(inspected.stderr)")
        let carried = try ManagedObjectModel(carriedByStoreAt: URL(fileURLWithPath: store))
        let shipped = try ManagedObjectModel(contentsOf: bundle)
        #expect(modelShape(carried) == modelShape(shipped))
    }

    /// Entities with their property names: enough to tell two versions of a model apart.
    func modelShape(_ model: ManagedObjectModel) -> [String: [String]] {
        Dictionary(uniqueKeysWithValues: model.entities.map { ($0.name, $0.propertyNames.sorted()) })
    }
}

extension StoreCarriedModelCLITests {
    @Test("a seed job that names no model seeds a store that carries one")
    func seedWithoutModel() throws {
        let sandbox = try ImportSandbox()
        let created = try sandbox.lade(["init", sandbox.store.path, "--model", ImportSandbox.catalogModel.path])
        try #require(created.status == 0, "\(created.stderr)")
        try sandbox.write("categories.csv", "name,sortOrder\nTools,1\nGarden,2\n")
        try sandbox.write("seed.yaml", """
            kind: seed
            flag: example.seed.v1
            store: { path: catalog.sqlite }
            steps:
              - { source: categories.csv, entity: Category, key: [name] }

            """)
        let seeded = try sandbox.lade(["seed", "seed.yaml"])
        #expect(seeded.status == 0, "\(seeded.stderr)")
        #expect(Set(try StoreReading.column(sandbox.store, "SELECT ZNAME FROM ZCATEGORY")) == [.text("Tools"), .text("Garden")])
        let again = try sandbox.lade(["seed", "seed.yaml"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try StoreReading.column(sandbox.store, "SELECT COUNT(*) FROM ZCATEGORY") == [.integer(2)])
    }
}

extension StoreCarriedModelCLITests {
    @Test("lade migrate and migrate: automatic refuse to infer from the store's own model when that would drop an attribute with its data (another app's store), naming it; the store is unchanged")
    func carriedModelDropsNothing() throws {
        let sandbox = try ImportSandbox()
        let photos = sandbox.url("Photos.xcdatamodeld")
        try MigrateCLITests.writeVersion("Photos", of: photos, """
            <entity name="Item"><attribute name="name" optional="YES" attributeType="String"/><attribute name="photo" optional="YES" attributeType="Binary"/></entity>
            """, current: true)
        let store = sandbox.url("items.sqlite")
        let context = try privateContext(model: try ManagedObjectModel(contentsOf: photos), store: store, type: .sqlite)
        try context.performAndWait {
            let item = try context.insertObject(forEntityName: "Item")
            try item.setValue("beach", forKey: "name")
            try item.setValue(Data([1, 2, 3]), forKey: "photo")
            try context.save()
        }
        // An unrelated app's bundle: an Item without the photo, in a version that did not write the store.
        let other = sandbox.url("Other.xcdatamodeld")
        try MigrateCLITests.writeVersion("Other", of: other, """
            <entity name="Item"><attribute name="name" optional="YES" attributeType="String"/><attribute name="tag" optional="YES" attributeType="String"/></entity>
            """, current: true)
        let before = try storeFileDigests(store)
        let migrated = try sandbox.lade(["migrate", store.path, "--model", other.path])
        #expect(migrated.status != 0)
        #expect(migrated.stderr.contains("would drop Item.photo"), "\(migrated.stderr)")
        #expect(try storeFileDigests(store) == before, "the store changed")
        try sandbox.write("items.csv", "name\nsea\n")
        try sandbox.write("job.yaml", """
            kind: import
            model: Other.xcdatamodeld
            store: { path: items.sqlite }
            source: items.csv
            entity: Item
            migrate: automatic

            """)
        let (run, _) = try sandbox.run()
        #expect(run.status != 0)
        #expect(run.stderr.contains("would drop Item.photo"), "\(run.stderr)")
        #expect(try StoreReading.integer(store, "SELECT COUNT(*) FROM ZITEM WHERE ZPHOTO IS NOT NULL") == 1)
    }
}
