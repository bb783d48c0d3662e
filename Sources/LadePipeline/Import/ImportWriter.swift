import Foundation
import Lade

/// How an import session's batches reach the store and are committed: batch inserts
/// (`BatchInsertWriter`) or managed objects (`BatchWriter`). Both hold rows to one set of rules
/// (`RowRules`), so they reject the same rows with the same words and count alike; what differs
/// is how they write and commit, which stays behind this protocol. `ImportSession` decides when
/// to commit (`CommitPolicy`) and keeps the checkpoint, the rejects and the counts. Used on the
/// context's queue only.
protocol ImportWriter: AnyObject {
    /// Writes one batch unless more than `allowedRejects` of its rows are rejected (then
    /// nothing of it is written), adding what it did to `counts`. Returns the rows rejected and
    /// whether the batch was written.
    func write(_ batch: MappedBatch, allowedRejects: Int, counts: inout ImportCounts) throws -> (rejects: [RejectedRow], applied: Bool)

    /// The number of the last batch written (batches are numbered from 1).
    var currentBatch: Int { get }

    /// Commits everything written since the last commit, with the metadata staged on the
    /// coordinator (the checkpoint, a seed's flag), in one transaction; `last`: nothing is
    /// written after it.
    func commit(last: Bool) throws

    /// After `commit` threw `error`: the rows behind the objects the store refused, taken back
    /// (each a rejected row, with the counts to take back and the first batch they came from),
    /// so that the commit can be tried again without them. Nil when the commit refused no row
    /// (batch inserts find refused rows as they write them; saves held in a store transaction
    /// were made batch by batch): then `error` ends the run.
    func takeBackRefused(_ error: Error) -> RefusedRows?

    /// Takes back batches `first` and later, when no object they changed was also changed by an
    /// earlier batch (then it returns false and changes nothing).
    func dropBatches(from first: Int) -> Bool

    /// Takes back everything written since the last commit.
    func rollback()

    /// Called after each batch (and its commit, when one was due): lets go of what the writer
    /// holds when `resetEvery` says, so memory stays flat.
    func trimMemory(batchesSinceReset: Int, resetEvery: Int, justCommitted: Bool) -> MemoryTrim
}

/// What a commit the store refused takes back (`ImportWriter.takeBackRefused`).
struct RefusedRows {
    /// The rows behind the refused objects, each with the store's reason.
    var rows: [RejectedRow]
    /// The counts those rows had added.
    var undone: ImportCounts
    /// The first batch a refused object came from, when it is known.
    var firstBatch: Int?
}

/// What `ImportWriter.trimMemory` let go of.
enum MemoryTrim {
    /// Nothing.
    case kept
    /// Objects looked up by key (destinations of relationships).
    case forgotLookups
    /// The context's objects: the context was reset (a report counts these).
    case resetContext
}
