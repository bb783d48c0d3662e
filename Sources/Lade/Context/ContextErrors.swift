import Foundation

/// A misuse of a context or object, or a save the store refused.
public enum ContextError: Error, Sendable, CustomStringConvertible {
    case noCoordinator
    case abstractEntity(String)
    case unknownKey(entity: String, key: String)
    case wrongType(entity: String, key: String, expected: String, got: String)
    case objectHasNoContext(ManagedObjectID)
    case differentContexts(ManagedObjectID)
    case objectNotFound(ManagedObjectID)
    /// Optimistic locking: objects changed in the store since they were read, and the merge
    /// policy is `.error`.
    case mergeConflict([StoreSaveError.VersionConflict])
    case uniquenessViolation(entity: String, properties: [String], objectID: ManagedObjectID)
    /// A fault could not be fired because the store failed; the context refuses to save until
    /// it is reset or rolled back.
    case faultFailed(ManagedObjectID, reason: String)
    /// A fault whose row is gone: the object was deleted by another context or process (or by
    /// the parent context) after this one got it. The Programming Guide's "Core Data could not
    /// fulfill a fault" (Troubleshooting Core Data); its remedy: discard the object.
    case faultNotFulfilled(ManagedObjectID)
    /// A relationship between objects of two stores, which Core Data refuses too.
    case crossStoreRelationship(ManagedObjectID, relationship: String, destination: ManagedObjectID)
    /// A `StoreTransaction` on a store that cannot hold saves open (not SQLite).
    case storeTransactionUnsupported(String)
    /// A `StoreTransaction` used after its commit, rollback or failure.
    case storeTransactionEnded

    public var description: String {
        switch self {
        case .noCoordinator: "the context has no persistent store coordinator"
        case .abstractEntity(let name): "entity '\(name)' is abstract: insert one of its subentities"
        case .unknownKey(let entity, let key): "'\(key)' is not a property of entity '\(entity)'"
        case .wrongType(let entity, let key, let expected, let got): "\(entity).\(key) takes \(expected), not \(got)"
        case .objectHasNoContext(let id): "\(id) is no longer in a context (after reset, or deleted and saved)"
        case .differentContexts(let id): "\(id) belongs to another context; relate objects of one context, or fetch it here by its objectID"
        case .objectNotFound(let id): "no object \(id) in the store"
        case .mergeConflict(let conflicts): StoreSaveError.conflicts(conflicts).description + " (merge policy: error)"
        case .uniquenessViolation(let entity, let properties, let id): StoreSaveError.uniquenessViolation(entity: entity, properties: properties, objectID: id).description
        case .crossStoreRelationship(let id, let relationship, let destination):
            "\(id).\(relationship) would point to \(destination), an object of another store; a relationship cannot join objects of two stores (their configurations), so nothing was saved"
        case .storeTransactionUnsupported(let why): why
        case .storeTransactionEnded: "the store transaction is over (committed, rolled back, or failed and rolled back): begin another"
        case .faultFailed(let id, let reason): "\(id) could not be read from its store (\(reason)); its values are unknown, so nothing is saved: reset or roll back the context and try again"
        case .faultNotFulfilled(let id):
            "could not fulfill a fault: \(id) was deleted from its store (by another context or process) after this context got it; discard the object (a context that met this while reading a value saves nothing until it is reset or rolled back)"
        }
    }
}

/// How a save resolves objects changed in the store since they were read (Core Data's merge policies).
public enum MergePolicy: Sendable {
    /// Fail the save with the conflicts (Core Data's default, NSErrorMergePolicy).
    case error
    /// Per property: what changed in the store wins over what changed in memory.
    case mergeByPropertyStoreTrump
    /// Per property: what changed in memory wins; the store's other changes are kept.
    case mergeByPropertyObjectTrump
    /// The whole object as it is in memory replaces the store's.
    case overwrite
    /// Changes to conflicting objects are dropped; the store's state is taken.
    case rollback
}

extension ContextError: LadeError {
    public var code: String {
        switch self {
        case .noCoordinator: "context.noCoordinator"
        case .abstractEntity: "context.abstractEntity"
        case .unknownKey: "context.unknownKey"
        case .wrongType: "context.wrongType"
        case .objectHasNoContext: "context.objectHasNoContext"
        case .differentContexts: "context.differentContexts"
        case .objectNotFound: "context.objectNotFound"
        case .mergeConflict: "save.conflict"
        case .uniquenessViolation: "save.notUnique"
        case .faultFailed: "context.faultFailed"
        case .faultNotFulfilled: "context.faultNotFulfilled"
        case .crossStoreRelationship: "context.crossStore"
        case .storeTransactionUnsupported: "context.storeTransactionUnsupported"
        case .storeTransactionEnded: "context.storeTransactionEnded"
        }
    }
}
