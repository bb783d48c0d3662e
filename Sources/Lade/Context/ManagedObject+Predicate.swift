import Foundation

/// Key paths on managed objects, for the predicate evaluator and in-memory sorting.
extension ManagedObject: PredicateEvaluable {
    /// Attributes give their values, to-one relationships their destination's ID (nil when
    /// unset), and a path through to-many relationships one flat collection of what it reaches
    /// from every destination, in relationship order. A path on into a composite attribute
    /// gives the element's value (`address.city`).
    public func predicateValue(forKeyPath path: [String]) -> PredicateValue {
        guard let key = path.first else { return .object(objectID) }
        guard let model = managedObjectContext?.model else { return .null }
        if model.attribute(key, of: layout.name) != nil {
            return (attributeValue(forKey: key).map { PredicateValue.attribute($0) } ?? .null).predicateValue(forKeyPath: Array(path.dropFirst()))
        }
        guard let relationship = model.relationship(key, of: layout.name) else { return .null }
        let rest = Array(path.dropFirst())
        if relationship.isToMany {
            return .collection(objects(forKey: key).flatMap { destination -> [PredicateValue] in
                let value = destination.predicateValue(forKeyPath: rest)
                if case .collection(let nested) = value { return nested }
                return [value]
            })
        }
        guard let destination = object(forKey: key) else { return .null }
        return destination.predicateValue(forKeyPath: rest)
    }

    /// The objects a key path reaches when it ends in a to-many relationship (`items`,
    /// `category.products`, `items.tags`); nil for other paths, whose members are values
    /// (a path ending in a to-one relationship after a to-many one keeps its nil members so).
    public func predicateObjects(forKeyPath path: [String]) -> [any PredicateEvaluable]? {
        guard let model = managedObjectContext?.model, !path.isEmpty else { return nil }
        var entityName = layout.name
        var lastIsToMany = false
        for key in path {
            guard let relationship = model.relationship(key, of: entityName) else { return nil }
            entityName = relationship.destinationEntityName
            lastIsToMany = relationship.isToMany
        }
        guard lastIsToMany else { return nil }
        var current: [ManagedObject] = [self]
        for key in path {
            current = current.flatMap { object -> [ManagedObject] in
                guard let relationship = model.relationship(key, of: object.layout.name) else { return [] }
                return relationship.isToMany ? object.objects(forKey: key) : [object.object(forKey: key)].compactMap { $0 }
            }
        }
        return current
    }
}
