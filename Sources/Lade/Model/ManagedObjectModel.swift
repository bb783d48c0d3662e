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
    public var entities: [EntityDescription] { storage.entities }
    public var fetchRequestTemplates: [FetchRequestTemplate] { storage.fetchRequestTemplates }
    public var configurations: [ModelConfiguration] { storage.configurations }
    /// The model's composite types (Xcode 15's `<composite>`), in model order.
    public var composites: [CompositeDescription] { storage.composites }
    /// The version's name inside its bundle (`SampleModel2` for `SampleModel2.xcdatamodel`).
    public var versionName: String? { storage.versionName }
    /// Core Data's `versionIdentifiers` (Xcode's "Model Version Identifier").
    public var versionIdentifiers: [String] { storage.versionIdentifiers }

    /// What the model's file says that Lade accepted as Apple's model compiler does, though it
    /// is not what Xcode's editor writes (an Integer default of `NO`): each names where and what.
    public internal(set) var warnings: [ModelProblem] = []

    /// Everything in one immutable object: a model is passed and copied everywhere (every
    /// context and object reaches it), and copying it must cost one reference, not dozens.
    private let storage: Storage

    private final class Storage: Sendable {
        let entities: [EntityDescription]
        let fetchRequestTemplates: [FetchRequestTemplate]
        let configurations: [ModelConfiguration]
        let composites: [CompositeDescription]
        let versionName: String?
        let versionIdentifiers: [String]
        let indexByName: [String: Int]
        let hashesByName: [String: Data]
        /// Per entity, its properties with inherited ones included, computed once: property
        /// access on managed objects is the hottest path there is.
        let resolved: [String: EntityLayout]
        /// Every stored derived attribute, parsed once: each save asks whether there are any.
        let derivedAttributes: [DerivedAttribute]

        init(entities: [EntityDescription], fetchRequestTemplates: [FetchRequestTemplate], configurations: [ModelConfiguration],
             composites: [CompositeDescription], versionName: String?, versionIdentifiers: [String], indexByName: [String: Int], hashesByName: [String: Data],
             resolved: [String: EntityLayout]) {
            self.entities = entities
            self.fetchRequestTemplates = fetchRequestTemplates
            self.configurations = configurations
            self.composites = composites
            self.versionName = versionName
            self.versionIdentifiers = versionIdentifiers
            self.indexByName = indexByName
            self.hashesByName = hashesByName
            self.resolved = resolved
            derivedAttributes = entities.flatMap { entity in
                entity.attributes.compactMap { attribute in
                    guard let expression = attribute.derivationExpression, !attribute.isTransient else { return nil }
                    return DerivedAttribute(entity: entity.name, attribute: attribute, form: DerivationForm(parsing: expression))
                }
            }
        }
    }

    private var indexByName: [String: Int] { storage.indexByName }

    /// Every stored derived attribute, by entity (declaring entity only), in model order.
    package var derivedAttributes: [DerivedAttribute] { storage.derivedAttributes }
    /// Whether some entity has an attribute a SQLite store keeps as external binary data
    /// (`AttributeDescription.isKeptExternally`).
    package var keepsExternalBinaryData: Bool { entities.contains { $0.attributes.contains(where: \.isKeptExternally) } }
    private var hashesByName: [String: Data] { storage.hashesByName }
    private var resolved: [String: EntityLayout] { storage.resolved }

    /// Models are equal when they say the same things (everything else derives from those).
    public static func == (lhs: ManagedObjectModel, rhs: ManagedObjectModel) -> Bool {
        lhs.storage === rhs.storage || (
            lhs.entities == rhs.entities && lhs.fetchRequestTemplates == rhs.fetchRequestTemplates
                && lhs.configurations == rhs.configurations && lhs.composites == rhs.composites
                && lhs.versionName == rhs.versionName
                && lhs.versionIdentifiers == rhs.versionIdentifiers)
    }

    /// Makes a model from its parts, checking it as Core Data would.
    public init(
        entities: [EntityDescription], fetchRequestTemplates: [FetchRequestTemplate] = [],
        configurations: [ModelConfiguration] = [], versionName: String? = nil, versionIdentifiers: [String] = [],
        composites: [CompositeDescription] = []
    ) throws {
        try self.init(
            entities: entities, fetchRequestTemplates: fetchRequestTemplates, configurations: configurations,
            versionName: versionName, versionIdentifiers: versionIdentifiers, sourceMap: nil, composites: composites)
    }

    init(
        entities: [EntityDescription], fetchRequestTemplates: [FetchRequestTemplate],
        configurations: [ModelConfiguration], versionName: String?, versionIdentifiers: [String],
        sourceMap: ModelSourceMap?, composites: [CompositeDescription] = []
    ) throws {
        let problems = ModelValidator(
            entities: entities, fetchRequestTemplates: fetchRequestTemplates,
            configurations: configurations, sourceMap: sourceMap
        ).problems() + CompositeRules.problems(entities: entities, composites: composites, sourceMap: sourceMap)
        guard problems.isEmpty else { throw ModelError(problems) }
        var index: [String: Int] = [:]
        for (position, entity) in entities.enumerated() { index[entity.name] = position }
        // Two passes: a relationship's slot describes its inverse, on another entity, found by
        // name (a scan of the destination's relationships for each inverse made a hub of
        // 25,000 relationships take minutes: issue 43 §4 "Slow").
        var lineages: [String: (attributes: [AttributeDescription], relationships: [RelationshipDescription], fetched: [FetchedPropertyDescription],
                                ancestors: [String], relationshipsByName: [String: RelationshipDescription])] = [:]
        for entity in entities {
            var ancestors: [String] = []
            var seen: Set<String> = [entity.name]
            var current = entity.parentName
            while let parent = current, let position = index[parent], seen.insert(parent).inserted {
                ancestors.append(parent)
                current = entities[position].parentName
            }
            let lineage = ancestors.reversed().map { entities[index[$0]!] } + [entity]
            let relationships = lineage.flatMap(\.relationships)
            lineages[entity.name] = (lineage.flatMap(\.attributes), relationships, lineage.flatMap(\.fetchedProperties), ancestors,
                                     Dictionary(relationships.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first }))
        }
        var children: [String: [String]] = [:]
        for entity in entities {
            if let parent = entity.parentName { children[parent, default: []].append(entity.name) }
        }
        var resolved: [String: EntityLayout] = [:]
        for entity in entities {
            let lineage = lineages[entity.name]!
            let slots = lineage.relationships.map { relationship in
                RelationshipSlot(relationship: relationship, inverse: relationship.inverseName.flatMap { name in
                    lineages[relationship.destinationEntityName]?.relationshipsByName[name]
                })
            }
            resolved[entity.name] = EntityLayout(
                entity: entity, name: entity.name, attributes: lineage.attributes, relationships: lineage.relationships,
                fetchedProperties: lineage.fetched,
                attributesByName: Dictionary(lineage.attributes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first }),
                relationshipsByName: lineage.relationshipsByName,
                ancestors: lineage.ancestors,
                subentities: (children[entity.name] ?? []).sorted(),
                relationshipSlots: slots)
        }
        let compositesByName = Dictionary(composites.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var hashes = VersionHash.ladeHashes(of: entities, index: index, composites: compositesByName)
        for entity in entities {
            if let apple = entity.appleVersionHash { hashes[entity.name] = apple }
        }
        storage = Storage(
            entities: entities, fetchRequestTemplates: fetchRequestTemplates, configurations: configurations,
            composites: composites, versionName: versionName, versionIdentifiers: versionIdentifiers,
            indexByName: index, hashesByName: hashes,
            resolved: resolved)
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
        (resolved[name]?.subentities ?? []).map { entities[indexByName[$0]!] }
    }

    /// The entity's ancestors, nearest first.
    public func ancestors(of name: String) -> [EntityDescription] {
        (resolved[name]?.ancestors ?? []).map { entities[indexByName[$0]!] }
    }

    /// An entity's uniqueness constraints with those it inherits (its own first).
    public func uniquenessConstraints(of name: String) -> [[String]] {
        ((entity(named: name).map { [$0] } ?? []) + ancestors(of: name)).flatMap(\.uniquenessConstraints)
    }

    /// Whether `properties` (in any order) are one of the entity's uniqueness constraints.
    public func isUniquenessConstraint(_ properties: [String], of name: String) -> Bool {
        uniquenessConstraints(of: name).contains { Set($0) == Set(properties) }
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
        name == ancestor || (resolved[name]?.ancestors.contains(ancestor) ?? false)
    }

    // MARK: Properties, inherited ones included

    /// The entity's properties, inherited ones first, in the order objects and store rows
    /// keep their values.
    public func layout(of entity: String) -> EntityLayout? {
        resolved[entity]
    }

    /// All attributes of an entity: inherited ones first (root's first), then its own.
    public func attributes(of name: String) -> [AttributeDescription] {
        resolved[name]?.attributes ?? []
    }

    /// All relationships of an entity: inherited ones first, then its own.
    public func relationships(of name: String) -> [RelationshipDescription] {
        resolved[name]?.relationships ?? []
    }

    /// All fetched properties of an entity: inherited ones first, then its own.
    public func fetchedProperties(of name: String) -> [FetchedPropertyDescription] {
        resolved[name]?.fetchedProperties ?? []
    }

    /// The attribute of this name on the entity, inherited ones included.
    public func attribute(_ property: String, of entity: String) -> AttributeDescription? {
        resolved[entity]?.attributesByName[property]
    }

    /// The relationship of this name on the entity, inherited ones included.
    public func relationship(_ property: String, of entity: String) -> RelationshipDescription? {
        resolved[entity]?.relationshipsByName[property]
    }

    /// The entity that declares `property`: `entity` itself, or the ancestor it inherits the
    /// property from; nil when the entity has no such property. Found through the resolved
    /// layouts in as many steps as the entity has ancestors, not by scanning each one's
    /// properties: a store asks this for every column, and opening one whose model named
    /// 10,000 attributes took 23 s that way (issue 43 §4 "Slow").
    package func declaringEntity(of property: String, from entity: String) -> String? {
        guard let layout = resolved[entity], layout.hasProperty(named: property) else { return nil }
        var declaring = entity
        // Nearest first: the property is declared by the last ancestor that still has it.
        for ancestor in layout.ancestors {
            guard resolved[ancestor]?.hasProperty(named: property) == true else { break }
            declaring = ancestor
        }
        return declaring
    }

    /// The inverse of a relationship, if it has one.
    public func inverse(of relationship: RelationshipDescription) -> RelationshipDescription? {
        relationship.inverseName.flatMap { self.relationship($0, of: relationship.destinationEntityName) }
    }

    // MARK: Version hashes

    /// Each entity's version hash (32 bytes): Apple's where a compiled model supplied it,
    /// otherwise Lade's own SHA-256 (see `docs/model-format.md`; not Apple's hash).
    public var versionHashes: [String: Data] { hashesByName }

    /// The entity's version hash.
    public func versionHash(of name: String) -> Data? { hashesByName[name] }

    /// Whether every entity's hash is Apple's, taken from a compiled model.
    package var hasAppleVersionHashes: Bool {
        !entities.isEmpty && entities.allSatisfy { $0.appleVersionHash != nil }
    }

    /// Every entity's Lade hash under `scheme` (an earlier scheme's, to compare with a store an
    /// earlier Lade wrote), whether or not the model carries Apple's hashes.
    func ladeVersionHashes(scheme: VersionHash.Scheme) -> [String: Data] {
        if scheme == .current && !entities.contains(where: { $0.appleVersionHash != nil }) { return hashesByName }
        return VersionHash.ladeHashes(of: entities, index: indexByName, scheme: scheme, composites: compositesByName)
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
    package func withAppleVersionHashes(_ hashes: [String: Data], source: String) throws -> ManagedObjectModel {
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
        var model = try ManagedObjectModel(
            entities: updated, fetchRequestTemplates: fetchRequestTemplates, configurations: configurations,
            versionName: versionName, versionIdentifiers: versionIdentifiers, composites: composites)
        model.warnings = warnings
        return model
    }
}

// MARK: Composites

extension ManagedObjectModel {
    /// The composite of this name, if the model has one.
    public func composite(named name: String) -> CompositeDescription? {
        composites.first { $0.name == name }
    }

    /// The elements of a `.composite` attribute (its composite's); empty for other attributes.
    ///
    /// ```swift
    /// let address = model.attribute("address", of: "Shop")!
    /// model.elements(of: address).map(\.name)   // ["street", "zip"]
    /// ```
    public func elements(of attribute: AttributeDescription) -> [AttributeDescription] {
        guard attribute.type == .composite, let name = attribute.compositeName else { return [] }
        return composite(named: name)?.elements ?? []
    }

    var compositesByName: [String: CompositeDescription] {
        Dictionary(composites.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Every composite attribute the entities declare, as `Entity.attribute`, in model order:
    /// what a store that cannot keep composites names when it refuses the model.
    package var compositeAttributePaths: [String] {
        entities.flatMap { entity in entity.attributes.filter { $0.type == .composite }.map { "\(entity.name).\($0.name)" } }
    }
}
