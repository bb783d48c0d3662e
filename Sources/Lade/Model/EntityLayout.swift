import Foundation

/// An entity's properties, inherited ones first (the root's first), each with a fixed
/// position: managed objects and store rows keep attribute values and to-one destinations in
/// arrays in this order, so reading and writing a property costs an array access, not a
/// dictionary lookup. One per entity, made with the model and shared.
///
/// ```swift
/// let layout = model.layout(of: "Product")!
/// layout.attributes.map(\.name)           // ["active", "createdAt", …]
/// layout.attributeIndex(of: "sku")        // 6
/// ```
public final class EntityLayout: Sendable {
    public let name: String
    /// The entity itself.
    public let entity: EntityDescription
    public let attributes: [AttributeDescription]
    public let relationships: [RelationshipDescription]
    public let fetchedProperties: [FetchedPropertyDescription]
    let attributesByName: [String: AttributeDescription]
    let relationshipsByName: [String: RelationshipDescription]
    /// Nearest first.
    let ancestors: [String]
    /// Direct subentities, in name order.
    let subentities: [String]
    private let attributePositions: [String: Int]
    private let relationshipPositions: [String: Int]
    /// Each attribute's default value, by position: a new object starts as a copy of this.
    package let defaultValues: [AttributeValue?]
    /// Each attribute's type, by position.
    package let attributeTypes: [AttributeType]
    /// What changing each relationship involves, by position (one reference each, no copies
    /// of the descriptions on every change).
    package let relationshipSlots: [RelationshipSlot]
    /// Whether any attribute is transient (values stores never keep).
    package let hasTransientAttributes: Bool

    init(entity: EntityDescription, name: String, attributes: [AttributeDescription], relationships: [RelationshipDescription], fetchedProperties: [FetchedPropertyDescription],
         attributesByName: [String: AttributeDescription], relationshipsByName: [String: RelationshipDescription],
         ancestors: [String], subentities: [String], relationshipSlots: [RelationshipSlot]) {
        self.entity = entity
        self.name = name
        self.attributes = attributes
        self.relationships = relationships
        self.fetchedProperties = fetchedProperties
        self.attributesByName = attributesByName
        self.relationshipsByName = relationshipsByName
        self.ancestors = ancestors
        self.subentities = subentities
        attributePositions = Dictionary(attributes.enumerated().map { ($0.element.name, $0.offset) }, uniquingKeysWith: { first, _ in first })
        relationshipPositions = Dictionary(relationships.enumerated().map { ($0.element.name, $0.offset) }, uniquingKeysWith: { first, _ in first })
        defaultValues = attributes.map(\.defaultValue)
        attributeTypes = attributes.map(\.type)
        self.relationshipSlots = relationshipSlots
        hasTransientAttributes = attributes.contains(where: \.isTransient)
    }

    /// Whether the entity has a property of this name, inherited ones included.
    func hasProperty(named name: String) -> Bool {
        attributesByName[name] != nil || relationshipsByName[name] != nil || fetchedProperties.contains { $0.name == name }
    }

    /// The position of an attribute in `attributes` (and in every value array of this entity).
    public func attributeIndex(of name: String) -> Int? { attributePositions[name] }

    /// The position of a relationship in `relationships` (and in every to-one array).
    public func relationshipIndex(of name: String) -> Int? { relationshipPositions[name] }

    /// Values by position as a dictionary by name, nil ones (and, unless asked, transient
    /// ones) left out: for code that wants names, off the hot paths.
    package func dictionary(of values: [AttributeValue?], includingTransient: Bool = false) -> [String: AttributeValue] {
        var result: [String: AttributeValue] = [:]
        for (index, value) in values.enumerated() where index < attributes.count {
            guard let value, includingTransient || !attributes[index].isTransient else { continue }
            result[attributes[index].name] = value
        }
        return result
    }

    /// Values by name as an array by position (names this entity lacks are ignored).
    package func values(from dictionary: [String: AttributeValue]) -> [AttributeValue?] {
        var values = [AttributeValue?](repeating: nil, count: attributes.count)
        for (name, value) in dictionary {
            if let index = attributePositions[name] { values[index] = value }
        }
        return values
    }

    /// To-one destinations by name as an array by relationship position.
    package func toOneSlots(from dictionary: [String: ManagedObjectID]) -> [ManagedObjectID?] {
        var slots = [ManagedObjectID?](repeating: nil, count: relationships.count)
        for (name, id) in dictionary {
            if let index = relationshipPositions[name] { slots[index] = id }
        }
        return slots
    }
}

/// A relationship as changing it needs it: its shape and its inverse's.
package final class RelationshipSlot: Sendable {
    package let relationship: RelationshipDescription
    package let name: String
    package let isToMany: Bool
    package let isOrdered: Bool
    package let destinationEntityName: String
    /// The inverse relationship's name, if there is one.
    package let inverseName: String?
    package let inverseIsToMany: Bool
    /// Whether links are kept as pairs (many-to-many, or a to-many without inverse), rather
    /// than as the other side's to-one key.
    package let keepsLinks: Bool

    init(relationship: RelationshipDescription, inverse: RelationshipDescription?) {
        self.relationship = relationship
        name = relationship.name
        isToMany = relationship.isToMany
        isOrdered = relationship.isOrdered
        destinationEntityName = relationship.destinationEntityName
        inverseName = inverse?.name
        inverseIsToMany = inverse?.isToMany ?? false
        keepsLinks = inverse?.isToMany ?? true
    }
}
