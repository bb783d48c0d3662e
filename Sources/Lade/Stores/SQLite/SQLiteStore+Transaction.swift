import Foundation

/// Writes that take part in a transaction held open across saves (`StoreTransaction`).
extension SQLiteStore {
    /// Runs `body`, one write on `connection` (held by `withConnection`), in a transaction of
    /// its own; or, while a `StoreTransaction` holds the store's transaction open, in a
    /// savepoint inside it, undone alone when `body` throws (the saves before it stay). When
    /// the transaction's saves are not undoable, `body` runs with no savepoint, and if it
    /// throws, the whole transaction is rolled back and over.
    func writeTransaction<T>(_ connection: SQLiteConnection, _ body: () throws -> T) throws -> T {
        guard let held = heldSaves else {
            guard !connection.isInTransaction else {
                throw StoreError(.transactionOpen, path: fileURL.path, "a batch insert session is open on this store: commit or roll it back before a context saves to it")
            }
            do {
                let result = try connection.transaction {
                    let result = try body()
                    try recordHistory(connection)
                    return result
                }
                externalData?.committed()
                return result
            } catch {
                externalData?.rolledBack()
                throw error
            }
        }
        guard connection.isInTransaction else {
            // SQLite rolled the transaction back on its own after an error (a full disk, an
            // I/O error). A savepoint now would open a transaction of its own and commit this
            // write alone, without the rest or the metadata: end the held transaction instead.
            endHeldSaves(connection)
            throw StoreError(.io, path: fileURL.path, "SQLite rolled the store transaction back after an earlier error; every save since it began is gone: begin another")
        }
        guard held.undoable else {
            do {
                return try body()
            } catch {
                // Part of the write may be done, and nothing can undo that part alone.
                endHeldSaves(connection)
                throw error
            }
        }
        try connection.execute("SAVEPOINT lade_save")
        let files = externalData?.mark
        do {
            let result = try body()
            try connection.execute("RELEASE lade_save")
            return result
        } catch {
            if let files { externalData?.rollBack(to: files) }
            try? connection.execute("ROLLBACK TO lade_save")
            try? connection.execute("RELEASE lade_save")
            if !connection.isInTransaction { endHeldSaves(connection) }
            throw error
        }
    }

    /// Refuses metadata that changes a key the stack keeps (`NSStoreType`, `NSStoreUUID`, …).
    /// Call outside `withConnection`: it reads the current metadata.
    func checkReservedKeys(_ metadata: [String: PropertyListValue]) throws {
        let current = self.metadata
        for key in StoreMetadata.reservedKeys where metadata[key] != nil && metadata[key] != current[key] {
            throw StoreError(.reservedMetadataKey, path: fileURL.path, "\(key) belongs to the stack and cannot be changed")
        }
    }

    /// Opens the transaction that saves are written in until `commitHeldSaves` or
    /// `rollbackHeldSaves` (`BEGIN IMMEDIATE`: the write lock is taken now).
    package func beginHeldSaves(undoable: Bool) throws -> Int {
        guard !isReadOnly else { throw StoreError(.readOnly, path: fileURL.path, "the store was opened read-only") }
        return try withConnection { connection in
            guard !connection.isInTransaction else {
                throw StoreError(.transactionOpen, path: fileURL.path,
                                 heldSaves != nil ? "a store transaction is open on this store already: commit or roll it back first"
                                     : "a batch insert session is open on this store: commit or roll it back before a store transaction begins")
            }
            try beginWrite(connection)
            heldSavesBegun += 1
            heldSaves = (heldSavesBegun, undoable)
            return heldSavesBegun
        }
    }

    /// Commits every save since `beginHeldSaves`, with `metadata` (when given) in the same
    /// transaction. When the commit fails, everything is rolled back; either way the
    /// transaction is over.
    package func commitHeldSaves(_ generation: Int, metadata: [String: PropertyListValue]?) throws {
        do {
            // Inside: a refusal here ends the transaction too, or it would hold the store's
            // write lock with no one left to end it.
            if let metadata { try checkReservedKeys(metadata) }
            try withConnection { connection in
                guard heldSaves?.generation == generation else {
                    throw StoreError(.io, path: fileURL.path, "the store transaction is over: a save that could not be undone alone rolled it back")
                }
                try commitWrite(connection, metadata: metadata)
                heldSaves = nil
            }
        } catch {
            rollbackHeldSaves(generation)
            throw error
        }
        if let metadata { metadataCommitted(metadata) }
    }

    /// Begins a write transaction held across calls (a store transaction's, a batch insert
    /// session's) on `connection`, held by `withConnection`: `BEGIN IMMEDIATE` (the write lock
    /// taken now), and the indexes a bulk load keeps out dropped in it. Nothing is begun when
    /// that fails.
    func beginWrite(_ connection: SQLiteConnection) throws {
        try connection.execute("BEGIN IMMEDIATE")
        do {
            try dropDeferredIndexes(connection)
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Ends a transaction `beginWrite` began: the deferred indexes built when due, `metadata`
    /// (when given) written, then `COMMIT`, all in the one transaction.
    func commitWrite(_ connection: SQLiteConnection, metadata: [String: PropertyListValue]?) throws {
        let built = try buildDeferredIndexesIfDue(connection)
        if let metadata { try writeMetadataRow(metadata, connection) }
        try recordHistory(connection)
        try connection.execute("COMMIT")
        externalData?.committed()
        if built { deferredIndexesBuilt() }
    }

    /// Takes back every save since `beginHeldSaves`, metadata included.
    package func rollbackHeldSaves(_ generation: Int) {
        try? withConnection { connection in
            guard heldSaves?.generation == generation else { return }
            endHeldSaves(connection)
        }
    }

    /// Rolls the held transaction back and reads the metadata as it was (inside `withConnection`).
    private func endHeldSaves(_ connection: SQLiteConnection) {
        heldSaves = nil
        if connection.isInTransaction { try? connection.execute("ROLLBACK") }
        externalData?.rolledBack()
        if let (uuid, stored) = try? Self.readMetadata(connection, path: fileURL.path) {
            var metadata = stored
            metadata[StoreMetadata.Key.storeUUID] = .string(uuid)
            replaceMetadataHoldingLock(metadata)
        }
    }
}
