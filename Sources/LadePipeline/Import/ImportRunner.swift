import Foundation
import Lade

/// How an import run ended.
public enum ImportStatus: Sendable, Equatable {
    /// Every row was imported.
    case completed
    /// The source was read to the end; some rows were rejected (see the rejects file).
    case completedWithRejects
    /// The store says this unchanged source was imported already; nothing was done.
    case alreadyImported
    /// A signal stopped the run after a committed batch; running again resumes.
    case interrupted(signal: Int32)
    /// A row could not be imported (`policy: abort`, or more rejects than `maxErrors`); every
    /// batch before it is committed.
    case aborted(reason: String)

    public var name: String {
        switch self {
        case .completed: "completed"
        case .completedWithRejects: "completed-with-rejects"
        case .alreadyImported: "already-imported"
        case .interrupted: "interrupted"
        case .aborted: "aborted"
        }
    }
}

/// What a run did, for people and for `--report FILE` (JSON).
public struct ImportReport: Sendable {
    public var status: ImportStatus
    public var job: String
    public var source: String
    public var store: String
    public var entity: String
    /// Counts for this run only.
    public var counts: ImportCounts
    /// Source records read by this run.
    public var rows: Int64
    /// The line this run started at when it resumed an earlier one.
    public var resumedAtLine: Int?
    public var batches: Int
    public var commits: Int
    public var resets: Int
    public var seconds: Double
    public var peakResidentBytes: Int64
    public var rejectsFile: String?
    /// The source is a stream (standard input, a pipe, a FIFO, a device): read once, it has no
    /// checkpoint to resume from, and a killed run starts over.
    public var sourceIsStream = false
    /// Which writer ran (`batch` or `objects`), and why.
    public var writer: ImportWriterChoice = .objects
    public var writerReason = ""
    /// Fetch indexes of the entity's table left out while this run loaded it and built at its
    /// last commit (the table was empty, or a killed run had left them out).
    public var deferredIndexes: [String] = []

    public var rowsPerSecond: Double { seconds > 0 ? Double(rows) / seconds : 0 }

    public func json() throws -> Data {
        var object: [String: Any] = [
            "status": status.name, "job": job, "source": source, "store": store, "entity": entity,
            "rows": rows, "inserted": counts.inserted, "updated": counts.updated, "unchanged": counts.unchanged,
            "duplicates": counts.duplicates, "existing": counts.existing, "rejected": counts.rejected,
            "unresolved": counts.unresolved, "createdDestinations": counts.createdDestinations,
            "batches": batches, "commits": commits, "resets": resets,
            "seconds": (seconds * 1000).rounded() / 1000, "rowsPerSecond": rowsPerSecond.rounded(),
            "peakRSSBytes": peakResidentBytes,
        ]
        if let resumedAtLine { object["resumedAtLine"] = resumedAtLine }
        object["resumable"] = !sourceIsStream
        object["writer"] = writer.rawValue
        object["writerReason"] = writerReason
        object["deferredIndexes"] = deferredIndexes
        if let rejectsFile { object["rejectsFile"] = rejectsFile }
        if case .aborted(let reason) = status { object["reason"] = reason }
        if case .interrupted(let signal) = status { object["signal"] = Int(signal) }
        return try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    }

    /// A few lines for a person.
    public func text() -> String {
        var lines: [String] = []
        switch status {
        case .alreadyImported:
            return "\(source) was imported into \(store) already and has not changed since; nothing to do (--force imports it again)\n"
        case .completed, .completedWithRejects: lines.append("imported \(source) into \(store) (\(entity))")
        case .interrupted: lines.append("stopped by a signal after a committed batch; run the job again to resume")
        case .aborted(let reason): lines.append("stopped: \(reason)")
        }
        if let resumedAtLine { lines.append("resumed at line \(resumedAtLine)") }
        let c = counts
        lines.append("rows \(rows): inserted \(c.inserted), updated \(c.updated), unchanged \(c.unchanged), duplicates \(c.duplicates), existing \(c.existing), rejected \(c.rejected), unresolved \(c.unresolved)"
            + (c.createdDestinations > 0 ? ", related objects created \(c.createdDestinations)" : ""))
        lines.append(String(format: "%d batches, %d commits, %d resets, %.2f s, %.0f rows/s, peak memory %.1f MiB",
                            batches, commits, resets, seconds, rowsPerSecond, Double(peakResidentBytes) / 1_048_576))
        lines.append("writer: \(writer.rawValue) (\(writerReason))")
        if !deferredIndexes.isEmpty {
            lines.append("fetch indexes built after loading: \(deferredIndexes.joined(separator: ", "))")
        }
        if c.rejected > 0, let rejectsFile { lines.append("rejected rows: \(rejectsFile)") }
        if sourceIsStream { lines.append("\(source) is a stream (standard input, a pipe or a device): it was read once and cannot be resumed; a stopped run starts over") }
        return lines.joined(separator: "\n") + "\n"
    }
}

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
    /// compiler does), once, before anything is imported; the CLI prints them.
    public var onWarning: (@Sendable (String) -> Void)?

    public init(force: Bool = false, progressInterval: TimeInterval? = nil, handlesSignals: Bool = true, onWarning: (@Sendable (String) -> Void)? = nil) {
        self.force = force
        self.progressInterval = progressInterval
        self.handlesSignals = handlesSignals
        self.onWarning = onWarning
    }
}

/// Runs an import job: a reader thread parses and maps records into a bounded queue; this
/// thread writes batch by batch, with batch inserts or, when the job needs them, managed
/// objects in a private-queue context (undo off) saved batch by batch into a transaction held
/// open (`StoreTransaction`) and reset every `resetEvery` batches so memory stays flat. Either
/// writer commits every `commitSeconds` (or `commitEvery` batches), with the checkpoint in the
/// same transaction.
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
        let storeURL = job.store.url
        try job.checkStorePath()
        let rejectsKind = try job.onError.rejects.map { try OutputFile.check($0, role: "onError.rejects", reads: job.reads) }
        try Self.createDirectory(for: storeURL)
        let lock = try StoreLock(store: storeURL)
        defer { lock.release() }
        let stack = try setup.open(job, contextName: "lade import")
        let coordinator = stack.coordinator, store = stack.store, context = stack.context

        let key = Checkpoint.metadataKey(entity: plan.entity.name, source: step.source.url)
        let identity = try Checkpoint.SourceIdentity.of(step.source.url)
        let previous = Checkpoint(coordinator.metadata(for: store)[key])
        var report = ImportReport(
            status: .completed, job: job.file, source: step.source.displayPath, store: storeURL.path, entity: plan.entity.name,
            counts: ImportCounts(), rows: 0, resumedAtLine: nil, batches: 0, commits: 0, resets: 0, seconds: 0,
            peakResidentBytes: 0, rejectsFile: job.onError.rejects?.path)
        report.sourceIsStream = identity == nil
        var resume: ResumePoint?
        var runningCounts = ImportCounts()
        if !options.force, let previous, let identity, previous.source == identity {
            if previous.complete {
                report.status = .alreadyImported
                report.seconds = Date().timeIntervalSince(started)
                report.peakResidentBytes = ProcessStats.peakResidentBytes
                return report
            }
            if previous.resume.recordIndex > 0 {
                resume = previous.resume
                runningCounts = previous.counts
                report.resumedAtLine = previous.resume.line
            }
        }

        let (reader, mapper, _) = try ImportStack.source(plan, resumingAt: resume)
        // Only now: opening a FIFO (and reading a CSV header) waits for a writer, and until a
        // batch is under way SIGINT and SIGTERM should end the process as they normally do.
        let signals = options.handlesSignals ? StopSignals.install(onSignal: options.onStopSignal) : nil
        let rejectsFile = try job.onError.rejects.map {
            try RejectsFile(url: $0, source: step.source.displayPath, resumeLength: resume == nil ? nil : previous?.rejectsLength,
                            kind: rejectsKind ?? .regular)
        }
        defer { rejectsFile?.close() }

        (report.writer, report.writerReason) = try Self.chooseWriter(job: job, plan: plan, model: model)
        try ImportStack.setPageCache(of: store, job: job, writer: report.writer)
        report.deferredIndexes = try ImportStack.deferIndexes(of: store, plan: plan, model: model)
        let writer = BatchWriter(context: context, plan: plan, model: model)
        let inserter = report.writer == .batch ? BatchInsertWriter(context: context, plan: plan, model: model) : nil
        defer { if let inserter { context.performAndWait { inserter.rollback() } } }
        let progress = ProgressReporter(mode: ProgressReporter.mode(interval: options.progressInterval), label: step.source.displayPath, output: options.progressOutput)
        defer { progress.finish() }

        // The reader's thread: parse and map; one batch ready ahead, handed over when the
        // writer takes it (the reader is faster than the writer, so a batch more in the queue
        // only holds memory).
        let queue = BoundedQueue<Result<MappedBatch, Error>>(capacity: 1)
        let batchSize = job.batch.size
        let totalBytes = reader.totalBytes
        let handOver = ReaderHandOver(reader: reader, mapper: mapper)
        // Batches written, freed on the reader's thread once the writer has taken the next.
        let written = Handback<MappedBatch>()
        let producer = Thread {
            do {
                // Each record is mapped as it is read: no batch of records is kept (or freed) besides the mapped one.
                while let mapped = try handOver.mapper.nextBatch(from: handOver.reader, maxRecords: batchSize) {
                    guard queue.put(.success(mapped), untilTaken: true) else { break }
                    written.drain()
                }
            } catch {
                queue.put(.failure(error))
            }
            queue.finish()
        }
        producer.name = "lade reader"
        producer.stackSize = 8 << 20
        producer.start()
        defer { queue.cancel() }

        var committedPoint = resume ?? ResumePoint(byteOffset: 0, line: 1, recordIndex: 0)
        var pendingPoint = committedPoint
        var batchesSinceCommit = 0
        var batchesSinceReset = 0
        var lastCommit = DispatchTime.now()
        let firstRecord = committedPoint.recordIndex
        let policy = job.onError

        /// Commits the batches since the last commit with the checkpoint, in one transaction.
        /// Rows the store refuses (a save's validation or a uniqueness constraint the rows
        /// could not be checked against beforehand) are rejected like any other bad row; with
        /// `policy: abort`, or past `maxErrors`, nothing since the last commit is kept and the
        /// reason is returned.
        /// What a run had after each batch since the last commit, so an abort on a row the
        /// store refuses can keep the batches before that row's.
        struct BatchState {
            var point: ResumePoint
            var running: ImportCounts
            var counts: ImportCounts
            var rejectsLength: Int64
        }
        var batchStates: [Int: BatchState] = [:]
        /// The object writer's transaction on a SQLite store (see `saveBatch`). Its saves get no
        /// savepoint when they cannot break a uniqueness constraint: that spares SQLite a
        /// statement journal of every page a batch changes (8% of a 1,000,000-row import).
        var transaction: StoreTransaction?
        /// Set when the context must be reset before the next batch, whatever `resetEvery` says.
        var resetNow = false
        let undoableSaves = BatchWriter.savesMayBreakConstraints(plan: plan, model: model)
        defer { if let transaction, transaction.isOpen { context.performAndWait { transaction.rollback() } } }
        var stateAtCommit = BatchState(point: committedPoint, running: runningCounts, counts: report.counts, rejectsLength: try rejectsFile?.length ?? 0)

        /// Commits the batches since the last commit with the checkpoint, in one transaction.
        /// Rows the store refuses (a save's validation or a uniqueness constraint the rows
        /// could not be checked against beforehand) are rejected like any other bad row. With
        /// `policy: abort`, or past `maxErrors`, the batches before the refused row's are
        /// committed (when they can be told apart from it; otherwise nothing since the last
        /// commit is) and the reason is returned.
        func commit(complete: Bool) throws -> String? {
            var abortReason: String?
            var complete = complete
            while true {
                let rejectsLength = try rejectsFile?.sync() ?? 0
                let checkpoint = Checkpoint(source: identity, resume: pendingPoint, complete: complete, rejectsLength: rejectsLength, counts: runningCounts)
                var metadata = coordinator.metadata(for: store)
                metadata[key] = checkpoint.propertyList
                for expired in Checkpoint.expiredKeys(in: metadata, keeping: key, retention: job.checkpoints) {
                    metadata[expired] = nil
                }
                try coordinator.setMetadata(metadata, for: store)
                if let inserter {
                    // Batch inserts: the store refused rows as they were written; nothing to redo.
                    try inserter.commit()
                    break
                }
                if let held = transaction {
                    // Every batch was saved into the transaction as it was written.
                    if complete {
                        try held.commit()
                        transaction = nil
                    } else {
                        let next = try held.commitAndBeginNext()
                        transaction = next
                        // Objects read before may be out of date: another process wrote meanwhile.
                        if next.othersWroteBetween { resetNow = true }
                    }
                    break
                }
                do {
                    try context.save()
                    break
                } catch {
                    let refused = ImportStack.refusedObjects(error, in: context)
                    let failingBatch = refused.compactMap { writer.originBatch(of: $0.0) }.min()
                    var (rows, undone) = writer.takeBack(refused)
                    runningCounts.subtract(undone)
                    report.counts.subtract(undone)
                    guard !rows.isEmpty, abortReason == nil else { throw error }
                    rows.sort { $0.line < $1.line }
                    if policy.policy == .abort || runningCounts.rejected + rows.count > policy.maxErrors {
                        let reason = policy.policy == .abort ? rows[0].description(source: step.source.displayPath)
                            : "more than \(policy.maxErrors) rows rejected (maxErrors); the last: \(rows.last!.description(source: step.source.displayPath))"
                        guard let failingBatch, writer.dropBatches(from: failingBatch) else {
                            context.rollback()
                            return reason
                        }
                        let base = batchStates[failingBatch - 1] ?? stateAtCommit
                        pendingPoint = base.point
                        runningCounts = base.running
                        report.counts = base.counts
                        try rejectsFile?.truncate(to: base.rejectsLength)
                        complete = false
                        abortReason = reason
                        continue
                    }
                    runningCounts.rejected += rows.count
                    report.counts.rejected += rows.count
                    try rejectsFile?.append(rows)
                }
            }
            writer.didCommit()
            committedPoint = pendingPoint
            batchesSinceCommit = 0
            lastCommit = DispatchTime.now()
            report.commits += 1
            batchStates.removeAll()
            stateAtCommit = BatchState(point: committedPoint, running: runningCounts, counts: report.counts, rejectsLength: try rejectsFile?.length ?? 0)
            return abortReason
        }

        /// The commit that ends the run, whatever the reason: it also builds the indexes kept
        /// out while loading (in its transaction, with the last rows and the checkpoint).
        func endingCommit(complete: Bool) throws -> String? {
            if !report.deferredIndexes.isEmpty { store.bulkLoading?.buildDeferredIndexesAtNextCommit() }
            return try commit(complete: complete)
        }

        func finish(_ status: ImportStatus) -> ImportReport {
            report.status = status
            report.rows = committedPoint.recordIndex - firstRecord
            report.seconds = Date().timeIntervalSince(started)
            report.peakResidentBytes = ProcessStats.peakResidentBytes
            return report
        }

        /// Saves the batch just written into the store transaction. Rows the store refuses
        /// join the batch's `rejects` (their counts taken back); when more are rejected than
        /// `allowed`, nothing of the batch is kept and false is returned.
        func saveBatch(rejects: inout [RejectedRow], counts: inout ImportCounts, allowed: Int) throws -> Bool {
            while true {
                do {
                    try context.save()
                    writer.didSave()
                    return true
                } catch {
                    if let transaction, !transaction.isOpen {
                        // A save with no savepoint failed while writing: it took the transaction with it.
                        throw RolledBackSave(reason: "\(error)")
                    }
                    let (rows, undone) = writer.takeBack(ImportStack.refusedObjects(error, in: context))
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

        return try context.performAndWait { () throws -> ImportReport in
            // The object writer on SQLite saves every batch into a transaction held open until
            // the commit, so its context can be reset after any batch (memory stays flat)
            // while commits stay as rare as the batch writer's.
            if inserter == nil && job.store.kind == .sqlite {
                transaction = try context.beginStoreTransaction(entityName: plan.entity.name, undoableSaves: undoableSaves)
            }
            while let next = queue.take() {
                let batch: MappedBatch
                switch next {
                case .success(let mapped): batch = mapped
                case .failure(let error):
                    // Damage the reader cannot skip past: keep what is good, then stop.
                    if let reason = try endingCommit(complete: false) { return finish(.aborted(reason: reason)) }
                    throw error
                }
                let remaining = policy.policy == .abort ? 0 : policy.maxErrors - runningCounts.rejected
                var batchCounts = ImportCounts()
                var rejects = batch.rejects
                var applied = false
                if rejects.count <= remaining {
                    let written = try inserter?.write(batch, allowedRejects: remaining - rejects.count, counts: &batchCounts)
                        ?? writer.write(batch, allowedRejects: remaining - rejects.count, counts: &batchCounts)
                    rejects += written.rejects
                    applied = written.applied
                    if applied && transaction != nil {
                        applied = try saveBatch(rejects: &rejects, counts: &batchCounts, allowed: remaining)
                    }
                }
                guard applied else {
                    // Nothing of this batch is kept; everything before it is.
                    if let reason = try endingCommit(complete: false) { return finish(.aborted(reason: reason)) }
                    rejects.sort { $0.line < $1.line }
                    let first = rejects.first.map { $0.description(source: step.source.displayPath) } ?? "a row was rejected"
                    let why = policy.policy == .abort ? first : "more than \(policy.maxErrors) rows rejected (maxErrors); the last: \(rejects.last!.description(source: step.source.displayPath))"
                    return finish(.aborted(reason: why))
                }
                rejects.sort { $0.line < $1.line }
                try rejectsFile?.append(rejects)
                batchCounts.rejected = rejects.count
                runningCounts.add(batchCounts)
                report.counts.add(batchCounts)
                report.batches += 1
                pendingPoint = batch.endPoint
                batchStates[writer.currentBatch] = BatchState(point: pendingPoint, running: runningCounts, counts: report.counts, rejectsLength: try rejectsFile?.length ?? 0)
                batchesSinceCommit += 1
                batchesSinceReset += 1
                let stop = signals?.received
                let due: Bool
                if inserter != nil || transaction != nil {
                    // Batch inserts and saves held in a transaction commit by time (and by
                    // count when the job says so).
                    let seconds = Double(DispatchTime.now().uptimeNanoseconds - lastCommit.uptimeNanoseconds) / 1e9
                    due = seconds >= job.batch.commitSeconds || (job.batch.commitEvery.map { batchesSinceCommit >= $0 } ?? false)
                } else {
                    // An XML or binary store: every save writes the whole file, so one at the end.
                    due = false
                }
                if stop != nil {
                    if let reason = try endingCommit(complete: false) { return finish(.aborted(reason: reason)) }
                } else if due {
                    if let reason = try commit(complete: false) { return finish(.aborted(reason: reason)) }
                }
                if let inserter {
                    if batchesSinceReset >= job.batch.resetEvery && batchesSinceCommit == 0 {
                        inserter.forgetDestinations()
                        batchesSinceReset = 0
                    }
                } else if transaction != nil {
                    // Every batch is saved: the context may be reset after any of them.
                    if batchesSinceReset >= job.batch.resetEvery || resetNow {
                        resetNow = false
                        context.reset()
                        writer.didReset()
                        batchesSinceReset = 0
                        report.resets += 1
                    }
                }
                progress.update(rows: pendingPoint.recordIndex, bytes: batch.bytesRead, totalBytes: totalBytes)
                if let stop { return finish(.interrupted(signal: stop)) }
                written.add(batch)
            }
            if let reason = try endingCommit(complete: true) { return finish(.aborted(reason: reason)) }
            return finish(runningCounts.rejected > 0 || report.counts.rejected > 0 ? .completedWithRejects : .completed)
        }
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
        let directory = url.deletingLastPathComponent()
        guard !FileManager.default.fileExists(atPath: directory.path) else { return }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw StoreError(.io, path: directory.path, "cannot create the store's folder: \(error.localizedDescription)")
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

/// The reader and mapper, handed to the reader's thread: from then on only that thread uses them.
private final class ReaderHandOver: @unchecked Sendable {
    let reader: RecordReader
    let mapper: RowMapper

    init(reader: RecordReader, mapper: RowMapper) {
        self.reader = reader
        self.mapper = mapper
    }
}
