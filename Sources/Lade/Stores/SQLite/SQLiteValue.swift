import Foundation

/// A value as SQLite stores it: one of its five storage classes.
///
/// Related SQLite documentation: <https://www.sqlite.org/datatype3.html>
package enum SQLiteValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
}

extension SQLiteValue {
    /// Text is equal when its bytes are, as SQLite's BINARY collation takes it: Swift's own
    /// `String ==` takes canonically equivalent text (NFC and NFD `é`) for one (as
    /// `AttributeValue` and `PostgreSQLValue` do).
    package static func == (lhs: SQLiteValue, rhs: SQLiteValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.integer(let a), .integer(let b)): a == b
        case (.real(let a), .real(let b)): a == b
        case (.text(let a), .text(let b)): AttributeValue.sameBytes(a, b)
        case (.blob(let a), .blob(let b)): a == b
        default: false
        }
    }

    package func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .integer(let v): hasher.combine(1); hasher.combine(v)
        case .real(let v): hasher.combine(2); hasher.combine(v)
        case .text(let v): hasher.combine(3); AttributeValue.hashBytes(v, into: &hasher)
        case .blob(let v): hasher.combine(4); hasher.combine(v)
        }
    }
}
