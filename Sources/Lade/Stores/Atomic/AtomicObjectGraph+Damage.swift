import Foundation

/// Finding damage in an atomic store's objects (XML, binary, in-memory), as `StoreDamage`.
extension AtomicObjectGraph {
    /// What breaks Core Data's invariants for `model`. Quick: objects of an entity the model
    /// has not (or an abstract one), and relationships naming objects that are not there or
    /// are of another entity. Thorough adds values of the wrong type, required values,
    /// uniqueness constraints and inverses that do not point back.
    func damage(model: ManagedObjectModel, thorough: Bool) -> [StoreDamage] {
        var tallies: [String: (kind: StoreDamage.Kind, count: Int, example: String, one: String, many: String)] = [:]
        var order: [String] = []
        func note(_ kind: StoreDamage.Kind, _ place: String, _ example: @autoclosure () -> String, _ one: String, _ many: String) {
            let slot = "\(kind.rawValue) \(place)"
            if tallies[slot] == nil {
                order.append(slot)
                tallies[slot] = (kind, 0, example(), one, many)
            }
            tallies[slot]!.count += 1
        }
        for key in objects.keys.sorted() {
            let object = objects[key]!
            guard let entity = model.entity(named: object.entity), !entity.isAbstract else {
                note(.unknownEntity, object.entity, "key \(key)", "object of an entity the model has not, or of an abstract one", "objects of an entity the model has not, or of an abstract one")
                continue
            }
            for relationship in model.relationships(of: object.entity) where !relationship.isTransient {
                let place = "\(object.entity).\(relationship.name)"
                let destinations: [Int64] = relationship.isToMany
                    ? Array(object.toMany[relationship.name] ?? [])
                    : object.toOne[relationship.name].map { [$0] } ?? []
                for destination in destinations {
                    guard let target = objects[destination] else {
                        note(.danglingReference, place, "key \(key) names key \(destination)", "reference to an object that is not in the store", "references to objects that are not in the store")
                        continue
                    }
                    guard model.entity(target.entity, isKindOf: relationship.destinationEntityName) else {
                        note(.danglingReference, place, "key \(key) names key \(destination), a \(target.entity)",
                             "reference to an object of an entity the relationship cannot hold", "references to objects of an entity the relationship cannot hold")
                        continue
                    }
                    guard thorough, let inverse = model.inverse(of: relationship), !inverse.isTransient else { continue }
                    let back = inverse.isToMany ? target.toMany[inverse.name]?.contains(key) == true : target.toOne[inverse.name] == key
                    if !back {
                        note(.inverseMismatch, place, "key \(key) names key \(destination), whose \(inverse.name) does not name it",
                             "reference whose inverse does not point back", "references whose inverse does not point back")
                    }
                }
                if thorough, !relationship.isOptional, destinations.count < max(1, relationship.minCount) {
                    if !relationship.isToMany {
                        note(.requiredMissing, place, "key \(key)", "object without a value for a required property", "objects without a value for a required property")
                    }
                }
            }
            guard thorough else { continue }
            for attribute in model.attributes(of: object.entity) where !attribute.isTransient && attribute.type != .undefined {
                let place = "\(object.entity).\(attribute.name)"
                if let value = object.attributes[attribute.name] {
                    if !value.fits(attribute.type) {
                        note(.wrongType, place, "key \(key) holds \(value)", "value that cannot be \(attribute.type.rawValue) (the attribute's type)", "values that cannot be \(attribute.type.rawValue) (the attribute's type)")
                    }
                } else if !attribute.isOptional {
                    note(.requiredMissing, place, "key \(key)", "object without a value for a required property", "objects without a value for a required property")
                }
            }
        }
        var found = order.map { slot in
            let tally = tallies[slot]!
            let place = String(slot.drop { $0 != " " }.dropFirst())
            return StoreDamage(tally.kind, place: place, count: tally.count, example: tally.example, problem: tally.count == 1 ? tally.one : tally.many)
        }
        if thorough { found += uniquenessDamage(model: model) }
        return found
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
