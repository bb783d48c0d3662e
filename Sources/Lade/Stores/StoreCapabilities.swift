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

/// Rows written in bulk without managed objects, any number of batches in one transaction
/// committed together (`BatchInsertSession`, `lade run`'s batch writer): SQLite and PostgreSQL
/// stores.
protocol BulkInserting: PersistentStore {
    /// Begins the transaction (taking the store's write lock until commit or rollback), its
    /// commit recorded as `authorship` in a store that keeps persistent history.
    func beginBulkInsert(authorship: HistoryAuthorship) throws -> any BulkInsertTransaction
}

/// What a bulk insert works out once per target (entity, attributes, key) and uses for every
/// batch.
protocol BulkInsertPlan: AnyObject {
    var entity: String { get }
    /// Whether most rows of the last batch were found in the store (they are then looked up
    /// before they are inserted).
    var mostlyExisting: Bool { get set }
}

/// One open bulk insert; see `BatchInsertSession`, which is its interface for users.
protocol BulkInsertTransaction: AnyObject {
    var persistentStore: PersistentStore { get }
    func plan(_ target: BulkInsert.TargetDescription) throws -> any BulkInsertPlan
    /// `whileStoreFinishes`: see `BatchInsertSession.write(_:to:undoable:accept:whileStoreFinishes:)`.
    func write(_ rows: [BulkInsert.Row], plan: any BulkInsertPlan, undoable: Bool, whileStoreFinishes: (() -> Void)?,
               accept: ([BulkInsert.Outcome]) -> Bool) throws -> [BulkInsert.Outcome]?
    func savepoint<T>(undoable: Bool, _ body: () throws -> T?) throws -> T?
    func mayRefuse(_ rows: [BulkInsert.Row], plan: any BulkInsertPlan, moreThan limit: Int) -> Bool
    func objectIDs(entity: String, attribute: String, values: [AttributeValue]) throws -> [AttributeValue: ManagedObjectID]
    func commit(metadata: [String: PropertyListValue]?) throws
    func rollback()
}

extension PersistentStore {
    /// The store as ``BulkInserting``, when rows can be written to it in bulk.
    var bulkInserting: (any BulkInserting)? { self as? any BulkInserting }
}

/// Persistent history kept in Core Data's tables (docs/history.md): SQLite and PostgreSQL
/// stores that have them.
protocol HistoryKeeping: PersistentStore {
    /// Whether the store's writes record persistent history (it has the history tables and
    /// was opened for writing).
    var keepsHistory: Bool { get }
    /// The history's rows, for a conversion to carry them (nil when the store has no history
    /// tables).
    func historyTableRows() throws -> HistoryTableRows?
}

extension PersistentStore {
    /// Whether the store's writes record persistent history: a SQLite or PostgreSQL store with
    /// Core Data's history tables, opened for writing (docs/history.md).
    package var recordsHistory: Bool { (self as? any HistoryKeeping)?.keepsHistory ?? false }
    /// The store as ``HistoryKeeping``, when it is of a type that keeps history.
    var historyKeeping: (any HistoryKeeping)? { self as? any HistoryKeeping }
}
