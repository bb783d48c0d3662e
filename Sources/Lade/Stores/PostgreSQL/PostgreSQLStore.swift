import Foundation

/// A store in one schema of a PostgreSQL database, laid out as Core Data lays out a SQLite
/// store (`TableLayout`: the same tables, columns and keys; types in
/// `PostgreSQLValueCoding`), so that import workers on many machines can write one store.
///
/// - Keys are taken from `Z_PRIMARYKEY` in blocks, on a connection of their own that commits
///   at once, so concurrent writers get disjoint keys and never wait on each other's
///   transactions (unused keys of a block are left as gaps, as Core Data's keys may have).
/// - Updates and deletes check `Z_OPT` (optimistic locking) as Core Data does.
/// - A save is one transaction; saves held by a `StoreTransaction` share one, each in a
///   savepoint.
///
/// ```swift
/// let location = try PostgreSQLLocation("postgresql://app@db/catalog?schema=feed")
/// let store = try PostgreSQLStore.create(at: location, model: model)
/// ```
///
/// A store serialises its own use of its connections, so it may be shared between queues.
package final class PostgreSQLStore: @unchecked Sendable {
    package let location: PostgreSQLLocation
    package let model: ManagedObjectModel
    package let schema: TableLayout
    package let isReadOnly: Bool
    package let identifier: String
    let readPlans: [Int64: TableReadPlan]
    let writePlans: [String: TableWritePlan]
    /// The schema as SQL (quoted), in front of every table name.
    let prefix: String

    let lock = NSLock()
    private(set) var connection: PostgreSQLConnection
    private var keyConnection: PostgreSQLConnection?
    private var currentMetadata: [String: PropertyListValue]
    /// The metadata as last read or written, for a caller holding `lock`.
    var currentMetadataUnlocked: [String: PropertyListValue] { currentMetadata }
    /// Whether the store is being written whole in one transaction (`PostgreSQLStoreWriter`):
    /// its tables are not committed yet, so keys come from its own connection.
    let staged: Bool
    /// Keys taken from `Z_PRIMARYKEY` and not handed out yet, by root entity number.
    private var keyBlocks: [Int64: ClosedRange<Int64>] = [:]
    /// The transaction a `StoreTransaction` holds open: its number and whether saves get
    /// savepoints (guarded by `lock`).
    var heldSaves: (generation: Int, undoable: Bool)?
    var heldSavesBegun = 0
    /// Whether a batch insert session holds the connection's transaction
    /// (`PostgreSQLBatchInsertTransaction`; guarded by `lock`): saves and held saves are refused
    /// (`.transactionOpen`) until it ends, and a dropped connection is not made anew under it.
    var bulkInsertOpen = false
    /// Records persistent history in every commit, when the store has history tables and is
    /// opened for writing (`PostgreSQLStore+History.swift`; guarded by `lock`).
    var history: HistoryRecorder?

    /// `NSStoreType` of a PostgreSQL store.
    package static let storeType = StoreType.postgresql.rawValue
    /// The scope of the transaction-level advisory lock under which a store is made (with the
    /// schema's digest, as `PostgreSQLAdvisoryLock` keys a job's lock).
    static let creationLockScope = "lade.create"
    /// How many keys a writer takes at a time, at least.
    static let keyBlockSize: Int64 = 1_000

    // MARK: Creating

    /// Makes the store's schema and tables for `model` in one transaction (PostgreSQL's DDL is
    /// transactional: a failure or a crash leaves no part of them). The schema may exist if it
    /// holds no table (a schema an administrator made, with its grants); returns the new
    /// store's UUID.
    @discardableResult
    package static func createStore(at location: PostgreSQLLocation, model: ManagedObjectModel, history: Bool = false) throws -> String {
        let connection = try PostgreSQLConnection(location)
        let uuid = UUID().uuidString
        try connection.transaction {
            try create(in: connection, model: model, identifier: uuid, metadata: nil, history: history)
        }
        return uuid
    }

    /// Creates the store and opens it.
    package static func create(at location: PostgreSQLLocation, model: ManagedObjectModel, history: Bool = false) throws -> PostgreSQLStore {
        try createStore(at: location, model: model, history: history)
        return try PostgreSQLStore(location: location, model: model)
    }

    /// The statements of a new store, run on `connection` in the caller's transaction.
    /// `beside`: tables of the schema's own that a replaced store left (`PostgreSQLStoreWriter`),
    /// which the new store's tables join; any other table in the schema refuses the store.
    static func create(in connection: PostgreSQLConnection, model: ManagedObjectModel, identifier: String, metadata given: [String: PropertyListValue]?, history: Bool,
                       beside: Set<String> = []) throws {
        let location = connection.location
        try connection.requireUTF8("cannot make a store here")
        if let refusal = StoreError.refusingComposites(in: model, storeType: storeType, path: location.redacted) { throw refusal }
        let schema = TableLayout(model: model)
        if let refusal = StoreError.refusingUnknownLayouts(of: schema, storeType: storeType, path: location.redacted) { throw refusal }
        // A derived attribute the store keeps no triggers for is refused before anything is made.
        _ = try countDerivations(schema: schema, model: model)
        let prefix = postgreSQLQuoted(location.schema) + "."
        // Two processes making one new store at once (two workers' first `lade run`, two `lade
        // init`): the second waits here until the first commits, then finds its store below,
        // where both would otherwise make the schema and one fail on pg_namespace's unique index.
        try connection.execute("SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
                               [.integer(Int64(PostgreSQLAdvisoryLock.digest(location.schema))), .integer(Int64(PostgreSQLAdvisoryLock.digest(creationLockScope)))])
        let exists = try connection.execute("SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = $1", [.text(location.schema)]).integer(0, 0) == 1
        if exists {
            let tables = Set(try connection.execute("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = $1", [.text(location.schema)]).column(0))
                .subtracting(beside)
            if tables.contains("Z_METADATA") && tables.contains("Z_PRIMARYKEY") {
                throw StoreError(.alreadyExists, path: location.redacted, "a store is already in schema \(postgreSQLQuoted(location.schema)) (made meanwhile by another process, or before); open it, or name another schema")
            }
            guard tables.isEmpty else {
                throw StoreError(.alreadyExists, path: location.redacted, "the schema \(postgreSQLQuoted(location.schema)) already holds \(tables.count) table\(tables.count == 1 ? "" : "s"); a new store needs a schema of its own: name another, or drop this one")
            }
        } else {
            try connection.execute("CREATE SCHEMA \(postgreSQLQuoted(location.schema))")
        }
        var statements = [
            "CREATE TABLE \(prefix)\"Z_PRIMARYKEY\" (\"Z_ENT\" bigint PRIMARY KEY, \"Z_NAME\" text, \"Z_SUPER\" bigint, \"Z_MAX\" bigint)",
            "CREATE TABLE \(prefix)\"Z_METADATA\" (\"Z_VERSION\" bigint PRIMARY KEY, \"Z_UUID\" text, \"Z_PLIST\" bytea)",
            "CREATE TABLE \(prefix)\"Z_MODELCACHE\" (\"Z_CONTENT\" bytea)",
            checkpointTableStatement(prefix),
        ]
        statements += schema.tables.map { tableStatement($0, prefix: prefix) }
        statements += schema.joinTables.map { joinTableStatement($0, prefix: prefix) }
        statements += schema.indexes.map { indexStatement($0, prefix: prefix) }
        for statement in statements { try connection.execute(statement) }
        for entity in schema.entities {
            try connection.execute("INSERT INTO \(prefix)\"Z_PRIMARYKEY\" (\"Z_ENT\", \"Z_NAME\", \"Z_SUPER\", \"Z_MAX\") VALUES ($1, $2, $3, 0)",
                                   [.integer(entity.number), .text(entity.name), .integer(entity.superNumber)])
        }
        var metadata = given ?? StoreMetadata.make(for: model, storeType: storeType)
        metadata[StoreMetadata.Key.storeType] = .string(storeType)
        metadata[StoreMetadata.Key.autoVacuumLevel] = nil
        try connection.execute("INSERT INTO \(prefix)\"Z_METADATA\" (\"Z_VERSION\", \"Z_UUID\", \"Z_PLIST\") VALUES (1, $1, $2)",
                               [.text(identifier), .bytes(try encodedMetadata(metadata.filter { !isRowKey($0.key) }))])
        try writeMetadata(metadata, previous: [:], prefix: prefix, connection)
        if let cache = try model.modelCacheBlobIfArchivable() {
            try connection.execute("INSERT INTO \(prefix)\"Z_MODELCACHE\" (\"Z_CONTENT\") VALUES ($1)", [.bytes(cache)])
        }
        // Before the history's triggers, which refuse a write from a session with no notes table.
        try installDerivedAttributes(schema: schema, model: model, prefix: prefix, connection)
        if history { try PostgreSQLHistory.create(for: model, schema: schema, prefix: prefix, connection) }
    }

    /// An entity table of Core Data's layout, its columns typed (`PostgreSQLValueCoding`).
    static func tableStatement(_ table: TableLayout.Table, prefix: String) -> String {
        let columns = table.columns.map { column -> String in
            column.role == .primaryKey
                ? "\(postgreSQLQuoted(column.name)) bigint PRIMARY KEY"
                : "\(postgreSQLQuoted(column.name)) \(PostgreSQLValueCoding.columnType(column.declaredType))"
        }
        return "CREATE TABLE \(prefix)\(postgreSQLQuoted(table.name)) (\(columns.joined(separator: ", ")))"
    }

    /// A many-to-many relationship's join table, keyed by its two columns.
    static func joinTableStatement(_ join: TableLayout.JoinTable, prefix: String) -> String {
        var columns = [join.sourceColumn, join.destinationColumn].map { "\(postgreSQLQuoted($0)) bigint NOT NULL" }
        for order in [join.sourceOrderColumn, join.destinationOrderColumn].compactMap({ $0 }) { columns.append("\(postgreSQLQuoted(order)) bigint") }
        columns.append("PRIMARY KEY (\(postgreSQLQuoted(join.sourceColumn)), \(postgreSQLQuoted(join.destinationColumn)))")
        return "CREATE TABLE \(prefix)\(postgreSQLQuoted(join.name)) (\(columns.joined(separator: ", ")))"
    }

    /// An index of the layout (a uniqueness constraint's is unique).
    ///
    /// A to-one key's index leaves out the rows whose key is NULL (`WHERE … IS NOT NULL`). It
    /// serves finding the objects that point at one object (a to-many fault, a delete rule),
    /// and PostgreSQL uses a partial index for any `=` or `= ANY` on the column. The NULL
    /// entries it would hold serve only `relationship == nil`, which reads most of the table
    /// anyway where they are many. Left in, they cost an index entry (and its WAL) per row, all
    /// at one end of the index, where concurrent writers wait on the same page.
    static func indexStatement(_ index: TableLayout.Index, prefix: String, ifNotExists: Bool = false) -> String {
        let columns = index.columns.map(postgreSQLQuoted)
        let partial = index.kind == .toOne ? " WHERE " + columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND ") : ""
        return "CREATE \(index.isUnique ? "UNIQUE " : "")INDEX \(ifNotExists ? "IF NOT EXISTS " : "")\(postgreSQLQuoted(indexName(index))) ON \(prefix)\(postgreSQLQuoted(index.table)) (\(columns.joined(separator: ", ")))\(partial)"
    }

    /// An index's name as PostgreSQL keeps it: Core Data's name when it fits in 63 bytes, else
    /// its start and a digest of the whole (PostgreSQL would cut it short, and two long names
    /// could then collide).
    static func indexName(_ index: TableLayout.Index) -> String { fittedIdentifier(index.name) }

    /// `name` when it fits in PostgreSQL's 63 bytes, else its start and a digest of the whole
    /// (PostgreSQL would cut it short, and two long names could then collide).
    static func fittedIdentifier(_ name: String) -> String {
        guard name.utf8.count > PostgreSQLLocation.identifierBytes else { return name }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(decoding: name.utf8.prefix(40), as: UTF8.self) + "_" + String(hash, radix: 16)
    }

    static func encodedMetadata(_ metadata: [String: PropertyListValue]) throws -> Data {
        var stored = metadata
        stored[StoreMetadata.Key.storeUUID] = nil
        return try PropertyListValue.dictionary(stored).binaryPropertyList()
    }

    // MARK: Opening

    /// Opens the store in `location`'s schema with `model`, checking that the store was made
    /// from it (entity numbering and version hashes, as the SQLite store does).
    package convenience init(location: PostgreSQLLocation, model: ManagedObjectModel, readOnly: Bool = false) throws {
        try self.init(connection: try PostgreSQLConnection(location), model: model, readOnly: readOnly, staged: false)
    }

    /// Opens the store on `connection`; `staged`: in the transaction that is making it, which
    /// the store holds as its saves' transaction until `PostgreSQLStoreWriter` commits it.
    init(connection: PostgreSQLConnection, model: ManagedObjectModel, readOnly: Bool, staged: Bool) throws {
        let location = connection.location
        if let refusal = StoreError.refusingComposites(in: model, storeType: Self.storeType, path: location.redacted) { throw refusal }
        self.location = location
        self.model = model
        self.isReadOnly = readOnly
        schema = TableLayout(model: model)
        (readPlans, writePlans) = schema.plans(for: model)
        prefix = postgreSQLQuoted(location.schema) + "."
        self.connection = connection
        self.staged = staged
        if staged {
            heldSavesBegun = 1
            heldSaves = (1, true)
        }
        if !readOnly && !staged { try connection.requireUTF8("cannot write this store") }
        let (uuid, metadata) = try Self.readMetadata(connection)
        identifier = uuid
        currentMetadata = metadata
        currentMetadata[StoreMetadata.Key.storeUUID] = .string(uuid)
        guard metadata[StoreMetadata.Key.storeType]?.stringValue == Self.storeType else {
            throw StoreError(.wrongStoreType, path: location.redacted, "its metadata says store type '\(metadata[StoreMetadata.Key.storeType]?.stringValue ?? "none")', not PostgreSQL")
        }
        try checkModel(metadata)
        if !staged, !schema.ownerKeys.isEmpty || !schema.unknownLayouts.isEmpty {
            let tables = Set(try connection.execute("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = $1", [.text(location.schema)]).column(0))
            if let refusal = try StoreError.refusingMissingRelationshipStorage(of: schema, tables: tables, path: location.redacted, columns: { table in
                Set(try connection.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2",
                                           [.text(location.schema), .text(table)]).column(0).map { $0.uppercased() })
            }) { throw refusal }
        }
        if readOnly { try connection.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY") }
        if try !readOnly && !staged && SQLiteHistory.isTracked(tables: PostgreSQLHistory.tableNames(connection)) {
            let recorder = HistoryRecorder(schema: schema, model: model)
            try PostgreSQLHistory.prepareNotes(slots: recorder.slots, connection)
            history = recorder
        }
        // After the notes table: counts set anew write the counted rows, which history's
        // triggers note (and `prepareDerivedAttributes` forgets: they are no save's changes).
        if !readOnly && !staged { try Self.prepareDerivedAttributes(schema: schema, model: model, prefix: prefix, connection) }
    }

    /// The metadata of the store at `location`, reading only `Z_METADATA`.
    package static func readMetadata(at location: PostgreSQLLocation) throws -> [String: PropertyListValue] {
        let connection = try PostgreSQLConnection(location)
        var (uuid, metadata) = try readMetadata(connection)
        metadata[StoreMetadata.Key.storeUUID] = .string(uuid)
        return metadata
    }

    /// Replaces the metadata of the store at `location`, writing only `Z_METADATA` (the keys the
    /// stack owns kept as they are).
    package static func writeMetadata(_ metadata: [String: PropertyListValue], at location: PostgreSQLLocation) throws {
        let connection = try PostgreSQLConnection(location)
        try connection.transaction {
            let (uuid, current) = try readMetadata(connection, locking: true)
            var stored = metadata
            stored[StoreMetadata.Key.storeType] = current[StoreMetadata.Key.storeType]
            stored[StoreMetadata.Key.storeUUID] = .string(uuid)
            var previous = current
            previous[StoreMetadata.Key.storeUUID] = .string(uuid)
            try writeMetadata(stored, previous: previous, prefix: postgreSQLQuoted(location.schema) + ".", connection)
        }
    }

    static func readMetadata(_ connection: PostgreSQLConnection, locking: Bool = false) throws -> (String, [String: PropertyListValue]) {
        let location = connection.location
        let tables = try connection.execute("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = $1", [.text(location.schema)])
        let names = Set((0..<tables.count).compactMap { tables.text($0, 0) })
        guard !names.isEmpty else {
            throw StoreError(.notFound, path: location.redacted, "no store in schema \(postgreSQLQuoted(location.schema)) (it has no tables, or does not exist); check the schema's name, or create the store")
        }
        guard names.contains("Z_METADATA"), names.contains("Z_PRIMARYKEY") else {
            throw StoreError(.notAStore, path: location.redacted, "schema \(postgreSQLQuoted(location.schema)) has no Z_METADATA and Z_PRIMARYKEY tables: it is not a Lade store")
        }
        let result = try connection.execute("SELECT \"Z_UUID\", \"Z_PLIST\" FROM \(postgreSQLQuoted(location.schema)).\"Z_METADATA\" WHERE \"Z_VERSION\" = 1\(locking ? " FOR UPDATE" : "")")
        guard result.count == 1, let uuid = result.text(0, 0) else {
            throw StoreError(.notAStore, path: location.redacted, "Z_METADATA has no row for version 1")
        }
        guard let plist = result.bytes(0, 1), let decoded = try? PropertyListValue.decode(plist), var metadata = decoded.dictionaryValue else {
            throw StoreError(.notAStore, path: location.redacted, "Z_METADATA.Z_PLIST is not a property list dictionary")
        }
        try StoreMetadata.checkTypes(metadata, path: location.redacted, place: "Z_METADATA.Z_PLIST")
        if names.contains(checkpointTable) {
            let rows = try connection.execute("SELECT \"Z_KEY\", \"Z_PLIST\" FROM \(postgreSQLQuoted(location.schema)).\"\(checkpointTable)\"")
            for row in 0..<rows.count {
                guard let key = rows.text(row, 0), let bytes = rows.bytes(row, 1), let value = (try? PropertyListValue.decode(bytes))?.dictionaryValue?["value"] else {
                    throw StoreError(.notAStore, path: location.redacted, "\(checkpointTable) has a row that is not a property list value (key \(rows.text(row, 0) ?? "NULL"))")
                }
                metadata[key] = value
            }
        }
        return (uuid, metadata)
    }

    /// The model cache in the store at `location` (Core Data's `Z_MODELCACHE` form), or nil.
    package static func modelCache(at location: PostgreSQLLocation) throws -> Data? {
        let connection = try PostgreSQLConnection(location)
        _ = try readMetadata(connection)
        let result = try connection.execute("SELECT \"Z_CONTENT\" FROM \(postgreSQLQuoted(location.schema)).\"Z_MODELCACHE\" LIMIT 1")
        return result.count == 1 ? result.bytes(0, 0) : nil
    }

    private func checkModel(_ metadata: [String: PropertyListValue]) throws {
        let stored = try connection.execute("SELECT \"Z_ENT\", \"Z_NAME\" FROM \(prefix)\"Z_PRIMARYKEY\"")
        var names: [Int64: String] = [:]
        for row in 0..<stored.count { if let number = stored.integer(row, 0), let name = stored.text(row, 1) { names[number] = name } }
        var differing: Set<String> = []
        for entity in schema.entities {
            let described = model.entity(named: entity.name)!
            guard let name = names[entity.number], name == entity.name || name == described.renamingIdentifier else { differing.insert(entity.name); continue }
        }
        for (number, name) in names where schema.entity(number: number) == nil && !SQLiteHistory.isHistoryEntity(number, name: name) { differing.insert(name) }
        if let hashes = StoreMetadata.entitiesWithDifferentHashes(in: metadata, model: model) { differing.formUnion(hashes) }
        guard differing.isEmpty else {
            let names = differing.sorted()
            throw StoreError(.modelMismatch(entities: names), path: location.redacted,
                             "the store does not match the model (entity numbering or version hashes differ for \(names.joined(separator: ", "))); open it with the model version it was made with, or migrate it to this version first")
        }
    }

    // MARK: Connections

    /// Runs `body` on the store's connection under its lock; a connection the server dropped
    /// is made anew first when no transaction is held on it (one that is held is lost with it).
    func withConnection<T>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        try lock.withLock {
            if !connection.isAlive && heldSaves == nil && !bulkInsertOpen {
                connection = try PostgreSQLConnection(location)
                if let history { try PostgreSQLHistory.prepareNotes(slots: history.slots, connection) }
            }
            return try body(connection)
        }
    }

    /// The store's metadata as Core Data reports it, `NSStoreUUID` included.
    package var metadata: [String: PropertyListValue] { lock.withLock { currentMetadata } }

    func metadataCommitted(_ metadata: [String: PropertyListValue]) {
        lock.withLock {
            currentMetadata = metadata
            currentMetadata[StoreMetadata.Key.storeUUID] = .string(identifier)
            currentMetadata[StoreMetadata.Key.storeType] = .string(Self.storeType)
        }
    }

    // MARK: Keys

    /// `count` keys of `root`'s hierarchy: from the block this store holds, or from a new block
    /// taken from `Z_PRIMARYKEY` (and committed at once) on the key connection, of at least
    /// `block` keys (`keyBlockSize` when nil).
    func takeKeys(root: Int64, count: Int, block blockSize: Int? = nil) throws -> ClosedRange<Int64> {
        let wanted = Int64(count)
        if let block = keyBlocks[root], Int64(block.count) >= wanted {
            keyBlocks[root] = block.lowerBound + wanted <= block.upperBound ? (block.lowerBound + wanted)...block.upperBound : nil
            return block.lowerBound...(block.lowerBound + wanted - 1)
        }
        let size = max(wanted, blockSize.map(Int64.init) ?? Self.keyBlockSize)
        if !staged && (keyConnection == nil || keyConnection?.isAlive == false) {
            let made = try PostgreSQLConnection(location)
            // A block's commit need not wait for its WAL to reach the disk (which, between two
            // batches' COPYs, flushed the last batch's WAL while the writer waited: a fsync
            // per block). Safe: a key is written only in a transaction whose commit comes after
            // the block's commit in the WAL, and that commit (synchronous) flushes the block's
            // with it; a crash before then loses the block and every row that used it.
            try made.execute("SET synchronous_commit = off")
            keyConnection = made
        }
        let result = try (staged ? connection : keyConnection!).execute("UPDATE \(prefix)\"Z_PRIMARYKEY\" SET \"Z_MAX\" = \"Z_MAX\" + $1 WHERE \"Z_ENT\" = $2 RETURNING \"Z_MAX\"", [.integer(size), .integer(root)])
        guard let end = result.integer(0, 0) else {
            throw StoreError(.damaged([]), path: location.redacted, "Z_PRIMARYKEY has no row for entity number \(root)")
        }
        let start = end - size + 1
        keyBlocks[root] = start + wanted <= end ? (start + wanted)...end : nil
        return start...(start + wanted - 1)
    }

    /// Gives keys back to the block they came from, when they are the last handed out of it.
    func giveBackKeys(root: Int64, _ keys: ClosedRange<Int64>) {
        if let block = keyBlocks[root] {
            if keys.upperBound + 1 == block.lowerBound { keyBlocks[root] = keys.lowerBound...block.upperBound }
        } else {
            keyBlocks[root] = keys
        }
    }

    /// Sets every hierarchy's `Z_MAX` to at least its largest key (after rows were written with
    /// keys of their own: a conversion).
    func adoptPrimaryKeys(_ connection: PostgreSQLConnection) throws {
        for table in schema.tables {
            guard let root = schema.entity(named: table.rootEntity) else { continue }
            try connection.execute("UPDATE \(prefix)\"Z_PRIMARYKEY\" SET \"Z_MAX\" = GREATEST(\"Z_MAX\", (SELECT COALESCE(MAX(\"Z_PK\"), 0) FROM \(prefix)\(postgreSQLQuoted(table.name)))) WHERE \"Z_ENT\" = $1", [.integer(root.number)])
        }
    }
}

extension PostgreSQLConnection {
    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            if isAlive { _ = try? execute("ROLLBACK") }
            throw error
        }
    }
}

extension PostgreSQLStore {
    /// The transaction that made the store ended (committed or rolled back).
    func endStaging() {
        lock.withLock { heldSaves = nil }
    }
}

// MARK: Metadata in rows

extension PostgreSQLStore {
    /// Where keys of Lade's own (`lade.…`: an import's checkpoint, a seed's flag) are kept, one
    /// row each, so that runs of different jobs writing one store at once never write one shared
    /// row (`Z_METADATA`'s), and never undo each other's keys.
    static let checkpointTable = "Z_LADECHECKPOINT"

    static func checkpointTableStatement(_ prefix: String) -> String {
        "CREATE TABLE IF NOT EXISTS \(prefix)\"\(checkpointTable)\" (\"Z_KEY\" text PRIMARY KEY, \"Z_PLIST\" bytea NOT NULL)"
    }

    /// Whether a metadata key is kept in a row of its own.
    static func isRowKey(_ key: String) -> Bool { key.hasPrefix("lade.") }

    /// Writes what changed from `previous` to `metadata`: each changed `lade.…` key in its own
    /// row (set or deleted), and the other keys' changes applied to `Z_METADATA`'s dictionary
    /// as it is now (read under a row lock), so keys another writer set meanwhile are kept.
    static func writeMetadata(_ metadata: [String: PropertyListValue], previous: [String: PropertyListValue], prefix: String, _ connection: PostgreSQLConnection) throws {
        var plistChanges: [String: PropertyListValue?] = [:]
        for key in Set(metadata.keys).union(previous.keys) where metadata[key] != previous[key] && key != StoreMetadata.Key.storeUUID {
            guard isRowKey(key) else { plistChanges[key] = .some(metadata[key]); continue }
            if let value = metadata[key] {
                let bytes = try PropertyListValue.dictionary(["value": value]).binaryPropertyList()
                try connection.execute("INSERT INTO \(prefix)\"\(checkpointTable)\" (\"Z_KEY\", \"Z_PLIST\") VALUES ($1, $2) ON CONFLICT (\"Z_KEY\") DO UPDATE SET \"Z_PLIST\" = EXCLUDED.\"Z_PLIST\"", [.text(key), .bytes(bytes)])
            } else {
                try connection.execute("DELETE FROM \(prefix)\"\(checkpointTable)\" WHERE \"Z_KEY\" = $1", [.text(key)])
            }
        }
        guard !plistChanges.isEmpty else { return }
        let current = try connection.execute("SELECT \"Z_PLIST\" FROM \(prefix)\"Z_METADATA\" WHERE \"Z_VERSION\" = 1 FOR UPDATE")
        var stored = current.bytes(0, 0).flatMap { try? PropertyListValue.decode($0) }?.dictionaryValue ?? [:]
        for (key, value) in plistChanges { stored[key] = value }
        try connection.execute("UPDATE \(prefix)\"Z_METADATA\" SET \"Z_PLIST\" = $1 WHERE \"Z_VERSION\" = 1", [.bytes(try encodedMetadata(stored))])
    }

    /// Writes `metadata` as this store's saves do: what changed since the store last read or
    /// wrote it.
    func writeMetadata(_ metadata: [String: PropertyListValue], _ connection: PostgreSQLConnection) throws {
        try Self.writeMetadata(metadata, previous: currentMetadataUnlocked, prefix: prefix, connection)
    }
}
