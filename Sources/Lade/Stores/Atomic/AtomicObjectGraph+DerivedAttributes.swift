import Foundation

// Derived attributes in an atomic store (XML, binary, in-memory): no SQL runs there, so the
// save computes them. A count (`relationship.@count`) is kept for any to-many relationship,
// from the destinations the graph holds; every other form is refused when the store is
// opened for writing (see docs/derived-attributes.md for why).
extension AtomicObjectGraph {
    /// Refuses a model with a derived attribute this store type does not compute.
    static func checkDerivedAttributes(of model: ManagedObjectModel, storeType: String) throws {
        for derived in model.derivedAttributes {
            if case .count(let name)? = derived.form, let relationship = model.relationship(name, of: derived.entity),
               relationship.isToMany, !relationship.isTransient { continue }
            let reason: String = switch derived.form {
            case nil: "Lade does not recognise the expression"
            case .count?: "a count needs a stored to-many relationship of the entity"
            case let form?: "Lade computes only to-many counts in atomic stores, and \(form) is not one"
            }
            throw DerivedAttributeError(entity: derived.entity, attribute: derived.attribute.name,
                                        expression: derived.attribute.derivationExpression ?? "", storeType: storeType, reason: reason)
        }
    }

    /// Sets the derived counts of every object a save touched (each one whose to-many
    /// relationships changed is among them: an inverse's change is recorded in `undo` too) and
    /// reports the values that changed.
    mutating func updateDerivedAttributes(_ undo: inout Undo, model: ManagedObjectModel, storeIdentifier: String, report: DerivedValueReport?) {
        let derived = model.derivedAttributes
        guard !derived.isEmpty else { return }
        var counted: [String: [(attribute: String, relationship: String)]] = [:]
        for attribute in derived {
            guard case .count(let relationship)? = attribute.form else { continue }
            for entity in model.hierarchy(from: attribute.entity) {
                counted[entity.name, default: []].append((attribute.attribute.name, relationship))
            }
        }
        for key in undo.originals.keys {
            guard let object = self[key], let attributes = counted[object.entity] else { continue }
            for (attribute, relationship) in attributes {
                let value = AttributeValue.integer(Int64(object.toMany[relationship]?.count ?? 0))
                guard object.attributes[attribute] != value else { continue }
                modify(key, &undo) { $0.attributes[attribute] = value }
                report?.record(ManagedObjectID(entityName: object.entity, storeIdentifier: storeIdentifier, primaryKey: key), attribute, value)
            }
        }
    }
}
