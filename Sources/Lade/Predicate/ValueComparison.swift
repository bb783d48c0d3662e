import Foundation

/// How predicates and sort descriptors compare values, in one place, so that the evaluator,
/// in-memory sorting and the SQL the store runs agree:
/// - numbers (integers, floating, decimals, booleans, dates as seconds) compare numerically,
///   as SQLite compares INTEGER and REAL;
/// - strings compare by their UTF-8 bytes (SQLite's BINARY collation), not by Swift's
///   canonical-equivalence `==`;
/// - binary data compares bytewise; UUIDs as their 16 bytes (stored as BLOB); URIs as text.
enum ValueComparison {
    enum Key: Equatable {
        case number(Double, exact: Int64?)
        case text([UInt8])
        case bytes([UInt8])
    }

    static func key(_ value: AttributeValue) -> Key {
        switch value {
        case .integer(let v): .number(Double(v), exact: v)
        case .double(let v): .number(v, exact: nil)
        case .float(let v): .number(Double(v), exact: nil)
        case .decimal(let v): .number(NSDecimalNumber(decimal: v).doubleValue, exact: nil)
        case .bool(let v): .number(v ? 1 : 0, exact: v ? 1 : 0)
        case .date(let v): .number(v.timeIntervalSinceReferenceDate, exact: nil)
        case .string(let v): .text(Array(v.utf8))
        case .uri(let v): .text(Array(v.absoluteString.utf8))
        case .binary(let v): .bytes(Array(v))
        case .uuid(let v): .bytes(withUnsafeBytes(of: v.uuid) { Array($0) })
        }
    }

    /// -1, 0 or 1; nil when the two are of kinds that do not compare (a number and a string).
    static func compare(_ a: AttributeValue, _ b: AttributeValue) -> Int? {
        switch (key(a), key(b)) {
        case (.number(let x, let ex), .number(let y, let ey)):
            if let ex, let ey { return ex == ey ? 0 : (ex < ey ? -1 : 1) }
            return x == y ? 0 : (x < y ? -1 : 1)
        case (.text(let x), .text(let y)), (.bytes(let x), .bytes(let y)):
            return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        default:
            return nil
        }
    }
}
