import Foundation

/// The whole migration of a store to a version of its `.xcdatamodeld`: which version wrote it,
/// and every step from there to the target through the versions in between, each lightweight
/// or by the mapping models that name (or fit) its two versions. Every step is planned, and
/// every refusal found, before the first one runs. What `lade migrate`, the coordinator's
/// automatic migration and job files' `migrate: automatic` run.
///
/// ```swift
/// let migration = try StagedMigration(store: url, bundle: bundleURL)           // to the current version
/// for step in migration.steps { print(step.source, "→", step.destination, step.changes) }
/// try migration.run()
/// ```
public struct StagedMigration: Sendable {
    /// One step between two consecutive versions.
    public struct Step: Sendable {
        public enum Kind: Sendable {
            case lightweight(LightweightMigration)
            case mapping(MigrationManager)
        }
        public let source: String
        public let destination: String
        public let kind: Kind

        /// "lightweight, in place", or how the mapping models run.
        public var label: String {
            switch kind {
            case .lightweight: "lightweight, in place"
            case .mapping(let manager): "mapping model" + (manager.mappings.count > 1 ? "s, \(manager.mappings.count) passes" : "") + ", the store rebuilt beside it"
            }
        }

        /// What the step changes, one line per entity or entity mapping.
        public var changes: [String] {
            switch kind {
            case .lightweight(let migration): migration.steps
            case .mapping(let manager): manager.steps
            }
        }

        public func run(progress: (@Sendable (String) -> Void)? = nil) throws {
            switch kind {
            case .lightweight(let migration): try migration.run(progress: progress)
            case .mapping(let manager): try manager.run(progress: progress)
            }
        }
    }

    public let url: URL
    /// The version that wrote the store and the one it goes to.
    public let sourceVersion: String
    public let targetVersion: String
    /// Empty when the store is at the target already.
    public let steps: [Step]
    /// The target version's model (with Apple's hashes when a compiled model was given).
    public let targetModel: ManagedObjectModel

    /// Plans the migration of the store at `url` to `target` (default: the bundle's current
    /// version). `source` names the version that wrote it when the store cannot tell;
    /// `compiledModel` (a `.momd`) gives Apple's hashes. `mappingModels` apply to the steps
    /// between the versions they name (a compiled one to the one step it fits); other steps
    /// are inferred (lightweight) when `inferring`, else refused. Throws `MigrationRefusal`
    /// with every step's reasons, `MappingModelError`, or `StoreError` when no version matches.
    public init(store url: URL, bundle: URL, to target: String? = nil, from source: String? = nil, compiledModel: URL? = nil,
                mappingModels: [MappingModel] = [], inferring: Bool = true, batchSize: Int = 5_000) throws {
        self.url = url
        let versions = try ManagedObjectModel.versions(at: bundle)
        let target = target ?? versions.current ?? versions.names.last!
        guard versions.names.contains(target) else {
            throw StoreError(.modelMismatch(entities: []), path: bundle.path, "the model has no version '\(target)'; its versions are \(versions.names.joined(separator: ", "))")
        }
        targetVersion = target
        let sourceVersion: String
        if let source {
            sourceVersion = source
        } else {
            let match = try StoreVersionMatch(storeAt: url, bundle: bundle, compiledModel: compiledModel)
            guard let found = match.matching.contains(target) ? target : match.version else {
                throw StoreError(.modelMismatch(entities: match.closest?.differingEntities ?? []), path: url.path,
                                 match.mismatchDescription + "; if you know the version that wrote it, give it (lade migrate --from)")
            }
            sourceVersion = found
        }
        self.sourceVersion = sourceVersion
        guard let from = versions.names.firstIndex(of: sourceVersion), let to = versions.names.firstIndex(of: target) else {
            throw StoreError(.modelMismatch(entities: []), path: bundle.path, "the model has no version '\(sourceVersion)'; its versions are \(versions.names.joined(separator: ", "))")
        }
        let path = from < to ? Array(versions.names[from...to]) : Array(versions.names[to...from].reversed())
        guard path.count > 1 else {
            // At the target already (a run again after one that finished, or was killed just
            // after its new store was in place): nothing to do, whatever mapping models were given.
            targetModel = try ManagedObjectModel(contentsOf: bundle, version: target, compiledModel: compiledModel)
            steps = []
            return
        }
        var models: [ManagedObjectModel] = []
        for name in path { models.append(try ManagedObjectModel(contentsOf: bundle, version: name, compiledModel: compiledModel)) }
        targetModel = models.last!
        // Mapping models, each to the step between the versions it names (a compiled .cdm
        // names none: the one step it fits).
        var mapped: [Int: [MappingModel]] = [:]
        let indices = Array(0..<(path.count - 1))
        for mapping in mappingModels {
            let fitting: [Int]
            if let from = mapping.sourceVersionName, let to = mapping.destinationVersionName {
                fitting = indices.filter { path[$0] == from && path[$0 + 1] == to }
                guard !fitting.isEmpty else {
                    throw MappingModelError(mapping.origin, "it maps \(from) → \(to), which is not a step of this migration (\(path.joined(separator: " → ")))")
                }
            } else {
                // By fit, narrowed to the step whose versions have the entity hashes a compiled
                // mapping records, when the models carry Apple's (a .momd was given).
                let fits = indices.filter { (try? mapping.resolved(from: models[$0], to: models[$0 + 1])) != nil }
                let exact = fits.filter { mapping.matchesVersionHashes(from: models[$0], to: models[$0 + 1]) == true }
                fitting = exact.isEmpty ? fits : exact
                guard fitting.count == 1 else {
                    throw MappingModelError(mapping.origin, fitting.isEmpty
                        ? "it fits no step of this migration (\(path.joined(separator: " → ")))"
                        : "it fits several steps of this migration (\(fitting.map { "\(path[$0]) → \(path[$0 + 1])" }.joined(separator: ", "))); give the .xcmappingmodel, which names its versions")
                }
            }
            mapped[fitting[0], default: []].append(mapping)
        }
        var steps: [Step] = []
        var refusals: [String] = []
        var byMapping = true
        for index in indices {
            let label = "\(path[index]) → \(path[index + 1])"
            do {
                if let passes = mapped[index] {
                    var manager = try MigrationManager(store: url, from: models[index], to: models[index + 1], mappings: passes)
                    manager.batchSize = batchSize
                    steps.append(Step(source: path[index], destination: path[index + 1], kind: .mapping(manager)))
                } else if inferring {
                    steps.append(Step(source: path[index], destination: path[index + 1],
                                      kind: .lightweight(try LightweightMigration(store: url, from: models[index], to: models[index + 1]))))
                } else {
                    refusals.append("\(label): no mapping model for this step, and inferring one is off")
                }
            } catch let refusal as MigrationRefusal {
                refusals += refusal.reasons.map { "\(label): \($0)" }
                byMapping = byMapping && refusal.byMapping
            }
        }
        guard refusals.isEmpty else { throw MigrationRefusal(store: url.path, reasons: refusals, mapping: byMapping) }
        self.steps = steps
    }

    /// Runs every step in order; `progress` hears which step and what it is doing.
    public func run(progress: (@Sendable (String) -> Void)? = nil) throws {
        for step in steps {
            let label = "\(step.source) → \(step.destination)"
            try step.run(progress: progress.map { report in { @Sendable text in report("\(label): \(text)") } })
        }
    }
}
