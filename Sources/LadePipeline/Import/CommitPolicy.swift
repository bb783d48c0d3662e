import Foundation

/// When an import session commits what it wrote, and what a stop commits.
enum CommitPolicy: Equatable {
    /// Every `seconds` of writing, and every `batches` batches when given (whichever comes
    /// first), each commit with the checkpoint: a killed run loses at most that much. A signal,
    /// a rejected row that ends the run, or damage the reader cannot skip past commits what came
    /// before it. `lade run` on SQLite and PostgreSQL: batch inserts, and saves held in a store
    /// transaction. With `afterCreating`, a batch that created destination objects
    /// (`create: true`) commits at once too: on a store several runs write at once
    /// (PostgreSQL), another run that needs the same new destination waits for this commit.
    case periodic(seconds: Double, batches: Int?, afterCreating: Bool = false)
    /// Once, at the end; a stop commits what came before it, as `periodic` does. `lade run` on
    /// an XML or binary store: every save writes the whole file.
    case atEnd
    /// Once, at the end, all or nothing: a stop, a rejected row or an error commits nothing.
    /// `lade seed`, whose commit carries its flag.
    case once

    /// The policy of `lade run` on `job`'s store.
    static func run(_ job: Job) -> CommitPolicy {
        guard job.store.kind.holdsSaves else { return .atEnd }
        return .periodic(seconds: job.batch.commitSeconds(for: job.store.kind), batches: job.batch.commitEvery, afterCreating: job.store.kind == .postgresql)
    }

    /// Whether a commit is due after a batch that created `createdDestinations` destination
    /// objects, `batchesSinceCommit` batches and the time since `lastCommit` after the last one.
    func isDue(batchesSinceCommit: Int, lastCommit: DispatchTime, createdDestinations: Int = 0) -> Bool {
        guard case .periodic(let seconds, let batches, let afterCreating) = self else { return false }
        if afterCreating && createdDestinations > 0 { return true }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - lastCommit.uptimeNanoseconds) / 1e9
        return elapsed >= seconds || (batches.map { batchesSinceCommit >= $0 } ?? false)
    }

    /// Whether a stop (a signal, a rejected row that ends the run, damage in the source)
    /// commits what was written before it.
    var commitsOnStop: Bool { self != .once }
}
