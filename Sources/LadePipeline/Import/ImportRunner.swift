import Foundation
import Lade

/// Options of one run that are not part of the job.
public struct ImportOptions: Sendable {
    /// Import again even when the checkpoint says this source is done (and ignore a partial one).
    public var force = false
    /// Seconds between progress lines; nil: a bar on a terminal, nothing otherwise.
    public var progressInterval: TimeInterval?
    /// Honour SIGINT/SIGTERM (finish the batch, commit, stop).
    public var handlesSignals = true
    /// Told of each SIGINT/SIGTERM while the run honours them (the CLI prints a line, and
    /// ends the process at a second one).
    public var onStopSignal: StopSignals.Handler?
    /// Where progress goes (see `ProgressReporter`); nil: nowhere.
    public var progressOutput: ProgressReporter.Output?
    /// Told each warning about the job's model (what it accepted only as Apple's model
    /// compiler does), once, before anything is imported, and of values accepted though their
    /// attribute's pattern could not be decided for them (the first 10); the CLI prints them.
    public var onWarning: (@Sendable (String) -> Void)?

    public init(force: Bool = false, progressInterval: TimeInterval? = nil, handlesSignals: Bool = true, onWarning: (@Sendable (String) -> Void)? = nil) {
        self.force = force
        self.progressInterval = progressInterval
        self.handlesSignals = handlesSignals
        self.onWarning = onWarning
    }
}

/// Runs an import job through an `ImportSession`: a reader thread parses and maps records into
/// a bounded queue; this thread writes batch by batch, with batch inserts or, when the job needs
/// them, managed objects in a private-queue context (undo off) saved batch by batch into a
/// transaction held open (`StoreTransaction`) and reset every `resetEvery` batches so memory
/// stays flat. Either writer commits every `commitSeconds` (or `commitEvery` batches), with the
/// checkpoint in the same transaction (`CommitPolicy.periodic`); on an XML or binary store, whose
/// every save writes the whole file, managed objects are saved once at the end.
///
/// ```swift
/// let job = try Job(contentsOf: URL(fileURLWithPath: "jobs/products.yaml"))
/// let report = try ImportRunner(job: job).run()
/// print(report.text())
/// ```
public final class ImportRunner {
    public let job: Job
    public let options: ImportOptions

    public init(job: Job, options: ImportOptions = ImportOptions()) {
        self.job = job
        self.options = options
    }

    public func run() throws -> ImportReport {
        guard job.kind == .import, let step = job.steps.first else {
            throw JobError(file: job.file, field: "kind", "lade run takes an import job (kind: import); use lade seed for kind: seed")
        }
        let started = Date()
        let setup = try ImportStack(job: job, onWarning: options.onWarning)
        let model = setup.model, plan = setup.plans[0]
        try job.checkStorePath()
        let rejectsKind = try job.onError.rejects.map { try OutputFile.check($0, role: "onError.rejects", reads: job.reads) }
        try Self.createDirectory(for: job.store.url)
        // One run of this job at a time (on a PostgreSQL store, other jobs may write meanwhile).
        let lock = try StoreLock(store: job.store.url, scope: Checkpoint.metadataKey(entity: plan.entity.name, source: step.source.url))
        defer { lock.release() }
        let session = ImportSession(job: job, stack: try setup.open(job, contextName: "lade import"), policy: .run(job),
                                    progressInterval: options.progressInterval, progressOutput: options.progressOutput)
        defer { session.close() }
        session.verifyLock = { try lock.verify() }
        var report = ImportReport(
            status: .completed, job: job.file, source: step.source.displayPath, store: job.store.displayName, entity: plan.entity.name,
            counts: ImportCounts(), rows: 0, resumedAtLine: nil, batches: 0, commits: 0, resets: 0, seconds: 0,
            peakResidentBytes: 0, rejectsFile: job.onError.rejects?.path)
        var resume: ResumePoint?
        switch try session.resume(step, entity: plan.entity.name, force: options.force) {
        case .alreadyImported: return finished(report, .alreadyImported, session: session, started: started)
        case .fresh: break
        case .resuming(let point):
            resume = point
            report.resumedAtLine = point.line
        }
        report.sourceIsStream = session.sourceIsStream

        let (reader, mapper, _) = try ImportStack.source(plan, resumingAt: resume)
        // Only now: opening a FIFO (and reading a CSV header) waits for a writer, and until a
        // batch is under way SIGINT and SIGTERM should end the process as they normally do.
        session.signals = options.handlesSignals ? StopSignals.install(onSignal: options.onStopSignal) : nil
        session.onWarning = options.onWarning
        try session.openRejects(kind: rejectsKind, source: step.source.displayPath)
        (report.writer, report.writerReason) = try Self.chooseWriter(job: job, plan: plan, model: model)
        try ImportStack.setPageCache(of: session.store, job: job, writer: report.writer)
        report.deferredIndexes = try session.deferIndexes(plan, model: model)

        let context = session.context
        return try context.performAndWait { () throws -> ImportReport in
            let writer = try Self.writer(report.writer, job: job, plan: plan, model: model, context: context)
            try session.read(plan, reader: reader, mapper: mapper, writer: writer)
            let status: ImportStatus
            switch try session.load() {
            case .sourceEnded:
                if let rows = try session.finish(complete: true) {
                    status = .aborted(reason: abortReason(rows))
                } else {
                    status = session.runningCounts.rejected > 0 || session.counts.rejected > 0 ? .completedWithRejects : .completed
                }
            case .interrupted(let signal): status = .interrupted(signal: signal)
            case .rejected(let rows): status = .aborted(reason: abortReason(rows))
            }
            return finished(report, status, session: session, started: started)
        }
    }

    /// The report of a run that ended with `status`, with what the session did.
    private func finished(_ report: ImportReport, _ status: ImportStatus, session: ImportSession, started: Date) -> ImportReport {
        var report = report
        report.status = status
        report.counts = session.counts
        report.rows = session.rowsCommitted
        report.batches = session.batches
        report.batchesPreparedAhead = session.batchesPreparedAhead
        report.commits = session.commits
        report.resets = session.resets
        report.seconds = Date().timeIntervalSince(started)
        report.peakResidentBytes = ProcessStats.peakResidentBytes
        return report
    }

    /// Why rejected rows (sorted by line) stop the run: the first (`policy: abort`), or the last
    /// past `maxErrors`.
    private func abortReason(_ rows: [RejectedRow]) -> String {
        let source = job.steps[0].source.displayPath, policy = job.onError
        if policy.policy == .abort { return rows.first.map { $0.description(source: source) } ?? "a row was rejected" }
        return "more than \(policy.maxErrors) rows rejected (maxErrors); the last: \(rows.last!.description(source: source))"
    }

    /// The writer `choice` names for `plan`: batch inserts; or managed objects, each batch saved
    /// into a store transaction held open until the commit on SQLite (so the context can be
    /// reset after any batch, memory staying flat, while commits stay as rare as the batch
    /// writer's), all saved at the commit on an XML or binary store.
    static func writer(_ choice: ImportWriterChoice, job: Job, plan: ImportPlan, model: ManagedObjectModel, context: ManagedObjectContext) throws -> ImportWriter {
        if choice == .batch { return BatchInsertWriter(context: context, plan: plan, model: model) }
        guard job.store.kind.holdsSaves else { return BatchWriter(context: context, plan: plan, model: model) }
        // Saves get no savepoint when they cannot break a uniqueness constraint: that spares
        // SQLite a statement journal of every page a batch changes (8% of a 1,000,000-row import).
        let undoableSaves = BatchWriter.savesMayBreakConstraints(plan: plan, model: model)
        let transaction = try context.beginStoreTransaction(entityName: plan.entity.name, undoableSaves: undoableSaves)
        return BatchWriter(context: context, plan: plan, model: model, savingInto: transaction)
    }

    /// The writer a job gets, and why: `writer: auto` takes batch inserts unless the job needs
    /// managed objects; `writer: batch` on such a job is refused, saying what needs them.
    static func chooseWriter(job: Job, plan: ImportPlan, model: ManagedObjectModel) throws -> (ImportWriterChoice, String) {
        let obstacle = BatchInsertWriter.obstacle(plan: plan, model: model, store: job.store)
        switch job.writer {
        case .objects: return (.objects, "writer: objects")
        case .batch:
            if let obstacle {
                throw JobError(file: job.file, field: "writer", "batch cannot write this job: \(obstacle); use writer: auto or writer: objects")
            }
            return (.batch, "writer: batch")
        case .auto:
            if let obstacle { return (.objects, "managed objects: " + obstacle) }
            return (.batch, "batch inserts: the job needs nothing only managed objects do")
        }
    }

    static func createDirectory(for url: URL) throws {
        guard url.isFileURL else { return }
        let directory = url.deletingLastPathComponent()
        guard !FileManager.default.fileExists(atPath: directory.path) else { return }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw StoreError(.io, path: directory.path, "cannot create the store's folder: \(error.localizedDescription)")
        }
    }
}
