import Foundation

/// How a SQLite store executes a lightweight migration: in place, with SQL, in one
/// transaction, as Core Data migrates a SQLite store on opening it. `LightweightMigration`
/// (in `Migration/`) plans it and decides what is refused; this carries out what it inferred.
extension InferredMapping {
    /// Carries the SQLite store at `url` to `destination`, in one transaction: a failure or a
    /// kill leaves it at the old version. A damaged store is refused before anything is
    /// written; objects that cannot be carried (shared values of a new uniqueness constraint,
    /// a required attribute without a value) are refused (`Refusal`) with the transaction
    /// rolled back.
    ///
    /// `progress` is told each table being rebuilt, with its rows.
    func executeOnSQLiteStore(at url: URL, progress: (@Sendable (String) -> Void)?) throws {
        if let refusal = StoreError.refusingComposites(in: destination, storeType: StoreMetadata.sqliteStoreType, path: url.path) { throw refusal }
        if let refusal = StoreError.refusingUnknownLayouts(of: destinationSchema, storeType: StoreMetadata.sqliteStoreType, path: url.path) { throw refusal }
        // Rows of no entity, or keys to missing objects, would be dropped or carried as they
        // are: a damaged store is refused before anything is written (`lade check` says where).
        let damage = try SQLiteStore(url: url, model: source, readOnly: true).damage(thorough: false)
        guard damage.isEmpty else { throw StoreError.damaged(damage, path: url.path) }
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
        } catch let error as SQLiteError {
            throw StoreError(path: url.path, sqlite: error)
        }
        do {
            try connection.transaction {
                try migrate(SQLiteMigrationSQL(connection: connection, path: url.path), progress: progress)
            }
            _ = try connection.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch let error as SQLiteError {
            throw StoreError(path: url.path, sqlite: error)
        }
    }
}

/// The SQLite side of a migration in place (`InferredMapping.migrate`).
struct SQLiteMigrationSQL: MigrationSQL {
    let connection: SQLiteConnection
    let path: String
    var storeType: String { StoreMetadata.sqliteStoreType }

    func execute(_ sql: String) throws { try connection.execute(sql) }
    func rows(_ sql: String) throws -> [[SQLiteValue]] { try connection.rows(sql) }
    func quoted(_ name: String) -> String { TableLayout.quoted(name) }
    func tableNames() throws -> Set<String> { try connection.tableNames() }
    func indexNames() throws -> Set<String> {
        Set(try connection.rows("SELECT name FROM sqlite_master WHERE type = 'index'").compactMap { row -> String? in
            if case .text(let name) = row[0] { return name } else { return nil } })
    }
    func indexName(_ index: TableLayout.Index) -> String { index.name }
    func columnType(_ declaredType: String) -> String { declaredType }
    func createTable(_ table: TableLayout.Table, of schema: TableLayout) -> String {
        schema.createStatements.first { $0.hasPrefix("CREATE TABLE \(TableLayout.quoted(table.name)) ") }!
    }
    func createJoinTable(_ join: TableLayout.JoinTable, of schema: TableLayout) -> String {
        schema.createStatements.first { $0.hasPrefix("CREATE TABLE \(TableLayout.quoted(join.name)) ") }!
    }
    func createIndex(_ index: TableLayout.Index, ifNotExists: Bool) -> String { index.createStatement(ifNotExists: ifNotExists) }
    func dropIndex(_ index: TableLayout.Index) -> String { "DROP INDEX IF EXISTS \(TableLayout.quoted(index.name))" }
    func greatest(_ a: String, _ b: String) -> String { "MAX(\(a), \(b))" }
    func literal(_ value: SQLiteValue) -> String { InferredMapping.literal(value) }
    func installDerivedAttributes(schema: TableLayout, model: ManagedObjectModel) throws {
        try SQLiteStore.installDerivedAttributeTriggers(schema: schema, model: model, connection: connection)
    }
    func renumberHistory(tables: Set<String>, numbers: [(old: Int64, new: Int64)]) throws {
        try SQLiteHistory.renumberChanges(self, tables: tables, numbers: numbers)
    }
    func readMetadata() throws -> [String: PropertyListValue] { try SQLiteStore.readMetadata(connection, path: path).1 }
    func writeMetadata(_ metadata: [String: PropertyListValue]) throws {
        try connection.prepare("UPDATE Z_METADATA SET Z_PLIST = ? WHERE Z_VERSION = 1").run([try SQLiteStore.encodedMetadata(metadata)])
    }
    func replaceModelCache(_ cache: Data?) throws {
        if try !connection.tableNames().contains("Z_MODELCACHE") { try connection.execute(TableLayout.modelCacheTableStatement) }
        try connection.execute("DELETE FROM Z_MODELCACHE")
        if let cache { try connection.prepare("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)").run([.blob(cache)]) }
    }
}
