import Foundation

/// A predicate and sort descriptors applied by the evaluator to rows a store read, following
/// key paths through the store (`rows(for:)`, `relatedObjectIDs(of:relationship:)`): how a store
/// whose query language cannot say something exactly as the evaluator means it (a PostgreSQL
/// store, for a `[cd]` comparison or `MATCHES`) still answers as the evaluator would. The
/// store narrows the rows first with what its query can say; this does the rest.
final class StoreRowEvaluation {
    private let store: PersistentStore
    private let model: ManagedObjectModel
    private var rowCache: [ManagedObjectID: StoreRow] = [:]
    private var toManyCache: [ManagedObjectID: [String: [ManagedObjectID]]] = [:]
    /// The first error reading the store, kept while the evaluator (which cannot throw) runs.
    private var failure: Error?
    private var unknownKey: (entity: String, key: String)?

    init(store: PersistentStore, model: ManagedObjectModel) {
        self.store = store
        self.model = model
    }

    /// The rows of `rows` that match `predicate`, sorted by `sortDescriptors` (ties by key), with
    /// `offset` and `limit` applied last.
    func apply(_ request: StoreFetchRequest, to rows: [StoreRow], filter: Bool, sort: Bool, window: Bool) throws -> [StoreRow] {
        for row in rows { rowCache[row.objectID] = row }
        var paths: [[String]] = []
        if filter, let predicate = request.predicate { Self.collectKeyPaths(predicate, into: &paths) }
        if sort { paths += request.sortDescriptors.map(\.keyPath) }
        try prefetch(along: paths, from: rows)
        var kept = rows
        if filter, let predicate = request.predicate, predicate != .true {
            kept = try kept.filter { try PredicateEvaluator.evaluate(predicate, on: Object(evaluation: self, id: $0.objectID)) }
            try rethrow()
            if let (entity, key) = unknownKey { throw FetchPredicateError.unknownKey(entity: entity, key: key) }
        }
        if sort && !request.sortDescriptors.isEmpty {
            for descriptor in request.sortDescriptors { try descriptor.check(on: request.entityName, in: model) }
            let keys = kept.map { row in request.sortDescriptors.map { Object(evaluation: self, id: row.objectID).predicateValue(forKeyPath: $0.keyPath) } }
            try rethrow()
            let order = kept.indices.sorted { a, b in
                for (index, descriptor) in request.sortDescriptors.enumerated() {
                    let result = descriptor.compare(keys[a][index], keys[b][index])
                    if result != 0 { return result < 0 }
                }
                return (kept[a].objectID.primaryKey ?? 0) < (kept[b].objectID.primaryKey ?? 0)
            }
            kept = order.map { kept[$0] }
        }
        if window {
            if request.fetchOffset > 0 { kept = Array(kept.dropFirst(request.fetchOffset)) }
            if request.fetchLimit > 0 { kept = Array(kept.prefix(request.fetchLimit)) }
        }
        return kept
    }

    /// Reads what the relationship steps of `paths` reach (`category.name`, `tags.label`,
    /// `category.parent.name`) for all of `rows` at once, step by step: to-one destinations'
    /// rows, to-many destinations (and their rows where the path goes on), one read per step
    /// where following each row's key path alone would read once per object.
    private func prefetch(along paths: [[String]], from rows: [StoreRow]) throws {
        var level = Dictionary(grouping: paths.filter { !$0.isEmpty }, by: { $0[0] })
        var objects = rows.map(\.objectID)
        while !level.isEmpty, !objects.isEmpty {
            var next: [String: [[String]]] = [:]
            var reached: [ManagedObjectID] = []
            for (name, tails) in level {
                let goesOn = tails.contains { $0.count > 1 }
                // The evaluator reads a to-one destination's row even at the end of a path.
                var needRows: [ManagedObjectID] = []
                var destinations: [ManagedObjectID] = []
                var owners: [ManagedObjectID] = []
                for id in objects {
                    guard let relationship = model.relationship(name, of: id.entityName) else { continue }
                    if !relationship.isToMany {
                        if let destination = rowCache[id]?.toOne[name] { destinations.append(destination); needRows.append(destination) }
                    } else if let known = toManyCache[id]?[name] {
                        destinations += known
                    } else {
                        owners.append(id)
                    }
                }
                if !owners.isEmpty {
                    for (owner, ids) in try store.relatedObjectIDs(of: owners, relationship: name) {
                        toManyCache[owner, default: [:]][name] = ids
                        destinations += ids
                    }
                }
                if goesOn { needRows = destinations }
                let missing = Array(Set(needRows.filter { rowCache[$0] == nil }))
                if !missing.isEmpty { for row in try store.rows(for: missing) { rowCache[row.objectID] = row } }
                reached += destinations
                for tail in tails where tail.count > 1 { next[tail[1], default: []].append(Array(tail.dropFirst())) }
            }
            level = next
            objects = Array(Set(reached))
        }
    }

    /// The key paths from the evaluated object in `predicate` (a `SUBQUERY`'s collection among
    /// them; paths from its variable are not the object's).
    static func collectKeyPaths(_ predicate: FetchPredicate, into paths: inout [[String]]) {
        switch predicate {
        case .true, .false: break
        case .comparison(let comparison):
            collectKeyPaths(comparison.left, into: &paths)
            collectKeyPaths(comparison.right, into: &paths)
        case .and(let parts), .or(let parts): for part in parts { collectKeyPaths(part, into: &paths) }
        case .not(let inner): collectKeyPaths(inner, into: &paths)
        }
    }

    static func collectKeyPaths(_ expression: FetchExpression, into paths: inout [[String]]) {
        switch expression {
        case .keyPath(let path): paths.append(path)
        case .collectionOperator(_, let collection, _): collectKeyPaths(collection, into: &paths)
        case .aggregate(let members): for member in members { collectKeyPaths(member, into: &paths) }
        case .subquery(let collection, _, _): collectKeyPaths(collection, into: &paths)
        case .constant, .evaluatedObject, .variable, .variableKeyPath: break
        }
    }

    private func rethrow() throws {
        if let failure { throw failure }
    }

    private func row(_ id: ManagedObjectID) -> StoreRow? {
        if let row = rowCache[id] { return row }
        guard failure == nil else { return nil }
        do {
            let row = try store.rows(for: [id]).first
            if let row { rowCache[id] = row }
            return row
        } catch {
            failure = error
            return nil
        }
    }

    private func related(_ id: ManagedObjectID, _ relationship: String) -> [ManagedObjectID] {
        if let known = toManyCache[id]?[relationship] { return known }
        guard failure == nil else { return [] }
        do {
            let ids = try store.relatedObjectIDs(of: id, relationship: relationship)
            toManyCache[id, default: [:]][relationship] = ids
            return ids
        } catch {
            failure = error
            return []
        }
    }

    /// One object as the evaluator sees it, as `AtomicQuery.EvaluatedObject` does for an
    /// atomic store's graph: key paths follow relationships, a to-many step gives a collection.
    struct Object: PredicateEvaluable {
        let evaluation: StoreRowEvaluation
        let id: ManagedObjectID

        func predicateValue(forKeyPath path: [String]) -> PredicateValue {
            guard let first = path.first else { return .object(id) }
            guard let row = evaluation.row(id) else { return .null }
            let model = evaluation.model
            let rest = Array(path.dropFirst())
            if model.attribute(first, of: id.entityName) != nil {
                return (row.attributes[first].map { PredicateValue.attribute($0) } ?? .null).predicateValue(forKeyPath: rest)
            }
            guard let relationship = model.relationship(first, of: id.entityName) else {
                if evaluation.unknownKey == nil { evaluation.unknownKey = (id.entityName, first) }
                return .null
            }
            if relationship.isToMany {
                return .collection(evaluation.related(id, first).flatMap { destination -> [PredicateValue] in
                    let value = Object(evaluation: evaluation, id: destination).predicateValue(forKeyPath: rest)
                    if case .collection(let nested) = value { return nested }
                    return [value]
                })
            }
            guard let destination = row.toOne[first], evaluation.row(destination) != nil else { return .null }
            return Object(evaluation: evaluation, id: destination).predicateValue(forKeyPath: rest)
        }

        func predicateObjects(forKeyPath path: [String]) -> [any PredicateEvaluable]? {
            var entity = id.entityName
            var lastIsToMany = false
            for name in path {
                guard let relationship = evaluation.model.relationship(name, of: entity) else { return nil }
                entity = relationship.destinationEntityName
                lastIsToMany = relationship.isToMany
            }
            guard lastIsToMany else { return nil }
            var ids = [id]
            for name in path {
                ids = ids.flatMap { current -> [ManagedObjectID] in
                    guard let relationship = evaluation.model.relationship(name, of: current.entityName) else { return [] }
                    if relationship.isToMany { return evaluation.related(current, name) }
                    return [evaluation.row(current)?.toOne[name]].compactMap { $0 }
                }
            }
            return ids.map { Object(evaluation: evaluation, id: $0) }
        }
    }
}
