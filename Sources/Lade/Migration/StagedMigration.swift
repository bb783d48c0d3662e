import Foundation

/// The whole migration of a store to a version of its `.xcdatamodeld`: which version wrote it,
/// and the steps from there to the target. Every step is planned, and every refusal found,
/// before the first one runs. What `lade migrate`, the coordinator's automatic migration and
/// job files' `migrate: automatic` run.
///
/// The steps, as Core Data chooses them: a mapping model runs the step between the versions it
/// names (a compiled `.cdm`, which names none, the step whose entity hashes it records, or with
/// Lade's own hashes the one step between consecutive versions it fits); between those, the
/// store is carried by one lightweight migration inferred **directly** between the two ends, as
/// Core Data infers a mapping from the store's model to the app's, so that an attribute a
/// version in between dropped and a later one has again keeps its values. Renames the versions
/// in between declare (a renaming identifier naming the version before) are followed along the
/// way, which Core Data's direct inference does not do. Only when the direct step cannot be
/// inferred does the store go through the versions in between one by one, and then only if
/// that drops nothing both ends have.
///
/// ```swift
/// let migration = try StagedMigration(store: url, bundle: bundleURL)           // to the current version
/// for step in migration.steps { print(step.source, "→", step.destination, step.changes) }
/// try migration.run()
/// ```
public struct StagedMigration: Sendable {
    /// One step between two versions.
    public struct Step: Sendable {
        public enum Kind: Sendable {
            case lightweight(LightweightMigration)
            case mapping(MigrationManager)
        }
        public let source: String
        public let destination: String
        public let kind: Kind
        /// The versions between `source` and `destination` that the step passes over (a
        /// lightweight step inferred directly between its ends).
        public let passedOver: [String]

        /// "lightweight, in place", or how the mapping models run.
        public var label: String {
            switch kind {
            case .lightweight:
                "lightweight, in place" + (passedOver.isEmpty ? "" : "; inferred directly, past \(passedOver.joined(separator: ", "))")
            case .mapping(let manager):
                "mapping model" + (manager.mappings.count > 1 ? "s, \(manager.mappings.count) passes" : "") + ", the store rebuilt beside it"
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
    /// version; a bundle that records none must name it). A store no version of the bundle
    /// matches, carrying its own model (`Z_MODELCACHE`), is inferred from that model directly
    /// to the target (``carriedModelName`` is then its source version). `source` names the version that wrote
    /// the store, for a store that cannot tell (a store whose hashes or tables match a version
    /// is believed, and a `source` it contradicts is refused); `compiledModel` (a `.momd`) gives
    /// Apple's hashes. `mappingModels` run the steps between the versions they name (a compiled
    /// one the step whose hashes it records, or that it fits); other steps are inferred
    /// (lightweight) when `inferring`, else refused. Throws `MigrationRefusal` with every
    /// step's reasons, `MappingModelError`, `ModelError`, `MigrationFailure`
    /// (`migration.noCurrentVersion`) when no target is given and the bundle names no current
    /// version, or `StoreError` when no version
    /// matches the store.
    public init(store url: URL, bundle: URL, to target: String? = nil, from source: String? = nil, compiledModel: URL? = nil,
                mappingModels: [MappingModel] = [], inferring: Bool = true, batchSize: Int = 5_000) throws {
        self.url = url
        let versions = try ManagedObjectModel.versions(at: bundle)
        guard let target = target ?? versions.current else {
            throw MigrationFailure(store: url.path, code: "migration.noCurrentVersion", "the bundle \(bundle.path) has \(versions.names.count) versions and no .xccurrentversion saying which is current, so the version to migrate to is not known; name one of \(versions.names.joined(separator: ", ")) as the target")
        }
        guard versions.names.contains(target) else {
            throw StoreError(.modelMismatch(entities: []), path: bundle.path, "the model has no version '\(target)'; its versions are \(versions.names.joined(separator: ", "))")
        }
        targetVersion = target
        let found: String
        do {
            found = try Self.sourceVersion(of: url, bundle: bundle, versions: versions, given: source, target: target, compiledModel: compiledModel)
        } catch let error as StoreError where source == nil && mappingModels.isEmpty && inferring {
            // A store of a version the bundle lacks (an app's older model, not kept) that
            // carries its model: inferred from that model directly to the target.
            guard case .modelMismatch = error.kind, let carried = try? ManagedObjectModel(carriedByStoreAt: url) else { throw error }
            sourceVersion = Self.carriedModelName
            targetModel = try ManagedObjectModel(contentsOf: bundle, version: target, compiledModel: compiledModel)
            // Only when the migration drops nothing the store's own model has: no entity, no
            // attribute, no relationship. The store may be another app's, or an older version
            // whose data the target does not keep; no version of the bundle says it may go.
            let dropped = try LightweightMigration(planning: url, from: carried, to: targetModel).dropped
            guard dropped.isEmpty else {
                throw StoreError(error.kind, path: error.path, error.message + "; the model the store carries (Z_MODELCACHE) cannot stand in as the version that wrote it: migrating from it to \(target) would drop \(dropped.prefix(8).joined(separator: ", "))\(dropped.count > 8 ? " and \(dropped.count - 8) more" : ""), with their data. Add the version that wrote the store to the bundle, or migrate with a mapping model")
            }
            let planner = Planner(url: url, path: [sourceVersion, target], models: [carried, targetModel], batchSize: batchSize)
            steps = try planner.steps(mapped: [], inferring: true)
            return
        }
        sourceVersion = found
        let from = versions.names.firstIndex(of: sourceVersion)!, to = versions.names.firstIndex(of: target)!
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
        let planner = Planner(url: url, path: path, models: models, batchSize: batchSize)
        steps = try planner.steps(mapped: try planner.mappedSteps(mappingModels), inferring: inferring)
    }

    /// The source version's name when no version of the bundle matches the store and the
    /// store's own model (its `Z_MODELCACHE`) is the source.
    public static let carriedModelName = "the store's own model (Z_MODELCACHE)"

    /// Runs every step in order; `progress` hears which step and what it is doing.
    public func run(progress: (@Sendable (String) -> Void)? = nil) throws {
        for step in steps {
            let label = "\(step.source) → \(step.destination)"
            try step.run(progress: progress.map { report in { @Sendable text in report("\(label): \(text)") } })
        }
    }

    /// The version that wrote the store: what the store itself says (its hashes, else its
    /// tables), `given` only for a store that cannot tell or agrees.
    private static func sourceVersion(of url: URL, bundle: URL, versions: ModelVersions, given: String?, target: String,
                                      compiledModel: URL?) throws -> String {
        if let given, !versions.names.contains(given) {
            throw StoreError(.modelMismatch(entities: []), path: bundle.path, "the model has no version '\(given)'; its versions are \(versions.names.joined(separator: ", "))")
        }
        let match = try StoreVersionMatch(storeAt: url, bundle: bundle, compiledModel: compiledModel)
        if let given {
            guard match.matching.isEmpty || match.matching.contains(given) else {
                throw StoreError(.modelMismatch(entities: []), path: url.path,
                                 "the store says it was written with version \(match.matching.joined(separator: " or ")) (\(match.evidence)), not \(given) as given; a given version is for a store that cannot tell: leave it out, or check that this is the store you mean")
            }
            return given
        }
        guard let found = match.matching.contains(target) && !match.isAmbiguousEarlierScheme ? target : match.version else {
            throw StoreError(.modelMismatch(entities: match.closest?.differingEntities ?? []), path: url.path,
                             match.mismatchDescription + "; if you know the version that wrote it, give it as the source version")
        }
        return found
    }
}

/// How `StagedMigration` chooses its steps along a path of versions.
private struct Planner {
    let url: URL
    let path: [String]
    let models: [ManagedObjectModel]
    let batchSize: Int

    func label(_ from: Int, _ to: Int) -> String { "\(path[from]) → \(path[to])" }

    /// The steps the mapping models run: (from, to) positions on the path, and the mapping
    /// models of each (several run as passes).
    func mappedSteps(_ mappingModels: [MappingModel]) throws -> [(from: Int, to: Int, mappings: [MappingModel])] {
        var mapped: [(from: Int, to: Int, mappings: [MappingModel])] = []
        let positions = Array(path.indices)
        for mapping in mappingModels {
            let step: (Int, Int)
            if let from = mapping.sourceVersionName, let to = mapping.destinationVersionName {
                guard let start = path.firstIndex(of: from), let end = path.firstIndex(of: to), start < end else {
                    throw MappingModelError(mapping.origin, "it maps \(from) → \(to), which is not a step of this migration (\(path.joined(separator: " → ")))")
                }
                step = (start, end)
            } else {
                step = try compiledStep(of: mapping, positions: positions)
            }
            if let index = mapped.firstIndex(where: { $0.from == step.0 && $0.to == step.1 }) {
                mapped[index].mappings.append(mapping)
            } else {
                mapped.append((step.0, step.1, [mapping]))
            }
        }
        mapped.sort { $0.from < $1.from }
        for (earlier, later) in zip(mapped, mapped.dropFirst()) where later.from < earlier.to {
            throw MappingModelError(later.mappings[0].origin, "it maps \(label(later.from, later.to)), which overlaps the step \(label(earlier.from, earlier.to)) that \(URL(fileURLWithPath: earlier.mappings[0].origin).lastPathComponent) maps; give mapping models for steps that follow one another")
        }
        return mapped
    }

    /// The step a compiled mapping model (which names no versions) runs. Core Data uses a
    /// mapping model only when the entity hashes it records are the source's and the
    /// destination's: with Apple's hashes on both sides (a `.momd` given), they decide, and a
    /// mapping model whose hashes match no step is refused. With Lade's hashes, which a `.cdm`
    /// never records, the one step between consecutive versions it fits.
    private func compiledStep(of mapping: MappingModel, positions: [Int]) throws -> (Int, Int) {
        let withAppleHashes = models.allSatisfy(\.hasAppleVersionHashes)
        if withAppleHashes, !mapping.entityVersionHashes.isEmpty {
            var exact: [(Int, Int)] = []
            for start in positions.dropLast() {
                for end in positions where end > start && mapping.matchesVersionHashes(from: models[start], to: models[end]) == true {
                    exact.append((start, end))
                }
            }
            guard exact.count == 1 else {
                throw MappingModelError(mapping.origin, exact.isEmpty
                    ? "the entity version hashes it records match no step of this migration (\(path.joined(separator: " → "))), and Core Data uses a mapping model only between the versions whose hashes it records: \(hashMismatch(of: mapping))"
                    : "the entity version hashes it records match several steps of this migration (\(exact.map { label($0.0, $0.1) }.joined(separator: ", "))); give the .xcmappingmodel, which names its versions")
            }
            return exact[0]
        }
        var fits: [Int] = []
        var misfits: [String] = []
        for start in positions.dropLast() {
            do {
                _ = try mapping.resolved(from: models[start], to: models[start + 1])
                fits.append(start)
            } catch let error as MappingModelError {
                misfits.append("\(label(start, start + 1)): \(error.reason)")
            }
        }
        guard fits.count == 1 else {
            throw MappingModelError(mapping.origin, fits.isEmpty
                ? "it fits no step of this migration (\(path.joined(separator: " → "))): " + misfits.joined(separator: "; ")
                : "it fits several steps of this migration (\(fits.map { label($0, $0 + 1) }.joined(separator: ", "))); give the .xcmappingmodel, which names its versions")
        }
        return (fits[0], fits[0] + 1)
    }

    /// Which recorded hashes differ from each version's, entity mapping by entity mapping
    /// (base64, as `lade inspect --momd` prints Apple's hashes).
    private func hashMismatch(of mapping: MappingModel) -> String {
        var parts: [String] = []
        for entityMapping in mapping.entityMappings {
            guard let hashes = mapping.entityVersionHashes[entityMapping.name] else { continue }
            for (side, entity, recorded) in [("source", entityMapping.sourceEntityName, hashes.source), ("destination", entityMapping.destinationEntityName, hashes.destination)] {
                guard let entity, let recorded else { continue }
                let versions = path.indices.map { "\(path[$0]) \(models[$0].versionHash(of: entity)?.base64EncodedString() ?? "none")" }
                parts.append("\(entityMapping.name) records \(side) \(entity) \(recorded.base64EncodedString()) (the versions have \(versions.joined(separator: ", ")))")
            }
        }
        return parts.prefix(4).joined(separator: "; ") + (parts.count > 4 ? "; and \(parts.count - 4) more" : "")
    }

    /// The steps along the path: the mapped ones, and between them lightweight steps.
    func steps(mapped: [(from: Int, to: Int, mappings: [MappingModel])], inferring: Bool) throws -> [StagedMigration.Step] {
        var steps: [StagedMigration.Step] = []
        var refusals: [String] = []
        var byMapping = true
        var position = 0
        var remaining = mapped[...]
        while position < path.count - 1 {
            do {
                if let next = remaining.first, next.from == position {
                    remaining = remaining.dropFirst()
                    position = next.to
                    var manager: MigrationManager
                    do {
                        manager = try MigrationManager(store: url, from: models[next.from], to: models[next.to], mappings: next.mappings)
                    } catch let refusal as MigrationRefusal {
                        throw MigrationRefusal(store: refusal.store, reasons: refusal.reasons.map { "\(label(next.from, next.to)): \($0)" }, mapping: refusal.byMapping)
                    }
                    manager.batchSize = batchSize
                    steps.append(.init(source: path[next.from], destination: path[next.to], kind: .mapping(manager), passedOver: []))
                    continue
                }
                let end = remaining.first?.from ?? path.count - 1
                defer { position = end }
                guard inferring else {
                    refusals.append("\(label(position, end)): no mapping model for this step, and inferring one is off")
                    continue
                }
                steps += try lightweight(from: position, to: end)
            } catch let refusal as MigrationRefusal {
                refusals += refusal.reasons
                byMapping = byMapping && refusal.byMapping
            }
        }
        guard refusals.isEmpty else { throw MigrationRefusal(store: url.path, reasons: refusals, mapping: byMapping) }
        return steps
    }

    /// Lightweight steps from `start` to `end`: one, inferred directly between the two with the
    /// renames the versions in between declare, when it can be; else one per version, when
    /// they drop nothing both ends have.
    private func lightweight(from start: Int, to end: Int) throws -> [StagedMigration.Step] {
        func refused(_ plan: LightweightMigration, _ from: Int, _ to: Int) -> [String] {
            plan.refusals.map { "\(label(from, to)): \($0)" }
        }
        if end == start + 1 {
            let plan = try LightweightMigration(planning: url, from: models[start], to: models[end])
            guard plan.refusals.isEmpty else { throw MigrationRefusal(store: url.path, reasons: refused(plan, start, end)) }
            return [.init(source: path[start], destination: path[end], kind: .lightweight(plan), passedOver: [])]
        }
        var stages: [LightweightMigration] = []
        for from in start..<end { stages.append(try LightweightMigration(planning: url, from: models[from], to: models[from + 1])) }
        let stagesRefused = stages.enumerated().flatMap { refused($1, start + $0, start + $0 + 1) }
        // The renames every step declares, whether or not the step itself could run: what the
        // developer said a property became holds across the versions.
        let carried = Carried(through: stages, to: models[end])
        let direct = try LightweightMigration(planning: url, from: models[start], to: models[end], origins: carried.origins)
        if direct.refusals.isEmpty {
            return [.init(source: path[start], destination: path[end], kind: .lightweight(direct), passedOver: Array(path[(start + 1)..<end]))]
        }
        guard stagesRefused.isEmpty else { throw MigrationRefusal(store: url.path, reasons: stagesRefused) }
        let lost = carried.lost(comparedWith: direct)
        guard lost.isEmpty else {
            throw MigrationRefusal(store: url.path, reasons: [
                "\(label(start, end)) cannot be inferred directly (\(direct.refusals.joined(separator: "; "))), and going through \(path[(start + 1)..<end].joined(separator: ", ")) would drop \(lost.joined(separator: ", ")), which both \(path[start]) and \(path[end]) have; give a mapping model for \(label(start, end))",
            ])
        }
        return stages.enumerated().map { offset, plan in
            .init(source: path[start + offset], destination: path[start + offset + 1], kind: .lightweight(plan), passedOver: [])
        }
    }
}

/// What a chain of lightweight steps carries from its first version to its last: each entity
/// and property of the last version, and the one of the first it comes from, through the
/// renames of every step.
private struct Carried {
    var origins = LightweightMigration.Origins()

    init(through stages: [LightweightMigration], to last: ManagedObjectModel) {
        for entity in last.entities {
            var name: String? = entity.name
            var attributeNames = Dictionary(last.attributes(of: entity.name).map { ($0.name, Optional($0.name)) }, uniquingKeysWith: { a, _ in a })
            var relationshipNames = Dictionary(last.relationships(of: entity.name).map { ($0.name, Optional($0.name)) }, uniquingKeysWith: { a, _ in a })
            for stage in stages.reversed() {
                guard let current = name else { break }
                attributeNames = attributeNames.mapValues { $0.flatMap { stage.mapping.attributeMap[current]?[$0] } }
                relationshipNames = relationshipNames.mapValues { $0.flatMap { stage.mapping.relationshipMap[current]?[$0] } }
                name = stage.mapping.entityMap[current]
            }
            guard let origin = name else { continue }
            origins.entities[entity.name] = origin
            origins.attributes[entity.name] = attributeNames.compactMapValues { $0 }
            origins.relationships[entity.name] = relationshipNames.compactMapValues { $0 }
        }
    }

    /// What `direct` would carry that the chain drops: objects of an entity, or values of a
    /// property of the same type (or widened), that both ends have.
    func lost(comparedWith direct: LightweightMigration) -> [String] {
        var lost: [String] = []
        let widening: [AttributeType: Set<AttributeType>] = [.integer16: [.integer32, .integer64, .decimal], .integer32: [.integer64, .decimal], .integer64: [.decimal]]
        for (entity, origin) in direct.mapping.entityMap.sorted(by: { $0.key < $1.key }) {
            guard origins.entities[entity] == origin else {
                lost.append("the objects of \(entity)")
                continue
            }
            for (name, from) in (direct.mapping.attributeMap[entity] ?? [:]).sorted(by: { $0.key < $1.key }) where origins.attributes[entity]?[name] != from {
                guard let new = direct.destination.attribute(name, of: entity), let old = direct.source.attribute(from, of: origin),
                      new.type == old.type || widening[old.type]?.contains(new.type) == true else { continue }
                lost.append("\(entity).\(name)")
            }
            for (name, from) in (direct.mapping.relationshipMap[entity] ?? [:]).sorted(by: { $0.key < $1.key }) where origins.relationships[entity]?[name] != from {
                lost.append("\(entity).\(name)")
            }
        }
        return lost
    }
}
