import Foundation

/// A mapping model (Core Data's `NSMappingModel`): how the objects of a store of one model
/// version become the objects of the next, entity mapping by entity mapping, as Xcode's
/// mapping model editor makes it.
///
/// Read from either form Xcode gives:
/// - the `.xcmappingmodel` document (its `xcmapping.xml`, a Core Data XML store of Xcode's own
///   mapping entities), whose automatic value expressions are made here as Xcode's compiler
///   makes them: `$source.NAME` for an attribute the source entity has, and
///   `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", …)` (or
///   `…ForSourceRelationshipNamed:…` into an entity hierarchy) for a relationship;
/// - the compiled `.cdm` (an `NSKeyedArchiver` archive), as it is.
///
/// ```swift
/// let mapping = try MappingModel(contentsOf: url).resolved(from: v2, to: v3)
/// mapping.customCode        // what needs the app's code, which Lade cannot run
/// ```
public struct MappingModel: Sendable, Equatable {
    /// One property of a destination entity and the expression that gives its value.
    public struct PropertyMapping: Sendable, Hashable {
        public var name: String
        /// Nil: the property is left as a new object has it (its default, or no destination).
        public var valueExpression: MappingExpression?

        public init(name: String, valueExpression: MappingExpression? = nil) {
            self.name = name
            self.valueExpression = valueExpression
        }
    }

    /// How the objects of one source entity (or none) become objects of one destination entity.
    public struct EntityMapping: Sendable, Hashable {
        /// `NSEntityMappingType`: what the mapping does with its entities.
        public enum Kind: Int, Sendable {
            case undefined = 0, custom = 1, add = 2, remove = 3, copy = 4, transform = 5
        }
        /// The name relationship expressions refer to (`CountryToCountry`; an added entity's
        /// own name).
        public var name: String
        public var kind: Kind
        public var sourceEntityName: String?
        public var destinationEntityName: String?
        /// The `NSEntityMigrationPolicy` subclass that runs this mapping (app code), if any.
        public var migrationPolicyClassName: String?
        /// Which source objects the mapping takes: `FETCH(FUNCTION($manager,
        /// "fetchRequestForSourceEntityNamed:predicateString:", ENTITY, PREDICATE), …)`.
        public var sourceExpression: MappingExpression?
        public var attributeMappings: [PropertyMapping]
        public var relationshipMappings: [PropertyMapping]

        /// The source entity and predicate the source expression fetches (subentities
        /// excluded, as `fetchRequestForSourceEntityNamed:predicateString:` fetches), or nil
        /// when the source expression is of another form.
        public var sourceFetch: (entity: String, predicate: String)? {
            guard case .fetch(.function(.variable("manager"), let selector, let arguments), _, false)? = sourceExpression,
                  selector == "fetchRequestForSourceEntityNamed:predicateString:", arguments.count == 2,
                  case .constant(.attribute(.string(let entity))) = arguments[0],
                  case .constant(.attribute(.string(let predicate))) = arguments[1] else { return nil }
            return (entity, predicate)
        }
    }

    /// Entity mappings in the order they run.
    public var entityMappings: [EntityMapping]
    /// The model versions an Xcode mapping model names (`Moody 2`, from `…/Moody 2.xcdatamodel`);
    /// nil for a compiled `.cdm`, which does not name them.
    public var sourceVersionName: String?
    public var destinationVersionName: String?
    /// The file it was read from, for messages.
    public var origin: String
    /// What `resolved(from:to:)` found worth saying: relationships an automatic expression
    /// leaves empty because no entity mapping of this model makes their objects.
    public var notes: [String] = []
    /// The entity version hashes a compiled `.cdm` records per entity mapping (Apple's hashes of
    /// the versions it was made between); empty for Xcode's document.
    public var entityVersionHashes: [String: EntityHashes] = [:]

    public struct EntityHashes: Sendable, Equatable {
        public var source: Data?
        public var destination: Data?
    }

    /// Whether the entity hashes this mapping records are the two models' (both loaded with
    /// Apple's hashes, from a `.momd`); nil when it records none.
    package func matchesVersionHashes(from source: ManagedObjectModel, to destination: ManagedObjectModel) -> Bool? {
        guard !entityVersionHashes.isEmpty else { return nil }
        return entityMappings.allSatisfy { mapping in
            guard let hashes = entityVersionHashes[mapping.name] else { return true }
            let sourceFits = mapping.sourceEntityName.map { hashes.source == nil || source.versionHash(of: $0) == hashes.source } ?? true
            let destinationFits = mapping.destinationEntityName.map { hashes.destination == nil || destination.versionHash(of: $0) == hashes.destination } ?? true
            return sourceFits && destinationFits
        }
    }

    /// Xcode's automatic expressions, made by `resolved(from:to:)` (the `.xcmappingmodel` form).
    var generation: [String: Generation] = [:]

    struct Generation: Sendable, Equatable {
        var autogenerates: Bool
        /// Per relationship mapping: its automatic flag, source key path and source mapping name.
        var relationships: [String: (autogenerates: Bool, keyPath: String?, mappingName: String?)]
        static func == (a: Generation, b: Generation) -> Bool {
            a.autogenerates == b.autogenerates && a.relationships.keys == b.relationships.keys
                && a.relationships.allSatisfy { key, value in
                    let other = b.relationships[key]!
                    return value.autogenerates == other.autogenerates && value.keyPath == other.keyPath && value.mappingName == other.mappingName
                }
        }
    }

    public init(entityMappings: [EntityMapping], origin: String = "mapping model") {
        self.entityMappings = entityMappings
        self.origin = origin
    }

    /// Reads a `.xcmappingmodel` (the directory, or its `xcmapping.xml`) or a compiled `.cdm`.
    public init(contentsOf url: URL) throws {
        var isDirectory: ObjCBool = false
        var file = url
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            file = url.appendingPathComponent("xcmapping.xml")
        }
        let data: Data
        switch FileSystem.readRegularFile(file, limit: Self.maximumFileSize) {
        case .success(let read): data = read
        case .failure(let refusal): throw MappingModelError(file.path, "\(refusal); give a .xcmappingmodel or a compiled .cdm")
        }
        if BinaryPropertyListReader.isBinaryPropertyList(data) {
            self = try Self.compiled(data, origin: url.path)
        } else {
            self = try Self.xcmapping(data, origin: url.path)
        }
    }

    /// The largest mapping model file read (Xcode's are tens of kilobytes, with both models).
    static let maximumFileSize = 64 << 20

    /// What running this mapping would need the app's code for, one phrase per class or
    /// function with the entity mappings that use it; empty when Lade can run it all.
    public var customCode: [String] {
        var byClass: [String: [String]] = [:]
        var order: [String] = []
        var phrases: [String] = []
        for mapping in entityMappings {
            if let policy = mapping.migrationPolicyClassName, !policy.isEmpty, policy != "NSEntityMigrationPolicy" {
                if byClass[policy] == nil { order.append(policy) }
                byClass[policy, default: []].append(mapping.name)
            }
            if mapping.kind == .custom && (mapping.migrationPolicyClassName ?? "").isEmpty {
                phrases.append("entity mapping \(mapping.name) is of type Custom without a policy class Lade could stand in for")
            }
            for code in mapping.sourceExpression?.customCode ?? [] {
                phrases.append("\(code), in the source expression of entity mapping \(mapping.name)")
            }
            for property in mapping.attributeMappings + mapping.relationshipMappings {
                for code in property.valueExpression?.customCode ?? [] {
                    phrases.append("\(code), in entity mapping \(mapping.name), property \(property.name)")
                }
            }
        }
        let classes = order.map { policy in
            let short = policy.split(separator: ".").last.map(String.init) ?? policy
            let names = byClass[policy]!
            return "the migration policy class \(short)" + (short == policy ? "" : " (\(policy))")
                + ", used by entity mapping\(names.count == 1 ? "" : "s") \(names.joined(separator: ", "))"
        }
        return classes + phrases
    }
}

/// A mapping model that cannot be read or does not fit the model versions it is given.
public struct MappingModelError: LadeError, Sendable {
    public let path: String
    public let reason: String
    public var code: String { "migration.mapping" }

    package init(_ path: String, _ reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}

// MARK: Compiled (.cdm)

extension MappingModel {
    static func compiled(_ data: Data, origin: String) throws -> MappingModel {
        let archive = try KeyedArchive(data: data, origin: origin)
        guard let root = try archive.object(archive.root), root.className == "NSMappingModel" else {
            throw MappingModelError(origin, "the archive's root is not an NSMappingModel")
        }
        var mappings: [EntityMapping] = []
        var hashes: [String: EntityHashes] = [:]
        for member in try archive.members(root.fields["NSEntityMappings"]) {
            guard let object = try archive.object(member), object.className == "NSEntityMapping" else {
                throw MappingModelError(origin, "an entity mapping of the archive is not an NSEntityMapping")
            }
            let name = try archive.string(object.fields["NSMappingName"]) ?? ""
            guard case .integer(let type)? = try archive.value(object.fields["NSMappingType"]),
                  let kind = EntityMapping.Kind(rawValue: Int(type)) else {
                throw MappingModelError(origin, "entity mapping \(name) has no known mapping type")
            }
            func properties(_ key: String) throws -> [PropertyMapping] {
                try archive.members(object.fields[key]).map { member in
                    guard let property = try archive.object(member), property.className == "NSPropertyMapping",
                          let propertyName = try archive.string(property.fields["NSDestinationPropertyName"]) else {
                        throw MappingModelError(origin, "a property mapping of entity mapping \(name) has no destination property name")
                    }
                    if try archive.value(property.fields["NSPropertyTransforms"]) != nil {
                        throw MappingModelError(origin, "property mapping \(name).\(propertyName) has property transforms, which Lade does not read")
                    }
                    return PropertyMapping(name: propertyName, valueExpression: try MappingExpression.decode(property.fields["NSValueExpression"], in: archive))
                }
            }
            mappings.append(EntityMapping(
                name: name, kind: kind,
                sourceEntityName: try archive.string(object.fields["NSSourceEntityName"]),
                destinationEntityName: try archive.string(object.fields["NSDestinationEntityName"]),
                migrationPolicyClassName: try archive.string(object.fields["NSEntityMigrationPolicyClassName"]),
                sourceExpression: try MappingExpression.decode(object.fields["NSSourceExpression"], in: archive),
                attributeMappings: try properties("NSAttributeMappings"),
                relationshipMappings: try properties("NSRelationshipMappings")))
            func hash(_ key: String) throws -> Data? {
                if case .data(let data)? = try archive.value(object.fields[key]) { return data }
                return nil
            }
            hashes[name] = EntityHashes(source: try hash("NSSourceEntityVersionHash"), destination: try hash("NSDestinationEntityVersionHash"))
        }
        var model = MappingModel(entityMappings: mappings, origin: origin)
        model.entityVersionHashes = hashes
        return model
    }
}

// MARK: Xcode's document (xcmapping.xml)

extension MappingModel {
    static func xcmapping(_ data: Data, origin: String) throws -> MappingModel {
        let tree: XMLElementTree
        do {
            tree = try XMLElementTree.parse(data, file: origin, externalDocumentType: true)
        } catch let error as LadeError {
            throw MappingModelError(origin, "it is neither a compiled mapping model nor Xcode's xcmapping.xml: \(error)")
        }
        guard tree.name == "database" else {
            throw MappingModelError(origin, "it is XML but not Xcode's xcmapping.xml (its root is <\(tree.name)>, not <database>)")
        }
        struct Record {
            var type: String
            var line: Int
            var attributes: [String: (type: String, text: String)] = [:]
            var relationships: [String: [String]] = [:]
        }
        var records: [String: Record] = [:]
        for element in tree.children(named: "object") {
            guard let type = element.attributes["type"], let id = element.attributes["id"] else {
                throw MappingModelError(origin, "line \(element.line): an <object> lacks its type or id")
            }
            var record = Record(type: type, line: element.line)
            for attribute in element.children(named: "attribute") {
                guard let name = attribute.attributes["name"] else { continue }
                record.attributes[name] = (attribute.attributes["type"] ?? "", attribute.text)
            }
            for relationship in element.children(named: "relationship") {
                guard let name = relationship.attributes["name"] else { continue }
                record.relationships[name] = (relationship.attributes["idrefs"] ?? "").split(separator: " ").map(String.init)
            }
            guard records.updateValue(record, forKey: id) == nil else {
                throw MappingModelError(origin, "line \(element.line): two objects have the id \(id)")
            }
        }
        guard let (modelID, model) = records.first(where: { $0.value.type == "XDDEVMAPPINGMODEL" }) else {
            throw MappingModelError(origin, "it holds no mapping model (no XDDEVMAPPINGMODEL object)")
        }
        func text(_ record: Record, _ name: String) -> String? {
            guard let value = record.attributes[name]?.text, !value.isEmpty else { return nil }
            return value
        }
        func flag(_ record: Record, _ name: String) -> Bool { text(record, name) == "1" }
        func versionName(_ path: String?) -> String? {
            guard let last = path?.split(separator: "/").last else { return nil }
            return last.hasSuffix(".xcdatamodel") ? String(last.dropLast(".xcdatamodel".count)) : String(last)
        }
        func expression(_ record: Record, _ place: String) throws -> MappingExpression? {
            guard let encoded = text(record, "valueexpressiondata") else { return nil }
            guard let bytes = Data(base64Encoded: encoded, options: .ignoreUnknownCharacters) else {
                throw MappingModelError(origin, "line \(record.line): the value expression of \(place) is not base64")
            }
            let archive = try KeyedArchive(data: bytes, origin: "\(origin), line \(record.line), \(place)")
            return try MappingExpression.decode(archive.root, in: archive)
        }
        let kinds: [String: EntityMapping.Kind] = ["Undefined": .undefined, "Custom": .custom, "Add": .add, "Remove": .remove, "Copy": .copy, "Transform": .transform]
        var numbered: [(number: Int, line: Int, mapping: EntityMapping, generation: Generation)] = []
        for (_, record) in records where record.type == "XDDEVENTITYMAPPING" && record.relationships["mappingmodel"] == [modelID] {
            let source = text(record, "sourcename"), destination = text(record, "destinationname")
            let name = [source, destination].compactMap { $0 }.joined(separator: "To")
            guard !name.isEmpty else { throw MappingModelError(origin, "line \(record.line): an entity mapping has neither a source nor a destination entity") }
            let typeName = text(record, "mappingtypename") ?? "Undefined"
            guard let kind = kinds[typeName] else {
                throw MappingModelError(origin, "line \(record.line): entity mapping \(name) has the unknown type '\(typeName)'")
            }
            var generation = Generation(autogenerates: flag(record, "autogenerateexpression"), relationships: [:])
            func properties(_ key: String, relationships: Bool) throws -> [PropertyMapping] {
                try (record.relationships[key] ?? []).map { id in
                    guard let property = records[id], let propertyName = text(property, "name") else {
                        throw MappingModelError(origin, "line \(record.line): entity mapping \(name) refers to property mapping \(id), which is missing or has no name")
                    }
                    if relationships {
                        generation.relationships[propertyName] = (flag(property, "autogenerateexpression"), text(property, "sourcekeypath"), text(property, "sourcemappingname"))
                    }
                    return PropertyMapping(name: propertyName, valueExpression: try expression(property, "\(name).\(propertyName)"))
                }.sorted { $0.name < $1.name }
            }
            var sourceExpression: MappingExpression?
            if let source {
                let predicate = text(record, "sourcefilterpredicatestring") ?? "TRUEPREDICATE"
                sourceExpression = .fetch(
                    .function(.variable("manager"), selector: "fetchRequestForSourceEntityNamed:predicateString:", arguments: [.constant(.string(source)), .constant(.string(predicate))]),
                    context: .keyPath(.variable("manager"), ["sourceContext"]), countOnly: false)
            }
            let mapping = EntityMapping(
                name: name, kind: kind, sourceEntityName: source, destinationEntityName: destination,
                migrationPolicyClassName: text(record, "migrationpolicyclassname"), sourceExpression: sourceExpression,
                attributeMappings: try properties("attributemappings", relationships: false),
                relationshipMappings: try properties("relationshipmappings", relationships: true))
            numbered.append((Int(text(record, "mappingnumber") ?? "") ?? 0, record.line, mapping, generation))
        }
        numbered.sort { ($0.number, $0.line) < ($1.number, $1.line) }
        var result = MappingModel(entityMappings: numbered.map(\.mapping), origin: origin)
        result.sourceVersionName = versionName(text(model, "sourcemodelpath"))
        result.destinationVersionName = versionName(text(model, "destinationmodelpath"))
        result.generation = Dictionary(numbered.map { ($0.mapping.name, $0.generation) }, uniquingKeysWith: { first, _ in first })
        return result
    }
}

// MARK: Fitting the mapping to its models

extension MappingModel {
    /// The mapping made ready to run from `source` to `destination`: Xcode's automatic value
    /// expressions made as its compiler makes them, each undefined mapping type settled (custom
    /// with a policy class, add, remove, copy between entities of one name, else transform),
    /// and every entity, property, key path (filters and value expressions, see
    /// `keyProblems(of:source:destination:sourceSchema:)`) and entity mapping it names checked
    /// against the two models: a refusal names them all, before anything is read.
    public func resolved(from source: ManagedObjectModel, to destination: ManagedObjectModel) throws -> MappingModel {
        var result = self
        var problems: [String] = []
        // Filters' key paths are checked as a fetch from a SQLite store checks them.
        lazy var sourceSchema = TableLayout(model: source)
        let names = Set(entityMappings.map(\.name))
        if names.count != entityMappings.count { problems.append("two entity mappings have the same name") }
        for (index, mapping) in entityMappings.enumerated() {
            var mapping = mapping
            let sourceEntity = mapping.sourceEntityName.flatMap { source.entity(named: $0) }
            let destinationEntity = mapping.destinationEntityName.flatMap { destination.entity(named: $0) }
            if let name = mapping.sourceEntityName, sourceEntity == nil {
                problems.append("entity mapping \(mapping.name): the source model has no entity \(name)")
            }
            if let name = mapping.destinationEntityName, destinationEntity == nil {
                problems.append("entity mapping \(mapping.name): the destination model has no entity \(name)")
            }
            guard sourceEntity != nil || mapping.sourceEntityName == nil, destinationEntity != nil || mapping.destinationEntityName == nil else { continue }
            if mapping.kind == .undefined {
                if let policy = mapping.migrationPolicyClassName, !policy.isEmpty {
                    mapping.kind = .custom
                } else if sourceEntity == nil {
                    mapping.kind = .add
                } else if destinationEntity == nil {
                    mapping.kind = .remove
                } else {
                    // Xcode's compiler makes Copy of a mapping between entities of one name
                    // (CoreDataPlus' V2toV3.cdm: PersonToPerson, though Person gains a
                    // relationship), Transform otherwise; the default policy runs both alike.
                    mapping.kind = sourceEntity!.name == destinationEntity!.name ? .copy : .transform
                }
            }
            if let generation = generation[mapping.name], generation.autogenerates, let sourceEntity, destinationEntity != nil {
                for (offset, property) in mapping.attributeMappings.enumerated() where property.valueExpression == nil {
                    if source.attribute(property.name, of: sourceEntity.name) != nil {
                        mapping.attributeMappings[offset].valueExpression = .keyPath(.variable("source"), [property.name])
                    }
                }
                for (offset, property) in mapping.relationshipMappings.enumerated() where property.valueExpression == nil {
                    guard let rule = generation.relationships[property.name], rule.autogenerates else { continue }
                    if let text = rule.keyPath, MappingExpression.sourceKeyPath(text) == nil {
                        problems.append("entity mapping \(mapping.name): the source key path '\(text.prefix(80))' of relationship \(property.name) is not a key path from a variable ($source.a.b)")
                        continue
                    }
                    let generated = Self.generatedRelationship(property.name, rule: rule, in: mapping, mappings: entityMappings, source: source, destination: destination)
                    mapping.relationshipMappings[offset].valueExpression = generated
                    if generated == nil, source.relationship(property.name, of: sourceEntity.name) != nil {
                        result.notes.append("entity mapping \(mapping.name): \(property.name) is left empty; no entity mapping of this mapping model makes its objects (a step in passes cannot link objects of two passes)")
                    }
                }
            }
            if let destinationEntity {
                for property in mapping.attributeMappings where destination.attribute(property.name, of: destinationEntity.name) == nil {
                    problems.append("entity mapping \(mapping.name), property \(property.name): entity '\(destinationEntity.name)' of the destination version has no attribute '\(property.name)'")
                }
                for property in mapping.relationshipMappings where destination.relationship(property.name, of: destinationEntity.name) == nil {
                    problems.append("entity mapping \(mapping.name), property \(property.name): entity '\(destinationEntity.name)' of the destination version has no relationship '\(property.name)'")
                }
            }
            if mapping.sourceExpression != nil, mapping.sourceFetch == nil, mapping.sourceExpression!.customCode.isEmpty {
                problems.append("entity mapping \(mapping.name): its source expression \(mapping.sourceExpression!) is not a fetch of source objects Lade can run")
            }
            if let fetch = mapping.sourceFetch, source.entity(named: fetch.entity) == nil {
                problems.append("entity mapping \(mapping.name): it fetches \(fetch.entity), which the source model does not have")
            }
            problems += keyProblems(of: mapping, source: source, destination: destination, sourceSchema: sourceSchema)
            result.entityMappings[index] = mapping
        }
        guard problems.isEmpty else {
            let shown = problems.prefix(20).joined(separator: "; ") + (problems.count > 20 ? "; and \(problems.count - 20) more" : "")
            throw MappingModelError(origin, "it does not fit the versions it is used between (nothing was migrated): \(shown). "
                + "Correct it in Xcode's mapping model editor so that it names only what the two versions have, or give the mapping model made for these versions")
        }
        result.generation = [:]
        return result
    }

    /// Xcode's automatic relationship expression: from the source mapping name and key path
    /// the editor keeps, or, for a relationship the source entity has too, the destinations of
    /// the one entity mapping between the two relationships' entities
    /// (`destinationInstancesForEntityMappingNamed:sourceInstances:`), or, into an entity
    /// hierarchy, those of whichever mapping each source object went through
    /// (`destinationInstancesForSourceRelationshipNamed:sourceInstances:`).
    private static func generatedRelationship(
        _ name: String, rule: (autogenerates: Bool, keyPath: String?, mappingName: String?),
        in mapping: EntityMapping, mappings: [EntityMapping], source: ManagedObjectModel, destination: ManagedObjectModel
    ) -> MappingExpression? {
        let manager = MappingExpression.variable("manager")
        if let mappingName = rule.mappingName {
            let keyPath = rule.keyPath.flatMap(MappingExpression.sourceKeyPath) ?? .keyPath(.variable("source"), [name])
            return .function(manager, selector: "destinationInstancesForEntityMappingNamed:sourceInstances:", arguments: [.constant(.string(mappingName)), keyPath])
        }
        guard let sourceName = mapping.sourceEntityName, let destinationName = mapping.destinationEntityName,
              let old = source.relationship(name, of: sourceName), let new = destination.relationship(name, of: destinationName) else { return nil }
        let values = MappingExpression.keyPath(.variable("source"), [name])
        let sourceKinds = Set(source.hierarchy(from: old.destinationEntityName).map(\.name))
        let destinationKinds = Set(destination.hierarchy(from: new.destinationEntityName).map(\.name))
        let candidates = mappings.filter { candidate in
            candidate.sourceEntityName.map(sourceKinds.contains) == true && candidate.destinationEntityName.map(destinationKinds.contains) == true
        }
        guard !candidates.isEmpty else { return nil }
        if sourceKinds.count == 1 && candidates.count == 1 {
            return .function(manager, selector: "destinationInstancesForEntityMappingNamed:sourceInstances:", arguments: [.constant(.string(candidates[0].name)), values])
        }
        return .function(manager, selector: "destinationInstancesForSourceRelationshipNamed:sourceInstances:", arguments: [.constant(.string(name)), values])
    }
}

extension KeyedArchive {
    /// An archive of a mapping model: its errors are `MappingModelError`s naming `origin`.
    init(data: Data, origin: String) throws {
        try self.init(data: data, origin: origin, error: { MappingModelError(origin, $0) })
    }
}
