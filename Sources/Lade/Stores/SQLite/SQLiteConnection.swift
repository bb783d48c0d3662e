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
package final class SQLiteConnection {
    package enum Mode: Sendable, Equatable {
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
        ///
        /// A store this process may not write (`FileSystem.writeProtection(ofFile:)`), or in a
        /// directory it cannot write, is opened `immutable` when its `-wal` and `-journal` hold
        /// nothing: SQLite then reads the file alone and makes no `-wal` or `-shm`, which it
        /// could not, or should not, make there (all that was committed is in the file then;
        /// with a `-wal` that holds pages, which `immutable` would not read, it is opened
        /// read-only as usual).
        case readOnly
        /// Opens for writing. An existing file this process may not write, one with no write
        /// permission at all, or one in a directory this process cannot write (where SQLite
        /// makes its `-wal` and `-shm`) is refused with `store.readOnly` before SQLite opens
        /// it, so nothing is made beside it.
        case readWrite(create: Bool)
    }

    let handle: OpaquePointer
    package let path: String
    /// What Core Data's derived-attribute triggers report on this connection (see
    /// `CoreDataTriggerFunctions`).
    let triggerReports: TriggerReportLog
    package let mode: Mode

    /// Done once, before the first connection opens: SQLite's memory statistics off (nothing
    /// here reads them, and they take a global mutex on every allocation SQLite makes).
    private static let configured: Void = { _ = lade_sqlite3_disable_memstatus() }()

    package init(path: String, mode: Mode, busyTimeout: TimeInterval = 5) throws {
        Self.configured
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        var queryOnly = false
        var name = path
        switch mode {
        case .readOnly:
            switch try Self.readingWay(path) {
            case .queryOnly:
                queryOnly = true
                flags |= SQLITE_OPEN_READWRITE
            case .immutable(let uri):
                name = uri
                flags |= SQLITE_OPEN_READONLY
            case .readOnly:
                flags |= SQLITE_OPEN_READONLY
            }
        case .readWrite(let create):
            if !create && Self.isPlainPath(path) && FileManager.default.fileExists(atPath: path) {
                try FileSystem.requireWritableStore(URL(fileURLWithPath: FileSystem.resolvedPath(path)),
                                                    directoryUse: "SQLite makes the store's -wal and -shm files there")
            }
            flags |= SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        }
        var connection: OpaquePointer?
        let code = sqlite3_open_v2(name, &connection, flags, nil)
        guard code == SQLITE_OK, let connection else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            if let connection { sqlite3_close_v2(connection) }
            throw SQLiteError(code: code, message: message, path: path)
        }
        // SQLite opens a file it may not write read-only instead of failing: a writer would
        // fail at its first write, and leave a -wal and -shm. (Nothing has been read yet, so
        // closing now leaves nothing.)
        if case .readWrite = mode, sqlite3_db_readonly(connection, "main") == 1 {
            sqlite3_close_v2(connection)
            throw StoreError(.readOnly, path: path, "the store is read-only: SQLite cannot open it for writing (the file or its file system is read-only); make it writable to change it; it can still be read (reading writes nothing)")
        }
        sqlite3_extended_result_codes(connection, 1)
        sqlite3_busy_timeout(connection, Int32(busyTimeout * 1000))
        SQLiteFunctions.register(on: connection)
        let triggerReports = TriggerReportLog()
        CoreDataTriggerFunctions.register(on: connection, log: triggerReports)
        if queryOnly {
            let code = sqlite3_exec(connection, "PRAGMA query_only = 1", nil, nil, nil)
            guard code == SQLITE_OK else {
                let message = String(cString: sqlite3_errmsg(connection))
                sqlite3_close_v2(connection)
                throw SQLiteError(code: code, message: message, path: path)
            }
        }
        self.handle = connection
        self.triggerReports = triggerReports
        self.path = path
        self.mode = mode
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// How a read-only connection opens a file (see `Mode.readOnly`).
    private enum ReadingWay {
        /// Read-write under `query_only`: SQLite removes the `-wal` and `-shm` at close.
        case queryOnly
        /// `file:…?immutable=1`: no `-wal` or `-shm` made, no locks taken.
        case immutable(uri: String)
        case readOnly
    }

    /// A regular file (through its links: SQLite follows them, and makes companions beside the
    /// file they name) this process may write, in a directory it may write, with no `-wal`,
    /// `-shm` or `-journal` beside it, is read under `query_only` (a hot journal is never
    /// rolled back here); a write-protected one whose `-wal` and `-journal` hold nothing,
    /// `immutable`; anything else read-only. (Reading a `-wal` that holds pages needs a `-shm`
    /// beside it: where none is and none can be made, that is refused as such, not read
    /// without the `-wal`'s pages.)
    private static func readingWay(_ path: String) throws -> ReadingWay {
        guard isPlainPath(path) else { return .readOnly }
        let file = FileSystem.resolvedPath(path)
        var info = stat()
        guard stat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return .readOnly }
        let directory = (file as NSString).deletingLastPathComponent
        if FileSystem.writeProtection(ofFile: file) == nil && FileSystem.writeProtection(ofDirectory: directory) == nil {
            return FileSystem.hasCompanions(file) ? .readOnly : .queryOnly
        }
        guard FileSystem.companionHoldingWrites(file) != nil else { return .immutable(uri: immutableURI(file)) }
        if access(FileSystem.Companion.shm.path(beside: file), F_OK) != 0, let reason = FileSystem.writeProtection(ofDirectory: directory) {
            throw StoreError(.io, path: path, "cannot read the store: its -wal holds changes not yet in the file, and SQLite reads them only with a -shm file beside it, which it cannot make: \(reason); let a user who may write the store and its directory empty the -wal into the file (sqlite3 STORE 'PRAGMA wal_checkpoint(TRUNCATE)'), then read it again")
        }
        return .readOnly
    }

    /// A path SQLite takes as a file's name (not a `file:` URI, `:memory:` or a temporary database).
    private static func isPlainPath(_ path: String) -> Bool {
        !path.hasPrefix("file:") && path != ":memory:" && !path.isEmpty
    }

    /// `file:PATH?immutable=1`, the path percent-encoded as SQLite's URIs need.
    /// Related SQLite documentation: <https://www.sqlite.org/uri.html>
    private static func immutableURI(_ path: String) -> String {
        var encoded = "file:"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                encoded.append(Character(UnicodeScalar(byte)))
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded + "?immutable=1"
    }

    func error(_ code: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(handle) != 0 ? sqlite3_extended_errcode(handle) : code,
                    message: String(cString: sqlite3_errmsg(handle)), sql: sql, path: path)
    }

    /// Runs one statement that takes no arguments. SQL holding more than one statement is
    /// refused, not run, so a name that carried SQL into a statement could never add another.
    package func execute(_ sql: String) throws {
        try prepare(sql).run([])
    }

    package func prepare(_ sql: String) throws -> SQLiteStatement {
        try SQLiteStatement(connection: self, sql: sql)
    }

    /// Every row of a query.
    package func rows(_ sql: String, _ values: [SQLiteValue] = []) throws -> [[SQLiteValue]] {
        try prepare(sql).rows(values)
    }

    /// Runs `body` in one transaction (`BEGIN IMMEDIATE`, so a writer waits for the lock up
    /// front instead of failing at its first write); commits when it returns, rolls back when it throws.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
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
    package var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// The rowid of the last row inserted on this connection.
    package var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the last statement.
    package var changes: Int { Int(sqlite3_changes(handle)) }

    /// The names of the tables in the database.
    package func tableNames() throws -> Set<String> {
        try schemaNames(type: "table")
    }

    /// The indexes the file has (SQLite's own `sqlite_autoindex_…` among them), by name.
    package func indexNames() throws -> Set<String> {
        try schemaNames(type: "index")
    }

    private func schemaNames(type: String) throws -> Set<String> {
        Set(try rows("SELECT name FROM sqlite_master WHERE type = ?", [.text(type)]).compactMap {
            if case .text(let name) = $0[0] { return name } else { return nil }
        })
    }
}
