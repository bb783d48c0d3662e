import Foundation

// Derived attributes in an atomic store (XML, binary, in-memory): no SQL runs there, so the
// save computes them. Kept: a count (`relationship.@count`) of any stored to-many relationship,
// from the destinations the graph holds; and the forms that read the object alone: a copy of
// one of its attributes (`title`), `lowercase:`, `uppercase:` or `canonical:` of one of its
// text attributes, and `now()`. A form that reads other objects (a to-one's attribute, an
// aggregate over a to-many) is refused when the store is opened for writing: its value would
// go stale when those objects change (see docs/derived-attributes.md).
extension AtomicObjectGraph {
    /// How an atomic store keeps `derived`, nil when it does not.
    enum Computation {
        case count(relationship: String)
        case copy(attribute: String)
        case text(attribute: String, transform: @Sendable (String) -> String)
        case now
    }

    static func computation(of derived: DerivedAttribute, in model: ManagedObjectModel) -> Computation? {
        let type = derived.attribute.type
        func stored(_ name: String) -> AttributeDescription? {
            model.attributes(of: derived.entity).first { $0.name == name && !$0.isTransient && $0.derivationExpression == nil }
        }
        switch derived.form {
        case .count(let name)?:
            guard let relationship = model.relationship(name, of: derived.entity), relationship.isToMany, !relationship.isTransient,
                  type.isInteger else { return nil }
            return .count(relationship: name)
        case .keyPath(let path)? where path.count == 1:
            guard let source = stored(path[0]), source.type == type else { return nil }
            return .copy(attribute: path[0])
        case .function(let name, let path)? where path.count == 1:
            guard let source = stored(path[0]), source.type == .string, type == .string else { return nil }
            switch name {
            case "lowercase": return .text(attribute: path[0]) { $0.lowercased() }
            case "uppercase": return .text(attribute: path[0]) { $0.uppercased() }
            case "canonical": return .text(attribute: path[0]) { StringComparison.fold($0, [.caseInsensitive, .diacriticInsensitive]) }
            default: return nil
            }
        case .now?:
            return type == .date ? .now : nil
        default:
            return nil
        }
    }

    /// Refuses a model with a derived attribute this store type does not compute.
    static func checkDerivedAttributes(of model: ManagedObjectModel, storeType: String) throws {
        for derived in model.derivedAttributes where computation(of: derived, in: model) == nil {
            let reason: String = switch derived.form {
            case nil: "Lade does not recognise the expression"
            case .count?: "a count needs a stored to-many relationship of the entity, and an integer attribute"
            case .keyPath(let path)? where path.count == 1: "a copy needs a stored attribute '\(path[0])' of the entity, of the derived attribute's type"
            case .function?: "lowercase:, uppercase: and canonical: need a stored text attribute of the entity, and a text derived attribute"
            case .now?: "now() needs a date attribute"
            case let form?: "\(form) reads other objects, whose changes an atomic store's save does not follow to this one, so its value would go stale"
            }
            throw DerivedAttributeError(entity: derived.entity, attribute: derived.attribute.name,
                                        expression: derived.attribute.derivationExpression ?? "", storeType: storeType, reason: reason)
        }
    }

    /// Sets the derived values of every object a save touched (each one whose to-many
    /// relationships changed is among them: an inverse's change is recorded in `undo` too) and
    /// reports the values that changed.
    mutating func updateDerivedAttributes(_ undo: inout Undo, model: ManagedObjectModel, storeIdentifier: String, report: DerivedValueReport?) {
        let derived = model.derivedAttributes
        guard !derived.isEmpty else { return }
        var computed: [String: [(attribute: String, computation: Computation)]] = [:]
        for attribute in derived {
            guard let computation = Self.computation(of: attribute, in: model) else { continue }
            for entity in model.hierarchy(from: attribute.entity) {
                computed[entity.name, default: []].append((attribute.attribute.name, computation))
            }
        }
        let now = Date()
        for key in undo.originals.keys {
            guard let object = self[key], let attributes = computed[object.entity] else { continue }
            for (attribute, computation) in attributes {
                let value: AttributeValue? = switch computation {
                case .count(let relationship): .integer(Int64(object.toMany[relationship]?.count ?? 0))
                case .copy(let source): object.attributes[source]
                case .text(let source, let transform):
                    if case .string(let text)? = object.attributes[source] { .string(transform(text)) } else { nil }
                case .now: .date(now)
                }
                guard object.attributes[attribute] != value else { continue }
                modify(key, &undo) { $0.attributes[attribute] = value }
                report?.record(ManagedObjectID(entityName: object.entity, storeIdentifier: storeIdentifier, primaryKey: key), attribute, value)
            }
        }
    }
}
