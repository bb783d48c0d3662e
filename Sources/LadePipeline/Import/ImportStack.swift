import Foundation
import Lade

/// What `lade run` (`ImportRunner`) and `lade seed` (`SeedRunner`) set up the same way, so
/// they cannot drift apart: the job's model with its warnings told and a plan per step; once
/// the caller holds the store's lock, the store opened (created when missing) in a coordinator
/// and a private-queue context with undo off; each step's source opened and checked against its
/// plan, with its mapper.
struct ImportStack {
    let model: ManagedObjectModel
    let plans: [ImportPlan]

    /// Loads the model (telling `onWarning` each of its warnings once) and plans every step.
    init(job: Job, onWarning: (@Sendable (String) -> Void)?) throws {
        let model = try job.model.load()
        for warning in model.warnings { onWarning?(warning.description) }
        self.model = model
        plans = try job.steps.map { try ImportPlan(step: $0, model: model, storeType: job.store.kind) }
    }

    /// The store open in a coordinator, and a context on it (call with the store's lock held).
    struct Stack {
        let coordinator: PersistentStoreCoordinator
        let store: PersistentStore
        let context: ManagedObjectContext
    }

    /// With `migrate: automatic`, a store of an older version of the job's model is carried to
    /// the job's version first (lightweight, as `lade migrate` does).
    func open(_ job: Job, contextName: String) throws -> Stack {
        let reference = job.store
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let migration = job.migrate == .automatic
            ? PersistentStoreCoordinator.MigrationOptions(modelBundle: job.model.url, compiledModel: job.model.compiledModel) : nil
        // `store: { history: true }`: a new store is made with the history tables; one that is
        // there already is never given them (as no write adds them by accident).
        if reference.history, try !reference.location.exists() {
            do {
                try PersistentStoreCoordinator.createStore(at: reference.url, type: reference.kind, model: model, history: true)
            } catch let error as StoreError where error.kind == .alreadyExists {
                // Another worker made it meanwhile: opened below, and checked for its history.
            }
        }
        let store = try coordinator.addPersistentStore(type: reference.kind, at: reference.url, migration: migration)
        if reference.history && !store.recordsHistory {
            throw HistoryError(.notTracked, path: reference.displayName, "the job says 'history: true', but this store was made without persistent history; Lade makes new stores with it and never adds it to a store: give a new store path, or leave 'history' out")
        }
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.name = contextName
        context.transactionAuthor = job.transactionAuthor
        context.persistentStoreCoordinator = coordinator
        context.undoManager = nil
        return Stack(coordinator: coordinator, store: store, context: context)
    }

    /// Gives a SQLite store the job's page cache for the run (`BatchSettings.cacheMiB`, else
    /// the writer's default); other stores keep everything in memory anyway.
    static func setPageCache(of store: PersistentStore, job: Job, writer: ImportWriterChoice) throws {
        guard let loading = store.bulkLoading else { return }
        try loading.setPageCacheSize(kibibytes: job.batch.cacheMiB(for: writer) * 1024)
    }

    /// On a SQLite store, keeps the fetch indexes of the plan's entity table out while the load
    /// fills it (`SQLiteStore.deferFetchIndexes`: when the table is empty, or its indexes are
    /// missing after a killed load), except those the run looks rows up by: the key, and the
    /// match attribute of a relationship into the same table. Returns the indexes kept out.
    static func deferIndexes(of store: PersistentStore, plan: ImportPlan, model: ManagedObjectModel) throws -> [String] {
        guard let loading = store.bulkLoading else { return [] }
        let root = model.rootEntity(of: plan.entity.name)?.name
        var lookups = Set(plan.step.key)
        for relationship in plan.relationships where model.rootEntity(of: relationship.relationship.destinationEntityName)?.name == root {
            lookups.insert(relationship.match.name)
        }
        return try loading.deferFetchIndexes(ofEntity: plan.entity.name, keeping: lookups)
    }

    /// A step's source opened (from `resume` when given) and checked against its plan (a CSV
    /// header against the fields; JSON keys are not a header), with the mapper for its records
    /// and the attributes matched to columns by name (`ImportPlan.check`).
    static func source(_ plan: ImportPlan, resumingAt resume: ResumePoint? = nil) throws -> (reader: RecordReader, mapper: RowMapper, matched: [(String, String)]) {
        let source = plan.step.source
        let reader = try RecordReader(path: source.url?.path ?? "-", format: source.format, fields: plan.readerFields,
                                      resumingAt: resume, displayName: source.displayPath)
        let namesEveryField = reader.format.namesEveryField
        let matched = try plan.check(columns: reader.columns, sourceName: source.displayPath, isHeader: namesEveryField)
        // Column numbers in rejects are CSV's; a JSON source's first keys number nothing.
        return (reader, RowMapper(plan: plan, columns: namesEveryField ? reader.columns : nil), matched)
    }

    /// The objects a save refused, each with why: validation failures and broken uniqueness
    /// constraints. Empty for any other error (which then stops the run). The one place a
    /// refused save becomes rows to reject (`BatchWriter.rejectedRow(for:reason:)`).
    static func refusedObjects(_ error: Error, in context: ManagedObjectContext) -> [(ManagedObject, String)] {
        switch error {
        case let validation as ObjectValidationError:
            var seen: Set<ManagedObjectID> = []
            return validation.failures.compactMap { failure in
                guard seen.insert(failure.objectID).inserted else { return nil }
                let reasons = validation.failures.filter { $0.objectID == failure.objectID }
                    .map { "\($0.property) \($0.message)" + ($0.value.map { " (value: \($0))" } ?? "") }
                return (context.object(with: failure.objectID), "the store refused it: " + reasons.joined(separator: "; "))
            }
        case ContextError.uniquenessViolation(let entity, let properties, let id):
            return [(context.object(with: id), "another \(entity) already has the same \(properties.joined(separator: ", ")) (uniqueness constraint)")]
        default:
            return []
        }
    }
}
