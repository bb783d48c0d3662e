import Foundation
import Lade

/// Options of one seed run that are not part of the job.
public struct SeedOptions: Sendable {
    /// Seconds between progress lines; nil: a bar on a terminal, nothing otherwise.
    public var progressInterval: TimeInterval?
    /// Honour SIGINT/SIGTERM: stop before the commit, writing nothing.
    public var handlesSignals = true
    /// Where progress goes (see `ProgressReporter`); nil: nowhere.
    public var progressOutput: ProgressReporter.Output?
    /// Told of each SIGINT/SIGTERM while the seed honours them (see `StopSignals.Handler`).
    public var onStopSignal: StopSignals.Handler?
    /// Told each warning about the job's model, once, before anything is loaded, and of values
    /// accepted undecided against their pattern (as `lade run`'s).
    public var onWarning: (@Sendable (String) -> Void)?
    /// Runs between the first look at the flag and taking the lock (tests: another run's window).
    var beforeLock: (@Sendable () throws -> Void)?

    public init(progressInterval: TimeInterval? = nil, handlesSignals: Bool = true) {
        self.progressInterval = progressInterval
        self.handlesSignals = handlesSignals
    }
}

/// Runs a seed job: default data loaded into a store once, guarded by a metadata flag.
///
/// When the store's metadata lacks the job's flag, every step is read on the reader thread,
/// mapped and written with `lade run`'s machinery (an `ImportSession` that commits once, and
/// either writer: batch inserts, or managed objects found or created by key with one query per
/// batch, relationships by key), and the flag is set in the same commit: one SQLite
/// transaction, or one atomic file write for XML and binary stores. So a store has the flag and all the seed's rows, or neither. A store that carries
/// the flag is left untouched. A missing store is created with the job's model.
///
/// ```swift
/// let job = try Job(contentsOf: URL(fileURLWithPath: "jobs/seed-catalog.yaml"))
/// let report = try SeedRunner(job: job).run()      // .seeded, then .alreadySeeded
/// try SeedRunner(job: job).check().status           // .alreadySeeded: reads metadata only
/// ```
///
/// A seed is all or nothing: the first rejected row (a value that does not parse or breaks the
/// model's rules, a missing required relationship) stops it, and nothing is written; a store
/// the run created is removed again.
public final class SeedRunner {
    public let job: Job
    public let options: SeedOptions

    public init(job: Job, options: SeedOptions = SeedOptions()) {
        self.job = job
        self.options = options
    }

    private var storeURL: URL { job.store.url }

    /// Says whether the store is seeded, reading only its metadata (no model, no stack, no
    /// lock; nothing is written): `.alreadySeeded` or `.notSeeded`.
    public func check() throws -> SeedReport {
        let flag = try seedFlag()
        var report = emptyReport(flag: flag, checkOnly: true)
        report.storeExists = try job.store.location.exists()
        if report.storeExists, let value = try storedFlag(flag) {
            report.status = .alreadySeeded
            report.flagValue = value
        } else {
            report.status = .notSeeded
        }
        return report
    }

    /// Seeds the store unless it carries the flag already.
    public func run() throws -> SeedReport {
        let started = Date()
        try job.checkStorePath()
        let flag = try seedFlag()
        var report = emptyReport(flag: flag, checkOnly: false)
        func finish(_ report: SeedReport) -> SeedReport {
            var report = report
            report.seconds = Date().timeIntervalSince(started)
            report.peakResidentBytes = ProcessStats.peakResidentBytes
            return report
        }
        // Without the lock or a stack first: a seeded store is not even opened.
        if try job.store.location.exists(), let value = try storedFlag(flag) {
            report.status = .alreadySeeded
            report.storeExists = true
            report.flagValue = value
            return finish(report)
        }
        let setup = try ImportStack(job: job, onWarning: options.onWarning)
        let signals = options.handlesSignals ? StopSignals.install(onSignal: options.onStopSignal) : nil

        try ImportRunner.createDirectory(for: storeURL)
        try options.beforeLock?()
        let lock = try StoreLock(store: storeURL, scope: "lade.seed:\(flag)")
        defer { lock.release() }
        // Another run may have seeded the store between the first look and the lock.
        let exists = try job.store.location.exists()
        report.storeExists = exists
        if exists, let value = try storedFlag(flag) {
            report.status = .alreadySeeded
            report.flagValue = value
            return finish(report)
        }
        report.storeCreated = !exists
        do {
            let outcome = try seed(setup, flag: flag, signals: signals, report: report, lock: lock)
            if outcome.status != .seeded && report.storeCreated { removeStore() }
            return finish(outcome)
        } catch {
            if report.storeCreated { removeStore() }
            throw error
        }
    }

    // MARK: The seed

    /// Every step read on the reader thread and written through one `ImportSession` that
    /// commits once (`CommitPolicy.once`), with the flag.
    private func seed(_ setup: ImportStack, flag: String, signals: StopSignals?, report: SeedReport, lock: StoreLock) throws -> SeedReport {
        var report = report
        let model = setup.model
        let stack = try setup.open(job, contextName: "lade seed")
        let context = stack.context
        defer { stack.coordinator.remove(stack.store) }

        (report.writer, report.writerReason) = try Self.chooseWriter(job: job, plans: setup.plans, model: model)
        try ImportStack.setPageCache(of: stack.store, job: job, writer: report.writer ?? .objects)
        let session = ImportSession(job: job, stack: stack, policy: .once, progressInterval: options.progressInterval, progressOutput: options.progressOutput)
        session.signals = signals
        session.verifyLock = { try lock.verify() }
        session.onWarning = options.onWarning
        return try context.performAndWait { () throws -> SeedReport in
            // Objects hold each other and their context: let them all go, and the store with them.
            defer { context.reset() }
            defer { session.close() }
            // Batch inserts: one session holding every step's rows and the flag. No managed
            // objects: memory stays flat whatever the seed's size, and a later step finds an
            // earlier step's rows in the open transaction.
            let shared = report.writer == .batch ? try context.beginBatchInsert(entityName: setup.plans[0].entity.name) : nil
            defer { shared?.rollback() }
            var objectWriters: [(step: ImportStep, writer: BatchWriter)] = []
            for plan in setup.plans {
                let (reader, mapper, _) = try ImportStack.source(plan)
                let writer: ImportWriter
                if let shared {
                    writer = BatchInsertWriter(context: context, plan: plan, model: model, session: shared)
                } else {
                    // Managed objects in one context, saved once: later steps find earlier steps'
                    // unsaved objects through an index of them.
                    let objects = BatchWriter(context: context, plan: plan, model: model)
                    if !objectWriters.isEmpty { objects.unsaved = UnsavedObjectIndex(objects: context.insertedObjects, model: model) }
                    objectWriters.append((plan.step, objects))
                    writer = objects
                }
                guard try load(plan, reader: reader, mapper: mapper, writer: writer, session: session, report: &report) else { return report }
            }
            // A signal after the last batch still stops the seed before its one commit.
            if let signal = session.stopSignal {
                report.status = .interrupted(signal: signal)
                return report
            }
            // The one commit: every step's rows and the flag.
            let pending = shared != nil ? "every step's rows" : "\(context.insertedObjects.count + context.updatedObjects.count) objects"
            session.note("lade seed: committing \(pending) and \(flag)")
            let value = try stageFlag(flag, report: report, coordinator: stack.coordinator, store: stack.store)
            do {
                _ = try session.finish(complete: true)
            } catch let error where shared == nil {
                report.status = .aborted(reason: Self.describe(saveError: error, context: context, writers: objectWriters))
                return report
            }
            report.status = .seeded
            report.flagValue = value
            return report
        }
    }

    /// The flag's value (when, which job, each step's counts), staged on the coordinator so
    /// that the one commit writes it with the rows.
    private func stageFlag(_ flag: String, report: SeedReport, coordinator: PersistentStoreCoordinator, store: PersistentStore) throws -> PropertyListValue {
        let value = SeedFlag(seededAt: Date(), job: URL(fileURLWithPath: job.file).lastPathComponent, steps: report.steps).propertyList
        var metadata = coordinator.metadata(for: store)
        metadata[flag] = value
        try coordinator.setMetadata(metadata, for: store)
        return value
    }

    /// One step's source, read on the reader thread and written batch by batch by `writer`,
    /// its summary added to the report. False when the seed ends here: a rejected row (the
    /// report aborted, naming it) or a stop signal (interrupted).
    private func load(_ plan: ImportPlan, reader: RecordReader, mapper: RowMapper, writer: ImportWriter, session: ImportSession,
                      report: inout SeedReport) throws -> Bool {
        let source = plan.step.source.displayPath
        let before = session.counts
        try session.read(plan, reader: reader, mapper: mapper, writer: writer)
        defer { session.endReading() }
        switch try session.load() {
        case .sourceEnded:
            break
        case .interrupted(let signal):
            report.status = .interrupted(signal: signal)
            return false
        case .rejected(let rows):
            report.status = .aborted(reason: rows.first.map { Self.describe($0, source: source, others: rows.count - 1) } ?? "\(source): a row was rejected")
            return false
        }
        var counts = session.counts
        counts.subtract(before)
        report.steps.append(SeedFlag.Step(
            entity: plan.entity.name, source: source, rows: session.rowsRead, inserted: counts.inserted, updated: counts.updated,
            unchanged: counts.unchanged, createdDestinations: counts.createdDestinations, unresolved: counts.unresolved))
        return true
    }

    // MARK: Helpers

    /// Batch inserts, every step in one transaction, when every step allows them (by
    /// `lade run`'s rule, `ImportRunner.chooseWriter`); else managed objects, saying why.
    static func chooseWriter(job: Job, plans: [ImportPlan], model: ManagedObjectModel) throws -> (ImportWriterChoice, String) {
        if job.writer == .objects { return (.objects, "writer: objects") }
        for plan in plans {
            let (choice, why) = try ImportRunner.chooseWriter(job: job, plan: plan, model: model)
            if choice == .objects { return (.objects, plans.count > 1 ? "\(why) (step \(plan.entity.name))" : why) }
        }
        return (.batch, job.writer == .batch ? "writer: batch" : "batch inserts: no step needs what only managed objects do")
    }

    private func seedFlag() throws -> String {
        guard job.kind == .seed, let flag = job.flag else {
            throw JobError(file: job.file, field: "kind", "lade seed takes a seed job (kind: seed); use lade run for kind: import")
        }
        guard job.onError.policy == .abort else {
            throw JobError(file: job.file, field: "onError", "a seed is all or nothing: any rejected row stops it (leave out onError, or write policy: abort)")
        }
        return flag
    }

    private func emptyReport(flag: String, checkOnly: Bool) -> SeedReport {
        SeedReport(
            status: .notSeeded, job: job.file, store: job.store.displayName, flag: flag, checkOnly: checkOnly, storeCreated: false,
            storeExists: false, steps: [], flagValue: nil, seconds: 0, peakResidentBytes: 0)
    }

    /// The flag's value in the store file's metadata (read without a stack), or nil.
    private func storedFlag(_ flag: String) throws -> PropertyListValue? {
        try PersistentStoreCoordinator.metadataForPersistentStore(ofType: job.store.kind, at: storeURL)[flag]
    }

    /// Removes a store file this run created and did not seed, with SQLite's companions. A
    /// new PostgreSQL store stays, empty: Lade drops no schema (a run again seeds it).
    private func removeStore() {
        guard !job.store.location.isServer else { return }
        FileSystem.removeWithCompanions(storeURL.path)
    }

    /// `products.ndjson:7:3: field 'price': value '-1': price must be at least 0`.
    static func describe(_ reject: RejectedRow, source: String, others: Int) -> String {
        var text = reject.description(source: source)
        if others > 0 { text += " (and \(others) more rejected row\(others == 1 ? "" : "s") in the same batch)" }
        return text
    }

    /// A save the store refused, with the source line of the row behind the first object it
    /// refused when there is one (the refusals read as `lade run` reads them).
    static func describe(saveError error: Error, context: ManagedObjectContext, writers: [(step: ImportStep, writer: BatchWriter)]) -> String {
        let message = String(describing: error)
        for (object, reason) in ImportStack.refusedObjects(error, in: context) {
            for (step, writer) in writers {
                if let row = writer.rejectedRow(for: object, reason: reason) {
                    return "\(step.source.displayPath):\(row.line): the store refused the seed: \(message)"
                }
            }
        }
        return "the store refused the seed: \(message)"
    }
}
