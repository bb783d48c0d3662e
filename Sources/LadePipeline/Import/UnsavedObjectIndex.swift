import Foundation
import Lade

/// Objects inserted in a context and not saved yet, found by attribute values. A seed commits
/// once, at its end, so the objects its earlier steps made are in no store when a later step
/// looks for them by key; `BatchWriter`'s queries go to the store (they leave pending changes
/// out, to stay one indexed query per batch), so it asks here for the keys the store lacks.
///
/// ```swift
/// let index = UnsavedObjectIndex(objects: context.insertedObjects, model: model)
/// index.object(entity: "Category", attributes: ["name"], values: [.string("Tools")])
/// ```
/// The index is a snapshot of the objects' values when it is first asked about an entity and
/// attributes: make a new one for each step.
final class UnsavedObjectIndex {
    private let objects: [ManagedObject]
    private let model: ManagedObjectModel
    private var indexes: [IndexKey: [[AttributeValue]: ManagedObject]] = [:]

    private struct IndexKey: Hashable {
        let entity: String
        let attributes: [String]
    }

    init(objects: some Sequence<ManagedObject>, model: ManagedObjectModel) {
        self.objects = Array(objects)
        self.model = model
    }

    var isEmpty: Bool { objects.isEmpty }

    /// The object of `entity` (or a subentity) whose `attributes` have `values`; with several
    /// (which a uniqueness constraint refuses at the save anyway), one of them.
    func object(entity: String, attributes: [String], values: [AttributeValue]) -> ManagedObject? {
        let key = IndexKey(entity: entity, attributes: attributes)
        if let index = indexes[key] { return index[values] }
        var index: [[AttributeValue]: ManagedObject] = [:]
        for object in objects where model.entity(object.layout.name, isKindOf: entity) {
            var found: [AttributeValue] = []
            for name in attributes {
                guard let value = object.attributeValue(forKey: name) else { break }
                found.append(value)
            }
            if found.count == attributes.count, index[found] == nil { index[found] = object }
        }
        indexes[key] = index
        return index[values]
    }
}
