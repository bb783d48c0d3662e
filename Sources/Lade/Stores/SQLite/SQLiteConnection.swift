import CSQLite
import Foundation

/// One connection to a SQLite database file. Not thread-safe: a connection belongs to one
/// queue at a time (the store serialises its use).
///
/// ```swift
/// let connection = try SQLiteConnection(path: "catalog.sqlite", mode: .readWrite(create: true))
/// try connection.transaction { try connection.execute("CREATE TABLE t (x)") }
/// ```
///
/// Related SQLite documentation: <https://www.sqlite.org/c3ref/open.html>
public final class SQLiteConnection {
    public enum Mode: Sendable, Equatable {
        /// Opens for reading only; SQLite never writes the database or its `-wal`.
        ///
        /// A WAL-mode database read through a read-only connection keeps the `-wal` and
        /// `-shm` that reading creates: only a connection that may write removes them when it
        /// closes. So when the file has no companions yet (and may be written), the
        /// connection is opened read-write with `PRAGMA query_only`, which refuses every
        /// write, and SQLite itself removes the empty `-wal` and `-shm` at close when no other
        /// connection uses them: the directory is left as it was. (Should a writer start
        /// meanwhile and close first, SQLite may checkpoint that writer's committed pages into
        /// the file at this connection's close, as any reader of a WAL store may: what the
        /// store holds is never changed by this connection.)
        case readOnly
        case readWrite(create: Bool)
    }

    let handle: OpaquePointer
    public let path: String
    public let mode: Mode

    /// Done once, before the first connection opens: SQLite's memory statistics off (nothing
    /// here reads them, and they take a global mutex on every allocation SQLite makes).
    private static let configured: Void = { _ = lade_sqlite3_disable_memstatus() }()

    public init(path: String, mode: Mode, busyTimeout: TimeInterval = 5) throws {
        Self.configured
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        var queryOnly = false
        switch mode {
        case .readOnly:
            queryOnly = Self.leavesNoCompanions(path)
            flags |= queryOnly ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY
        case .readWrite(let create): flags |= SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        }
        var connection: OpaquePointer?
        let code = sqlite3_open_v2(path, &connection, flags, nil)
        guard code == SQLITE_OK, let connection else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            if let connection { sqlite3_close_v2(connection) }
            throw SQLiteError(code: code, message: message, path: path)
        }
        sqlite3_extended_result_codes(connection, 1)
        sqlite3_busy_timeout(connection, Int32(busyTimeout * 1000))
        SQLiteFunctions.register(on: connection)
        if queryOnly {
            let code = sqlite3_exec(connection, "PRAGMA query_only = 1", nil, nil, nil)
            guard code == SQLITE_OK else {
                let message = String(cString: sqlite3_errmsg(connection))
                sqlite3_close_v2(connection)
                throw SQLiteError(code: code, message: message, path: path)
            }
        }
        self.handle = connection
        self.path = path
        self.mode = mode
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Whether a read-only open may use a read-write connection under `query_only` (see
    /// `Mode.readOnly`): a regular file this process may write, in a writable directory, with
    /// no `-wal`, `-shm` or `-journal` beside it (a hot journal is never rolled back here).
    private static func leavesNoCompanions(_ path: String) -> Bool {
        guard !path.hasPrefix("file:"), path != ":memory:", !path.isEmpty else { return false }
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, access(path, W_OK) == 0 else { return false }
        let directory = (path as NSString).deletingLastPathComponent
        guard access(directory.isEmpty ? "." : directory, W_OK) == 0 else { return false }
        return ["-wal", "-shm", "-journal"].allSatisfy { access(path + $0, F_OK) != 0 }
    }

    func error(_ code: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(handle) != 0 ? sqlite3_extended_errcode(handle) : code,
                    message: String(cString: sqlite3_errmsg(handle)), sql: sql, path: path)
    }

    /// Runs one statement that takes no arguments. SQL holding more than one statement is
    /// refused, not run, so a name that carried SQL into a statement could never add another.
    public func execute(_ sql: String) throws {
        try prepare(sql).run([])
    }

    public func prepare(_ sql: String) throws -> SQLiteStatement {
        try SQLiteStatement(connection: self, sql: sql)
    }

    /// Every row of a query.
    public func rows(_ sql: String, _ values: [SQLiteValue] = []) throws -> [[SQLiteValue]] {
        try prepare(sql).rows(values)
    }

    /// Runs `body` in one transaction (`BEGIN IMMEDIATE`, so a writer waits for the lock up
    /// front instead of failing at its first write); commits when it returns, rolls back when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Lets `PRAGMA writable_schema` change `sqlite_master` on this connection, whatever
    /// default SQLite was built with (`SQLITE_DBCONFIG_DEFENSIVE` off): for a store being
    /// created only (`SQLiteStore.createTables`).
    func allowSchemaWrites() throws {
        let code = lade_sqlite3_allow_schema_writes(handle)
        guard code == SQLITE_OK else { throw error(code, sql: nil) }
    }

    /// Whether a transaction is open on this connection (SQLite's autocommit mode is off).
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// The rowid of the last row inserted on this connection.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// The names of the tables in the database.
    public func tableNames() throws -> Set<String> {
        try schemaNames(type: "table")
    }

    /// The indexes the file has (SQLite's own `sqlite_autoindex_…` among them), by name.
    public func indexNames() throws -> Set<String> {
        try schemaNames(type: "index")
    }

    private func schemaNames(type: String) throws -> Set<String> {
        Set(try rows("SELECT name FROM sqlite_master WHERE type = ?", [.text(type)]).compactMap {
            if case .text(let name) = $0[0] { return name } else { return nil }
        })
    }
}
