import Foundation
import Lade

/// `BatchWriter` as an import session's writer. With a store transaction (`lade run` on SQLite)
/// every batch is saved into it as it is written, so the context can be reset after any batch
/// (memory stays flat) while commits stay as rare as the batch insert writer's; a save that
/// cannot break a uniqueness constraint gets no savepoint, which spares SQLite a statement
/// journal of every page a batch changes. Without one (an XML or binary store, whose every save
/// writes the whole file; a seed, which commits once) everything is saved at the commit, where
/// the rows behind the objects the store refuses are taken back.
extension BatchWriter: ImportWriter {
    func write(_ batch: MappedBatch, allowedRejects: Int, counts: inout ImportCounts) throws -> (rejects: [RejectedRow], applied: Bool) {
        var (rejects, applied) = try apply(batch, allowedRejects: allowedRejects, counts: &counts)
        if applied && transaction != nil {
            applied = try saveBatch(rejects: &rejects, counts: &counts, allowed: allowedRejects)
        }
        return (rejects, applied)
    }

    func commit(last: Bool) throws {
        if let held = transaction {
            // Every batch was saved into the transaction as it was written.
            if last {
                try held.commit()
                transaction = nil
            } else {
                let next = try held.commitAndBeginNext()
                transaction = next
                // Objects read before may be out of date: another process wrote meanwhile.
                if next.othersWroteBetween { resetSoon = true }
            }
        } else {
            try context.save()
        }
        didCommit()
    }

    func takeBackRefused(_ error: Error) -> RefusedRows? {
        guard !savesHeld else { return nil }
        let refused = ImportStack.refusedObjects(error, in: context)
        let firstBatch = refused.compactMap { originBatch(of: $0.0) }.min()
        let (rows, undone) = takeBack(refused)
        return RefusedRows(rows: rows, undone: undone, firstBatch: firstBatch)
    }

    func rollback() {
        if !savesHeld {
            context.rollback()
        } else if let transaction, transaction.isOpen {
            transaction.rollback()
        }
    }

    func trimMemory(batchesSinceReset: Int, resetEvery: Int, justCommitted: Bool) -> MemoryTrim {
        // Every batch is saved: the context may be reset after any of them. Without a
        // transaction the objects wait for the commit.
        guard transaction != nil, batchesSinceReset >= resetEvery || resetSoon else { return .kept }
        resetSoon = false
        context.reset()
        didReset()
        return .resetContext
    }

    /// Saves the batch just written into the store transaction. Rows the store refuses join the
    /// batch's `rejects` (their counts taken back); when more are rejected than `allowed`,
    /// nothing of the batch is kept and false is returned.
    private func saveBatch(rejects: inout [RejectedRow], counts: inout ImportCounts, allowed: Int) throws -> Bool {
        while true {
            do {
                try context.save()
                didSave()
                return true
            } catch {
                if let transaction, !transaction.isOpen {
                    // A save with no savepoint failed while writing: it took the transaction with it.
                    throw RolledBackSave(reason: "\(error)")
                }
                let (rows, undone) = takeBack(ImportStack.refusedObjects(error, in: context))
                counts.subtract(undone)
                guard !rows.isEmpty else { throw error }
                rejects += rows
                if rejects.count > allowed {
                    context.rollback()
                    return false
                }
            }
        }
    }
}

/// A batch's save, written with no savepoint, failed while the store wrote it: the store
/// transaction was rolled back with it, so every batch since the last commit is gone (as after
/// a kill) and the next run redoes them from the checkpoint.
struct RolledBackSave: LadeError {
    let reason: String
    var code: String { "import.rolledBack" }
    var description: String {
        "\(reason); the store refused a batch's save while writing it, and with it every batch since the last commit was rolled back (nothing was expected to break a uniqueness constraint, so saves had no savepoint): run the job again to resume from the checkpoint"
    }
}
