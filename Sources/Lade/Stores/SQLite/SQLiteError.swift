import CSQLite
import Foundation

/// An error SQLite returned, with everything needed to act on it.
///
/// Its description reads as one sentence:
/// `SQLite error 19: UNIQUE constraint failed: ZPRODUCT.ZSKU - while executing INSERT INTO ZPRODUCT … on /data/catalog.sqlite`.
///
/// Related SQLite documentation: <https://www.sqlite.org/rescode.html>
package struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The (extended) result code.
    package let code: Int32
    package let message: String
    package let sql: String?
    package let path: String?

    package init(code: Int32, message: String, sql: String? = nil, path: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
        self.path = path
    }

    /// `SQLITE_CONSTRAINT_UNIQUE` and `SQLITE_CONSTRAINT_PRIMARYKEY`: macros Swift does not import.
    package static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
    package static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)

    /// The primary result code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT`, …).
    package var primaryCode: Int32 { code & 0xff }

    /// Whether another connection holds the lock this one needed.
    package var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    package var description: String {
        var text = "SQLite error \(code): \(message)"
        if let sql { text += " - while executing `\(sql.count > 200 ? String(sql.prefix(200)) + "…" : sql)`" }
        if let path { text += " on \(path)" }
        return text
    }
}

extension StoreError {
    init(path: String, sqlite error: SQLiteError) {
        self.init(.sqlite(code: error.code), path: path, error.description)
    }
}
