import Foundation

/// What reading a whole store needs beyond ``PersistentStore`` (a conversion, a migration by
/// mapping model): a snapshot, the keys' extent, and a copy of the objects as they are where
/// the destination keeps them the same way. Asked for with `PersistentStore.wholeStoreReading`,
/// so those copies never ask which kind of store they read; the rows themselves are read with
/// `forEachBatch(ofEntity:batchSize:_:)` and `relatedObjectIDs(of:relationship:)`.
protocol WholeStoreReading {
    /// A store to read the same data through, on its own (a SQLite store: another read-only
    /// connection, so a coordinator's own reads and writes are not in its snapshot; a store in
    /// memory: itself).
    func separateReader(model: ManagedObjectModel) throws -> PersistentStore
    /// Runs `body` with every read of this store seeing one snapshot, whatever other
    /// connections commit meanwhile.
    func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T
    /// The largest primary key of each hierarchy, by root entity in the store's entity order,
    /// when keys count per hierarchy (SQLite); nil when they are unique across entities.
    func largestKeysPerHierarchy() throws -> [(root: String, largest: Int64)]?
    /// Changes when another connection commits to the store (nil: the store cannot tell).
    func changeCounter() throws -> Int64?
    /// Writes every object into `writer` in one step, when the writer keeps objects as this
    /// store does: an atomic store into an atomic store's writer takes its objects as they are
    /// (shared until either side changes; keys, versions and object IDs kept), with no row
    /// made. Returns what was written, or nil when the objects must be copied row by row.
    func writeObjectsAsTheyAre(into writer: WholeStoreWriting) throws -> StoreMigrationSummary?
}

extension PersistentStore {
    /// How this store is read whole: every store of Lade's says; a store of another
    /// implementation is read as a plain `PersistentStore` (itself, no snapshot, keys as they are).
    var wholeStoreReading: WholeStoreReading {
        (self as? WholeStoreReading) ?? PlainStoreReading(store: self)
    }
}

/// A store that says nothing of how it is read whole.
private struct PlainStoreReading: WholeStoreReading {
    let store: PersistentStore

    func separateReader(model: ManagedObjectModel) throws -> PersistentStore { store }
    func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T { try body() }
    func largestKeysPerHierarchy() throws -> [(root: String, largest: Int64)]? { nil }
    func changeCounter() throws -> Int64? { nil }
    func writeObjectsAsTheyAre(into writer: WholeStoreWriting) throws -> StoreMigrationSummary? { nil }
}
