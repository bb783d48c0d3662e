import Foundation

/// A fetch request stored in the model by name (Xcode's "Fetch Request" element), or the
/// request behind a fetched property. Its predicate may name `$VARIABLES` substituted at use.
///
/// ```swift
/// let template = FetchRequestTemplate(
///     name: "productsBySupplier", entityName: "Product", predicateString: "supplier.code == $CODE")
/// ```
public struct FetchRequestTemplate: Sendable, Hashable {
    public var name: String
    public var entityName: String
    /// The predicate in Core Data's format-string syntax, as written in the model.
    public var predicateString: String?
    public var fetchLimit: Int?
    public var fetchBatchSize: Int?
    /// Xcode's result type name, e.g. `NSManagedObjectResultType` or `NSDictionaryResultType`.
    public var resultType: String?
    public var includesSubentities: Bool?
    public var includesPendingChanges: Bool?
    public var returnsObjectsAsFaults: Bool?
    public var returnsDistinctResults: Bool?

    public init(
        name: String, entityName: String, predicateString: String? = nil, fetchLimit: Int? = nil,
        fetchBatchSize: Int? = nil, resultType: String? = nil, includesSubentities: Bool? = nil,
        includesPendingChanges: Bool? = nil, returnsObjectsAsFaults: Bool? = nil, returnsDistinctResults: Bool? = nil
    ) {
        self.name = name
        self.entityName = entityName
        self.predicateString = predicateString
        self.fetchLimit = fetchLimit
        self.fetchBatchSize = fetchBatchSize
        self.resultType = resultType
        self.includesSubentities = includesSubentities
        self.includesPendingChanges = includesPendingChanges
        self.returnsObjectsAsFaults = returnsObjectsAsFaults
        self.returnsDistinctResults = returnsDistinctResults
    }
}

/// A fetched property: a weak, one-way relationship defined by a fetch request that is
/// evaluated when the property is read (`$FETCH_SOURCE` names the object it is read on).
public struct FetchedPropertyDescription: Sendable, Hashable {
    public var name: String
    public var isOptional: Bool
    public var fetchRequest: FetchRequestTemplate
    public var userInfo: [String: String]

    public init(name: String, isOptional: Bool = true, fetchRequest: FetchRequestTemplate, userInfo: [String: String] = [:]) {
        self.name = name
        self.isOptional = isOptional
        self.fetchRequest = fetchRequest
        self.userInfo = userInfo
    }
}

/// A named group of entities (Xcode's "Configuration"), used to place entities in stores.
public struct ModelConfiguration: Sendable, Hashable {
    public var name: String
    public var entityNames: [String]
    public var isUsedWithCloudKit: Bool

    public init(name: String, entityNames: [String], isUsedWithCloudKit: Bool = false) {
        self.name = name
        self.entityNames = entityNames
        self.isUsedWithCloudKit = isUsedWithCloudKit
    }
}
