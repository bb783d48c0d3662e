import Foundation
import Lade

/// `lade validate JOB`: everything that can be checked without writing — the job's shape, its
/// fit with the model, the source's header, and (when the store exists) that the store opens
/// with the model. The store is opened read-only; nothing is created or changed.
public struct JobValidation {
    public let job: Job

    public init(job: Job) {
        self.job = job
    }

    public struct Result: Sendable {
        public var lines: [String]
        public func text() -> String { lines.joined(separator: "\n") + "\n" }
    }

    /// `2` for 2 s, `0.5` for half of one: no locale, no trailing `.0`.
    static func seconds(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    public func run() throws -> Result {
        let model = try job.model.load()
        var lines = ["\(job.file): \(job.kind.rawValue) job, model \(job.model.displayName) (\(model.entities.count) entities)"]
        var plans: [ImportPlan] = []
        for (number, step) in job.steps.enumerated() {
            let plan = try ImportPlan(step: step, model: model, storeType: job.store.kind)
            plans.append(plan)
            let prefix = job.steps.count > 1 ? "step \(number + 1): " : ""
            let (reader, _, matched) = try ImportStack.source(plan)
            lines.append("\(prefix)\(step.source.displayPath) → \(plan.entity.name), mode \(step.mode.rawValue)" + (step.key.isEmpty ? ", no key (insert only)" : ", key \(step.key.joined(separator: ", "))"))
            for attribute in plan.attributes where attribute.listed {
                let origin = attribute.constant.map { "constant \($0.canonicalText)" }
                    ?? attribute.fieldIndices.map { plan.readerFields[$0].components.joined(separator: ".") }.joined(separator: ", ")
                lines.append("  \(attribute.attribute.name) ← \(origin)")
            }
            for (attribute, column) in matched {
                lines.append("  \(attribute) ← \(column) (matched by name)")
            }
            for relationship in plan.relationships {
                let settings = relationship.settings
                lines.append("  \(settings.relationship) → \(relationship.relationship.destinationEntityName) by \(settings.match) ← \(settings.from.components.joined(separator: "."))"
                    + (settings.create ? ", created when missing" : "") + (settings.required ? ", required" : ""))
            }
            if let columns = reader.columns {
                let used = Set(plan.readerFields.map { $0.components.joined(separator: ".") })
                let ignored = columns.filter { !used.contains($0) }
                if !ignored.isEmpty { lines.append("  columns not imported: \(ignored.joined(separator: ", "))") }
            }
        }
        if try job.store.location.exists() {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            do {
                let store = try coordinator.addPersistentStore(type: job.store.kind, at: job.store.url, readOnly: true)
                lines.append("store \(job.store.displayName): \(store.type), matches the model (UUID \(store.identifier))")
            } catch let error as StoreError {
                // migrate: automatic: the migration the run would make first, planned (and any
                // refusal found), nothing written.
                guard case .modelMismatch = error.kind, job.migrate == .automatic else { throw error }
                let versions = try ManagedObjectModel.versions(at: job.model.url)
                let target = job.model.version ?? versions.current
                let migration = try StagedMigration(store: job.store.url, bundle: job.model.url, to: target, compiledModel: job.model.compiledModel)
                lines.append("store \(job.store.displayName): written with \(migration.sourceVersion); migrate: automatic carries it to \(migration.targetVersion) first ("
                    + migration.steps.map { "\($0.source) → \($0.destination), \($0.label)" }.joined(separator: "; ") + ")")
            }
        } else {
            lines.append("store \(job.store.displayName): will be created with the model")
        }
        if let flag = job.flag {
            let (writer, why) = try SeedRunner.chooseWriter(job: job, plans: plans, model: model)
            lines.append("writer: \(writer.rawValue) (\(why))")
            if let cache = Self.pageCache(job, writer) { lines.append(cache) }
            lines.append("flag \(flag): set with every step's rows in one commit, batches of \(job.batch.size); on error: abort")
            lines.append("ok")
            return Result(lines: lines)
        }
        let (writer, why) = try ImportRunner.chooseWriter(job: job, plan: plans[0], model: model)
        let byTime = "commit every \(Self.seconds(job.batch.commitSeconds(for: job.store.kind))) s" + (job.batch.commitEvery.map { " or \($0) batches" } ?? "")
        let commits = writer == .batch ? byTime
            : !job.store.kind.holdsSaves ? "one save at the end (a \(job.store.kind.name) store is written whole)"
            : byTime + ", each batch saved into the open transaction, reset every \(job.batch.resetEvery)"
        lines.append("writer: \(writer.rawValue) (\(why))")
        if let cache = Self.pageCache(job, writer) { lines.append(cache) }
        lines.append("batches of \(job.batch.size), \(commits); on error: \(job.onError.policy.rawValue)"
            + (job.onError.policy == .skip ? " (up to \(job.onError.maxErrors), rejects to \(job.onError.rejects?.path ?? "-"))" : ""))
        lines.append("ok")
        return Result(lines: lines)
    }

    /// The page cache line, for a SQLite store.
    private static func pageCache(_ job: Job, _ writer: ImportWriterChoice) -> String? {
        guard job.store.kind.bulkLoads else { return nil }
        let mebibytes = job.batch.cacheMiB(for: writer)
        return "SQLite page cache \(mebibytes) MiB" + (job.batch.cacheMiB == nil ? " (the \(writer.rawValue) writer's default; batch.cacheMiB sets it)" : "")
    }
}
