import Foundation
import Testing
@testable import Lade

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
        #expect(TableLayout(model: model).createStatements.count < SQLiteStore.schemaBatchSize)
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
}
