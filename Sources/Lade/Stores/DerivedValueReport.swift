import Foundation

/// The values a store changed on its own during one save: derived attributes that its
/// triggers (Core Data's `Z_DA_` triggers in a SQLite store) or its write path computed. The
/// context that made the save gives it one with the request, and afterwards sets these
/// values on the objects it holds, so none keeps a value the store no longer has.
///
/// Shared by reference so a store can fill it in while the request is passed by value.
package final class DerivedValueReport: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [ManagedObjectID: [String: AttributeValue?]] = [:]

    package init() {}

    /// Records that the store set `attribute` of `objectID` to `value` (nil: NULL).
    package func record(_ objectID: ManagedObjectID, _ attribute: String, _ value: AttributeValue?) {
        lock.withLock { values[objectID, default: [:]][attribute] = .some(value) }
    }

    /// Every value recorded, by object and attribute (the last one of each).
    package var changes: [ManagedObjectID: [String: AttributeValue?]] {
        lock.withLock { values }
    }
}
