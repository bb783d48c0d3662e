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
    let sqlite: SQLiteStore
    private var open = true

    /// Call with the store's transaction begun (`beginHeldSaves`): an initializer that threw
    /// after its properties were set would still run `deinit`, rolling back another's.
    private init(context: ManagedObjectContext, store: SQLiteStore) {
        self.context = context
        self.sqlite = store
    }

    static func begin(context: ManagedObjectContext, store: SQLiteStore) throws -> StoreTransaction {
        try store.beginHeldSaves()
        return StoreTransaction(context: context, store: store)
    }

    deinit {
        if open { sqlite.rollbackHeldSaves() }
    }

    /// The store whose saves the transaction holds.
    public var store: PersistentStore { sqlite }

    /// Whether the transaction is still open (not committed, rolled back or failed).
    public var isOpen: Bool { open }

    /// Commits every save since the transaction began, with the metadata staged for the store
    /// on the coordinator. The transaction is over afterwards, also when the commit fails:
    /// then nothing of it is kept and the context is reset (the staged metadata stays staged).
    public func commit() throws {
        context.assertOnQueue()
        guard open else { throw ContextError.storeTransactionEnded }
        let coordinator = try context.coordinator()
        let metadata = coordinator.takeStagedMetadata(for: sqlite)
        open = false
        do {
            try sqlite.commitHeldSaves(metadata: metadata)
        } catch {
            if let metadata { coordinator.stageMetadata(metadata, for: sqlite) }
            context.reset()
            throw error
        }
    }

    /// Takes back every save since the transaction began and resets the context. The
    /// transaction is over afterwards.
    public func rollback() {
        context.assertOnQueue()
        guard open else { return }
        open = false
        sqlite.rollbackHeldSaves()
        context.reset()
    }
}

extension ManagedObjectContext {
    /// Begins a transaction on the SQLite store that holds `entityName`, taking its write lock
    /// until `commit` or `rollback`: saves to that store are written in it and committed
    /// together. See `StoreTransaction`.
    public func beginStoreTransaction(entityName: String) throws -> StoreTransaction {
        assertOnQueue()
        _ = try model.requireEntity(entityName)
        let store = try coordinator().store(forEntity: entityName)
        guard let sqlite = store as? SQLiteStore else {
            throw ContextError.storeTransactionUnsupported("store transactions hold SQLite stores' saves; this store is \(type(of: store)), whose saves each write the whole file")
        }
        return try StoreTransaction.begin(context: self, store: sqlite)
    }
}
