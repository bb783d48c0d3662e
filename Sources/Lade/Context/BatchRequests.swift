import Foundation

// A context runs batch requests (declared with the coordinator, Coordinator/BatchRequestTypes.swift):
// it checks each against the model, then the coordinator executes it in the stores.

extension ManagedObjectContext {
    /// Runs a batch insert against the store of the request's entity (see `BatchInsertRequest`).
    /// Objects this context holds do not see the change until it is merged
    /// (`mergeChanges(fromRemoteContextSave:into:)`).
    public func execute(_ request: BatchInsertRequest) throws -> BatchInsertResult {
        assertOnQueue()
        let entity = try requireModel().requireEntity(request.entityName)
        guard !entity.isAbstract else { throw ContextError.abstractEntity(entity.name) }
        let writer = try coordinator().batchInserter(forEntity: entity.name, authorship: historyAuthorship)
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
        let model = try requireModel()
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
                    throw ObjectValidationError(failures: [.init(objectID: ManagedObjectID(temporaryFor: entity),
                                                           property: name, rule: violation.rule, value: value?.canonicalText, message: violation.message)])
                }
            }
        }
        return try coordinator().executeBatchUpdate(request, authorship: historyAuthorship)
    }

    /// Runs a batch delete (see `BatchDeleteRequest`) in each store holding the entity.
    public func execute(_ request: BatchDeleteRequest) throws -> BatchResult {
        assertOnQueue()
        let fetch = request.fetchRequest
        let model = try requireModel()
        _ = try model.requireEntity(fetch.entityName)
        // Deny is refused up front for every entity the delete may reach, as Core Data does.
        var reachable = Set(fetch.includesSubentities ? model.hierarchy(from: fetch.entityName).map(\.name) : [fetch.entityName])
        var frontier = Array(reachable)
        while let entity = frontier.popLast() {
            for relationship in model.relationships(of: entity) where !relationship.isTransient {
                if relationship.deleteRule == .deny {
                    throw ObjectValidationError(failures: [.init(objectID: ManagedObjectID(temporaryFor: entity), property: relationship.name, rule: .deny, value: nil,
                                                           message: "delete rule Deny is not supported for batch deletes (\(entity).\(relationship.name)), as in Core Data: delete these objects through a context")])
                }
                if relationship.deleteRule == .cascade {
                    for destination in model.hierarchy(from: relationship.destinationEntityName).map(\.name) where reachable.insert(destination).inserted {
                        frontier.append(destination)
                    }
                }
            }
        }
        return try coordinator().executeBatchDelete(request, authorship: historyAuthorship)
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
