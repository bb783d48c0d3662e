import Foundation

/// How attribute values are written to and read from Core Data's SQLite columns: dates as
/// seconds since 2001-01-01, booleans as 0/1, UUIDs as their 16 bytes, URIs as text, decimals
/// as numbers (DECIMAL columns have NUMERIC affinity, as in Core Data).
enum SQLiteValueCoding {
    static func encode(_ value: AttributeValue) -> SQLiteValue {
        switch value {
        case .integer(let v): .integer(v)
        case .double(let v): .real(v)
        case .float(let v): .real(Double(v))
        // Decimal's description is locale-independent ("." always) and far cheaper than
        // NSDecimalNumber's, which builds a Locale on every call.
        // A longer one is kept as the double that reads back as it (`refusal` refuses the rest):
        // bound as a double, not left to SQLite's reading of its text.
        case .decimal(let v):
            if DecimalText.significantDigits(of: v) > decimalDigitsKept, let double = DecimalText.doubleReadingBack(as: v) {
                .real(double)
            } else {
                .text(DecimalText.format(v))
            }
        case .bool(let v): .integer(v ? 1 : 0)
        case .date(let v): .real(v.timeIntervalSinceReferenceDate)
        case .string(let v): .text(v)
        case .uri(let v): .text(v.absoluteString)
        case .binary(let v): .blob(v)
        case .uuid(let v): .blob(withUnsafeBytes(of: v.uuid) { Data($0) })
        // Values are checked against their attribute's type, and a SQLite store refuses every
        // model with a composite attribute (`StoreError.refusingComposites`).
        case .composite: preconditionFailure("a composite value reached a SQLite store, which refuses composite attributes")
        }
    }

    /// Core Data's DECIMAL columns have NUMERIC affinity, so SQLite stores a decimal as a double
    /// (<https://www.sqlite.org/datatype3.html>, "Type Affinity"), which the store reads back as
    /// its shortest text. A decimal of at most this many significant digits always reads back
    /// as itself; a longer one only when it is a double's shortest text
    /// (`DecimalText.doubleReadingBack(as:)`), as Core Data's own stores hold them.
    static let decimalDigitsKept = 15

    /// Whether some value of `type` cannot be kept exactly (`refusal` says which): Decimals only.
    static func mayRefuse(_ type: AttributeType) -> Bool { type == .decimal || type == .double || type == .float }

    /// Why the store cannot keep `value` exactly; nil when it can.
    static func refusal(_ value: AttributeValue?) -> String? {
        let isNaN = switch value {
        case .double(let number)?: number.isNaN
        case .float(let number)?: number.isNaN
        default: false
        }
        if isNaN {
            // sqlite3_bind_double stores a NaN as NULL (https://www.sqlite.org/c3ref/bind_blob.html).
            return "is NaN, which a SQLite store keeps as NULL; keep it in an XML, binary or PostgreSQL store, or give a number"
        }
        guard case .decimal(let decimal)? = value else { return nil }
        let digits = DecimalText.significantDigits(of: decimal)
        guard digits > decimalDigitsKept, DecimalText.doubleReadingBack(as: decimal) == nil else { return nil }
        return "has \(digits) significant digits, and no double reads back as it; a SQLite store keeps a Decimal as a double (Core Data's DECIMAL columns hold SQLite numbers), exactly when it has at most \(decimalDigitsKept) significant digits or is a double's shortest text: round it, or keep it in an XML, binary or PostgreSQL store"
    }

    static func encode(_ value: AttributeValue?) -> SQLiteValue {
        value.map(encode) ?? .null
    }

    /// A stored value as a message shows it: an integer as itself, anything else with its kind.
    static func shown(_ value: SQLiteValue) -> String {
        if case .integer(let number) = value { return String(number) }
        return Unreadable(value).held
    }

    /// A stored value that cannot stand for its attribute's type: the store is damaged there.
    struct Unreadable: Error {
        /// What the column holds, for a message: `TEXT "abc"`, `REAL 3.5`.
        let held: String

        init(_ value: SQLiteValue) {
            switch value {
            case .null: held = "NULL"
            case .integer(let v): held = "INTEGER \(v)"
            case .real(let v): held = "REAL \(v)"
            case .text(let v): held = "TEXT \"\(v.count > 40 ? String(v.prefix(40)) + "…" : v)\""
            case .blob(let v): held = "a BLOB of \(v.count) bytes"
            }
        }

        /// A value described by its reader (`SQLiteExternalData`'s markers).
        init(held: String) { self.held = held }
    }

    /// Reads a column for an attribute of `type`: nil for NULL; a value of a kind that cannot
    /// stand for the type exactly (text in a number column, a fraction or an out-of-range
    /// number in an integer column, bytes that are not UTF-8 for a string) is `Unreadable`,
    /// never read as nil or rounded.
    static func decode(_ value: SQLiteValue, as type: AttributeType) throws(Unreadable) -> AttributeValue? {
        switch (type, value) {
        case (_, .null): return nil
        case (.integer16, .integer(let v)) where Int16(exactly: v) != nil: return .integer(v)
        case (.integer32, .integer(let v)) where Int32(exactly: v) != nil: return .integer(v)
        case (.integer64, .integer(let v)): return .integer(v)
        case (.integer16, .real(let v)) where Int16(exactly: v) != nil: return .integer(Int64(v))
        case (.integer32, .real(let v)) where Int32(exactly: v) != nil: return .integer(Int64(v))
        case (.integer64, .real(let v)) where Int64(exactly: v) != nil: return .integer(Int64(v))
        case (.boolean, .integer(let v)): return .bool(v != 0)
        case (.boolean, .real(let v)): return .bool(v != 0)
        case (.double, .integer(let v)): return .double(Double(v))
        case (.double, .real(let v)): return .double(v)
        case (.float, .integer(let v)): return .float(Float(v))
        case (.float, .real(let v)) where !v.isFinite || Float(v).isFinite: return .float(Float(v))
        case (.decimal, .integer(let v)): return .decimal(Decimal(v))
        case (.decimal, .real(let v)) where v.isFinite: if let d = DecimalText.parse(String(v)) { return .decimal(d) }
        case (.decimal, .text(let v)): if let d = DecimalText.parse(v) { return .decimal(d) }
        case (.date, .real(let v)): return .date(Date(timeIntervalSinceReferenceDate: v))
        case (.date, .integer(let v)): return .date(Date(timeIntervalSinceReferenceDate: Double(v)))
        case (.string, .text(let v)): return .string(v)
        case (.string, .integer(let v)): return .string(String(v))
        case (.string, .real(let v)): return .string(String(v))
        case (.string, .blob(let v)): if let s = String(validating: v, as: UTF8.self) { return .string(s) }
        case (.uri, .text(let v)): if let url = URL(string: v) { return .uri(url) }
        case (.uri, .blob(let v)):
            // Core Data archives URIs in some versions; a plain UTF-8 string is all Lade reads.
            if let url = String(validating: v, as: UTF8.self).flatMap({ URL(string: $0) }) { return .uri(url) }
        case (.uuid, .blob(let v)) where v.count == 16:
            let bytes = [UInt8](v)
            return .uuid(UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                                     bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15])))
        case (.uuid, .text(let v)): if let uuid = UUID(uuidString: v) { return .uuid(uuid) }
        case (.binary, .blob(let v)), (.transformable, .blob(let v)): return .binary(v)
        case (.binary, .text(let v)), (.transformable, .text(let v)): return .binary(Data(v.utf8))
        default: break
        }
        throw Unreadable(value)
    }
}
