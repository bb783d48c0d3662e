import Foundation

/// How a model's names appear in an XML store: entities upper-cased (`type="PRODUCT"`),
/// properties lower-cased (`name="createdat"`), as Core Data writes them, and found again
/// without regard to case. A model with two entities (or two properties of one entity) that
/// differ only in case cannot be stored this way and is refused.
struct XMLStoreNames: Sendable {
    private var entities: [String: String] = [:]
    private var attributes: [String: [String: AttributeDescription]] = [:]
    private var relationships: [String: [String: RelationshipDescription]] = [:]
    private var transients: [String: Set<String>] = [:]

    init(model: ManagedObjectModel, path: String) throws {
        var problems: [String] = []
        for entity in model.entities {
            if let other = entities.updateValue(entity.name, forKey: Self.entityName(entity.name)) {
                problems.append("entities \(other) and \(entity.name)")
            }
            var seen: [String: String] = [:]
            for attribute in model.attributes(of: entity.name) {
                if let other = seen.updateValue(attribute.name, forKey: Self.propertyName(attribute.name)) { problems.append("\(entity.name).\(other) and \(entity.name).\(attribute.name)") }
                if attribute.isTransient || attribute.type == .undefined {
                    transients[entity.name, default: []].insert(Self.propertyName(attribute.name))
                } else {
                    attributes[entity.name, default: [:]][Self.propertyName(attribute.name)] = attribute
                }
            }
            for relationship in model.relationships(of: entity.name) {
                if let other = seen.updateValue(relationship.name, forKey: Self.propertyName(relationship.name)) { problems.append("\(entity.name).\(other) and \(entity.name).\(relationship.name)") }
                if relationship.isTransient {
                    transients[entity.name, default: []].insert(Self.propertyName(relationship.name))
                } else {
                    relationships[entity.name, default: [:]][Self.propertyName(relationship.name)] = relationship
                }
            }
        }
        guard problems.isEmpty else {
            throw StoreError(.modelMismatch(entities: []), path: path, "the model cannot be kept in an XML store: Core Data's XML format writes names without case, and \(problems.joined(separator: "; ")) differ only in case; use a SQLite or binary store")
        }
    }

    /// `type=` and `destination=` for an entity.
    static func entityName(_ name: String) -> String { name.uppercased() }
    /// `name=` for an attribute or relationship.
    static func propertyName(_ name: String) -> String { name.lowercased() }

    /// The model's entity for a `type=`.
    func entity(_ written: String) -> String? { entities[Self.entityName(written)] }

    func attribute(_ written: String, of entity: String) -> AttributeDescription? {
        attributes[entity]?[Self.propertyName(written)]
    }

    func relationship(_ written: String, of entity: String) -> RelationshipDescription? {
        relationships[entity]?[Self.propertyName(written)]
    }

    func isTransient(_ written: String, of entity: String) -> Bool {
        transients[entity]?.contains(Self.propertyName(written)) ?? false
    }
}
