import Foundation

/// What to fetch: an entity (with or without its subentities), a predicate, an order, a window.
///
/// ```swift
/// var request = FetchRequest(entityName: "Product")
/// request.predicate = .compare(.keyPath("price"), .lessThan, .constant(.decimal(10)))
/// request.sortDescriptors = [FetchSortDescriptor("name")]
/// request.fetchLimit = 20
/// let products = try context.fetch(request)
/// ```
public struct FetchRequest: Sendable {
    public var entityName: String
    public var predicate: FetchPredicate?
    public var sortDescriptors: [FetchSortDescriptor] = []
    /// 0: no limit.
    public var fetchLimit = 0
    public var fetchOffset = 0
    /// Accepted for Core Data parity; Lade loads each fetch's rows at once.
    public var fetchBatchSize = 0
    public var includesSubentities = true
    /// When false, fetched objects come back with their data in place.
    public var returnsObjectsAsFaults = true
    /// When true (the default), unsaved inserts, updates and deletes in the context count.
    public var includesPendingChanges = true
    /// To-one key paths whose destinations are loaded with the fetch ("category", "category.parent").
    public var relationshipKeyPathsForPrefetching: [String] = []
    /// For `fetchDictionaries`: the attributes to return (all when nil).
    public var propertiesToFetch: [String]?

    public init(entityName: String, predicate: FetchPredicate? = nil, sortDescriptors: [FetchSortDescriptor] = []) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
    }

    var storeRequest: StoreFetchRequest {
        StoreFetchRequest(
            entityName: entityName, predicate: predicate, sortDescriptors: sortDescriptors,
            includesSubentities: includesSubentities, fetchLimit: fetchLimit, fetchOffset: fetchOffset)
    }
}
