import Foundation

/// Persistent history in a PostgreSQL store: Core Data's three tables (`SQLiteHistory`), typed
/// as the store types its columns (`PostgreSQLValueCoding`), written and read with the SQLite
/// store's statements (`HistoryRecorder`, `SQLiteHistory+Reading.swift`) over
/// `PostgreSQLHistoryDatabase`. docs/postgresql.md says what is recorded and in which order.
///
/// - Notes: PostgreSQL has no temporary triggers, so each entity table has statement triggers
///   of the store's own (`lade_history_note_<n>`, with transition tables: one statement notes
///   all its rows, `COPY` included) that note into the session's temporary table
///   `lade_history_notes`, which a store opened for writing makes on its connection. A session
///   without it (psql, another program) cannot write the entity tables of a store that keeps
///   history: the trigger refuses, rather than let a commit go unrecorded.
/// - Order: a commit's history starts by locking the history entities' `Z_PRIMARYKEY` rows
///   (`SELECT … FOR UPDATE`), held until `COMMIT`. Writers therefore record one after another,
///   each taking its keys after the one before committed: `ATRANSACTION.Z_PK` is the commit
///   order, and a reader asking for the transactions after token T never misses one that
///   commits later with a smaller number. Only the end of a commit is serialised (its history
///   rows and the `COMMIT`); the data is written concurrently as before.
enum PostgreSQLHistory {
    /// The session's notes table (as `HistoryDatabase.notesTable`).
    static let notesTable = "pg_temp.lade_history_notes"

    /// Makes the history tables, their indexes, their `Z_PRIMARYKEY` rows and the triggers
    /// (in the caller's transaction).
    static func create(for model: ManagedObjectModel, schema: TableLayout, prefix: String, _ connection: PostgreSQLConnection) throws {
        try createTables(for: model, prefix: prefix, connection)
        for (number, name) in SQLiteHistory.primaryKeyRows {
            try connection.execute("INSERT INTO \(prefix)\"Z_PRIMARYKEY\" (\"Z_ENT\", \"Z_NAME\", \"Z_SUPER\", \"Z_MAX\") VALUES ($1, $2, 0, 0)", [.integer(number), .text(name)])
        }
        try installTriggers(schema: schema, model: model, prefix: prefix, connection)
    }

    /// The three tables and their indexes, with `tombstones` `ZTOMBSTONE` columns (default:
    /// as many as `model` needs).
    static func createTables(for model: ManagedObjectModel, tombstones: Int? = nil, prefix: String, _ connection: PostgreSQLConnection) throws {
        for (table, columns) in SQLiteHistory.tableColumns(tombstones: tombstones ?? SQLiteHistory.tombstoneSlots(of: model)) {
            let definitions = columns.map { column in
                column.name == "Z_PK" ? "\"Z_PK\" bigint PRIMARY KEY" : "\(postgreSQLQuoted(column.name)) \(PostgreSQLValueCoding.columnType(column.type))"
            }
            try connection.execute("CREATE TABLE \(prefix)\(postgreSQLQuoted(table)) (\(definitions.joined(separator: ", ")))")
        }
        for index in SQLiteHistory.indexes {
            try connection.execute("CREATE \(index.unique ? "UNIQUE " : "")INDEX \(postgreSQLQuoted(index.name)) ON \(prefix)\(postgreSQLQuoted(index.table)) (\(postgreSQLQuoted(index.column)))")
        }
    }

    /// Makes (again) the trigger functions and triggers that note each entity table's changed
    /// rows, dropping those of an earlier version first (a migration's).
    static func installTriggers(schema: TableLayout, model: ManagedObjectModel, prefix: String, _ connection: PostgreSQLConnection) throws {
        try dropTriggers(connection)
        let recorder = HistoryRecorder(schema: schema, model: model)
        let notes = notesTable
        let refusal = "this store keeps persistent history, which only Lade records (a session of its own notes each change): write it with Lade"
        for (number, noted) in recorder.tables.enumerated() {
            let function = "\(prefix)\"lade_history_note_\(number)\""
            let table = prefix + postgreSQLQuoted(noted.table.name)
            let changed = noted.tracked.isEmpty ? "''" : noted.tracked.map { position, column in
                let quoted = postgreSQLQuoted(column.name)
                return "(CASE WHEN o.\(quoted) IS DISTINCT FROM n.\(quoted) THEN '\(position),' ELSE '' END)"
            }.joined(separator: " || ")
            // A tombstone is kept as bytes (its column is BLOB, bytea here): a value of another
            // type as its text.
            let tombstones = noted.tombstones.map { cases -> String in
                guard !cases.isEmpty else { return ", NULL" }
                let values = cases.map { entity, column in
                    let value = "o.\(postgreSQLQuoted(column.name))"
                    return "WHEN \(entity) THEN \(PostgreSQLValueCoding.columnType(column.declaredType) == "bytea" ? value : "convert_to(\(value)::text, 'UTF8')")"
                }
                return ", CASE o.\"Z_ENT\" \(values.joined(separator: " ")) END"
            }.joined()
            let slots = (0..<recorder.slots).map { ", \"t\($0)\"" }.joined()
            try connection.execute("""
                CREATE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS $lade$
                BEGIN
                    IF to_regclass('\(notes)') IS NULL THEN
                        RAISE EXCEPTION '\(refusal)' USING ERRCODE = '55000';
                    END IF;
                    IF TG_OP = 'INSERT' THEN
                        INSERT INTO \(notes) ("type", "entity", "pk") SELECT 0, n."Z_ENT", n."Z_PK" FROM lade_new n;
                    ELSIF TG_OP = 'UPDATE' THEN
                        INSERT INTO \(notes) ("type", "entity", "pk", "columns") SELECT 1, n."Z_ENT", n."Z_PK", \(changed) FROM lade_old o JOIN lade_new n ON n."Z_PK" = o."Z_PK";
                    ELSE
                        INSERT INTO \(notes) ("type", "entity", "pk"\(slots)) SELECT 2, o."Z_ENT", o."Z_PK"\(tombstones) FROM lade_old o;
                    END IF;
                    RETURN NULL;
                END
                $lade$
                """)
            try connection.execute("CREATE TRIGGER lade_history_insert AFTER INSERT ON \(table) REFERENCING NEW TABLE AS lade_new FOR EACH STATEMENT EXECUTE FUNCTION \(function)()")
            try connection.execute("CREATE TRIGGER lade_history_update AFTER UPDATE ON \(table) REFERENCING OLD TABLE AS lade_old NEW TABLE AS lade_new FOR EACH STATEMENT EXECUTE FUNCTION \(function)()")
            try connection.execute("CREATE TRIGGER lade_history_delete AFTER DELETE ON \(table) REFERENCING OLD TABLE AS lade_old FOR EACH STATEMENT EXECUTE FUNCTION \(function)()")
        }
    }

    /// Drops the trigger functions (and with them their triggers) of the store's schema.
    static func dropTriggers(_ connection: PostgreSQLConnection) throws {
        let found = try connection.execute("SELECT p.proname FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace s ON s.oid = p.pronamespace WHERE s.nspname = $1 AND p.proname LIKE 'lade\\_history\\_note\\_%'",
                                           [.text(connection.location.schema)])
        for row in 0..<found.count {
            guard let name = found.text(row, 0) else { continue }
            try connection.execute("DROP FUNCTION \(postgreSQLQuoted(connection.location.schema)).\(postgreSQLQuoted(name))() CASCADE")
        }
    }

    /// Makes the session's notes table on `connection` (a store that keeps history, opened for
    /// writing, on each connection it writes with).
    static func prepareNotes(slots: Int, _ connection: PostgreSQLConnection) throws {
        let tombstones = (0..<slots).map { ", \"t\($0)\" bytea" }.joined()
        try connection.execute("CREATE TEMPORARY TABLE IF NOT EXISTS lade_history_notes (\"seq\" bigserial, \"type\" bigint, \"entity\" bigint, \"pk\" bigint, \"columns\" text\(tombstones))")
    }

    /// The table names of the store's schema.
    static func tableNames(_ connection: PostgreSQLConnection) throws -> Set<String> {
        let result = try connection.execute("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = $1", [.text(connection.location.schema)])
        return Set((0..<result.count).compactMap { result.text($0, 0) })
    }

    // MARK: Reading and pruning without a stack

    /// The transactions after `bound` of the store at `location` (`lade history`).
    static func transactions(at location: PostgreSQLLocation, after bound: PersistentHistory.Bound?) throws -> [PersistentHistory.Transaction] {
        try reading(location, "reading the persistent history") { database in
            try SQLiteHistory.transactions(in: database, path: location.redacted, after: bound)
        }
    }

    /// Deletes the transactions before `bound` of the store at `location`, in one transaction.
    static func deleteTransactions(at location: PostgreSQLLocation, before bound: PersistentHistory.Bound) throws -> PersistentHistory.Pruned {
        try reading(location, "pruning the persistent history (nothing was deleted)") { database in
            try SQLiteHistory.deleteTransactions(in: database, path: location.redacted, before: bound)
        }
    }

    private static func reading<T>(_ location: PostgreSQLLocation, _ doing: String, _ body: (PostgreSQLHistoryDatabase) throws -> T) throws -> T {
        do {
            let connection = try PostgreSQLConnection(location)
            _ = try PostgreSQLStore.readMetadata(connection)
            return try body(PostgreSQLHistoryDatabase(connection: connection))
        } catch let error as PostgreSQLError {
            throw error.storeError(doing)
        }
    }

    // MARK: Conversion

    /// Every row of the three tables and the history entities' `Z_MAX`, for a conversion.
    static func tableRows(_ connection: PostgreSQLConnection) throws -> HistoryTableRows? {
        let database = PostgreSQLHistoryDatabase(connection: connection)
        return try HistoryTableRows.read(database)
    }
}

/// The history statements on a PostgreSQL store's connection, in its schema: `?` parameters
/// numbered as PostgreSQL's, values as `PostgreSQLValueCoding` converts them.
struct PostgreSQLHistoryDatabase: HistoryDatabase {
    let connection: PostgreSQLConnection

    private var prefix: String { postgreSQLQuoted(connection.location.schema) + "." }

    func table(_ name: String) -> String { prefix + postgreSQLQuoted(name) }

    /// `sql` with its `?`s as `$1`, `$2`, … (the shared statements hold no `?` in a literal).
    static func numbered(_ sql: String) -> String {
        var result = ""
        var number = 0
        for character in sql {
            if character == "?" {
                number += 1
                result += "$\(number)"
            } else {
                result.append(character)
            }
        }
        return result
    }

    func rows(_ sql: String, _ values: [SQLiteValue]) throws -> [[SQLiteValue]] {
        let result = try connection.execute(Self.numbered(sql), values.map(PostgreSQLValueCoding.from))
        return (0..<result.count).map { row in (0..<result.columnCount).map { PostgreSQLValueCoding.sqliteValue(result.value(row, $0)) } }
    }

    func forEachRow(_ sql: String, _ body: ([SQLiteValue]) throws -> Void) throws {
        for row in try rows(sql, []) { try body(row) }
    }

    func run(_ sql: String, _ values: [SQLiteValue]) throws {
        try connection.execute(Self.numbered(sql), values.map(PostgreSQLValueCoding.from))
    }

    /// One `COPY` per call.
    func insert(into table: String, columns: [String], rows: [[SQLiteValue]]) throws {
        guard !rows.isEmpty else { return }
        var next = 0
        _ = try connection.copyIn("COPY \(self.table(table)) (\(columns.map(postgreSQLQuoted).joined(separator: ", "))) FROM STDIN") { buffer in
            while next < rows.count && buffer.count < 1 << 20 {
                for (index, value) in rows[next].enumerated() {
                    if index > 0 { buffer.append(9) }
                    PostgreSQLCopyText.append(PostgreSQLValueCoding.from(value), to: &buffer)
                }
                buffer.append(10)
                next += 1
            }
            return next < rows.count
        }
    }

    func tableNames() throws -> Set<String> { try PostgreSQLHistory.tableNames(connection) }

    func changeColumns() throws -> Set<String> {
        let result = try connection.execute("SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped", [.text(table("ACHANGE"))])
        return Set((0..<result.count).compactMap { result.text($0, 0) })
    }

    var blobType: String { "bytea" }
    var lockingClause: String { " FOR UPDATE" }
    var notesTable: String { PostgreSQLHistory.notesTable }
    var notesOrder: String { "\"seq\"" }
    func inTransaction<T>(_ body: () throws -> T) throws -> T { try connection.transaction(body) }
}

extension PostgreSQLStore {
    /// Records the history of the transaction open on `connection`, when the store keeps
    /// history (under the store's lock, just before `COMMIT`).
    func recordHistory(_ connection: PostgreSQLConnection) throws {
        try history?.record(PostgreSQLHistoryDatabase(connection: connection))
    }

    /// Sets who the commit the next write goes into is recorded as (under the store's lock).
    func noteAuthorship(_ authorship: HistoryAuthorship) {
        history?.authorship = authorship
    }

    /// Whether this store keeps persistent history (it has Core Data's history tables).
    package var keepsHistory: Bool { history != nil }
}

/// A persistent-history tombstone on PostgreSQL. Its column is BLOB in SQLite, where it keeps
/// the value of the attribute it preserves as that column held it (text, an integer, a real or
/// bytes); here it is `bytea`, so the store's triggers keep a value of another type as its text
/// (`convert_to(value::text, 'UTF8')`). A conversion writes SQLite's tombstones in that form,
/// and reads them back by the type of the column they came from, so SQLite → PostgreSQL →
/// SQLite gives back the same values with the same storage classes.
enum PostgreSQLTombstone {
    /// A tombstone read from SQLite (or written by a conversion) as this store keeps it.
    static func bytes(_ value: SQLiteValue) -> SQLiteValue {
        switch value {
        case .null, .blob: value
        case .text(let text): .blob(Data(text.utf8))
        case .integer(let number): .blob(Data(String(number).utf8))
        case .real(let number): .blob(Data(PostgreSQLValue.doubleText(number).utf8))
        }
    }

    /// A tombstone kept here as SQLite keeps it, by the declared type of the column it came
    /// from (nil: not known, kept as bytes). Text that does not read as that type stays bytes.
    static func sqliteValue(_ value: SQLiteValue, declaredType: String?) -> SQLiteValue {
        guard case .blob(let data) = value, let declaredType else { return value }
        let kind = PostgreSQLValueCoding.columnType(declaredType)
        guard kind != "bytea", let text = String(validating: data, as: UTF8.self) else { return value }
        switch kind {
        case "text":
            return .text(text)
        case "bigint":
            return Int64(text).map { .integer($0) } ?? value
        case "double precision":
            return double(text).map { .real($0) } ?? value
        case "numeric":
            // As a DECIMAL column (NUMERIC affinity) holds it: an integer when the number is
            // whole and fits, else a real (what SQLite made of the decimal's text).
            guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), let real = double(text) else { return value }
            if let whole = Int64(exactly: real), Decimal(whole) == decimal { return .integer(whole) }
            return .real(real)
        default:
            return value
        }
    }

    /// PostgreSQL's text of a `double precision` (its names for the infinities and NaN).
    private static func double(_ text: String) -> Double? {
        switch text {
        case "NaN": .nan
        case "Infinity": .infinity
        case "-Infinity": -.infinity
        default: Double(text)
        }
    }
}
