import Foundation

/// A fetch over an atomic store's objects, in memory: entity (and subentities), predicate,
/// sort descriptors, offset and limit, with the meaning the SQLite store gives them.
struct AtomicQuery {
    let graph: AtomicObjectGraph
    let model: ManagedObjectModel
    let storeIdentifier: String

    /// The keys of the objects a request matches, in the request's order (in no particular
    /// order when `ordered` is false and the request has no limit or offset: for counting).
    func matchingKeys(_ request: StoreFetchRequest, ordered: Bool = true) throws -> [Int64] {
        _ = try model.requireEntity(request.entityName)
        for descriptor in request.sortDescriptors { try descriptor.check(on: request.entityName, in: model) }
        let entities = request.includesSubentities ? model.hierarchy(from: request.entityName).map(\.name) : [request.entityName]
        var keys = graph.keys(ofEntities: entities, sorted: ordered || request.fetchLimit > 0 || request.fetchOffset > 0)
        if let predicate = request.predicate, predicate != .true {
            let unknown = UnknownKeys()
            keys = try keys.filter { try PredicateEvaluator.evaluate(predicate, on: object($0, unknown)) }
            if let (entity, key) = unknown.first { throw FetchPredicateError.unknownKey(entity: entity, key: key) }
        }
        if !request.sortDescriptors.isEmpty {
            let sortKeys = Dictionary(uniqueKeysWithValues: keys.map { key in
                (key, request.sortDescriptors.map { object(key, nil).predicateValue(forKeyPath: $0.keyPath) })
            })
            keys.sort { a, b in
                for (index, descriptor) in request.sortDescriptors.enumerated() {
                    let order = descriptor.compare(sortKeys[a]![index], sortKeys[b]![index])
                    if order != 0 { return order < 0 }
                }
                return a < b
            }
        }
        if request.fetchOffset > 0 { keys = Array(keys.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 { keys = Array(keys.prefix(request.fetchLimit)) }
        return keys
    }

    /// An object's stored state as a `StoreRow`; relationships to objects no longer in the
    /// store are left out.
    func row(_ key: Int64) -> StoreRow {
        let object = graph[key]!
        var toOne: [String: ManagedObjectID] = [:]
        for (name, destination) in object.toOne {
            if let id = objectID(destination) { toOne[name] = id }
        }
        return StoreRow(objectID: objectID(key)!, version: object.version, layout: model.layout(of: object.entity)!, attributes: object.attributes, toOne: toOne)
    }

    func objectID(_ key: Int64) -> ManagedObjectID? {
        graph[key].map { ManagedObjectID(entityName: $0.entity, storeIdentifier: storeIdentifier, primaryKey: key) }
    }

    private func object(_ key: Int64, _ unknown: UnknownKeys?) -> EvaluatedObject {
        EvaluatedObject(query: self, key: key, unknown: unknown)
    }

    /// The first key path element that named no property, found while evaluating.
    final class UnknownKeys {
        var first: (entity: String, key: String)?
    }

    /// One object of the graph as the evaluator sees it: key paths follow relationships, a
    /// to-many step gives a collection, as `ManagedObject.predicateValue(forKeyPath:)` does.
    struct EvaluatedObject: PredicateEvaluable {
        let query: AtomicQuery
        let key: Int64
        let unknown: UnknownKeys?

        func predicateValue(forKeyPath path: [String]) -> PredicateValue {
            guard let object = query.graph[key], let id = query.objectID(key) else { return .null }
            guard let first = path.first else { return .object(id) }
            if query.model.attribute(first, of: object.entity) != nil {
                // Past an attribute only a composite's elements (`address.city`) give values.
                return (object.attributes[first].map { PredicateValue.attribute($0) } ?? .null).predicateValue(forKeyPath: Array(path.dropFirst()))
            }
            guard let relationship = query.model.relationship(first, of: object.entity) else {
                if unknown?.first == nil { unknown?.first = (object.entity, first) }
                return .null
            }
            let rest = Array(path.dropFirst())
            if relationship.isToMany {
                return .collection((object.toMany[first] ?? []).filter { query.graph[$0] != nil }.flatMap { key -> [PredicateValue] in
                    let value = EvaluatedObject(query: query, key: key, unknown: unknown).predicateValue(forKeyPath: rest)
                    if case .collection(let nested) = value { return nested }
                    return [value]
                })
            }
            guard let destination = object.toOne[first], query.graph[destination] != nil else { return .null }
            return EvaluatedObject(query: query, key: destination, unknown: unknown).predicateValue(forKeyPath: rest)
        }

        /// The objects a key path ending in a to-many relationship reaches, for `SUBQUERY`.
        func predicateObjects(forKeyPath path: [String]) -> [any PredicateEvaluable]? {
            guard let start = query.graph[key] else { return nil }
            var entity = start.entity
            var lastIsToMany = false
            for name in path {
                guard let relationship = query.model.relationship(name, of: entity) else { return nil }
                entity = relationship.destinationEntityName
                lastIsToMany = relationship.isToMany
            }
            guard lastIsToMany else { return nil }
            var keys = [key]
            for name in path {
                keys = keys.flatMap { current -> [Int64] in
                    guard let object = query.graph[current], let relationship = query.model.relationship(name, of: object.entity) else { return [] }
                    return (relationship.isToMany ? Array(object.toMany[name] ?? []) : [object.toOne[name]].compactMap { $0 }).filter { query.graph[$0] != nil }
                }
            }
            return keys.map { EvaluatedObject(query: query, key: $0, unknown: unknown) }
        }
    }
}
