import Foundation

/// Writes a new PostgreSQL store whole (`WholeStoreWriting`) in one transaction: the schema's
/// tables made, filled batch after batch, the keys' counters set, then committed by `finish()`.
/// Until then no other session sees any of it, and a failure, `discard()`, a lost connection or
/// a killed process leaves the schema as it was (PostgreSQL's DDL is transactional). With
/// `overwrite`, a Lade store already in the schema is dropped in the same transaction, so
/// readers see the old store or the new one, never neither: its own tables and functions only
/// (`PostgreSQLStore.dropStoreObjects`), never another table of the schema, and not at all while
/// anything outside the store depends on them.
final class PostgreSQLStoreWriter: WholeStoreWriting {
    private let built: PostgreSQLStore
    private let connection: PostgreSQLConnection
    private let model: ManagedObjectModel
    private var finished = false
    private var keepsHistory = false

    init(at location: PostgreSQLLocation, model: ManagedObjectModel, metadata given: [String: PropertyListValue], overwrite: Bool) throws {
        let connection = try PostgreSQLConnection(location)
        try connection.execute("BEGIN")
        do {
            var kept: Set<String> = []
            if overwrite, (try? PostgreSQLStore.readMetadata(connection)) != nil {
                kept = try PostgreSQLStore.dropStoreObjects(connection)
            }
            var metadata = given
            metadata[StoreMetadata.Key.storeType] = .string(PostgreSQLStore.storeType)
            let uuid = metadata[StoreMetadata.Key.storeUUID]?.stringValue ?? UUID().uuidString
            try PostgreSQLStore.create(in: connection, model: model, identifier: uuid, metadata: metadata, history: false, beside: kept)
            built = try PostgreSQLStore(connection: connection, model: model, readOnly: false, staged: true)
        } catch {
            if connection.isAlive { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
        self.connection = connection
        self.model = model
    }

    var store: PersistentStore { built }
    var keysUniqueAcrossEntities: Bool { false }
    var firstKey: Int64 { 1 }

    func toManyWriting(of relationship: RelationshipDescription) -> ToManyWriting {
        model.tableLayoutToManyWriting(of: relationship)
    }

    func write(_ objects: [WholeStoreObject]) throws {
        try built.save(StoreSaveRequest(inserting: objects))
    }

    func writeToMany(_ destinations: [WholeStoreObject.ToMany]) throws {
        try built.save(StoreSaveRequest(linking: destinations, in: model))
    }

    /// The history tables made and filled in the store's transaction; their triggers are made
    /// by `finish()`, after every row is in (a copy's rows are not changes).
    func writeHistory(_ rows: HistoryTableRows) throws {
        try built.withConnection { connection in
            try PostgreSQLHistory.createTables(for: model, tombstones: max(rows.tombstones, SQLiteHistory.tombstoneSlots(of: model)), prefix: built.prefix, connection)
            try rows.mappingTombstones { value, _, _ in PostgreSQLTombstone.bytes(value) }.write(into: PostgreSQLHistoryDatabase(connection: connection))
        }
        keepsHistory = true
    }

    func finish() throws -> PersistentStore? {
        try built.withConnection { connection in
            try built.adoptPrimaryKeys(connection)
            if keepsHistory { try PostgreSQLHistory.installTriggers(schema: built.schema, model: model, prefix: built.prefix, connection) }
            try connection.execute("COMMIT")
        }
        built.endStaging()
        finished = true
        return nil
    }

    func discard() {
        guard !finished else { return }
        finished = true
        built.endStaging()
        if connection.isAlive { _ = try? connection.execute("ROLLBACK") }
    }
}
