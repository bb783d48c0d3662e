import Foundation

/// A managed object model: the entities of a store, their properties and relationships,
/// fetch request templates and configurations. Immutable once made, and valid by construction:
/// the initialisers check every rule Core Data enforces and throw a `ModelError` naming each
/// problem.
///
/// ```swift
/// let model = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: "samples/Catalog.xcdatamodeld"))
/// for entity in model.entities { print(entity.name, model.attributes(of: entity.name).map(\.name)) }
/// ```
public struct ManagedObjectModel: Sendable, Equatable {
    /// Entities in the order the model lists them.
    public let entities: [EntityDescription]
    public let fetchRequestTemplates: [FetchRequestTemplate]
    public let configurations: [ModelConfiguration]
    /// The version's name inside its bundle (`SampleModel2` for `SampleModel2.xcdatamodel`).
    public let versionName: String?
    /// Core Data's `versionIdentifiers` (Xcode's "Model Version Identifier").
    public let versionIdentifiers: [String]

    private let indexByName: [String: Int]
    private let hashesByName: [String: Data]

    /// Makes a model from its parts, checking it as Core Data would.
    public init(
        entities: [EntityDescription], fetchRequestTemplates: [FetchRequestTemplate] = [],
        configurations: [ModelConfiguration] = [], versionName: String? = nil, versionIdentifiers: [String] = []
    ) throws {
        try self.init(
            entities: entities, fetchRequestTemplates: fetchRequestTemplates, configurations: configurations,
            versionName: versionName, versionIdentifiers: versionIdentifiers, sourceMap: nil)
    }

    init(
        entities: [EntityDescription], fetchRequestTemplates: [FetchRequestTemplate],
        configurations: [ModelConfiguration], versionName: String?, versionIdentifiers: [String],
        sourceMap: ModelSourceMap?
    ) throws {
        let problems = ModelValidator(
            entities: entities, fetchRequestTemplates: fetchRequestTemplates,
            configurations: configurations, sourceMap: sourceMap
        ).problems()
        guard problems.isEmpty else { throw ModelError(problems) }
        self.entities = entities
        self.fetchRequestTemplates = fetchRequestTemplates
        self.configurations = configurations
        self.versionName = versionName
        self.versionIdentifiers = versionIdentifiers
        var index: [String: Int] = [:]
        for (position, entity) in entities.enumerated() { index[entity.name] = position }
        self.indexByName = index
        var hashes: [String: Data] = [:]
        for entity in entities {
            hashes[entity.name] = entity.appleVersionHash ?? VersionHash.ladeHash(of: entity, in: entities, index: index)
        }
        self.hashesByName = hashes
    }

    // MARK: Entities and inheritance

    /// The entity with this name, if the model has one.
    public func entity(named name: String) -> EntityDescription? {
        indexByName[name].map { entities[$0] }
    }

    /// Entity names in the model, in model order.
    public var entityNames: [String] { entities.map(\.name) }

    /// The direct subentities of an entity, in name order.
    public func subentities(of name: String) -> [EntityDescription] {
        entities.filter { $0.parentName == name }.sorted { $0.name < $1.name }
    }

    /// The entity's ancestors, nearest first.
    public func ancestors(of name: String) -> [EntityDescription] {
        var result: [EntityDescription] = []
        var current = entity(named: name)?.parentName
        while let parent = current, let described = entity(named: parent) {
            result.append(described)
            current = described.parentName
        }
        return result
    }

    /// The root of the entity's inheritance hierarchy (the entity itself when it has no parent).
    public func rootEntity(of name: String) -> EntityDescription? {
        ancestors(of: name).last ?? entity(named: name)
    }

    /// The entity and every entity below it, depth-first, children in name order.
    public func hierarchy(from name: String) -> [EntityDescription] {
        guard let top = entity(named: name) else { return [] }
        return [top] + subentities(of: name).flatMap { hierarchy(from: $0.name) }
    }

    /// Whether `name` is `ancestor` or inherits from it.
    public func entity(_ name: String, isKindOf ancestor: String) -> Bool {
        name == ancestor || ancestors(of: name).contains { $0.name == ancestor }
    }

    // MARK: Properties, inherited ones included

    /// All attributes of an entity: inherited ones first (root's first), then its own.
    public func attributes(of name: String) -> [AttributeDescription] {
        lineage(of: name).flatMap(\.attributes)
    }

    /// All relationships of an entity: inherited ones first, then its own.
    public func relationships(of name: String) -> [RelationshipDescription] {
        lineage(of: name).flatMap(\.relationships)
    }

    /// All fetched properties of an entity: inherited ones first, then its own.
    public func fetchedProperties(of name: String) -> [FetchedPropertyDescription] {
        lineage(of: name).flatMap(\.fetchedProperties)
    }

    /// The attribute of this name on the entity, inherited ones included.
    public func attribute(_ property: String, of entity: String) -> AttributeDescription? {
        attributes(of: entity).first { $0.name == property }
    }

    /// The relationship of this name on the entity, inherited ones included.
    public func relationship(_ property: String, of entity: String) -> RelationshipDescription? {
        relationships(of: entity).first { $0.name == property }
    }

    /// The inverse of a relationship, if it has one.
    public func inverse(of relationship: RelationshipDescription) -> RelationshipDescription? {
        relationship.inverseName.flatMap { self.relationship($0, of: relationship.destinationEntityName) }
    }

    private func lineage(of name: String) -> [EntityDescription] {
        guard let described = entity(named: name) else { return [] }
        return ancestors(of: name).reversed() + [described]
    }

    // MARK: Version hashes

    /// Each entity's version hash (32 bytes): Apple's where a compiled model supplied it,
    /// otherwise Lade's own SHA-256 (see `docs/model-format.md`; not Apple's hash).
    public var versionHashes: [String: Data] { hashesByName }

    /// The entity's version hash.
    public func versionHash(of name: String) -> Data? { hashesByName[name] }

    /// Whether every entity's hash is Apple's, taken from a compiled model.
    public var hasAppleVersionHashes: Bool {
        !entities.isEmpty && entities.allSatisfy { $0.appleVersionHash != nil }
    }

    // MARK: Templates and configurations

    public func fetchRequestTemplate(named name: String) -> FetchRequestTemplate? {
        fetchRequestTemplates.first { $0.name == name }
    }

    public func configuration(named name: String) -> ModelConfiguration? {
        configurations.first { $0.name == name }
    }

    /// A copy of this model whose entities carry Apple's version hashes.
    /// Every entity must have a hash and every hash an entity.
    public func withAppleVersionHashes(_ hashes: [String: Data], source: String) throws -> ManagedObjectModel {
        var problems: [ModelProblem] = []
        let missing = entityNames.filter { hashes[$0] == nil }
        if !missing.isEmpty {
            problems.append(ModelProblem(file: source, message: "has no version hash for entities \(missing.joined(separator: ", ")); is this the compiled form of this model version?"))
        }
        let extra = hashes.keys.filter { indexByName[$0] == nil }.sorted()
        if !extra.isEmpty {
            problems.append(ModelProblem(file: source, message: "has version hashes for entities the model lacks: \(extra.joined(separator: ", ")); is this the compiled form of this model version?"))
        }
        for (name, hash) in hashes where hash.count != 32 {
            problems.append(ModelProblem(file: source, entity: name, message: "version hash is \(hash.count) bytes; Core Data's are 32"))
        }
        guard problems.isEmpty else { throw ModelError(problems) }
        let updated = entities.map { entity -> EntityDescription in
            var copy = entity
            copy.appleVersionHash = hashes[entity.name]
            return copy
        }
        return try ManagedObjectModel(
            entities: updated, fetchRequestTemplates: fetchRequestTemplates, configurations: configurations,
            versionName: versionName, versionIdentifiers: versionIdentifiers)
    }
}
