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
