import Crypto
import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// Copies a corpus store (with its `-wal` and `-shm`) to a writable temporary folder.
func copyCorpusStore(_ relative: String, to directory: URL) throws -> URL {
    let source = Fixtures.corpusFile(relative)
    let target = directory.appendingPathComponent(source.lastPathComponent)
    for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: source.path + suffix) {
        try copyWritable(atPath: source.path + suffix, toPath: target.path + suffix)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: target.path + suffix)
    }
    return target
}

func sha256(ofFile path: String) throws -> String {
    guard FileManager.default.fileExists(atPath: path) else { return "absent" }
    return SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path))).map { String(format: "%02x", $0) }.joined()
}

@Suite("Opening the stores Apple wrote", .enabled(if: Fixtures.corpusAvailable))
struct CorpusStoreTests {
    static let allStores = [
        "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V1.sqlite",
        "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V2.sqlite",
        "alemar11/CoreDataPlus/Tests/Resources/SampleModel3/Fixtures/SampleModel3_V1.sqlite",
        "bignerdranch/CoreDataStack/Sample Model/Deprecated/TestModel.sqlite",
        "CoderDream/Core-Data-by-Tutorials/SourceCode/Core Data by Tutorials v6/09-multiple-managed-object-contexts/final/SurfJournal/SurfJournal/CoreDataSeed/SurfJournalModel.sqlite",
        "fruitsamples/iPhoneCoreDataRecipes/RecipeData/Recipes.sqlite",
        "magicalpanda/MagicalRecord/Samples/iOS/Resources/RecipeData/Recipes.sqlite",
    ]

    @Test("each store opens read-only with its model and every entity's count matches the rows", arguments: CorpusSchemaTests.pairs)
    func opensAndCounts(pair: CorpusSchemaTests.Pair) throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try copyCorpusStore(pair.store, to: temp)
        let model = try ManagedObjectModel(contentsOf: Fixtures.corpusFile(pair.model), version: pair.version)
        let store = try SQLiteStore(url: url, model: model, readOnly: true)
        let facts = try StoreFacts(store: pair.store)
        var total = 0
        for entity in store.schema.entities {
            // Independent of the store's own query: group the raw table by Z_ENT.
            let raw = try store.withConnection { try $0.rows("SELECT COUNT(*) FROM \(entity.tableName) WHERE Z_ENT = ?", [.integer(entity.number)]) }
            #expect(try .integer(Int64(store.count(ofEntity: entity.name))) == raw.first?.first)
            total += try store.count(ofEntity: entity.name)
        }
        let tableRows = store.schema.tables.reduce(0) { $0 + (facts.rowCounts[$1.name] ?? 0) }
        #expect(total == tableRows)
        #expect(store.metadata[StoreMetadata.Key.storeUUID]?.stringValue == facts.uuid)
        print("store \(pair.testDescription): \(total) objects in \(store.schema.entities.count) entities, as in Apple's file")
    }

    @Test("a renamed entity maps by Z_ENT and its renaming identifier, not by Z_NAME")
    func renamedEntity() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try copyCorpusStore("alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V2.sqlite", to: temp)
        let base = Fixtures.corpusFile("alemar11/CoreDataPlus/Tests/Resources/SampleModel")
        let model = try ManagedObjectModel(
            contentsOf: base.appendingPathComponent("SampleModel.xcdatamodeld"), version: "SampleModel2",
            compiledModel: base.appendingPathComponent("Fixtures/SampleModel.momd"))
        let store = try SQLiteStore(url: url, model: model, readOnly: true)
        #expect(store.storedEntityNames[3] == "ExpensiveSportCar")
        #expect(store.schema.entity(number: 3)?.name == "LuxuryCar")
        #expect(try store.count(ofEntity: "Car", includingSubentities: true) == 125)
    }

    @Test("a store made from another model version is refused, naming the entities that differ")
    func mismatchRefused() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try copyCorpusStore("alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V1.sqlite", to: temp)
        let base = Fixtures.corpusFile("alemar11/CoreDataPlus/Tests/Resources/SampleModel")
        let bundle = base.appendingPathComponent("SampleModel.xcdatamodeld")
        // With Apple's hashes: the hashes decide.
        let withHashes = try ManagedObjectModel(contentsOf: bundle, version: "SampleModel2", compiledModel: base.appendingPathComponent("Fixtures/SampleModel.momd"))
        let hashed = #expect(throws: StoreError.self) { try SQLiteStore(url: url, model: withHashes, readOnly: true) }
        #expect(hashed?.kind == .modelMismatch(entities: ["Car", "ExpensiveSportCar", "LuxuryCar", "Person", "SportCar"]))
        #expect(hashed?.description.contains("version hashes differ for Car, ExpensiveSportCar, LuxuryCar, Person, SportCar") == true)
        // Without them: the tables and columns decide (V1 has ZCAR.ZCOLOR and ZPERSON.ZID).
        let plain = try ManagedObjectModel(contentsOf: bundle, version: "SampleModel2")
        let structural = #expect(throws: StoreError.self) { try SQLiteStore(url: url, model: plain, readOnly: true) }
        #expect(structural?.kind == .modelMismatch(entities: ["Car", "LuxuryCar", "Person", "SportCar"]))
        // And the right version opens.
        _ = try SQLiteStore(url: url, model: try ManagedObjectModel(contentsOf: bundle, version: "SampleModel"), readOnly: true)
    }

    @Test("opening read-only never writes the store or its -wal (SurfJournal keeps its data only in the -wal)")
    func readOnlyWritesNothing() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let pair = CorpusSchemaTests.pairs.last!
        let url = try copyCorpusStore(pair.store, to: temp)
        let before = (try sha256(ofFile: url.path), try sha256(ofFile: url.path + "-wal"))
        do {
            let store = try SQLiteStore(url: url, model: try ManagedObjectModel(contentsOf: Fixtures.corpusFile(pair.model)), readOnly: true)
            #expect(try store.count(ofEntity: "JournalEntry") == 5000)
        }
        let after = (try sha256(ofFile: url.path), try sha256(ofFile: url.path + "-wal"))
        #expect(before == after)
        #expect(before.1 != "absent")
    }

    /// The `Z_PLIST` blob of a corpus store, read from a copy (a read-only open of the original
    /// could still need its `-shm`).
    static func storedMetadata(_ relative: String) throws -> Data {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try copyCorpusStore(relative, to: temp)
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        guard case .blob(let plist) = try connection.rows("SELECT Z_PLIST FROM Z_METADATA").first?.first else {
            throw PropertyListError("no Z_PLIST in \(relative)")
        }
        return plist
    }

    @Test("each store's metadata, as Core Data wrote it, written again by Lade reads back the same through Foundation and through Lade", arguments: allStores)
    func metadataRewritten(store relative: String) throws {
        let metadata = try PropertyListValue.decode(try Self.storedMetadata(relative))
        let rewritten = try metadata.binaryPropertyList()
        #expect(try BinaryPropertyListReader.read(rewritten) == metadata)
        #expect(PropertyListValue(foundation: try PropertyListSerialization.propertyList(from: rewritten, format: nil)) == metadata)
    }

    @Test("the digest of each store's version hashes equals its stored NSStoreModelVersionHashesDigest", arguments: allStores)
    func digest(store relative: String) throws {
        let metadata = try #require(try PropertyListValue.decode(try Self.storedMetadata(relative)).dictionaryValue)
        let url = Fixtures.corpusFile(relative)
        let hashes = StoreMetadata.versionHashes(in: metadata)
        #expect(!hashes.isEmpty)
        if let stored = metadata[StoreMetadata.Key.versionHashesDigest]?.stringValue {
            #expect(StoreMetadata.digest(of: hashes).base64EncodedString() == stored)
            print("digest \(url.lastPathComponent): equal")
        } else {
            print("digest \(url.lastPathComponent): the store has none (Core Data \(metadata[StoreMetadata.Key.frameworkVersion]?.integerValue ?? 0) did not write it)")
        }
    }
}

@Suite("Stores Lade creates")
struct SQLiteStoreCreationTests {
    func catalog() throws -> ManagedObjectModel { try ManagedObjectModel(contentsOf: Fixtures.catalog) }

    @Test("a new store carries every metadata key Core Data writes, in a binary plist, with NSStoreUUID from Z_UUID")
    func metadataKeys() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = temp.appendingPathComponent("catalog.sqlite")
        let model = try catalog()
        let store = try SQLiteStore.create(at: url, model: model)
        let metadata = store.metadata
        #expect(metadata[StoreMetadata.Key.storeType] == .string("SQLite"))
        #expect(StoreMetadata.versionHashes(in: metadata) == model.versionHashes)
        #expect(metadata[StoreMetadata.Key.versionHashesVersion] == .integer(3))
        #expect(metadata[StoreMetadata.Key.versionIdentifiers] == .array([.string("2")]))
        #expect(metadata[StoreMetadata.Key.frameworkVersion] != nil)
        #expect(metadata[StoreMetadata.Key.autoVacuumLevel] == .string("2"))
        #expect(metadata[StoreMetadata.Key.versionHashesDigest] == .string(StoreMetadata.digest(of: model.versionHashes).base64EncodedString()))
        #expect(metadata[StoreMetadata.Key.ladeVersionHashKind] == .string(StoreMetadata.ladeHashKind))
        let raw = try SQLiteConnection(path: url.path, mode: .readOnly)
        let row = try #require(try raw.rows("SELECT Z_UUID, Z_PLIST FROM Z_METADATA").first)
        #expect(metadata[StoreMetadata.Key.storeUUID] == (row[0] == .text(store.identifier) ? .string(store.identifier) : nil))
        guard case .blob(let plist) = row[1] else { Issue.record("Z_PLIST is not a blob"); return }
        #expect(plist.starts(with: Array("bplist00".utf8)))
        #expect(try PropertyListValue.decode(plist).dictionaryValue?[StoreMetadata.Key.storeUUID] == nil)
    }

    @Test("the store is in WAL mode with incremental auto-vacuum, and Z_PRIMARYKEY numbers every entity")
    func fileSettings() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = temp.appendingPathComponent("catalog.sqlite")
        try SQLiteStore.create(at: url, model: try catalog())
        let raw = try SQLiteConnection(path: url.path, mode: .readOnly)
        #expect(try raw.rows("PRAGMA journal_mode").first?.first == .text("wal"))
        #expect(try raw.rows("PRAGMA auto_vacuum").first?.first == .integer(2))
        let rows = try raw.rows("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT")
        #expect(rows.map { $0[1] } == ["Category", "Media", "Image", "Video", "Product", "Supplier"].map { .text($0) })
        #expect(rows.map { $0[2] } == [0, 0, 2, 2, 0, 0].map { .integer($0) })
        let tables = try raw.tableNames()
        #expect(tables.isSuperset(of: ["ZCATEGORY", "ZMEDIA", "ZPRODUCT", "ZSUPPLIER", "Z_5SUPPLIERS", "Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]))
        let mediaColumns = try raw.rows("PRAGMA table_info(ZMEDIA)").map { $0[1] }
        #expect(mediaColumns.contains(.text("Z_FOK_PRODUCT")))
        #expect(mediaColumns.contains(.text("ZWIDTH")) && mediaColumns.contains(.text("ZDURATIONSECONDS")))
    }

    @Test("a schema made in batches (as for models of thousands of entities) is the schema made at once: the same tables, indexes and rows, sound, and it opens and saves")
    func batchedSchema() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let model = try catalog()
        func made(batchSize: Int) throws -> (schema: Set<[SQLiteValue]>, rows: [[SQLiteValue]], url: URL) {
            let url = temp.appendingPathComponent("catalog-\(batchSize).sqlite")
            try SQLiteStore.createFile(at: url, model: model, identifier: "UUID", metadata: nil, schemaBatchSize: batchSize)
            let raw = try SQLiteConnection(path: url.path, mode: .readOnly)
            #expect(try raw.rows("PRAGMA integrity_check") == [[.text("ok")]], "batches of \(batchSize)")
            #expect(try raw.rows("PRAGMA journal_mode").first?.first == .text("wal"))
            #expect(try raw.rows("PRAGMA auto_vacuum").first?.first == .integer(2))
            #expect(try raw.rows("PRAGMA page_size").first?.first == .integer(4096))
            let schema = try raw.rows("SELECT type, name, tbl_name, sql FROM sqlite_master")
            let rows = try raw.rows("SELECT * FROM Z_PRIMARYKEY ORDER BY Z_ENT") + raw.rows("SELECT Z_VERSION, Z_UUID FROM Z_METADATA")
            return (Set(schema), rows, url)
        }
        let atOnce = try made(batchSize: SQLiteStore.schemaBatchSize)
        #expect(SQLiteSchema(model: model).createStatements.count < SQLiteStore.schemaBatchSize)
        for batchSize in [1, 2, 5] {
            let batched = try made(batchSize: batchSize)
            #expect(batched.schema == atOnce.schema, "batches of \(batchSize)")
            #expect(batched.rows == atOnce.rows, "batches of \(batchSize)")
            let context = try privateContext(model: model, store: batched.url)
            try context.performAndWait {
                let product = try context.insertObject(forEntityName: "Product")
                try product.setValue("AB-1", forKey: "sku")
                try product.setValue("One", forKey: "name")
                try product.setValue(Decimal(1), forKey: "price")
                try context.save()
                #expect(try context.count(for: FetchRequest(entityName: "Product")) == 1)
            }
            let raw = try SQLiteConnection(path: batched.url.path, mode: .readOnly)
            #expect(try raw.rows("PRAGMA integrity_check") == [[.text("ok")]], "batches of \(batchSize), after a save")
        }
    }

    @Test("a store reopens with its model, and is refused with another version of it")
    func reopen() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = temp.appendingPathComponent("catalog.sqlite")
        try SQLiteStore.create(at: url, model: try catalog())
        let reopened = try SQLiteStore(url: url, model: try catalog())
        #expect(try reopened.count(ofEntity: "Product") == 0)
        let older = try ManagedObjectModel(contentsOf: Fixtures.catalog, version: "Catalog")
        let error = #expect(throws: StoreError.self) { try SQLiteStore(url: url, model: older) }
        guard case .modelMismatch(let entities) = error?.kind else { Issue.record("expected a mismatch"); return }
        #expect(entities.contains("Product"))
    }

    @Test("create refuses an existing file and a missing directory; open refuses a missing file and a non-store")
    func refusals() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = temp.appendingPathComponent("catalog.sqlite")
        try SQLiteStore.create(at: url, model: try catalog())
        #expect(throws: StoreError.self) { try SQLiteStore.create(at: url, model: try catalog()) }
        #expect(throws: StoreError.self) { try SQLiteStore.create(at: temp.appendingPathComponent("no/such/dir.sqlite"), model: try catalog()) }
        #expect(throws: StoreError.self) { try SQLiteStore(url: temp.appendingPathComponent("missing.sqlite"), model: try catalog()) }
        let other = temp.appendingPathComponent("other.sqlite")
        try SQLiteConnection(path: other.path, mode: .readWrite(create: true)).execute("CREATE TABLE t (x)")
        let error = #expect(throws: StoreError.self) { try SQLiteStore(url: other, model: try catalog()) }
        #expect(error?.kind == .notAStore)
        // Nothing is left beside the store by creation.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: temp.path).filter { $0.contains(".lade-") }
        #expect(leftovers.isEmpty)
    }
}
