import Foundation

/// Finding damage in an atomic store's objects (XML, binary, in-memory), as `StoreDamage`.
extension AtomicObjectGraph {
    /// What breaks Core Data's invariants for `model`. Quick: objects of an entity the model
    /// has not (or an abstract one), and relationships naming objects that are not there or
    /// are of another entity. Thorough adds values of the wrong type, required values,
    /// uniqueness constraints and inverses that do not point back.
    func damage(model: ManagedObjectModel, thorough: Bool) -> [StoreDamage] {
        // Runs at every open of an XML or binary store: no sort of the keys and no string per
        // object; each kind of damage remembers its smallest key, so the report is the same
        // whatever order the dictionary gives.
        struct Slot: Hashable { let kind: StoreDamage.Kind; let entity: String; let property: String }
        struct Tally { var count = 0; var firstKey: Int64; var step: Int; var example: String; let one: String; let many: String }
        var tallies: [Slot: Tally] = [:]
        var step = 0
        func note(_ kind: StoreDamage.Kind, _ entity: String, _ property: String, _ key: Int64, _ example: @autoclosure () -> String, _ one: String, _ many: String) {
            step += 1
            let slot = Slot(kind: kind, entity: entity, property: property)
            if var tally = tallies[slot] {
                tally.count += 1
                if key < tally.firstKey { (tally.firstKey, tally.step, tally.example) = (key, step, example()) }
                tallies[slot] = tally
            } else {
                tallies[slot] = Tally(count: 1, firstKey: key, step: step, example: example(), one: one, many: many)
            }
        }
        for (key, object) in objects {
            step = 0
            guard let entity = model.entity(named: object.entity), !entity.isAbstract else {
                note(.unknownEntity, object.entity, "", key, "key \(key)", "object of an entity the model has not, or of an abstract one", "objects of an entity the model has not, or of an abstract one")
                continue
            }
            for relationship in model.relationships(of: object.entity) where !relationship.isTransient {
                func check(_ destination: Int64) {
                    guard let target = objects[destination] else {
                        note(.danglingReference, object.entity, relationship.name, key, "key \(key) names key \(destination)",
                             "reference to an object that is not in the store", "references to objects that are not in the store")
                        return
                    }
                    guard model.entity(target.entity, isKindOf: relationship.destinationEntityName) else {
                        note(.danglingReference, object.entity, relationship.name, key, "key \(key) names key \(destination), a \(target.entity)",
                             "reference to an object of an entity the relationship cannot hold", "references to objects of an entity the relationship cannot hold")
                        return
                    }
                    guard thorough, let inverse = model.inverse(of: relationship), !inverse.isTransient else { return }
                    let back = inverse.isToMany ? target.toMany[inverse.name]?.contains(key) == true : target.toOne[inverse.name] == key
                    if !back {
                        note(.inverseMismatch, object.entity, relationship.name, key, "key \(key) names key \(destination), whose \(inverse.name) does not name it",
                             "reference whose inverse does not point back", "references whose inverse does not point back")
                    }
                }
                if relationship.isToMany {
                    for destination in object.toMany[relationship.name] ?? [] { check(destination) }
                } else if let destination = object.toOne[relationship.name] {
                    check(destination)
                } else if thorough && !relationship.isOptional {
                    note(.requiredMissing, object.entity, relationship.name, key, "key \(key)", "object without a value for a required property", "objects without a value for a required property")
                }
            }
            guard thorough else { continue }
            for attribute in model.attributes(of: object.entity) where !attribute.isTransient && attribute.type != .undefined {
                if let value = object.attributes[attribute.name] {
                    if !value.fits(attribute.type) {
                        note(.wrongType, object.entity, attribute.name, key, "key \(key) holds \(value)", "value that cannot be \(attribute.type.rawValue) (the attribute's type)", "values that cannot be \(attribute.type.rawValue) (the attribute's type)")
                    }
                } else if !attribute.isOptional {
                    note(.requiredMissing, object.entity, attribute.name, key, "key \(key)", "object without a value for a required property", "objects without a value for a required property")
                }
            }
        }
        var found = tallies.sorted { ($0.value.firstKey, $0.value.step) < ($1.value.firstKey, $1.value.step) }.map { slot, tally in
            StoreDamage(slot.kind, place: slot.property.isEmpty ? slot.entity : "\(slot.entity).\(slot.property)", count: tally.count,
                        example: tally.example, problem: tally.count == 1 ? tally.one : tally.many)
        }
        if thorough { found += uniquenessDamage(model: model) }
        return found
    }

    /// The first values of `constraint` that two or more objects of `entities` share (in key
    /// order), with the lowest and highest key sharing them and how many do; nil when none do.
    /// An object without a value for one of the properties shares nothing, as in a unique index.
    func sharedValues(of constraint: [String], objectsOf entities: [String]) -> (values: [AttributeValue?], first: Int64, last: Int64, count: Int)? {
        var groups: [[AttributeValue?]: (first: Int64, last: Int64, count: Int)] = [:]
        var order: [[AttributeValue?]] = []
        for key in keys(ofEntities: entities) {
            let object = objects[key]!
            let values: [AttributeValue?] = constraint.map { property in
                object.attributes[property] ?? object.toOne[property].map { .integer($0) }
            }
            guard !values.contains(where: { $0 == nil }) else { continue }
            if let group = groups[values] {
                groups[values] = (group.first, key, group.count + 1)
                if group.count == 1 { order.append(values) }
            } else {
                groups[values] = (key, key, 1)
            }
        }
        guard let values = order.first, let group = groups[values] else { return nil }
        return (values, group.first, group.last, group.count)
    }

    private func uniquenessDamage(model: ManagedObjectModel) -> [StoreDamage] {
        var found: [StoreDamage] = []
        for entity in model.entities {
            let keys = self.keys(ofEntities: model.hierarchy(from: entity.name).map(\.name))
            for constraint in entity.uniquenessConstraints where !constraint.isEmpty {
                var seen: [[AttributeValue?]: Int64] = [:]
                var count = 0
                var example = ""
                for key in keys {
                    let object = objects[key]!
                    let values: [AttributeValue?] = constraint.map { property in
                        object.attributes[property] ?? object.toOne[property].map { .integer($0) }
                    }
                    guard !values.contains(where: { $0 == nil }) else { continue }
                    if let first = seen[values] {
                        if count == 0 { example = "key \(key) shares its values with key \(first)" }
                        count += 1
                    } else {
                        seen[values] = key
                    }
                }
                if count > 0 {
                    found.append(StoreDamage(
                        .notUnique, place: "\(entity.name) (\(constraint.joined(separator: ", ")))", count: count, example: example,
                        problem: count == 1 ? "object sharing the values of a uniqueness constraint with an earlier one" : "objects sharing the values of a uniqueness constraint with an earlier one"))
                }
            }
        }
        return found
    }
}
