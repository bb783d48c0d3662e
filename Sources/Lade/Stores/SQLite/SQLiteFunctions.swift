import CSQLite
import Foundation

/// The SQL functions and collations predicates and sort descriptors compile to where SQL
/// alone would mean something else than the evaluator. Each runs the evaluator's own code
/// (`StringComparison`), so the SQLite store and in-memory evaluation agree by construction.
///
/// - `lade_fold(text, options)`: the `[c]`/`[d]` fold of a string (`options`: 1 = c, 2 = d,
///   3 = cd); other values pass through unchanged.
/// - `lade_text_test(op, text, pattern, options)`: `BEGINSWITH`, `ENDSWITH`, `CONTAINS`,
///   `LIKE` or `MATCHES`; NULL when either side is NULL, 0 when either is not text, an error
///   for a regular expression ICU cannot compile.
/// - Collations `LADE_CASEINSENSITIVE` and `LADE_LOCALIZEDSTANDARD`: the sort comparators.
///
/// Registered on every connection a `SQLiteConnection` opens.
///
/// Related SQLite documentation: <https://www.sqlite.org/c3ref/create_function.html>
enum SQLiteFunctions {
    static let fold = "lade_fold"
    static let textTest = "lade_text_test"
    static let caseInsensitiveCollation = "LADE_CASEINSENSITIVE"
    static let localizedStandardCollation = "LADE_LOCALIZEDSTANDARD"

    static func register(on handle: OpaquePointer) {
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC
        sqlite3_create_function_v2(handle, fold, 2, flags, nil, { context, _, values in
            guard let context, let values, let value = values[0] else { return }
            guard sqlite3_value_type(value) == SQLITE_TEXT else { return sqlite3_result_value(context, value) }
            let options = ComparisonOptions(rawValue: Int(sqlite3_value_int64(values[1])))
            SQLiteFunctions.resultText(context, StringComparison.fold(SQLiteFunctions.text(value), options))
        }, nil, nil, nil)
        sqlite3_create_function_v2(handle, textTest, 4, flags, nil, { context, _, values in
            guard let context, let values, let opValue = values[0], let left = values[1], let right = values[2] else { return }
            let leftType = sqlite3_value_type(left), rightType = sqlite3_value_type(right)
            if leftType == SQLITE_NULL || rightType == SQLITE_NULL { return sqlite3_result_null(context) }
            guard leftType == SQLITE_TEXT, rightType == SQLITE_TEXT,
                  let op = ComparisonOperator(rawValue: SQLiteFunctions.text(opValue))
            else { return sqlite3_result_int64(context, 0) }
            let options = ComparisonOptions(rawValue: Int(sqlite3_value_int64(values[3])))
            let text = SQLiteFunctions.text(left), pattern = SQLiteFunctions.text(right)
            let result: Bool
            switch op {
            case .beginsWith: result = StringComparison.beginsWith(text, pattern, options)
            case .endsWith: result = StringComparison.endsWith(text, pattern, options)
            case .contains: result = StringComparison.contains(text, pattern, options)
            case .like: result = StringComparison.like(text, pattern, options)
            case .matches:
                do {
                    result = try StringComparison.matches(text, pattern, options)
                } catch {
                    return sqlite3_result_error(context, "\(error)", -1)
                }
            default: result = false
            }
            sqlite3_result_int64(context, result ? 1 : 0)
        }, nil, nil, nil)
        sqlite3_create_collation_v2(handle, caseInsensitiveCollation, SQLITE_UTF8, nil, { _, leftCount, left, rightCount, right in
            Int32(StringComparison.caseInsensitiveCompare(
                SQLiteFunctions.text(left, leftCount), SQLiteFunctions.text(right, rightCount)))
        }, nil)
        sqlite3_create_collation_v2(handle, localizedStandardCollation, SQLITE_UTF8, nil, { _, leftCount, left, rightCount, right in
            Int32(StringComparison.localizedStandardCompare(
                SQLiteFunctions.text(left, leftCount), SQLiteFunctions.text(right, rightCount)))
        }, nil)
    }

    private static func text(_ value: OpaquePointer) -> String {
        guard let bytes = sqlite3_value_text(value) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
    }

    private static func text(_ bytes: UnsafeRawPointer?, _ count: Int32) -> String {
        guard let bytes else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: Int(count)), as: UTF8.self)
    }

    private static func resultText(_ context: OpaquePointer, _ text: String) {
        var text = text
        text.withUTF8 { buffer in
            sqlite3_result_text(context, UnsafeRawPointer(buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self), Int32(buffer.count), sqliteTransient)
        }
    }
}
