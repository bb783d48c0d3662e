import Foundation

/// What happens to a relationship's destination objects when its source object is deleted.
public enum DeleteRule: String, Sendable, Hashable, CaseIterable, Codable {
    /// Clear the inverse relationship of each destination.
    case nullify = "Nullify"
    /// Delete the destinations too.
    case cascade = "Cascade"
    /// Refuse the delete while any destination exists.
    case deny = "Deny"
    /// Do nothing; the model must keep the inverse consistent itself.
    case noAction = "No Action"
}

/// A relationship from one entity to another, to-one or to-many, with its inverse.
///
/// ```swift
/// let category = RelationshipDescription(
///     name: "category", destinationEntityName: "Category", inverseName: "products")
/// ```
public struct RelationshipDescription: Sendable, Hashable {
    public var name: String
    public var destinationEntityName: String
    public var inverseName: String?
    public var isToMany: Bool
    /// Ordered to-many relationships keep their order (stored in `Z_FOK_` columns).
    public var isOrdered: Bool
    public var isOptional: Bool
    public var isTransient: Bool
    public var minCount: Int
    /// 0 means unbounded; a to-one relationship has 1.
    public var maxCount: Int
    public var deleteRule: DeleteRule
    public var isIndexed: Bool
    public var renamingIdentifier: String?
    public var versionHashModifier: String?
    public var userInfo: [String: String]

    public init(
        name: String, destinationEntityName: String, inverseName: String? = nil, isToMany: Bool = false,
        isOrdered: Bool = false, isOptional: Bool = true, isTransient: Bool = false, minCount: Int = 0,
        maxCount: Int? = nil, deleteRule: DeleteRule = .nullify, isIndexed: Bool = false,
        renamingIdentifier: String? = nil, versionHashModifier: String? = nil, userInfo: [String: String] = [:]
    ) {
        self.name = name
        self.destinationEntityName = destinationEntityName
        self.inverseName = inverseName
        self.isToMany = isToMany
        self.isOrdered = isOrdered
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.minCount = minCount
        self.maxCount = maxCount ?? (isToMany ? 0 : 1)
        self.deleteRule = deleteRule
        self.isIndexed = isIndexed
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.userInfo = userInfo
    }
}
