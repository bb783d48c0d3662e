import Foundation

/// Every error Lade throws: one sentence that says what is wrong and where (file, line, field
/// when there is one) and what to do, and a stable `code` a script can test.
///
/// ```swift
/// do { try store.fetch(request) }
/// catch let error as LadeError { print(error.code, error) }   // "store.damaged …"
/// ```
///
/// Codes are `area.what`: `model` (a model Lade cannot accept), `model.unknownEntity`,
/// `store.*` (`notFound`, `alreadyExists`, `notAStore`, `wrongType`, `modelMismatch`,
/// `readOnly`, `reservedMetadataKey`, `io`, `sqlite`, `damaged`, `locked`), `save.*`
/// (`conflict`, `notUnique`), `validation`, `context.*`, `predicate.*`, `regex`, `plist`,
/// `value`, `coordinator.*`, `migration.*` (`refused`, `mapping`, `failed`, `storeChanged`, `noCurrentVersion`), and in the
/// pipeline `job`, `source`, `meta.value`, `sort`.
public protocol LadeError: Error, CustomStringConvertible {
    var code: String { get }
}

/// The one error for an entity name the model does not have, wherever one is asked for (a
/// context, a store, a fetch, a job, an export).
public struct UnknownEntityError: LadeError, Sendable, Equatable {
    public let name: String
    /// The model's entity names, for the message.
    public let known: [String]

    public init(_ name: String, in model: ManagedObjectModel) {
        self.name = name
        self.known = model.entityNames
    }

    public var code: String { "model.unknownEntity" }

    public var description: String {
        let shown = known.prefix(20).joined(separator: ", ") + (known.count > 20 ? " and \(known.count - 20) more" : "")
        return "the model has no entity '\(name)'" + (known.isEmpty ? "" : "; its entities are \(shown)")
    }
}

extension ManagedObjectModel {
    /// The entity named `name`, or `UnknownEntityError`.
    public func requireEntity(_ name: String) throws -> EntityDescription {
        guard let entity = entity(named: name) else { throw UnknownEntityError(name, in: self) }
        return entity
    }
}

extension ModelError: LadeError {
    public var code: String { "model" }
}

extension StoreError: LadeError {
    public var code: String {
        switch kind {
        case .notFound: "store.notFound"
        case .alreadyExists: "store.alreadyExists"
        case .notAStore: "store.notAStore"
        case .wrongStoreType: "store.wrongType"
        case .modelMismatch: "store.modelMismatch"
        case .readOnly: "store.readOnly"
        case .reservedMetadataKey: "store.reservedMetadataKey"
        case .transactionOpen: "store.transactionOpen"
        case .io: "store.io"
        case .sqlite: "store.sqlite"
        case .damaged: "store.damaged"
        }
    }
}

extension StoreSaveError: LadeError {
    public var code: String {
        switch self {
        case .conflicts: "save.conflict"
        case .uniquenessViolation: "save.notUnique"
        case .crossStoreRelationship: "save.crossStore"
        }
    }
}

extension ValidationError: LadeError {
    public var code: String { "validation" }
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
        case .crossStoreRelationship: "context.crossStore"
        case .storeTransactionUnsupported: "context.storeTransactionUnsupported"
        case .storeTransactionEnded: "context.storeTransactionEnded"
        }
    }
}

extension CoordinatorError: LadeError {
    public var code: String {
        switch self {
        case .noStores: "coordinator.noStores"
        case .unknownStore: "coordinator.unknownStore"
        case .noStoreForEntity: "coordinator.noStoreForEntity"
        case .unknownConfiguration: "coordinator.unknownConfiguration"
        }
    }
}

extension PredicateSyntaxError: LadeError {
    public var code: String { "predicate.syntax" }
}

extension PredicateError: LadeError {
    public var code: String {
        switch self {
        case .missingVariable: "predicate.missingVariable"
        case .unknownKey: "predicate.unknownKey"
        case .unsupported: "predicate.unsupported"
        case .notACollection: "predicate.notACollection"
        case .invalidRegularExpression: "predicate.regex"
        case .unknownTemplate: "predicate.unknownTemplate"
        case .invalidTemplate: "predicate.invalidTemplate"
        }
    }
}

extension RegularExpressionError: LadeError {
    public var code: String { "regex" }
}

extension PropertyListError: LadeError {
    public var code: String { "plist" }
}

extension ValueParseError: LadeError {
    public var code: String { "value" }
}
