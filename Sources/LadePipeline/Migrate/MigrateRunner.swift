import Foundation
import Lade

/// `lade migrate`: carries a store in place to a version of its `.xcdatamodeld`, holding the
/// store's lock meanwhile. `plan()` takes the lock, removes what an interrupted run left, loads
/// the mapping models and plans every step (`StagedMigration`); the plan's `run(progress:)`
/// runs them, checks that the result opens with the target version and reads as sound, and
/// counts its objects.
///
/// ```swift
/// var options = MigrateRunner.Options()
/// options.dryRun = true
/// let plan = try MigrateRunner(store: storeURL, bundle: bundleURL, options: options).plan()
/// print(plan.text(), terminator: "")           // the steps, and what each changes
/// if let report = try plan.run() { print(report.text(), terminator: "") }   // nil: nothing written
/// ```
///
/// A dry run only reads: it takes a reader's lock (none when no run is writing the store, so
/// no lock file is made) and removes nothing, so it works where lade may not write.
public struct MigrateRunner: Sendable {
    public struct Options: Sendable {
        /// The version to migrate to (default: the bundle's current version).
        public var target: String?
        /// The version that wrote the store, for a store that cannot tell.
        public var source: String?
        /// A compiled `.momd` of the same model, for Apple's version hashes.
        public var compiledModel: URL?
        /// Mapping models (`.xcmappingmodel` or compiled `.cdm`) for the steps they map.
        public var mappingModels: [URL] = []
        /// With a mapping model: objects read, made and saved at a time.
        public var batchSize = 5_000
        /// Plan only: nothing is written, not even the lock file.
        public var dryRun = false

        public init(target: String? = nil, source: String? = nil, compiledModel: URL? = nil, mappingModels: [URL] = [],
                    batchSize: Int = 5_000, dryRun: Bool = false) {
            self.target = target
            self.source = source
            self.compiledModel = compiledModel
            self.mappingModels = mappingModels
            self.batchSize = batchSize
            self.dryRun = dryRun
        }
    }

    public let store: URL
    public let bundle: URL
    public let options: Options
    /// The store's path as the user gave it, for the plan, the report and errors.
    public let displayPath: String
    /// Told what the run did besides the migration (temporary files it removed).
    public var onNote: (@Sendable (String) -> Void)?

    public init(store: URL, bundle: URL, options: Options = Options(), displayPath: String? = nil) {
        self.store = store
        self.bundle = bundle
        self.options = options
        self.displayPath = displayPath ?? StoreLocation.displayName(of: store)
    }

    /// Takes the store's lock (a reader's for a dry run), removes the temporary files a killed
    /// mapping migration left beside the store (not in a dry run), loads the mapping models and
    /// plans every step. The plan holds the lock until it has run. Throws `StoreLock.Busy`
    /// when another run holds the store, and whatever `StagedMigration` refuses.
    public func plan() throws -> MigratePlan {
        let lock = try options.dryRun ? StoreLock.forReading(store: store) : StoreLock(store: store)
        // A mapping migration killed while it built the new store beside this one left it (a
        // store on a server has nothing beside it).
        if !options.dryRun && store.isFileURL {
            let removed = PersistentStoreCoordinator.removeInterruptedWrites(beside: store)
            if !removed.isEmpty { onNote?("removed \(removed.count) temporary file(s) an interrupted run left beside \(displayPath)") }
        }
        let mappingModels = try options.mappingModels.map { try MappingModel(contentsOf: $0) }
        let migration = try StagedMigration(store: store, bundle: bundle, to: options.target, from: options.source,
                                            compiledModel: options.compiledModel, mappingModels: mappingModels,
                                            batchSize: options.batchSize)
        return MigratePlan(migration: migration, displayPath: displayPath, isDryRun: options.dryRun, lock: lock)
    }
}

/// A planned `lade migrate`, holding the store's lock until `run(progress:)` ends.
public final class MigratePlan: Sendable {
    public let migration: StagedMigration
    public let displayPath: String
    public let isDryRun: Bool
    private let lock: StoreLock?

    init(migration: StagedMigration, displayPath: String, isDryRun: Bool, lock: StoreLock?) {
        self.migration = migration
        self.displayPath = displayPath
        self.isDryRun = isDryRun
        self.lock = lock
    }

    /// Whether `run` writes: not a dry run, and the store not at the target already.
    public var writes: Bool { !isDryRun && !migration.steps.isEmpty }

    /// The plan for people: each step (versions, how it runs) and what it changes, or that the
    /// store is at the target already; a dry run says that nothing was written.
    public func text() -> String {
        guard !migration.steps.isEmpty else {
            return "\(displayPath): already at \(migration.targetVersion); nothing to do\n"
        }
        var out: [String] = []
        for step in migration.steps {
            out.append("\(displayPath): \(step.source) → \(step.destination) (\(step.label))")
            for change in step.changes { out.append("  \(change)") }
        }
        if isDryRun { out.append("dry run: nothing was written") }
        return out.joined(separator: "\n") + "\n"
    }

    /// Runs every step (`progress` hears which step and what it is doing), then opens the
    /// result with the target version: it must read as sound (else `store.damaged`), and its
    /// objects are counted per entity. Nil when nothing is to be written (a dry run, or a store
    /// at the target already). The lock is released when this returns or throws.
    public func run(progress: (@Sendable (String) -> Void)? = nil) throws -> MigrateReport? {
        defer { lock?.release() }
        guard writes else { return nil }
        try migration.run(progress: progress)
        // Each step checks the store it starts from; the last result must open with the target
        // version and read as sound.
        let migrated = try ReadOnlyStore.open(migration.url, model: migration.targetModel)
        let damage = try migrated.damage(thorough: false)
        guard damage.isEmpty else { throw StoreError.damaged(damage, path: displayPath) }
        let objects = try migration.targetModel.entities.filter { !$0.isAbstract }.map {
            StoreReport.EntityCount(name: $0.name, count: try migrated.count(StoreFetchRequest(entityName: $0.name, includesSubentities: false)))
        }
        return MigrateReport(store: displayPath, targetVersion: migration.targetVersion, steps: migration.steps.count, objects: objects)
    }
}

/// What a `lade migrate` that wrote did: the version the store is at now and, per entity,
/// its objects (those whose entity is exactly that one).
public struct MigrateReport: Sendable, Equatable {
    public let store: String
    public let targetVersion: String
    /// Steps run (one unless the store went through versions in between).
    public let steps: Int
    public let objects: [StoreReport.EntityCount]

    public func text() -> String {
        var out = ["migrated: \(store) is at \(targetVersion)" + (steps > 1 ? " (\(steps) steps)" : "")]
        for entity in objects { out.append("  \(entity.name): \(entity.count)") }
        return out.joined(separator: "\n") + "\n"
    }
}
