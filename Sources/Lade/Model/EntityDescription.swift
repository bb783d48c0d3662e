import Foundation

/// One element of a fetch index: a property (or an expression) and its order.
public struct FetchIndexElement: Sendable, Hashable {
    /// The property indexed; nil when the element indexes an expression.
    public var propertyName: String?
    public var expression: String?
    /// `Binary` (a B-tree index) or `RTree`.
    public var kind: String
    public var isAscending: Bool

    public init(propertyName: String?, expression: String? = nil, kind: String = "Binary", isAscending: Bool = true) {
        self.propertyName = propertyName
        self.expression = expression
        self.kind = kind
        self.isAscending = isAscending
    }
}

/// A named index over one or more properties of an entity (Xcode's "Fetch Index").
public struct FetchIndexDescription: Sendable, Hashable {
    public var name: String
    public var elements: [FetchIndexElement]

    public init(name: String, elements: [FetchIndexElement]) {
        self.name = name
        self.elements = elements
    }
}

/// An entity: a kind of managed object, with its own attributes, relationships and fetched
/// properties, and its place in an inheritance hierarchy. Inherited properties are not
/// repeated here; ask the model (`ManagedObjectModel.attributes(of:)`) for the full list.
///
/// ```swift
/// var product = EntityDescription(name: "Product")
/// product.attributes = [AttributeDescription(name: "sku", type: .string, isOptional: false)]
/// product.uniquenessConstraints = [["sku"]]
/// ```
public struct EntityDescription: Sendable, Hashable {
    public var name: String
    public var parentName: String?
    public var isAbstract: Bool
    public var representedClassName: String?
    /// The name this entity had in an earlier model version (Xcode's "Renaming ID",
    /// `elementID` in the XML). A SQLite store keeps the old name in `Z_PRIMARYKEY`.
    public var renamingIdentifier: String?
    public var versionHashModifier: String?
    public var attributes: [AttributeDescription]
    public var relationships: [RelationshipDescription]
    public var fetchedProperties: [FetchedPropertyDescription]
    /// Each constraint lists the properties whose values, together, must be unique.
    public var uniquenessConstraints: [[String]]
    public var fetchIndexes: [FetchIndexDescription]
    /// Xcode's older "Compound Indexes": each lists the properties of one index.
    public var compoundIndexes: [[String]]
    public var userInfo: [String: String]
    /// Apple's version hash for this entity, when a compiled model (`.momd`) supplied it.
    public var appleVersionHash: Data?

    public init(
        name: String, parentName: String? = nil, isAbstract: Bool = false, representedClassName: String? = nil,
        renamingIdentifier: String? = nil, versionHashModifier: String? = nil,
        attributes: [AttributeDescription] = [], relationships: [RelationshipDescription] = [],
        fetchedProperties: [FetchedPropertyDescription] = [], uniquenessConstraints: [[String]] = [],
        fetchIndexes: [FetchIndexDescription] = [], compoundIndexes: [[String]] = [],
        userInfo: [String: String] = [:], appleVersionHash: Data? = nil
    ) {
        self.name = name
        self.parentName = parentName
        self.isAbstract = isAbstract
        self.representedClassName = representedClassName
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.attributes = attributes
        self.relationships = relationships
        self.fetchedProperties = fetchedProperties
        self.uniquenessConstraints = uniquenessConstraints
        self.fetchIndexes = fetchIndexes
        self.compoundIndexes = compoundIndexes
        self.userInfo = userInfo
        self.appleVersionHash = appleVersionHash
    }

    /// The names of this entity's own properties, in declaration order.
    public var propertyNames: [String] {
        attributes.map(\.name) + relationships.map(\.name) + fetchedProperties.map(\.name)
    }
}
