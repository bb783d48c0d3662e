import Foundation
import Lade

/// One import into one store, as `lade run` (`ImportRunner`) and `lade seed` (`SeedRunner`)
/// both make it, in steps rather than one long function (as NIO's channel pipeline hands work
/// from one step to the next):
///
/// 1. `init` opens the session on the store and context `ImportStack` opened, with its commit
///    policy (`CommitPolicy`: by time, by count, or once);
/// 2. `resume(_:entity:force:)` reads the source's checkpoint (`lade run`): imported already, or
///    where to start; `openRejects` starts the rejects ledger there;
/// 3. `read(_:reader:mapper:writer:)` starts a step's source on the reader thread
///    (`ReaderThread`), with the writer for it and its progress;
/// 4. `load()` writes the source batch by batch, committing as the policy says, until it ends,
///    a signal stops it, or a batch holds more rejected rows than the job allows;
/// 5. `finish(complete:)` makes the last commit, with the fetch indexes kept out while loading;
/// 6. `close()` takes back whatever was not committed and stops the reader.
///
/// The session keeps the checkpoint, the rejects ledger, the counts, the signals and the
/// progress; the writer (`ImportWriter`, batch inserts or managed objects) writes batches and
/// commits when told. `read` through `finish` run on the context's queue.
///
/// ```swift
/// let session = ImportSession(job: job, stack: stack, policy: .run(job), progressInterval: nil, progressOutput: nil)
/// guard try session.resume(step, entity: plan.entity.name, force: false) != .alreadyImported else { return }
/// try session.openRejects(kind: nil, source: step.source.displayPath)
/// defer { session.close() }
/// try context.performAndWait {
///     try session.read(plan, reader: reader, mapper: mapper, writer: writer)
///     if case .sourceEnded = try session.load() { _ = try session.finish(complete: true) }
/// }
/// ```
final class ImportSession {
    /// How `resume` found the source.
    enum Resumption: Equatable {
        /// The store's checkpoint says this unchanged source was imported already.
        case alreadyImported
        /// From the source's start.
        case fresh
        /// From where the last commit of an earlier run ended.
        case resuming(ResumePoint)
    }

    /// How `load` ended.
    enum LoadEnd {
        /// The source was read to its end; the batches since the last commit wait for `finish`.
        case sourceEnded
        /// A signal stopped it after a batch (committed, unless the policy is `.once`).
        case interrupted(signal: Int32)
        /// Rows rejected past what the job allows (`onError`), sorted by line: a batch's, or
        /// those the store refused at a commit. Every batch before them is committed, unless
        /// the policy is `.once`.
        case rejected([RejectedRow])
    }

    /// What the run had after a batch since the last commit, so that a commit the store
    /// refuses for a row past the limit can keep the batches before that row's.
    private struct BatchState {
        var point: ResumePoint
        var running: ImportCounts
        var counts: ImportCounts
        var rejectsLength: Int64
    }

    let job: Job
    let context: ManagedObjectContext
    let coordinator: PersistentStoreCoordinator
    let store: PersistentStore
    let policy: CommitPolicy
    /// SIGINT and SIGTERM: the batch under way is finished (and committed, unless the policy is
    /// `.once`), and the load stops. Set once reading is about to start, so that until then they
    /// end the process as they normally do.
    var signals: StopSignals?
    /// Told of the first `namedUndecidedValues` values accepted though their attribute's
    /// pattern could not be decided for them, then once that there were more.
    var onWarning: (@Sendable (String) -> Void)?
    static let namedUndecidedValues = 10
    private var undecidedValues = 0
    /// The stop signal received, if any (and if the session honours them).
    var stopSignal: Int32? { signals?.received }
    private let progressInterval: TimeInterval?
    private let progressOutput: ProgressReporter.Output?

    /// The source's checkpoint key, identity and last checkpoint, once `resume` read them.
    private var checkpointKey: String?
    private(set) var sourceIdentity: Checkpoint.SourceIdentity?
    private var previous: Checkpoint?
    private var resumePoint: ResumePoint?
    /// The rejects ledger (`onError.rejects`), once `openRejects` opened it.
    private(set) var rejects: RejectsFile?
    /// Fetch indexes kept out while loading, built at the last commit (`deferIndexes`).
    private(set) var deferredIndexes: [String] = []

    private var writer: ImportWriter?
    private var reading: ReaderThread?
    private var progress: ProgressReporter?

    /// This run's counts.
    private(set) var counts = ImportCounts()
    /// The source's counts over every run that imported it (carried by the checkpoint).
    private(set) var runningCounts = ImportCounts()
    private(set) var batches = 0
    /// Batches of the current source the batch writer had prepared while the store finished
    /// the batch before (`BatchInsertWriter.upcoming`).
    var batchesPreparedAhead: Int { (writer as? BatchInsertWriter)?.batchesPreparedAhead ?? 0 }
    private(set) var commits = 0
    private(set) var resets = 0
    /// Where the source stood at the last commit, after the last batch written, and where this
    /// read began.
    private(set) var committedPoint = ResumePoint.start
    private var pendingPoint = ResumePoint.start
    private var firstRecord: Int64 = 0
    private var batchesSinceCommit = 0
    private var batchesSinceReset = 0
    private var lastCommit = DispatchTime.now()
    private var batchStates: [Int: BatchState] = [:]
    private var stateAtCommit = BatchState(point: .start, running: ImportCounts(), counts: ImportCounts(), rejectsLength: 0)

    /// Asked before each commit: throws when the run's lock is no longer held (`StoreLock.verify`).
    var verifyLock: (() throws -> Void)?

    init(job: Job, stack: ImportStack.Stack, policy: CommitPolicy, progressInterval: TimeInterval?, progressOutput: ProgressReporter.Output?) {
        self.job = job
        context = stack.context
        coordinator = stack.coordinator
        store = stack.store
        self.policy = policy
        self.progressInterval = progressInterval
        self.progressOutput = progressOutput
    }

    /// Records this run committed (read, written or rejected).
    var rowsCommitted: Int64 { committedPoint.recordIndex - firstRecord }
    /// Records of the current source read and written so far.
    var rowsRead: Int64 { pendingPoint.recordIndex - firstRecord }
    /// Whether the source is a stream (no identity: it cannot be resumed).
    var sourceIsStream: Bool { sourceIdentity == nil }

    // MARK: Resume

    /// Reads the checkpoint of `step`'s source into `entity`: a source whose unchanged file was
    /// imported to its end is done already (unless `force`); one an earlier run committed part
    /// of resumes after its last commit, with that run's counts.
    func resume(_ step: ImportStep, entity: String, force: Bool) throws -> Resumption {
        let key = Checkpoint.metadataKey(entity: entity, source: step.source.url)
        checkpointKey = key
        sourceIdentity = try Checkpoint.SourceIdentity.of(step.source.url)
        previous = Checkpoint(coordinator.metadata(for: store)[key])
        guard !force, let previous, let identity = sourceIdentity, previous.source == identity else { return .fresh }
        if previous.complete { return .alreadyImported }
        guard previous.resume.recordIndex > 0 else { return .fresh }
        resumePoint = previous.resume
        runningCounts = previous.counts
        return .resuming(previous.resume)
    }

    /// Opens the job's rejects ledger (`onError.rejects`), if any: a fresh run starts it empty,
    /// a resumed one keeps what the last commit had written.
    func openRejects(kind: OutputFile.Kind?, source: String) throws {
        rejects = try job.onError.rejects.map {
            try RejectsFile(url: $0, source: source, resumeLength: resumePoint == nil ? nil : previous?.rejectsLength, kind: kind ?? .regular)
        }
    }

    /// Keeps the fetch indexes of `plan`'s table out while loading it, when it can
    /// (`ImportStack.deferIndexes`); `finish` builds them. Returns their names.
    func deferIndexes(_ plan: ImportPlan, model: ManagedObjectModel) throws -> [String] {
        deferredIndexes = try ImportStack.deferIndexes(of: store, plan: plan, model: model)
        return deferredIndexes
    }

    // MARK: Read

    /// Starts reading `plan`'s source on the reader thread (from where `resume` said), to be
    /// written by `writer`; ends the read of the source before.
    func read(_ plan: ImportPlan, reader: RecordReader, mapper: RowMapper, writer: ImportWriter) throws {
        endReading()
        self.writer = writer
        let start = resumePoint ?? .start
        committedPoint = start
        pendingPoint = start
        firstRecord = start.recordIndex
        progress = ProgressReporter(mode: ProgressReporter.mode(interval: progressInterval), label: plan.step.source.displayPath, output: progressOutput)
        let reading = ReaderThread(reader: reader, mapper: mapper, batchSize: job.batch.size)
        self.reading = reading
        // Batch inserts prepare the next batch while a server finishes the one before.
        (writer as? BatchInsertWriter)?.upcoming = { [weak reading] in reading?.peek() }
        lastCommit = DispatchTime.now()
        stateAtCommit = BatchState(point: start, running: runningCounts, counts: counts, rejectsLength: try rejects?.length ?? 0)
    }

    /// A line about the session's progress that is not a count ("committing …"), shown where
    /// and when progress is.
    func note(_ text: String) {
        ProgressReporter.note(text, interval: progressInterval, output: progressOutput)
    }

    /// Ends the read of the current source: its progress is finished, its reader stopped.
    func endReading() {
        reading?.stop()
        reading = nil
        progress?.finish()
        progress = nil
    }

    /// Takes back whatever was not committed, stops the reader and closes the rejects ledger.
    func close() {
        endReading()
        if let writer { context.performAndWait { writer.rollback() } }
        rejects?.close()
    }

    // MARK: Write

    /// Writes the source `read` started, batch by batch, committing as the policy says, until
    /// the source ends, a signal stops it, or a batch holds more rejected rows than the job
    /// allows. Damage the reader cannot skip past is thrown, after the batches before it are
    /// committed (unless the policy is `.once`).
    func load() throws -> LoadEnd {
        guard let reading, let writer else { preconditionFailure("load() before read()") }
        while let next = reading.next() {
            switch next {
            case .success(let batch):
                if let end = try write(batch, with: writer) { return end }
                reading.handBack(batch)
            case .failure(let error):
                // Damage the reader cannot skip past: keep what is good, then stop.
                if let rows = try commitBeforeStop() { return .rejected(rows) }
                throw error
            }
        }
        return .sourceEnded
    }

    /// Writes one batch, rejects its rows past the job's `onError`, commits when due, lets the
    /// writer trim its memory and tells the progress; returns how the load ends when it ends here.
    private func write(_ batch: MappedBatch, with writer: ImportWriter) throws -> LoadEnd? {
        let onError = job.onError
        let remaining = onError.policy == .abort ? 0 : onError.maxErrors - runningCounts.rejected
        var batchCounts = ImportCounts()
        var rejected = batch.rejects
        var applied = false
        if rejected.count <= remaining {
            let written = try writer.write(batch, allowedRejects: remaining - rejected.count, counts: &batchCounts)
            rejected += written.rejects
            applied = written.applied
        }
        rejected.sort { $0.line < $1.line }
        guard applied else {
            // Nothing of this batch is kept; everything before it is.
            return .rejected(try commitBeforeStop() ?? rejected)
        }
        try record(batch, rejected: rejected, counts: &batchCounts, writer: writer)
        let stop = stopSignal
        if stop != nil {
            if let rows = try commitBeforeStop() { return .rejected(rows) }
        } else if policy.isDue(batchesSinceCommit: batchesSinceCommit, lastCommit: lastCommit, createdDestinations: batchCounts.createdDestinations) {
            if let rows = try commit(complete: false) { return .rejected(rows) }
        }
        trimMemory(writer)
        progress?.update(rows: pendingPoint.recordIndex, bytes: batch.bytesRead, totalBytes: reading?.totalBytes)
        return stop.map { .interrupted(signal: $0) }
    }

    /// Adds a written batch to the ledger, the counts and the position.
    private func record(_ batch: MappedBatch, rejected: [RejectedRow], counts batchCounts: inout ImportCounts, writer: ImportWriter) throws {
        try rejects?.append(rejected)
        for warning in batch.undecided {
            undecidedValues += 1
            if undecidedValues <= Self.namedUndecidedValues {
                onWarning?(warning)
            } else if undecidedValues == Self.namedUndecidedValues + 1 {
                onWarning?("more values could not be decided against their attribute's pattern and were accepted unchecked; only the first \(Self.namedUndecidedValues) are named")
            }
        }
        batchCounts.rejected = rejected.count
        runningCounts.add(batchCounts)
        counts.add(batchCounts)
        batches += 1
        pendingPoint = batch.endPoint
        batchStates[writer.currentBatch] = BatchState(point: pendingPoint, running: runningCounts, counts: counts, rejectsLength: try rejects?.length ?? 0)
        batchesSinceCommit += 1
        batchesSinceReset += 1
    }

    private func trimMemory(_ writer: ImportWriter) {
        switch writer.trimMemory(batchesSinceReset: batchesSinceReset, resetEvery: job.batch.resetEvery, justCommitted: batchesSinceCommit == 0) {
        case .kept: break
        case .forgotLookups: batchesSinceReset = 0
        case .resetContext:
            batchesSinceReset = 0
            resets += 1
        }
    }

    // MARK: Commit

    /// The commit that ends the run, whatever the reason: it also builds the fetch indexes kept
    /// out while loading (in its transaction, with the last rows and the checkpoint). Returns
    /// the rows that end the run when the store refused rows past what the job allows.
    func finish(complete: Bool) throws -> [RejectedRow]? {
        if !deferredIndexes.isEmpty { store.bulkLoading?.buildDeferredIndexesAtNextCommit() }
        return try commit(complete: complete)
    }

    /// The commit before a stop: the batches written so far, unless the policy commits once.
    private func commitBeforeStop() throws -> [RejectedRow]? {
        guard policy.commitsOnStop else { return nil }
        return try finish(complete: false)
    }

    /// Commits the batches since the last commit with the checkpoint, in one transaction. Rows
    /// the store refuses (a save's validation, or a uniqueness constraint the rows could not be
    /// checked against beforehand) are rejected like any other bad row. With `policy: abort`,
    /// or past `maxErrors`, the batches before the refused row's are committed (when they can
    /// be told apart from it; otherwise nothing since the last commit is) and the rows are
    /// returned. Under `.once` (all or nothing) a refusal is thrown as it is.
    private func commit(complete: Bool) throws -> [RejectedRow]? {
        guard let writer else { preconditionFailure("commit before read()") }
        try verifyLock?()
        var ending: [RejectedRow]?
        var complete = complete
        while true {
            try stageCheckpoint(complete: complete)
            do {
                try writer.commit(last: complete)
                break
            } catch {
                guard policy.commitsOnStop, let refused = writer.takeBackRefused(error) else { throw error }
                runningCounts.subtract(refused.undone)
                counts.subtract(refused.undone)
                guard !refused.rows.isEmpty, ending == nil else { throw error }
                let rows = refused.rows.sorted { $0.line < $1.line }
                if job.onError.policy != .abort && runningCounts.rejected + rows.count <= job.onError.maxErrors {
                    runningCounts.rejected += rows.count
                    counts.rejected += rows.count
                    try rejects?.append(rows)
                    continue
                }
                guard let first = refused.firstBatch, writer.dropBatches(from: first) else {
                    writer.rollback()
                    return rows
                }
                try restore(batchStates[first - 1] ?? stateAtCommit)
                complete = false
                ending = rows
            }
        }
        try didCommit()
        return ending
    }

    /// Stages the checkpoint (where the source stands, the counts, the ledger's length, synced)
    /// on the coordinator, and drops the finished checkpoints the job's retention expires.
    private func stageCheckpoint(complete: Bool) throws {
        let rejectsLength = try rejects?.sync() ?? 0
        guard let key = checkpointKey else { return }
        let checkpoint = Checkpoint(source: sourceIdentity, resume: pendingPoint, complete: complete, rejectsLength: rejectsLength, counts: runningCounts)
        var metadata = coordinator.metadata(for: store)
        metadata[key] = checkpoint.propertyList
        for expired in Checkpoint.expiredKeys(in: metadata, keeping: key, retention: job.checkpoints) {
            metadata[expired] = nil
        }
        try coordinator.setMetadata(metadata, for: store)
    }

    /// Goes back to what the run had after an earlier batch.
    private func restore(_ state: BatchState) throws {
        pendingPoint = state.point
        runningCounts = state.running
        counts = state.counts
        try rejects?.truncate(to: state.rejectsLength)
    }

    private func didCommit() throws {
        committedPoint = pendingPoint
        batchesSinceCommit = 0
        lastCommit = DispatchTime.now()
        commits += 1
        batchStates.removeAll()
        stateAtCommit = BatchState(point: committedPoint, running: runningCounts, counts: counts, rejectsLength: try rejects?.length ?? 0)
    }
}
