import Foundation

/// The store side of batch requests (`BatchInsertRequest`, `BatchUpdateRequest`,
/// `BatchDeleteRequest`): the context checks a request against the model, and the coordinator
/// runs it in each store that holds its entity, straight in the store, without managed objects.
extension PersistentStoreCoordinator {
    /// Runs a batch update (checked by the context) in each store holding the entity.
    /// `authorship` is what a store keeping persistent history records the commit as.
    func executeBatchUpdate(_ request: BatchUpdateRequest, authorship: HistoryAuthorship = HistoryAuthorship()) throws -> BatchResult {
        var result = BatchResult()
        for store in try stores(forEntity: request.entityName) {
            let rows = try store.fetch(StoreFetchRequest(entityName: request.entityName, predicate: request.predicate, includesSubentities: request.includesSubentities))
            guard !rows.isEmpty else { continue }
            var save = StoreSaveRequest()
            save.updated = rows.map { .init(objectID: $0.objectID, attributes: request.propertiesToUpdate, toOne: [:]) }
            save.authorship = authorship
            try store.save(save)
            result.count += rows.count
            result.objectIDs += rows.map(\.objectID)
        }
        return result
    }

    /// Runs a batch delete (checked by the context) in each store holding the entity.
    func executeBatchDelete(_ request: BatchDeleteRequest, authorship: HistoryAuthorship = HistoryAuthorship()) throws -> BatchResult {
        let fetch = request.fetchRequest
        var result = BatchResult()
        for store in try stores(forEntity: fetch.entityName) {
            let matched = try store.fetch(StoreFetchRequest(entityName: fetch.entityName, predicate: fetch.predicate, includesSubentities: fetch.includesSubentities))
            guard !matched.isEmpty else { continue }
            let plan = try BatchDeletion(model: managedObjectModel, store: store).plan(matched.map(\.objectID))
            var save = StoreSaveRequest()
            save.deleted = plan.deleted.map { ($0, nil) }
            save.updated = plan.nullified.map { .init(objectID: $0.id, attributes: [:], toOne: $0.toOne) }
            save.orders = plan.orders
            save.authorship = authorship
            try store.save(save)
            result.count += matched.count
            result.objectIDs += plan.deleted
            result.nullifiedObjectIDs += plan.nullified.map(\.id)
        }
        return result
    }

    /// What writes a batch insert's rows into the store new objects of `entity` go to.
    func batchInserter(forEntity entity: String, authorship: HistoryAuthorship = HistoryAuthorship()) throws -> BatchInserter {
        var inserter = BatchInserter(model: managedObjectModel, entity: entity, store: try store(forEntity: entity))
        inserter.authorship = authorship
        return inserter
    }
}

/// Which objects a batch delete removes (the matched ones and their cascade) and which
/// destinations it nullifies, worked out from the store's rows, no managed objects.
struct BatchDeletion {
    let model: ManagedObjectModel
    let store: PersistentStore

    struct Plan {
        var deleted: [ManagedObjectID] = []
        /// Destinations whose inverse is cleared: to-one inverses set to nil (empty for a
        /// to-many inverse: only their `Z_OPT` advances).
        var nullified: [(id: ManagedObjectID, toOne: [String: ManagedObjectID?])] = []
        /// Ordered to-many inverses that lost members, numbered again as a context's save
        /// numbers them.
        var orders: [StoreSaveRequest.OrderChange] = []
    }

    func plan(_ matched: [ManagedObjectID]) throws -> Plan {
        var plan = Plan()
        var deleted = Set<ManagedObjectID>()
        var queue = matched
        var index = 0
        for id in matched { deleted.insert(id) }
        // Cascade first: the full set of deleted objects decides what is nullified.
        var toOneOf: [ManagedObjectID: StoreRow] = [:]
        while index < queue.count {
            let batch = Array(queue[index...])
            index = queue.count
            for row in try store.rows(for: batch) { toOneOf[row.objectID] = row }
            for id in batch {
                for relationship in model.relationships(of: id.entityName) where !relationship.isTransient && relationship.deleteRule == .cascade {
                    for destination in try destinations(of: id, relationship, toOneOf[id]) where deleted.insert(destination).inserted {
                        queue.append(destination)
                    }
                }
            }
        }
        plan.deleted = queue
        var nullified: [ManagedObjectID: [String: ManagedObjectID?]] = [:]
        var order: [ManagedObjectID] = []
        var reordered: [(ManagedObjectID, String)] = []
        var seenOrders: Set<String> = []
        for id in queue {
            for relationship in model.relationships(of: id.entityName) where !relationship.isTransient && relationship.deleteRule == .nullify {
                guard let inverse = model.inverse(of: relationship), !inverse.isTransient else { continue }
                for destination in try destinations(of: id, relationship, toOneOf[id]) where !deleted.contains(destination) {
                    if inverse.isToMany {
                        if !inverse.isOptional {
                            let remaining = try store.relatedObjectIDs(of: destination, relationship: inverse.name).filter { !deleted.contains($0) }
                            if remaining.count < max(1, inverse.minCount) {
                                throw mandatory(destination, inverse)
                            }
                        }
                    } else if !inverse.isOptional {
                        throw mandatory(destination, inverse)
                    }
                    if nullified[destination] == nil { order.append(destination); nullified[destination] = [:] }
                    if !inverse.isToMany { nullified[destination]![inverse.name] = .some(nil) }
                    if inverse.isToMany && inverse.isOrdered && seenOrders.insert("\(destination.uriRepresentation()) \(inverse.name)").inserted {
                        reordered.append((destination, inverse.name))
                    }
                }
            }
        }
        plan.nullified = order.map { ($0, nullified[$0]!) }
        for (owner, relationship) in reordered {
            let remaining = try store.relatedObjectIDs(of: owner, relationship: relationship).filter { !deleted.contains($0) }
            plan.orders.append(.init(owner: owner, relationship: relationship, destinations: remaining))
        }
        return plan
    }

    private func destinations(of id: ManagedObjectID, _ relationship: RelationshipDescription, _ row: StoreRow?) throws -> [ManagedObjectID] {
        if relationship.isToMany { return try store.relatedObjectIDs(of: id, relationship: relationship.name) }
        return row?.toOne[relationship.name].map { [$0] } ?? []
    }

    private func mandatory(_ destination: ManagedObjectID, _ inverse: RelationshipDescription) -> ObjectValidationError {
        ObjectValidationError(failures: [.init(objectID: destination, property: inverse.name, rule: .required, value: nil,
                                         message: "the batch delete would leave this required relationship empty (Core Data: \"Batch delete failed due to mandatory nullify inverse\"); nothing was deleted")])
    }
}

/// The store side of a batch insert: checks rows, finds existing objects by uniqueness
/// constraint, and writes one `StoreSaveRequest` per call.
struct BatchInserter {
    let model: ManagedObjectModel
    let entity: String
    let store: PersistentStore
    let layout: EntityLayout
    let validators: [String: AttributeValidator]
    /// The attribute-only uniqueness constraints (relationship constraints cannot be given here).
    let constraints: [[String]]
    /// What a store keeping persistent history records each call's commit as.
    var authorship = HistoryAuthorship()

    init(model: ManagedObjectModel, entity: String, store: PersistentStore) {
        self.model = model
        self.entity = entity
        self.store = store
        layout = model.layout(of: entity)!
        var validators: [String: AttributeValidator] = [:]
        for attribute in layout.attributes where !attribute.isTransient { validators[attribute.name] = AttributeValidator(attribute) }
        self.validators = validators
        let inherited = model.uniquenessConstraints(of: entity)
        constraints = inherited.filter { constraint in !constraint.isEmpty && constraint.allSatisfy { validators[$0] != nil } }
    }

    func write(_ rows: [[String: AttributeValue?]], firstIndex: Int, into result: inout BatchInsertResult) throws {
        // 1. Each row: defaults, then the given values, each checked.
        var accepted: [(index: Int, values: [String: AttributeValue?], given: [String: AttributeValue?])] = []
        rowLoop: for (offset, row) in rows.enumerated() {
            let index = firstIndex + offset
            var values: [String: AttributeValue?] = [:]
            for (position, attribute) in layout.attributes.enumerated() where !attribute.isTransient {
                values[attribute.name] = layout.defaultValues[position]
            }
            for (name, value) in row {
                guard let validator = validators[name] else {
                    result.failures.append(BatchRowFailure(index: index, property: name, message: "'\(name)' is not a stored attribute of \(entity)"))
                    continue rowLoop
                }
                if let value, !value.fits(validator.attribute.type) {
                    result.failures.append(BatchRowFailure(index: index, property: name, message: "\(value) is not a value of type \(validator.attribute.type.rawValue)"))
                    continue rowLoop
                }
                values[name] = value
            }
            for (name, validator) in validators.sorted(by: { $0.key < $1.key }) {
                if let violation = validator.violation(of: values[name] ?? nil) {
                    result.failures.append(BatchRowFailure(index: index, property: name, message: violation.message))
                    continue rowLoop
                }
            }
            accepted.append((index, values, row))
        }
        guard !accepted.isEmpty else { return }

        // 2. Upsert: objects already in the store, and earlier rows of this batch, by constraint.
        var existing: [[AttributeValue]: (id: ManagedObjectID, constraint: Int)] = [:]
        for (number, constraint) in constraints.enumerated() {
            var parts: [FetchPredicate] = []
            for name in constraint {
                let values = Set(accepted.compactMap { $0.values[name] ?? nil })
                parts.append(.compare(.keyPath(name), .in, .constant(.collection(values.map { .attribute($0) }))))
            }
            let rootEntity = model.rootEntity(of: entity)!.name
            for row in try store.fetch(StoreFetchRequest(entityName: rootEntity, predicate: parts.count == 1 ? parts[0] : .and(parts))) {
                let key = constraint.compactMap { name in row.layout.attributeIndex(of: name).flatMap { row.values[$0] } }
                if key.count == constraint.count { existing[[.integer(Int64(number))] + key] = (row.objectID, number) }
            }
        }
        var save = StoreSaveRequest()
        save.authorship = authorship
        var newRows: [(index: Int, values: [String: AttributeValue?], given: [String: AttributeValue?])] = []
        var updates: [(id: ManagedObjectID, given: [String: AttributeValue?])] = []
        var batchKeys: [[AttributeValue]: Int] = [:]      // constraint key → position in newRows
        rowLoop: for row in accepted {
            for (number, constraint) in constraints.enumerated() {
                let values = constraint.compactMap { row.values[$0] ?? nil }
                guard values.count == constraint.count else { continue }
                let key = [AttributeValue.integer(Int64(number))] + values
                if let found = existing[key] {
                    guard model.entity(found.id.entityName, isKindOf: entity) || found.id.entityName == entity else {
                        result.failures.append(BatchRowFailure(index: row.index, property: constraint.joined(separator: ", "),
                                                               message: "a \(found.id.entityName) already has these values"))
                        continue rowLoop
                    }
                    // Core Data's upsert is `ON CONFLICT … DO UPDATE SET col = excluded.col` for
                    // every column: attributes the row leaves out take their default here too.
                    updates.append((found.id, row.values))
                    continue rowLoop
                }
                if let earlier = batchKeys[key] {
                    newRows[earlier].values = row.values   // a later row with the same values wins
                    continue rowLoop
                }
            }
            for (number, constraint) in constraints.enumerated() {
                let values = constraint.compactMap { row.values[$0] ?? nil }
                if values.count == constraint.count { batchKeys[[.integer(Int64(number))] + values] = newRows.count }
            }
            newRows.append(row)
        }
        let ids = try store.newObjectIDs(for: entity, count: newRows.count)
        for (id, row) in zip(ids, newRows) {
            save.inserted.append(.init(objectID: id, positional: .init(
                layout: layout, values: layout.attributes.map { row.values[$0.name] ?? nil },
                toOneIDs: Array(repeating: nil, count: layout.relationships.count), changedAttributes: nil, changedToOne: nil)))
        }
        var updatedIDs: [ManagedObjectID] = []
        var seenUpdates: [ManagedObjectID: Int] = [:]
        for (id, given) in updates {
            if let position = seenUpdates[id] {
                save.updated[position] = .init(objectID: id, attributes: given, toOne: [:])
            } else {
                seenUpdates[id] = save.updated.count
                save.updated.append(.init(objectID: id, attributes: given, toOne: [:]))
                updatedIDs.append(id)
            }
        }
        do {
            try store.save(save)
        } catch {
            // As a context's failed save does: the keys go back, the next rows take them.
            try? store.giveBackObjectIDs(ids, for: entity)
            throw error
        }
        result.inserted += ids.count
        result.updated += updatedIDs.count
        result.objectIDs += ids + updatedIDs
    }
}
