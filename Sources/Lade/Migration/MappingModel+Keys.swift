import Foundation

// MARK: The keys a mapping model names

extension MappingModel {
    /// What is wrong with the keys `mapping` names, one phrase per problem, found before anything
    /// is read: a key that no entity has would otherwise make a filter no object passes (and the
    /// migration drop the entity's objects) or a value that is nil on every object, where Core
    /// Data's `fetchRequestForSourceEntityNamed:predicateString:` and `valueForKeyPath:` raise.
    ///
    /// - The filter is parsed and its key paths checked against the entity it fetches as a fetch
    ///   checks them (``SQLPredicateCompiler/checkKeys(of:on:in:schema:)``); it may use no
    ///   variable, as a migration without the app's code has none to give.
    /// - Every value expression's key paths: from `$source` (and `SELF`) through the source
    ///   version, from `$destination` through the destination version, key by key, through
    ///   to-one and to-many relationships and collection operators; a key after an attribute is
    ///   refused, as Lade reads no properties of values.
    /// - The entity mappings and relationships the migration manager's functions name.
    func keyProblems(of mapping: EntityMapping, source: ManagedObjectModel, destination: ManagedObjectModel, sourceSchema: @autoclosure () -> TableLayout) -> [String] {
        var problems: [String] = []
        let fetched = mapping.sourceFetch?.entity ?? mapping.sourceEntityName
        if let fetch = mapping.sourceFetch, fetch.predicate != "TRUEPREDICATE", source.entity(named: fetch.entity) != nil {
            let place = "entity mapping \(mapping.name): its filter '\(fetch.predicate.prefix(200))'"
            do {
                let predicate = try FetchPredicate(format: fetch.predicate, arguments: [])
                let variables = predicate.variableNames
                if variables.isEmpty {
                    try SQLPredicateCompiler.checkKeys(of: predicate, on: fetch.entity, in: source, schema: sourceSchema())
                } else {
                    problems.append("\(place) uses \(variables.sorted().map { "$" + $0 }.joined(separator: ", ")), which a migration without the app's code has no value for")
                }
            } catch let error as FetchPredicateError {
                problems.append("\(place): \(error) in the source version")
            } catch {
                problems.append("\(place) does not parse: \(error)")
            }
        }
        let check = ExpressionKeyCheck(
            mappingNames: Set(entityMappings.map(\.name)), source: source, destination: destination,
            sourceEntity: fetched.flatMap { source.entity(named: $0)?.name }, destinationEntity: mapping.destinationEntityName.flatMap { destination.entity(named: $0)?.name })
        for property in mapping.attributeMappings {
            guard let expression = property.valueExpression else { continue }
            problems += check.problems(in: expression, relationship: false).map { "entity mapping \(mapping.name), property \(property.name): \($0)" }
        }
        for property in mapping.relationshipMappings {
            guard let expression = property.valueExpression else { continue }
            problems += check.problems(in: expression, relationship: true).map { "entity mapping \(mapping.name), property \(property.name): \($0)" }
        }
        return problems
    }
}

/// The key paths, variables and names of one entity mapping's value expressions, checked
/// against the versions as `MappingRun.evaluate` would meet them.
private struct ExpressionKeyCheck {
    let mappingNames: Set<String>
    let source: ManagedObjectModel
    let destination: ManagedObjectModel
    /// The entity of the objects `$source` and `SELF` stand for (exactly the one the mapping
    /// fetches), and that of `$destination`; nil when there are none.
    let sourceEntity: String?
    let destinationEntity: String?

    static let collectionOperators: Set<String> = [
        "@count", "@sum", "@avg", "@min", "@max", "@unionOfObjects", "@distinctUnionOfObjects",
        "@unionOfSets", "@distinctUnionOfSets", "@unionOfArrays", "@distinctUnionOfArrays",
    ]

    func problems(in expression: MappingExpression, relationship: Bool) -> [String] {
        switch expression {
        case .constant, .evaluatedObject, .variable("source"), .variable("destination"), .unsupported:
            // What needs the app's code (`unsupported`, other FUNCTIONs) is refused before this.
            return []
        case .variable(let name):
            return ["$\(name) has no value a migration without the app's code can give"]
        case .keyPath(let operand, let path):
            let start: (entity: String?, model: ManagedObjectModel, version: String)
            switch operand {
            case .variable("source"), .evaluatedObject: start = (sourceEntity, source, "source")
            case .variable("destination"): start = (destinationEntity, destination, "destination")
            default: return problems(in: operand, relationship: relationship)
            }
            guard let entity = start.entity, let reason = Self.keyPathProblem(path, from: entity, in: start.model) else { return [] }
            return ["\(expression): \(reason) in the \(start.version) version"]
        case .aggregate(let members):
            return members.flatMap { problems(in: $0, relationship: relationship) }
        case .fetch:
            return ["\(expression): a fetch cannot be a value expression"]
        case .function(.variable("manager")?, let selector, let arguments):
            guard arguments.count == 2, case .constant(.attribute(.string(let name))) = arguments[0] else {
                return ["\(expression): the migration manager's \(selector) takes a name and objects"]
            }
            var found = problems(in: arguments[1], relationship: relationship)
            switch selector {
            case "destinationInstancesForEntityMappingNamed:sourceInstances:", "sourceInstancesForEntityMappingNamed:destinationInstances:":
                if !mappingNames.contains(name) {
                    let known = mappingNames.sorted()
                    found.append("\(selector) names the entity mapping \(name), which this mapping model does not have (it has "
                        + known.prefix(10).joined(separator: ", ") + (known.count > 10 ? ", …" : "") + "; each mapping model runs as a pass of its own, which finds only its own objects)")
                }
            case "destinationInstancesForSourceRelationshipNamed:sourceInstances:":
                if !relationship {
                    found.append("\(selector) gives the objects of a relationship, not an attribute's value")
                }
                let inSource = sourceEntity.map { source.relationship(name, of: $0) != nil } ?? false
                let inDestination = destinationEntity.map { destination.relationship(name, of: $0) != nil } ?? false
                if !inSource && !inDestination {
                    let entities = [sourceEntity.map { "'\($0)' of the source version" }, destinationEntity.map { "'\($0)' of the destination version" }].compactMap { $0 }
                    found.append("\(selector) names '\(name)', which is not a relationship of entity " + entities.joined(separator: " or "))
                }
            default:
                found.append("\(expression): the migration manager has no method \(selector) a value expression may call")
            }
            return found
        case .function(let operand, _, let arguments):
            return (operand.map { problems(in: $0, relationship: relationship) } ?? []) + arguments.flatMap { problems(in: $0, relationship: relationship) }
        }
    }

    /// Why `valueForKeyPath:` with `path` on objects of `entity` would fail, key by key as
    /// `MappingRun.walk` follows it (a collection's members are asked the keys after it, and
    /// after a collection operator); nil when it would not.
    static func keyPathProblem(_ path: [String], from entity: String, in model: ManagedObjectModel) -> String? {
        var current: String? = entity
        var attribute = ""
        for (position, key) in path.enumerated() {
            if key.hasPrefix("@") {
                guard collectionOperators.contains(key) else { return "'\(key)' is not a collection operator Lade knows" }
                if key == "@count" && position != path.count - 1 { return "@count ends a key path" }
                continue
            }
            guard let name = current else { return "'\(key)' is asked of the values of the attribute '\(attribute)', which have no properties Lade reads" }
            if model.attribute(key, of: name) != nil {
                current = nil
                attribute = key
            } else if let relationship = model.relationship(key, of: name) {
                current = relationship.destinationEntityName
            } else {
                return "'\(key)' is not a property of entity '\(name)'"
            }
        }
        return nil
    }
}
