import Foundation

/// Which values a store type cannot keep exactly, asked before anything is written: a SQLite
/// store keeps 15 significant digits of a Decimal, so a longer one would come back rounded.
/// Its saves and batch inserts refuse such a value; `lade run` rejects the row that carries
/// it while mapping, with the same reason, before either writer sees it.
extension PersistentStoreCoordinator.StoreType {
    /// Whether a store of this type keeps every value of `type` exactly (then `refusal(of:)`
    /// is nil for all of them, and need not be asked per value).
    ///
    /// ```swift
    /// PersistentStoreCoordinator.StoreType.sqlite.keepsEveryValue(of: .decimal)   // false
    /// PersistentStoreCoordinator.StoreType.xml.keepsEveryValue(of: .decimal)      // true
    /// ```
    public func keepsEveryValue(of type: AttributeType) -> Bool {
        switch self {
        case .sqlite: !SQLiteValueCoding.mayRefuse(type)
        case .xml, .binary, .inMemory: true
        }
    }

    /// Why a store of this type cannot keep `value` exactly (what follows the attribute's name
    /// in a message: "has 16 significant digits; a SQLite store keeps 15 …"); nil when it can.
    ///
    /// ```swift
    /// PersistentStoreCoordinator.StoreType.sqlite.refusal(of: .decimal(Decimal(string: "1234567890123456")!))
    /// // "has 16 significant digits; a SQLite store keeps 15 of a Decimal exactly …"
    /// ```
    public func refusal(of value: AttributeValue) -> String? {
        switch self {
        case .sqlite: SQLiteValueCoding.refusal(value)
        case .xml, .binary, .inMemory: nil
        }
    }
}
