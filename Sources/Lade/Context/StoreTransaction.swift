import Foundation

/// Saves that commit together: while a transaction is open on a SQLite store, every save a
/// context makes to that store is written in it, each save in a savepoint of its own (a save
/// that fails leaves the store as it was before that save, the earlier ones kept). Nothing is
/// durable, nor seen by other connections, until `commit()`, which writes the store metadata
/// staged on the coordinator (`setMetadata(_:for:)`) in the same transaction.
///
/// Core Data commits every save. This is for bulk work that must keep memory flat and still
/// commit rarely: `lade run`'s object writer saves every batch into a transaction and resets
/// its context, and commits the transaction (with its checkpoint) every few seconds. A kill
/// before the commit loses every save since the transaction began, as if none had happened.
///
/// Contexts of the same coordinator share the store's connection, so they read the saves
/// before the commit. After `rollback()` (or a failed commit), objects that were saved in the
/// transaction describe rows the store no longer has: the context that began it is reset;
/// reset any other that saved meanwhile.
///
/// ```swift
/// let transaction = try context.beginStoreTransaction(entityName: "Product")
/// for batch in batches {
///     try insert(batch, into: context)
///     try context.save()          // written in the transaction, not committed
///     context.reset()             // memory stays flat
/// }
/// try coordinator.setMetadata(checkpoint, for: transaction.store)
/// try transaction.commit()        // every batch and the metadata, at once
/// ```
public final class StoreTransaction {
    let context: ManagedObjectContext
    let held: any HeldSaves
    let generation: Int
    let undoableSaves: Bool
    private var open = true

    /// For a transaction begun by `commitAndBeginNext()`: whether another connection committed
    /// to the store between the previous transaction's commit and this one's beginning. Objects
    /// read before may then be out of date (a save of them could meet an optimistic-locking
    /// conflict): reset the context.
    public private(set) var othersWroteBetween = false

    /// Call with the store's transaction begun (`beginHeldSaves`): an initializer that threw
    /// after its properties were set would still run `deinit`, rolling back another's.
    private init(context: ManagedObjectContext, store: any HeldSaves, generation: Int, undoableSaves: Bool) {
        self.context = context
        self.held = store
        self.generation = generation
        self.undoableSaves = undoableSaves
    }

    static func begin(context: ManagedObjectContext, store: any HeldSaves, undoableSaves: Bool) throws -> StoreTransaction {
        let generation = try store.beginHeldSaves(undoable: undoableSaves)
        return StoreTransaction(context: context, store: store, generation: generation, undoableSaves: undoableSaves)
    }

    deinit {
        if open { held.rollbackHeldSaves(generation) }
    }

    /// The store whose saves the transaction holds.
    public var store: PersistentStore { held }

    /// Whether the transaction is still open (not committed, rolled back, or ended by a save
    /// that failed with `undoableSaves: false`).
    public var isOpen: Bool { open && held.isHoldingSaves(generation) }

    /// Commits every save since the transaction began, with the metadata staged for the store
    /// on the coordinator. The transaction is over afterwards, also when the commit fails:
    /// then nothing of it is kept and the context is reset (the staged metadata stays staged).
    public func commit() throws {
        context.assertOnQueue()
        guard isOpen else {
            open = false
            throw ContextError.storeTransactionEnded
        }
        let coordinator = try context.coordinator()
        open = false
        do {
            try coordinator.withStagedMetadata(for: held) { metadata in
                try held.commitHeldSaves(generation, metadata: metadata)
            }
        } catch {
            context.reset()
            throw error
        }
    }

    /// Commits (as `commit()`), then begins the next transaction on the store at once, with the
    /// same `undoableSaves`: for work that commits every so often and goes on.
    public func commitAndBeginNext() throws -> StoreTransaction {
        try commitAndBeginNext(between: {})
    }

    /// `between` runs after the commit, where another process could write (tests write there).
    func commitAndBeginNext(between: () throws -> Void) throws -> StoreTransaction {
        try commit()
        let committed = try held.dataVersion()
        try between()
        let next = try StoreTransaction.begin(context: context, store: held, undoableSaves: undoableSaves)
        next.othersWroteBetween = try held.dataVersion() != committed
        return next
    }

    /// Takes back every save since the transaction began and resets the context. The
    /// transaction is over afterwards.
    public func rollback() {
        context.assertOnQueue()
        guard open else { return }
        open = false
        held.rollbackHeldSaves(generation)
        context.reset()
    }
}

extension ManagedObjectContext {
    /// Begins a transaction on the SQLite store that holds `entityName`, taking its write lock
    /// until `commit` or `rollback`: saves to that store are written in it and committed
    /// together. See `StoreTransaction`.
    ///
    /// With `undoableSaves: false` no save gets a savepoint, which spares SQLite a statement
    /// journal of every page a save changes (a 1,000,000-row import through managed objects
    /// took about 8% less time). Then a save that fails once it has begun writing (another
    /// object has a unique value, an optimistic-locking conflict, an I/O error) rolls the whole
    /// transaction back and ends it: reset the context. Refused values and validation failures
    /// are found before a save writes anything and leave the transaction as it was. Use it
    /// when nothing the saves write can break a uniqueness constraint.
    public func beginStoreTransaction(entityName: String, undoableSaves: Bool = true) throws -> StoreTransaction {
        assertOnQueue()
        _ = try requireModel().requireEntity(entityName)
        let store = try coordinator().store(forEntity: entityName)
        guard let held = store.heldSaves else {
            throw ContextError.storeTransactionUnsupported("store transactions hold the saves of stores that can keep them uncommitted (SQLite); this store (\(store.type)) writes its whole file at each save")
        }
        return try StoreTransaction.begin(context: self, store: held, undoableSaves: undoableSaves)
    }
}
