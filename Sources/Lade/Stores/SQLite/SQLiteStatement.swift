import CSQLite
import Foundation

/// A prepared statement. Owns its `sqlite3_stmt` and finalizes it when released.
///
/// ```swift
/// let statement = try connection.prepare("SELECT Z_PK FROM ZPRODUCT WHERE ZSKU = ?")
/// try statement.bind([.text("A-1")])
/// while try statement.step() { print(statement.value(at: 0)) }
/// ```
///
/// Related SQLite documentation: <https://www.sqlite.org/c3ref/stmt.html>
package final class SQLiteStatement {
    let handle: OpaquePointer
    package let sql: String
    unowned let connection: SQLiteConnection

    /// Compiles `sql`, which must be one statement: SQL after the first statement (other than
    /// spaces and semicolons) is refused, never silently dropped or run.
    init(connection: SQLiteConnection, sql: String) throws {
        var statement: OpaquePointer?
        var trailing = false
        let code = sql.withCString { text in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v2(connection.handle, text, -1, &statement, &tail)
            if var rest = tail {
                while rest.pointee != 0 {
                    if ![0x20, 0x09, 0x0A, 0x0D, 0x3B].contains(UInt8(bitPattern: rest.pointee)) { trailing = true; break }
                    rest += 1
                }
            }
            return code
        }
        guard code == SQLITE_OK, let statement else {
            throw connection.error(code, sql: sql)
        }
        guard !trailing else {
            sqlite3_finalize(statement)
            throw SQLiteError(code: SQLITE_MISUSE, message: "more than one statement in one call; Lade runs one statement at a time", sql: sql, path: connection.path)
        }
        self.handle = statement
        self.sql = sql
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Resets the statement and binds `values` to its parameters, in order.
    package func bind(_ values: [SQLiteValue]) throws {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let code = bindValue(value, at: Int32(offset + 1))
            guard code == SQLITE_OK else { throw connection.error(code, sql: sql) }
        }
    }

    /// Binds one value; text by its UTF-8 length (a NUL inside is data, not the end), a
    /// zero-length blob as a blob, not as NULL.
    private func bindValue(_ value: SQLiteValue, at index: Int32) -> Int32 {
        switch value {
        case .null: return sqlite3_bind_null(handle, index)
        case .integer(let number): return sqlite3_bind_int64(handle, index, number)
        case .real(let number): return sqlite3_bind_double(handle, index, number)
        case .text(var text):
            return text.withUTF8 { bytes in
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    // An empty string is text, not NULL: bind it from a real (empty) C string.
                    return sqlite3_bind_text(handle, index, "", 0, sqliteTransient)
                }
                guard bytes.count <= Int(Int32.max) else { return SQLITE_TOOBIG }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
                    sqlite3_bind_text(handle, index, chars, Int32(bytes.count), sqliteTransient)
                }
            }
        case .blob(let data):
            guard data.count <= Int(Int32.max) else { return SQLITE_TOOBIG }
            return data.withUnsafeBytes { buffer in
                sqlite3_bind_blob(handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count), sqliteTransient)
            }
        }
    }

    /// Resets the statement to run again; bindings stay until replaced.
    package func reset() {
        sqlite3_reset(handle)
    }

    /// Binds one value to parameter `index` (1-based). Text is bound from its UTF-8 bytes
    /// without an intermediate C string. Binding can only fail for a bad index or a value over
    /// SQLite's size limit; such a failure surfaces when the statement runs.
    package func bind(_ value: SQLiteValue, at index: Int32) {
        _ = bindValue(value, at: index)
    }

    /// Binds text that SQLite reads in place, without copying it (`SQLITE_STATIC`): `bytes`
    /// must stay valid and unchanged until the parameter is bound again or `clearBindings()`
    /// runs. For many keys bound per query, where the copy each would cost shows.
    func bind(unownedText bytes: UnsafeBufferPointer<UInt8>, at index: Int32) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            _ = sqlite3_bind_text(handle, index, "", 0, sqliteTransient)
            return
        }
        // Over SQLite's length limit: NULL, which equals nothing (a key so long is then not found).
        guard bytes.count <= Int(Int32.max) else { _ = sqlite3_bind_null(handle, index); return }
        _ = base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
            sqlite3_bind_text(handle, index, chars, Int32(bytes.count), sqliteStatic)
        }
    }

    /// Sets every parameter to NULL (SQLite then holds no pointer given to `bind(unownedText:at:)`).
    func clearBindings() {
        sqlite3_clear_bindings(handle)
    }

    /// Advances to the next row; false when the statement is done.
    @discardableResult
    package func step() throws -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let failure = connection.error(code, sql: sql)
            sqlite3_reset(handle)
            throw failure
        }
    }

    package var columnCount: Int { Int(sqlite3_column_count(handle)) }

    package func columnName(at index: Int) -> String {
        String(cString: sqlite3_column_name(handle, Int32(index)))
    }

    /// The current row's value in column `index`.
    package func value(at index: Int) -> SQLiteValue {
        let column = Int32(index)
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, column))
        case SQLITE_TEXT:
            // By its length: text may hold NUL bytes, which a C string would end at.
            let count = Int(sqlite3_column_bytes(handle, column))
            guard count > 0, let bytes = sqlite3_column_text(handle, column) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, column))
            guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default: return .null
        }
    }

    /// Whether column `index` of the current row holds exactly `value`: the same storage class
    /// and the same bytes (text by its UTF-8, not by Swift's canonical equivalence; a double
    /// by its bits), read in place, without making a `String` or `Data` of it.
    package func holds(_ value: SQLiteValue, at index: Int) -> Bool {
        switch value {
        case .null: return sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL
        case .integer(let number): return holds(integer: number, at: index)
        case .real(let number): return holds(real: number, at: index)
        case .text(let text): return holds(text: text, at: index)
        case .blob(let data):
            let column = Int32(index)
            let type = sqlite3_column_type(handle, column)
            guard type == SQLITE_BLOB else { return false }
            let bytes = sqlite3_column_blob(handle, column)
            let count = Int(sqlite3_column_bytes(handle, column))
            guard data.count == count else { return false }
            guard count > 0 else { return true }
            guard let bytes else { return false }
            return data.withUnsafeBytes { memcmp($0.baseAddress!, bytes, count) == 0 }
        }
    }

    /// `holds(.integer(number), at:)`.
    package func holds(integer number: Int64, at index: Int) -> Bool {
        let column = Int32(index)
        return sqlite3_column_type(handle, column) == SQLITE_INTEGER && sqlite3_column_int64(handle, column) == number
    }

    /// `holds(.real(number), at:)`: the same bits.
    package func holds(real number: Double, at index: Int) -> Bool {
        let column = Int32(index)
        return sqlite3_column_type(handle, column) == SQLITE_FLOAT && sqlite3_column_double(handle, column).bitPattern == number.bitPattern
    }

    /// `holds(.text(text), at:)`: the same UTF-8 bytes.
    package func holds(text: String, at index: Int) -> Bool {
        guard let stored = textBytes(at: index) else { return false }
        return text.withUTF8Bytes { $0.hasSameBytes(as: stored) }
    }

    /// Column `index` of the current row when it holds an integer.
    func integer(at index: Int) -> Int64? {
        let column = Int32(index)
        return sqlite3_column_type(handle, column) == SQLITE_INTEGER ? sqlite3_column_int64(handle, column) : nil
    }

    /// Column `index` of the current row's UTF-8 bytes, read in place, when it holds text;
    /// valid until the statement steps, resets or is read as another type.
    func textBytes(at index: Int) -> UnsafeBufferPointer<UInt8>? {
        let column = Int32(index)
        guard sqlite3_column_type(handle, column) == SQLITE_TEXT else { return nil }
        // The pointer first, then its length (sqlite3_column_bytes after sqlite3_column_text).
        let bytes = sqlite3_column_text(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0 else { return UnsafeBufferPointer(start: nil, count: 0) }
        // No pointer for text that has bytes: SQLite ran out of memory converting it.
        guard let bytes else { return nil }
        return UnsafeBufferPointer(start: bytes, count: count)
    }

    /// Binds `values`, runs the statement to the end and returns every row.
    package func rows(_ values: [SQLiteValue] = []) throws -> [[SQLiteValue]] {
        try bind(values)
        var result: [[SQLiteValue]] = []
        let count = columnCount
        while try step() {
            result.append((0..<count).map(value(at:)))
        }
        return result
    }

    /// Binds `values` and runs the statement to the end, ignoring any rows.
    package func run(_ values: [SQLiteValue] = []) throws {
        try bind(values)
        while try step() {}
    }
}

/// SQLITE_TRANSIENT: SQLite copies the bound bytes before the call returns.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
/// SQLITE_STATIC: SQLite reads the bound bytes where they are, until they are bound again.
let sqliteStatic = unsafeBitCast(0, to: sqlite3_destructor_type.self)
