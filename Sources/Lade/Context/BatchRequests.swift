import Foundation

/// Core Data's `NSBatchInsertRequest`: rows written straight to the store, no managed objects.
///
/// Each row is a dictionary of attribute values (relationships are not set by batch inserts, as
/// in Core Data). A row is checked with the model's rules (type, required, minimum, maximum,
/// pattern) and a row that breaks one is reported by index with the reason, not written; the
/// others are (Core Data does not validate batch inserts; Lade refuses what a save would).
/// Attributes a row leaves out take their default. On an entity with uniqueness constraints
/// the request upserts, as Core Data's does (`ON CONFLICT … DO UPDATE SET Z_OPT = Z_OPT + 1,
/// col = excluded.col` in its SQL): a row whose constraint values match an object's replaces
/// every attribute of that object (left-out ones with their defaults) and advances its
/// `Z_OPT`; within one request a later row with the same values wins.
///
/// ```swift
/// let request = BatchInsertRequest(entityName: "Product", objects: [
///     ["sku": .string("A-1"), "name": .string("Bolt"), "price": .decimal(1)],
/// ])
/// let result = try context.execute(request)   // result.inserted == 1
/// ```
public struct BatchInsertRequest: Sendable {
    public var entityName: String
    /// The rows, when given at once.
    public var objects: [[String: AttributeValue?]]
    /// Rows pulled one at a time until it returns nil (Core Data's `dictionaryHandler`
    /// form); written `batchSize` rows per transaction, so memory stays flat.
    public var rowProvider: (@Sendable () throws -> [String: AttributeValue?]?)?
    /// Rows per transaction with `rowProvider` (all of `objects` go in one).
    public var batchSize = 5_000

    public init(entityName: String, objects: [[String: AttributeValue?]]) {
        self.entityName = entityName
        self.objects = objects
    }

    public init(entityName: String, batchSize: Int = 5_000, rowProvider: @escaping @Sendable () throws -> [String: AttributeValue?]?) {
        self.entityName = entityName
        self.objects = []
        self.rowProvider = rowProvider
        self.batchSize = max(1, batchSize)
    }
}

/// What a batch insert did: counts, the objects written (inserted or updated), the rows refused.
public struct BatchInsertResult: Sendable {
    public var inserted = 0
    public var updated = 0
    public var objectIDs: [ManagedObjectID] = []
    public var failures: [BatchRowFailure] = []
}

/// A row a batch request did not write: its index in the request, and why.
public struct BatchRowFailure: Sendable, Equatable, CustomStringConvertible {
    public let index: Int
    public let property: String
    public let message: String

    public var description: String { "row \(index): \(property): \(message)" }
}

/// Core Data's `NSBatchUpdateRequest`: the objects matching `predicate` get
/// `propertiesToUpdate` (attributes; nil clears), straight in the store, each object's
/// `Z_OPT` advanced. The new values are checked with the model's rules first; a value that
/// breaks one refuses the whole request, naming it.
public struct BatchUpdateRequest: Sendable {
    public var entityName: String
    public var predicate: Predicate?
    public var propertiesToUpdate: [String: AttributeValue?]
    public var includesSubentities = true

    public init(entityName: String, predicate: Predicate? = nil, propertiesToUpdate: [String: AttributeValue?]) {
        self.entityName = entityName
        self.predicate = predicate
        self.propertiesToUpdate = propertiesToUpdate
    }
}

/// What a batch update or delete did: how many objects the request matched; the objects
/// changed (updated) or deleted, cascaded ones included; for a delete, the objects whose
/// relationships were nullified (their `Z_OPT` advanced). Merge both into contexts that may
/// hold them (`ManagedObjectContext.mergeChanges(updated:deleted:into:)`).
public struct BatchResult: Sendable {
    public var count = 0
    public var objectIDs: [ManagedObjectID] = []
    public var nullifiedObjectIDs: [ManagedObjectID] = []
}

/// Core Data's `NSBatchDeleteRequest`: the objects a fetch request matches, deleted straight in
/// the store, with the relationship work Core Data's batch delete does in SQL triggers:
/// - **Cascade**: destinations deleted too, their own rules applied in turn.
/// - **Nullify**: each destination's inverse cleared (a to-one set to NULL, a many-to-many link
///   removed), its `Z_OPT` advanced; when that inverse is required (a to-one, or a to-many
///   left with none), the whole request is refused, as Core Data's trigger raises "Batch delete
///   failed due to mandatory … nullify inverse".
/// - **Deny** on any relationship of the entities deleted: refused before anything is deleted,
///   as Core Data refuses it (NSCoreDataError 134060, "Delete rule is not supported for batch
///   deletes"), whether or not destinations exist.
/// - **No Action**: nothing; but join-table rows of a deleted object always go (Lade never
///   leaves links to missing objects, which `lade check` would report as damage).
/// Validation rules are not run, as in Core Data. One transaction per store.
public struct BatchDeleteRequest: Sendable {
    public var fetchRequest: FetchRequest

    public init(fetchRequest: FetchRequest) {
        self.fetchRequest = fetchRequest
    }
}

extension ManagedObjectContext {
    /// Runs a batch insert against the store of the request's entity (see `BatchInsertRequest`).
    /// Objects this context holds do not see the change until it is merged
    /// (`mergeChanges(fromRemoteContextSave:into:)`).
    public func execute(_ request: BatchInsertRequest) throws -> BatchInsertResult {
        assertOnQueue()
        let entity = try model.requireEntity(request.entityName)
        guard !entity.isAbstract else { throw ContextError.abstractEntity(entity.name) }
        let store = try coordinator().store(forEntity: entity.name)
        let writer = BatchInserter(model: model, entity: entity.name, store: store)
        var result = BatchInsertResult()
        if let provider = request.rowProvider {
            var rows: [[String: AttributeValue?]] = []
            var first = 0
            while let row = try provider() {
                rows.append(row)
                if rows.count == request.batchSize {
                    try writer.write(rows, firstIndex: first, into: &result)
                    first += rows.count
                    rows.removeAll(keepingCapacity: true)
                }
            }
            if !rows.isEmpty { try writer.write(rows, firstIndex: first, into: &result) }
        } else {
            try writer.write(request.objects, firstIndex: 0, into: &result)
        }
        return result
    }

    /// Runs a batch update (see `BatchUpdateRequest`) in each store holding the entity.
    public func execute(_ request: BatchUpdateRequest) throws -> BatchResult {
        assertOnQueue()
        _ = try model.requireEntity(request.entityName)
        // Every new value is checked against every entity the update reaches.
        let entities = request.includesSubentities ? model.hierarchy(from: request.entityName).map(\.name) : [request.entityName]
        for (name, value) in request.propertiesToUpdate {
            for entity in entities {
                guard let attribute = model.attribute(name, of: entity), !attribute.isTransient else {
                    throw ContextError.unknownKey(entity: entity, key: name)
                }
                if let value, !value.fits(attribute.type) {
                    throw ContextError.wrongType(entity: entity, key: name, expected: attribute.type.rawValue, got: "\(value)")
                }
                if let violation = AttributeValidator(attribute).violation(of: value) {
                    throw ValidationError(failures: [.init(objectID: ManagedObjectID(temporaryFor: entity),
                                                           property: name, rule: violation.rule, value: value?.canonicalText, message: violation.message)])
                }
            }
        }
        var result = BatchResult()
        for store in try coordinator().stores(forEntity: request.entityName) {
            let rows = try store.fetch(StoreFetchRequest(entityName: request.entityName, predicate: request.predicate, includesSubentities: request.includesSubentities))
            guard !rows.isEmpty else { continue }
            var save = StoreSaveRequest()
            save.updated = rows.map { .init(objectID: $0.objectID, attributes: request.propertiesToUpdate, toOne: [:]) }
            try store.save(save)
            result.count += rows.count
            result.objectIDs += rows.map(\.objectID)
        }
        return result
    }

    /// Runs a batch delete (see `BatchDeleteRequest`) in each store holding the entity.
    public func execute(_ request: BatchDeleteRequest) throws -> BatchResult {
        assertOnQueue()
        let fetch = request.fetchRequest
        _ = try model.requireEntity(fetch.entityName)
        // Deny is refused up front for every entity the delete may reach, as Core Data does.
        var reachable = Set(fetch.includesSubentities ? model.hierarchy(from: fetch.entityName).map(\.name) : [fetch.entityName])
        var frontier = Array(reachable)
        while let entity = frontier.popLast() {
            for relationship in model.relationships(of: entity) where !relationship.isTransient {
                if relationship.deleteRule == .deny {
                    throw ValidationError(failures: [.init(objectID: ManagedObjectID(temporaryFor: entity), property: relationship.name, rule: .deny, value: nil,
                                                           message: "delete rule Deny is not supported for batch deletes (\(entity).\(relationship.name)), as in Core Data: delete these objects through a context")])
                }
                if relationship.deleteRule == .cascade {
                    for destination in model.hierarchy(from: relationship.destinationEntityName).map(\.name) where reachable.insert(destination).inserted {
                        frontier.append(destination)
                    }
                }
            }
        }
        var result = BatchResult()
        for store in try coordinator().stores(forEntity: fetch.entityName) {
            let matched = try store.fetch(StoreFetchRequest(entityName: fetch.entityName, predicate: fetch.predicate, includesSubentities: fetch.includesSubentities))
            guard !matched.isEmpty else { continue }
            let plan = try BatchDeletion(model: model, store: store).plan(matched.map(\.objectID))
            var save = StoreSaveRequest()
            save.deleted = plan.deleted.map { ($0, nil) }
            save.updated = plan.nullified.map { .init(objectID: $0.id, attributes: [:], toOne: $0.toOne) }
            save.orders = plan.orders
            try store.save(save)
            result.count += matched.count
            result.objectIDs += plan.deleted
            result.nullifiedObjectIDs += plan.nullified.map(\.id)
        }
        return result
    }

    /// Brings batch changes made in a store into contexts that may hold the objects (Core Data's
    /// `NSManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`): updated objects are
    /// refreshed (unsaved changes of theirs kept on top), deleted ones are forgotten.
    public static func mergeChanges(updated: [ManagedObjectID] = [], deleted: [ManagedObjectID] = [], into contexts: [ManagedObjectContext]) {
        for context in contexts {
            context.performAndWait {
                for id in updated {
                    guard let object = context.registeredObjectIfLoaded(id) else { continue }
                    context.refresh(object, mergeChanges: true)
                }
                for id in deleted {
                    guard let object = context.registeredObjectIfLoaded(id) else { continue }
                    context.forgetDeletedElsewhere(object)
                }
            }
        }
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

    private func mandatory(_ destination: ManagedObjectID, _ inverse: RelationshipDescription) -> ValidationError {
        ValidationError(failures: [.init(objectID: destination, property: inverse.name, rule: .required, value: nil,
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
            var parts: [Predicate] = []
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
