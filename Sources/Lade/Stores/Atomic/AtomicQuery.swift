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
        guard model.entity(named: request.entityName) != nil else {
            throw PredicateError.unknownKey(entity: request.entityName, key: "(entity)")
        }
        for descriptor in request.sortDescriptors where descriptor.comparator != .compare {
            throw PredicateError.unsupported("sorting with \(descriptor.comparator) in an atomic store")
        }
        let entities = request.includesSubentities ? model.hierarchy(from: request.entityName).map(\.name) : [request.entityName]
        var keys = graph.keys(ofEntities: entities, sorted: ordered || request.fetchLimit > 0 || request.fetchOffset > 0)
        if let predicate = request.predicate, predicate != .true {
            let unknown = UnknownKeys()
            keys = try keys.filter { try PredicateEvaluator.evaluate(predicate, on: object($0, unknown)) }
            if let (entity, key) = unknown.first { throw PredicateError.unknownKey(entity: entity, key: key) }
        }
        if !request.sortDescriptors.isEmpty {
            let sortKeys = Dictionary(uniqueKeysWithValues: keys.map { key in
                (key, request.sortDescriptors.map { object(key, nil).predicateValue(forKeyPath: $0.keyPath) })
            })
            keys.sort { a, b in
                for (index, descriptor) in request.sortDescriptors.enumerated() {
                    let order = Self.compare(sortKeys[a]![index], sortKeys[b]![index])
                    if order != 0 { return descriptor.ascending ? order < 0 : order > 0 }
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
        return StoreRow(objectID: objectID(key)!, version: object.version, attributes: object.attributes, toOne: toOne)
    }

    func objectID(_ key: Int64) -> ManagedObjectID? {
        graph[key].map { ManagedObjectID(entityName: $0.entity, storeIdentifier: storeIdentifier, primaryKey: key) }
    }

    private func object(_ key: Int64, _ unknown: UnknownKeys?) -> EvaluatedObject {
        EvaluatedObject(query: self, key: key, unknown: unknown)
    }

    /// Sort order: nil first (as SQLite sorts NULL), values as `ValueComparison` orders them,
    /// objects by primary key.
    static func compare(_ a: PredicateValue, _ b: PredicateValue) -> Int {
        switch (a, b) {
        case (.null, .null): 0
        case (.null, _): -1
        case (_, .null): 1
        case (.attribute(let x), .attribute(let y)): ValueComparison.compare(x, y) ?? 0
        case (.object(let x), .object(let y)): (x.primaryKey ?? 0) < (y.primaryKey ?? 0) ? -1 : ((x.primaryKey ?? 0) == (y.primaryKey ?? 0) ? 0 : 1)
        default: 0
        }
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
                return path.count == 1 ? (object.attributes[first].map { .attribute($0) } ?? .null) : .null
            }
            guard let relationship = query.model.relationship(first, of: object.entity) else {
                if unknown?.first == nil { unknown?.first = (object.entity, first) }
                return .null
            }
            let rest = Array(path.dropFirst())
            if relationship.isToMany {
                return .collection((object.toMany[first] ?? []).filter { query.graph[$0] != nil }.map {
                    EvaluatedObject(query: query, key: $0, unknown: unknown).predicateValue(forKeyPath: rest)
                })
            }
            guard let destination = object.toOne[first], query.graph[destination] != nil else { return .null }
            return EvaluatedObject(query: query, key: destination, unknown: unknown).predicateValue(forKeyPath: rest)
        }
    }
}
