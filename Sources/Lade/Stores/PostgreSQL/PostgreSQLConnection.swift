import CLibPQ
import Foundation

/// A value sent to or read from PostgreSQL, as the PostgreSQL store keeps attribute values:
/// each case is one column type, so a parameter always has the type of the column it meets.
package enum PostgreSQLValue: Sendable, Hashable {
    case null
    /// `bigint`.
    case integer(Int64)
    /// `double precision`.
    case double(Double)
    /// `text` (never NUL: PostgreSQL refuses it in text).
    case text(String)
    /// `bytea`.
    case bytes(Data)
    /// `numeric`, as its exact decimal text.
    case numeric(String)

    /// The type OID libpq is told, so a parameter never takes its type from guesswork.
    var typeOID: Oid {
        switch self {
        // NULL takes the type of what it meets (a column, an operand).
        case .null: 0
        case .text: 25
        case .integer: 20
        case .double: 701
        case .bytes: 17
        case .numeric: 1700
        }
    }

    /// The parameter as text (binary for bytes), as `PQexecParams` takes it.
    var wire: (bytes: [UInt8]?, binary: Bool) {
        switch self {
        case .null: (nil, false)
        case .integer(let v): (Array(String(v).utf8), false)
        case .double(let v): (Array(Self.doubleText(v).utf8), false)
        case .text(let v): (Array(v.utf8), false)
        case .numeric(let v): (Array(v.utf8), false)
        case .bytes(let v): ([UInt8](v), true)
        }
    }

    /// A double as PostgreSQL reads it back exactly: Swift's shortest round-trip digits, and
    /// PostgreSQL's names for the infinities and NaN.
    static func doubleText(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        return "\(value)"
    }
}

extension PostgreSQLValue {
    /// Text is equal when its bytes are, as the server's unique indexes and `=` take it (a
    /// deterministic collation): Swift's own `String ==` takes canonically equivalent text
    /// (NFC and NFD `é`) for one, which would merge two keys the table keeps apart, and take a
    /// value changed only in its form for unchanged (as `AttributeValue` does, for SQLite).
    package static func == (lhs: PostgreSQLValue, rhs: PostgreSQLValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.integer(let a), .integer(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.text(let a), .text(let b)), (.numeric(let a), .numeric(let b)): AttributeValue.sameBytes(a, b)
        case (.bytes(let a), .bytes(let b)): a == b
        default: false
        }
    }

    package func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .integer(let v): hasher.combine(1); hasher.combine(v)
        case .double(let v): hasher.combine(2); hasher.combine(v)
        case .text(let v): hasher.combine(3); AttributeValue.hashBytes(v, into: &hasher)
        case .bytes(let v): hasher.combine(4); hasher.combine(v)
        case .numeric(let v): hasher.combine(5); AttributeValue.hashBytes(v, into: &hasher)
        }
    }
}

/// One connection to a PostgreSQL server (libpq, blocking): statements with typed parameters,
/// results as text, `COPY … FROM STDIN`. Not shared between threads at once: a store uses it
/// under its own lock.
///
/// Every error names the store by its redacted URL and never carries a password.
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/libpq.html>
package final class PostgreSQLConnection: @unchecked Sendable {
    package let location: PostgreSQLLocation
    private let handle: OpaquePointer

    /// Connects as the URL, libpq's `PG*` variables and `~/.pgpass` say.
    package init(_ location: PostgreSQLLocation) throws {
        self.location = location
        let keywords = ["dbname", "fallback_application_name"]
        let values = [location.connectionURL, "lade"]
        let handle: OpaquePointer? = keywords.withCStrings { keywordPointers in
            values.withCStrings { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let handle else {
            throw StoreError(.connection, path: location.redacted, "libpq could not allocate a connection (out of memory)")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = Self.message(of: handle)
            PQfinish(handle)
            throw StoreError(.connection, path: location.redacted, "cannot connect: \(location.redacting(message)); check that the server runs, and the host, port, user and database (a password comes from ~/.pgpass or PGPASSWORD)")
        }
        self.handle = handle
        // The server's notices (NOTICE: drop cascades to …) are for an interactive session;
        // libpq would print them on standard error, beside Lade's own output.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        // Numbers in one form, whatever the server's defaults.
        _ = try execute("SET client_encoding = 'UTF8'; SET datestyle = 'ISO'; SET extra_float_digits = 3", simple: true)
        // Messages in English where the role may choose (lc_messages is a superuser's setting:
        // an ordinary role keeps the server's language, and connects all the same).
        _ = try? execute("SET lc_messages = 'C'", simple: true)
    }

    deinit { PQfinish(handle) }

    /// The server process serving this connection (`pg_backend_pid()`).
    package var backendPID: Int32 { PQbackendPID(handle) }

    /// The database's encoding, as the server reported it when the connection started.
    package var serverEncoding: String {
        PQparameterStatus(handle, "server_encoding").map { String(cString: $0) } ?? "unknown"
    }

    /// Refuses to write a store in a database whose encoding is not UTF8. Lade's strings are
    /// Unicode, as Core Data's are: a LATIN1 (or SQL_ASCII, …) database would refuse a
    /// character it lacks (`€` in LATIN1) in the middle of a run, failing the whole batch, or
    /// (SQL_ASCII) keep bytes it never checks. Reading such a store is not refused.
    package func requireUTF8(_ doing: String) throws {
        let encoding = serverEncoding
        guard encoding != "UTF8" else { return }
        throw StoreError(.invalidLocation, path: location.redacted, "\(doing): the database's encoding is \(encoding), not UTF8; Lade keeps text as Unicode (UTF-8), which a \(encoding) database cannot hold whole (in LATIN1 no €, no ő, no emoji), so it makes and writes stores in UTF8 databases only: create one with CREATE DATABASE name ENCODING 'UTF8' TEMPLATE template0 (with LC_COLLATE and LC_CTYPE 'C' or a UTF-8 locale), and name it in the URL")
    }

    /// Whether the connection still stands (false after the server went away).
    package var isAlive: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Runs `sql` with `$1…` bound to `parameters`; the rows it returns, as text.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [PostgreSQLValue] = []) throws -> PostgreSQLResult {
        try execute(sql, parameters, simple: false)
    }

    /// Runs several statements separated by `;` with no parameters (DDL, SET).
    package func executeScript(_ sql: String) throws {
        _ = try execute(sql, simple: true)
    }

    /// Statements sent so far (for tests that count round trips).
    package private(set) var statementsSent = 0

    private func execute(_ sql: String, _ parameters: [PostgreSQLValue] = [], simple: Bool) throws -> PostgreSQLResult {
        statementsSent += 1
        guard parameters.count <= 65_535 else {
            throw StoreError(.postgresql(sqlState: "54000"), path: location.redacted, "a statement with \(parameters.count) parameters (PostgreSQL takes at most 65,535); this is a defect in Lade: report it")
        }
        let result: OpaquePointer?
        if simple {
            result = PQexec(handle, sql)
        } else {
            let wires = parameters.map(\.wire)
            let types = parameters.map(\.typeOID)
            let lengths = wires.map { Int32($0.bytes?.count ?? 0) }
            let formats = wires.map { Int32($0.binary ? 1 : 0) }
            result = wires.withBytePointers { pointers in
                PQexecParams(handle, sql, Int32(parameters.count), types, pointers, lengths, formats, 0)
            }
        }
        return try check(result, sql: sql)
    }

    /// Sends `COPY … FROM STDIN` (text format) and the rows `produce` writes, in chunks; the
    /// number of rows copied. `sql` may begin with statements that return no rows (a
    /// `SAVEPOINT`), sent in the same round trip; an error in one of them is thrown as the
    /// COPY's, and the COPY is not run. `produce` is called until it returns false, each time with an
    /// empty buffer to fill with whole rows (tab-separated, `\N` for NULL, escaped as
    /// ``PostgreSQLCopyText`` does). `whileFinishing` is called once the last rows are sent,
    /// while the server inserts what it has not yet read (tens of milliseconds of its work,
    /// buffered in the socket) and before its result is read; it must not use this connection.
    package func copyIn(_ sql: String, whileFinishing: (() -> Void)? = nil, _ produce: (inout [UInt8]) throws -> Bool) throws -> Int {
        guard let started = PQexec(handle, sql) else { throw lost() }
        guard PQresultStatus(started) == PGRES_COPY_IN else { return try check(started, sql: sql).affectedRows }
        PQclear(started)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        var failure: Error?
        while true {
            buffer.removeAll(keepingCapacity: true)
            let more: Bool
            do { more = try produce(&buffer) } catch { failure = error; break }
            if !buffer.isEmpty {
                let sent = buffer.withUnsafeBufferPointer { pointer in
                    pointer.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) }
                }
                guard sent == 1 else { break }
            }
            if !more { break }
        }
        if let failure {
            _ = PQputCopyEnd(handle, "aborted by lade")
            _ = drain()
            throw failure
        }
        let ended = PQputCopyEnd(handle, nil)
        if ended == 1, let whileFinishing { whileFinishing() }
        guard let finished = PQgetResult(handle) else { throw lost() }
        let result = try check(finished, sql: sql)
        _ = drain()
        return result.affectedRows
    }

    /// Reads what is left of a command's results, so the connection is ready for the next one.
    private func drain() -> Bool {
        while let result = PQgetResult(handle) { PQclear(result) }
        return true
    }

    private func check(_ result: OpaquePointer?, sql: String) throws -> PostgreSQLResult {
        guard let result else { throw lost() }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgreSQLResult(result)
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } ?? Self.message(of: handle)
            let detail = PQresultErrorField(result, Int32(UInt8(ascii: "D"))).map { " (\(String(cString: $0)))" } ?? ""
            PQclear(result)
            // An error without SQLSTATE is libpq's own. A write to a socket the server closed
            // (EPIPE: "server closed the connection unexpectedly") leaves the status OK until
            // libpq next reads, so it reads now: a lost connection then shows as one.
            if state.isEmpty { _ = PQconsumeInput(handle) }
            if PQstatus(handle) != CONNECTION_OK || state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03" {
                throw StoreError(.connection, path: location.redacted, "the connection to the server was lost: \(location.redacting(primary)); nothing of the unfinished transaction was kept: run again when the server is back")
            }
            throw PostgreSQLError(sqlState: state, message: location.redacting(primary + detail), location: location)
        }
    }

    private func lost() -> StoreError {
        StoreError(.connection, path: location.redacted, "the connection to the server was lost: \(location.redacting(Self.message(of: handle))); nothing of the unfinished transaction was kept: run again when the server is back")
    }

    private static func message(of handle: OpaquePointer) -> String {
        guard let text = PQerrorMessage(handle) else { return "no message from libpq" }
        let message = String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
        return message.isEmpty ? "no message from libpq" : message.replacingOccurrences(of: "\n", with: "; ")
    }
}

/// A statement the server refused: its SQLSTATE and message, as ``StoreError`` with kind
/// `.postgresql(sqlState:)` once the store knows what it was doing.
package struct PostgreSQLError: Error, Sendable {
    package let sqlState: String
    package let message: String
    package let location: PostgreSQLLocation

    /// A unique constraint was violated (23505).
    package var isUniqueViolation: Bool { sqlState == "23505" }
    /// A serialization failure or deadlock: the transaction may succeed when run again.
    package var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }

    /// As a store error, with what was being done in front.
    package func storeError(_ doing: String) -> StoreError {
        StoreError(.postgresql(sqlState: sqlState), path: location.redacted, "\(doing): \(said)")
    }

    /// The server's words and SQLSTATE; an error without one is libpq's own, and says so.
    var said: String { sqlState.isEmpty ? "libpq said: \(message)" : "the server said: \(message) (SQLSTATE \(sqlState))" }
}

extension PostgreSQLError: LadeError, CustomStringConvertible {
    package var code: String { "store.postgresql" }
    package var description: String { "\(location.redacted): \(said)" }
}

/// The rows of a statement's result, read as text (PostgreSQL's text output).
package final class PostgreSQLResult: @unchecked Sendable {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { PQclear(handle) }

    package var count: Int { Int(PQntuples(handle)) }
    package var columnCount: Int { Int(PQnfields(handle)) }
    /// Rows a command changed (INSERT, UPDATE, DELETE, COPY).
    package var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    package func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(handle, Int32(row), Int32(column)) == 1 }

    package func text(_ row: Int, _ column: Int) -> String? {
        guard !isNull(row, column), let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return value.withMemoryRebound(to: UInt8.self, capacity: length) { String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self) }
    }

    package func integer(_ row: Int, _ column: Int) -> Int64? { text(row, column).flatMap { Int64($0) } }

    /// The non-NULL values of one column, as text, in row order.
    package func column(_ column: Int) -> [String] { (0..<count).compactMap { text($0, column) } }

    package func double(_ row: Int, _ column: Int) -> Double? {
        guard let text = text(row, column) else { return nil }
        switch text {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default: return Double(text)
        }
    }

    /// A `bytea` value (PostgreSQL's hex output, `\x…`).
    package func bytes(_ row: Int, _ column: Int) -> Data? {
        guard let text = text(row, column) else { return nil }
        return Self.hexBytes(text)
    }

    static func hexBytes(_ text: String) -> Data? {
        var utf8 = text.utf8.makeIterator()
        guard utf8.next() == UInt8(ascii: "\\"), utf8.next() == UInt8(ascii: "x") else { return nil }
        var data = Data(capacity: (text.utf8.count - 2) / 2)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        while let high = utf8.next() {
            guard let low = utf8.next(), let h = nibble(high), let l = nibble(low) else { return nil }
            data.append(h << 4 | l)
        }
        return data
    }

    /// The value at a column as the type the column holds (for reading a row whatever its
    /// column types): by the column's type OID.
    package func value(_ row: Int, _ column: Int) -> PostgreSQLValue {
        guard let text = text(row, column) else { return .null }
        switch PQftype(handle, Int32(column)) {
        case 20, 21, 23: return Int64(text).map(PostgreSQLValue.integer) ?? .text(text)
        case 700, 701: return double(row, column).map(PostgreSQLValue.double) ?? .text(text)
        case 1700: return .numeric(text)
        case 17: return Self.hexBytes(text).map(PostgreSQLValue.bytes) ?? .text(text)
        default: return .text(text)
        }
    }
}

/// COPY's text format: a value escaped so that a tab, newline, carriage return or backslash in
/// it is never read as a separator; NULL as `\N`.
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/sql-copy.html>
package enum PostgreSQLCopyText {
    package static func append(_ value: PostgreSQLValue, to buffer: inout [UInt8]) {
        switch value {
        case .null: buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "N")])
        case .integer(let v): appendDigits(v, to: &buffer)
        case .double(let v): buffer.append(contentsOf: PostgreSQLValue.doubleText(v).utf8)
        case .numeric(let v): buffer.append(contentsOf: v.utf8)
        case .text(let v): escape(v, to: &buffer)
        case .bytes(let v):
            // bytea's hex input, its backslash escaped for COPY.
            buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "x")])
            let digits = Array("0123456789abcdef".utf8)
            for byte in v { buffer.append(digits[Int(byte >> 4)]); buffer.append(digits[Int(byte & 15)]) }
        }
    }

    /// An integer's decimal digits, as `String(v)` gives them, with no string made (a bulk
    /// import writes several per row: keys, entity numbers, foreign keys).
    static func appendDigits(_ value: Int64, to buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: Int64's 19 digits fit
        withUnsafeMutableBytes(of: &digits) { bytes in
            var start = bytes.count
            repeat {
                start -= 1
                bytes[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            buffer.append(contentsOf: bytes[start...])
        }
    }

    /// `text` with backslash, tab, newline and carriage return escaped; the bytes between
    /// them copied a run at a time (a bulk import escapes every text value it writes).
    private static func escape(_ text: String, to buffer: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            var start = 0
            for index in 0..<bytes.count {
                let escaped: UInt8
                switch bytes[index] {
                case UInt8(ascii: "\\"): escaped = UInt8(ascii: "\\")
                case UInt8(ascii: "\t"): escaped = UInt8(ascii: "t")
                case UInt8(ascii: "\n"): escaped = UInt8(ascii: "n")
                case UInt8(ascii: "\r"): escaped = UInt8(ascii: "r")
                default: continue
                }
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                buffer.append(UInt8(ascii: "\\"))
                buffer.append(escaped)
                start = index + 1
            }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
    }
}

/// An identifier as PostgreSQL SQL: always in double quotes, a quote inside doubled, so no name
/// (a schema named `x"; DROP …` included) can end it.
package func postgreSQLQuoted(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

private extension Array where Element == String {
    /// Calls `body` with NUL-terminated C strings of the elements, followed by a NULL pointer.
    func withCStrings<R>(_ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let copies = map { strdup($0) }
        defer { copies.forEach { free($0) } }
        return body(copies.map { UnsafePointer($0) } + [nil])
    }
}

private extension Array where Element == (bytes: [UInt8]?, binary: Bool) {
    /// Calls `body` with a pointer to each element's bytes (nil for NULL), alive during the call.
    func withBytePointers<R>(_ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let copies: [UnsafeMutablePointer<CChar>?] = map { wire in
            guard let bytes = wire.bytes else { return nil }
            // Text-format values are read up to their NUL (libpq ignores their lengths).
            let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (offset, byte) in bytes.enumerated() { pointer[offset] = CChar(bitPattern: byte) }
            pointer[bytes.count] = 0
            return pointer
        }
        defer { copies.forEach { $0?.deallocate() } }
        return body(copies.map { $0.map { UnsafePointer($0) } })
    }
}
