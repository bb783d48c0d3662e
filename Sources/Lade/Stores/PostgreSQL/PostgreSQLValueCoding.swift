import Foundation

/// How attribute values are kept in a PostgreSQL store's columns: as the SQLite store encodes
/// them (dates as seconds since 2001-01-01 in `double precision`, booleans as 0/1, UUIDs as
/// their 16 bytes, URIs as text), so a conversion SQLite → PostgreSQL → SQLite gives back the
/// same values; but a Decimal in `numeric`, which keeps every digit of it.
///
/// Columns are typed from Core Data's declared types (`TableLayout.Column.declaredType`):
/// INTEGER `bigint`, FLOAT and TIMESTAMP `double precision`, DECIMAL `numeric`, VARCHAR `text`,
/// BLOB `bytea`.
enum PostgreSQLValueCoding {
    /// The PostgreSQL column type for a column Core Data declares as `declaredType`.
    static func columnType(_ declaredType: String) -> String {
        // By its first word: `INTEGER PRIMARY KEY` is an INTEGER column.
        switch declaredType.prefix { $0.isLetter }.uppercased() {
        case "INTEGER": "bigint"
        case "FLOAT", "TIMESTAMP": "double precision"
        case "DECIMAL": "numeric"
        case "VARCHAR": "text"
        default: "bytea"
        }
    }

    static func encode(_ value: AttributeValue?) -> PostgreSQLValue {
        guard let value else { return .null }
        if case .decimal(let decimal) = value { return .numeric(DecimalText.format(decimal)) }
        return from(SQLiteValueCoding.encode(value))
    }

    static func from(_ value: SQLiteValue) -> PostgreSQLValue {
        switch value {
        case .null: .null
        case .integer(let v): .integer(v)
        case .real(let v): .double(v)
        case .text(let v): .text(v)
        case .blob(let v): .bytes(v)
        }
    }

    static func sqliteValue(_ value: PostgreSQLValue) -> SQLiteValue {
        switch value {
        case .null: .null
        case .integer(let v): .integer(v)
        case .double(let v): .real(v)
        case .text(let v), .numeric(let v): .text(v)
        case .bytes(let v): .blob(v)
        }
    }

    /// A stored value read back as an attribute of `type`; a value that cannot stand for the
    /// type exactly is `Unreadable` (damage), never rounded or read as nil.
    static func decode(_ value: PostgreSQLValue, as type: AttributeType) throws(SQLiteValueCoding.Unreadable) -> AttributeValue? {
        try SQLiteValueCoding.decode(sqliteValue(value), as: type)
    }

    /// Whether some value of `type` cannot be kept: text with NUL (strings; a URI never has one).
    static func mayRefuse(_ type: AttributeType) -> Bool { type == .string }

    /// Why a PostgreSQL store cannot keep `value` exactly; nil when it can.
    static func refusal(_ value: AttributeValue?) -> String? {
        guard case .string(let text)? = value, holdsNUL(text) else { return nil }
        return "holds a NUL character, which PostgreSQL keeps in no text value: remove it, or keep the value in a Binary attribute"
    }

    /// Whether `text` holds a NUL (memchr over its UTF-8: a bulk insert asks for every string).
    private static func holdsNUL(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in bytes.baseAddress.map { memchr($0, 0, bytes.count) != nil } ?? false }
    }
}
