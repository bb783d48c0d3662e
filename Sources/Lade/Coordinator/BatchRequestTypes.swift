import Foundation

// The batch requests a context hands to the coordinator, which executes them, and their
// results: declared with the coordinator, the layer below the contexts that make them
// (the context checks a request against the model first, in Context/BatchRequests.swift).

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
    public var predicate: FetchPredicate?
    public var propertiesToUpdate: [String: AttributeValue?]
    public var includesSubentities = true

    public init(entityName: String, predicate: FetchPredicate? = nil, propertiesToUpdate: [String: AttributeValue?]) {
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
