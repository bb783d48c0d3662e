import Foundation

/// How predicates and sort descriptors compare values, in one place, so that the evaluator,
/// in-memory sorting and the SQL the store runs agree:
/// - numbers (integers, floating, decimals, booleans, dates as seconds) compare numerically,
///   as SQLite compares INTEGER and REAL (exactly, even an integer beyond 2^53 with a double);
/// - strings and URIs compare by their UTF-8 bytes (SQLite's BINARY collation), not by
///   Swift's canonical-equivalence `==`; `[c]`/`[d]` compare folded strings (`StringComparison`);
/// - binary data compares bytewise; UUIDs as their 16 bytes (stored as BLOB).
/// Values of different kinds (a number and a string) do not compare: equality is false and
/// ordering comparisons are false, as the SQL compiler decides from the model's types.
enum ValueComparison {
    enum Key: Equatable {
        case number(Double, exact: Int64?)
        case text(String)
        case bytes([UInt8])
        /// A composite value: equal only to the same elements and values, never ordered.
        case composite([String: AttributeValue])
    }

    /// What a value is, for deciding whether two values compare at all.
    enum Kind: Equatable {
        case null, number, text, bytes, object, collection, composite
    }

    static func key(_ value: AttributeValue) -> Key {
        switch value {
        case .integer(let v): .number(Double(v), exact: v)
        case .double(let v): .number(v, exact: nil)
        case .float(let v): .number(Double(v), exact: nil)
        case .decimal(let v): decimalKey(v)
        case .bool(let v): .number(v ? 1 : 0, exact: v ? 1 : 0)
        case .date(let v): .number(v.timeIntervalSinceReferenceDate, exact: nil)
        case .string(let v): .text(v)
        case .uri(let v): .text(v.absoluteString)
        case .binary(let v): .bytes(Array(v))
        case .uuid(let v): .bytes(withUnsafeBytes(of: v.uuid) { Array($0) })
        case .composite(let v): .composite(v)
        }
    }

    /// A decimal as SQLite holds it in a NUMERIC column: an integer when it is whole and fits,
    /// otherwise the nearest double.
    private static func decimalKey(_ value: Decimal) -> Key {
        let double = NSDecimalNumber(decimal: value).doubleValue
        if let whole = AttributeValue.integralDecimal(NSDecimalNumber(decimal: value).description(withLocale: Locale(identifier: "en_US_POSIX"))) {
            return .number(Double(whole), exact: whole)
        }
        return .number(double, exact: nil)
    }

    static func kind(_ value: AttributeValue) -> Kind {
        switch value {
        case .integer, .double, .float, .decimal, .bool, .date: .number
        case .string, .uri: .text
        case .binary, .uuid: .bytes
        case .composite: .composite
        }
    }

    static func kind(_ value: PredicateValue) -> Kind {
        switch value {
        case .null: .null
        case .attribute(let attribute): kind(attribute)
        case .object: .object
        case .collection: .collection
        }
    }

    /// -1, 0 or 1; nil when the two are of kinds that do not compare (a number and a string).
    static func compare(_ a: AttributeValue, _ b: AttributeValue, _ options: ComparisonOptions = []) -> Int? {
        switch (key(a), key(b)) {
        case (.number(let x, let ex), .number(let y, let ey)):
            switch (ex, ey) {
            case (let ex?, let ey?): return ex == ey ? 0 : (ex < ey ? -1 : 1)
            case (let ex?, nil): return compare(integer: ex, double: y)
            case (nil, let ey?): return compare(integer: ey, double: x).map { -$0 }
            case (nil, nil): return x == y ? 0 : (x < y ? -1 : (x > y ? 1 : nil))
            }
        case (.text(let x), .text(let y)):
            return StringComparison.compare(x, y, options)
        case (.bytes(let x), .bytes(let y)):
            return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        case (.composite(let x), .composite(let y)):
            return x == y ? 0 : nil
        default:
            return nil
        }
    }

    /// An integer and a double compared exactly, as SQLite does.
    static func compare(integer: Int64, double: Double) -> Int? {
        if double.isNaN { return nil }
        if double >= 9223372036854775808.0 { return -1 }
        if double < -9223372036854775808.0 { return 1 }
        let whole = Int64(double.rounded(.down))
        if integer != whole { return integer < whole ? -1 : 1 }
        return double > Double(whole) ? -1 : 0
    }
}
