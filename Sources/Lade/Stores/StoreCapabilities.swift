import Foundation

/// What a store can do beyond ``PersistentStore``, asked for by capability, never by class:
/// each store answers with itself where it can (`PersistentStore.heldSaves`,
/// `.bulkLoading`), nil where it cannot, so that nothing outside `Stores/<Kind>/` names a
/// concrete store, and a store of another kind (PostgreSQL) adds its answers in one place.

/// Saves held in one transaction until a commit (`StoreTransaction`): SQLite stores, whose
/// saves can be written and left uncommitted; an atomic store writes its whole file at each.
package protocol HeldSaves: PersistentStore {
    /// Begins holding saves (taking the store's write lock); returns the generation that
    /// names this transaction to the calls below. With `undoable`, each save gets a savepoint.
    func beginHeldSaves(undoable: Bool) throws -> Int
    /// Whether saves of `generation` are still held (not committed, rolled back, or ended by a
    /// save that failed without a savepoint).
    func isHoldingSaves(_ generation: Int) -> Bool
    /// Commits the held saves, with `metadata` (when given) in the same transaction.
    func commitHeldSaves(_ generation: Int, metadata: [String: PropertyListValue]?) throws
    /// Takes the held saves back.
    func rollbackHeldSaves(_ generation: Int)
    /// Changes when another connection commits to the store.
    func dataVersion() throws -> Int64
}

/// What a long load into a store tunes while it runs (`lade run`, `lade seed`): the memory the
/// store keeps pages in, and fetch indexes left out while a table fills and built once at the
/// end. SQLite stores; a store in memory has nothing to tune.
package protocol BulkLoading: PersistentStore {
    /// Keeps up to `kibibytes` of the store's pages in memory for this process.
    func setPageCacheSize(kibibytes: Int) throws
    /// Leaves the fetch indexes of `entityName`'s table out while it is loaded, but those on
    /// `properties` (what the load looks rows up by), when the table is empty or its indexes
    /// are missing (a killed load); returns the indexes left out.
    func deferFetchIndexes(ofEntity entityName: String, keeping properties: Set<String>) throws -> [String]
    /// Builds the indexes left out in the transaction of the next commit.
    func buildDeferredIndexesAtNextCommit()
}

extension PersistentStore {
    /// The store as ``HeldSaves``, when it can hold saves.
    package var heldSaves: (any HeldSaves)? { self as? any HeldSaves }
    /// The store as ``BulkLoading``, when a load can tune it.
    package var bulkLoading: (any BulkLoading)? { self as? any BulkLoading }
}
