import Foundation

/// When an import session commits what it wrote, and what a stop commits.
enum CommitPolicy: Equatable {
    /// Every `seconds` of writing, and every `batches` batches when given (whichever comes
    /// first), each commit with the checkpoint: a killed run loses at most that much. A signal,
    /// a rejected row that ends the run, or damage the reader cannot skip past commits what came
    /// before it. `lade run` on SQLite and PostgreSQL: batch inserts, and saves held in a store
    /// transaction.
    case periodic(seconds: Double, batches: Int?)
    /// Once, at the end; a stop commits what came before it, as `periodic` does. `lade run` on
    /// an XML or binary store: every save writes the whole file.
    case atEnd
    /// Once, at the end, all or nothing: a stop, a rejected row or an error commits nothing.
    /// `lade seed`, whose commit carries its flag.
    case once

    /// The policy of `lade run` on `job`'s store.
    static func run(_ job: Job) -> CommitPolicy {
        job.store.kind.holdsSaves ? .periodic(seconds: job.batch.commitSeconds(for: job.store.kind), batches: job.batch.commitEvery) : .atEnd
    }

    /// Whether a commit is due after a batch, `batchesSinceCommit` batches and the time since
    /// `lastCommit` after the last one.
    func isDue(batchesSinceCommit: Int, lastCommit: DispatchTime) -> Bool {
        guard case .periodic(let seconds, let batches) = self else { return false }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - lastCommit.uptimeNanoseconds) / 1e9
        return elapsed >= seconds || (batches.map { batchesSinceCommit >= $0 } ?? false)
    }

    /// Whether a stop (a signal, a rejected row that ends the run, damage in the source)
    /// commits what was written before it.
    var commitsOnStop: Bool { self != .once }
}
