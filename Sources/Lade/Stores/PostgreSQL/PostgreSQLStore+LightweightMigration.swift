import Foundation

/// How a PostgreSQL store executes a lightweight migration: in place, with the same SQL as a
/// SQLite store (`InferredMapping.migrate`), in one transaction (PostgreSQL's DDL is
/// transactional: a failure, a lost connection or a killed process leaves the store at the old
/// version). The transaction's `search_path` is the store's schema, so every statement stays
/// within it.
extension InferredMapping {
    func executeOnPostgreSQLStore(at location: PostgreSQLLocation, progress: (@Sendable (String) -> Void)?) throws {
        if let refusal = StoreError.refusingComposites(in: destination, storeType: PostgreSQLStore.storeType, path: location.redacted) { throw refusal }
        if let refusal = StoreError.refusingUnknownLayouts(of: destinationSchema, storeType: PostgreSQLStore.storeType, path: location.redacted) { throw refusal }
        // A derived attribute the new version's store could not keep is refused before anything changes.
        _ = try PostgreSQLStore.countDerivations(schema: TableLayout(model: destination), model: destination)
        let damage = try PostgreSQLStore(location: location, model: source, readOnly: true).damage(thorough: false)
        guard damage.isEmpty else { throw StoreError.damaged(damage, path: location.redacted) }
        let connection = try PostgreSQLConnection(location)
        do {
            try connection.transaction {
                try connection.execute("SET LOCAL search_path TO \(postgreSQLQuoted(location.schema))")
                let sql = PostgreSQLMigrationSQL(connection: connection)
                try migrate(sql, progress: progress)
                // The old tables took their history triggers with them: the new ones get theirs.
                if SQLiteHistory.isTracked(tables: try sql.tableNames()) {
                    try PostgreSQLHistory.installTriggers(schema: destinationSchema, model: destination, prefix: postgreSQLQuoted(location.schema) + ".", connection)
                }
            }
        } catch let error as PostgreSQLError {
            throw error.storeError("migrating the store to the new version (nothing was changed)")
        }
    }
}

/// The PostgreSQL side of a migration in place: statements on the store's connection, tables
/// found through the transaction's `search_path` (the store's schema).
struct PostgreSQLMigrationSQL: MigrationSQL {
    let connection: PostgreSQLConnection
    var storeType: String { PostgreSQLStore.storeType }
    private var prefix: String { postgreSQLQuoted(connection.location.schema) + "." }

    func execute(_ sql: String) throws { try connection.execute(sql) }

    func rows(_ sql: String) throws -> [[SQLiteValue]] {
        let result = try connection.execute(sql)
        return (0..<result.count).map { row in (0..<result.columnCount).map { PostgreSQLValueCoding.sqliteValue(result.value(row, $0)) } }
    }

    func quoted(_ name: String) -> String { postgreSQLQuoted(name) }

    func tableNames() throws -> Set<String> {
        let result = try connection.execute("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = $1", [.text(connection.location.schema)])
        return Set((0..<result.count).compactMap { result.text($0, 0) })
    }

    func indexNames() throws -> Set<String> {
        let result = try connection.execute("SELECT indexname FROM pg_catalog.pg_indexes WHERE schemaname = $1", [.text(connection.location.schema)])
        return Set((0..<result.count).compactMap { result.text($0, 0) })
    }

    func indexName(_ index: TableLayout.Index) -> String { PostgreSQLStore.indexName(index) }
    func columnType(_ declaredType: String) -> String { PostgreSQLValueCoding.columnType(declaredType) }
    func createTable(_ table: TableLayout.Table, of schema: TableLayout) -> String { PostgreSQLStore.tableStatement(table, prefix: prefix) }
    func createJoinTable(_ join: TableLayout.JoinTable, of schema: TableLayout) -> String { PostgreSQLStore.joinTableStatement(join, prefix: prefix) }
    func createIndex(_ index: TableLayout.Index, ifNotExists: Bool) -> String { PostgreSQLStore.indexStatement(index, prefix: prefix, ifNotExists: ifNotExists) }
    func dropIndex(_ index: TableLayout.Index) -> String { "DROP INDEX IF EXISTS \(prefix)\(postgreSQLQuoted(PostgreSQLStore.indexName(index)))" }
    func greatest(_ a: String, _ b: String) -> String { "GREATEST(\(a), \(b))" }

    func literal(_ value: SQLiteValue) -> String {
        switch value {
        case .blob(let data): "'\\x" + data.map { String(format: "%02x", $0) }.joined() + "'::bytea"
        case .real(let number) where number.isFinite: "'\(PostgreSQLValue.doubleText(number))'::double precision"
        default: InferredMapping.literal(value)
        }
    }

    func installDerivedAttributes(schema: TableLayout, model: ManagedObjectModel) throws {
        try PostgreSQLStore.installDerivedAttributes(schema: schema, model: model, prefix: prefix, connection)
    }
    func renumberHistory(tables: Set<String>, numbers: [(old: Int64, new: Int64)]) throws {
        try SQLiteHistory.renumberChanges(self, tables: tables, numbers: numbers)
    }

    func readMetadata() throws -> [String: PropertyListValue] {
        var (uuid, metadata) = try PostgreSQLStore.readMetadata(connection, locking: true)
        metadata[StoreMetadata.Key.storeUUID] = .string(uuid)
        return metadata
    }

    func writeMetadata(_ metadata: [String: PropertyListValue]) throws {
        try PostgreSQLStore.writeMetadata(metadata, previous: try readMetadata(), prefix: prefix, connection)
    }

    func replaceModelCache(_ cache: Data?) throws {
        try connection.execute("DELETE FROM \(prefix)\"Z_MODELCACHE\"")
        if let cache { try connection.execute("INSERT INTO \(prefix)\"Z_MODELCACHE\" (\"Z_CONTENT\") VALUES ($1)", [.bytes(cache)]) }
    }
}
