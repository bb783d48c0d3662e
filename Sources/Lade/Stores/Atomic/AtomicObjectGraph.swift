import Foundation
import OrderedCollections

/// One object of an atomic store, as the store holds it in memory.
struct AtomicObject: Sendable, Equatable {
    var entity: String
    /// The counterpart of `Z_OPT`: 1 when inserted, one more at each update (optimistic locking).
    var version: Int64
    var attributes: [String: AttributeValue]
    var toOne: [String: Int64]
    /// The destinations of each to-many relationship, in order (the order matters for ordered ones).
    var toMany: [String: OrderedSet<Int64>]

    init(entity: String, version: Int64 = 1, attributes: [String: AttributeValue] = [:], toOne: [String: Int64] = [:], toMany: [String: OrderedSet<Int64>] = [:]) {
        self.entity = entity
        self.version = version
        self.attributes = attributes
        self.toOne = toOne
        self.toMany = toMany
    }
}

/// Every object of an atomic store (XML, binary, in-memory), by primary key. Keys are unique
/// across entities, as an XML store's `z<N>` object IDs are; both sides of every relationship
/// are kept, so a fault or a to-many relationship is one dictionary lookup.
///
/// `apply(_:model:)` applies a `StoreSaveRequest` all or nothing: it checks optimistic-locking
/// versions before changing anything and returns an undo record that `revert(_:)` uses when
/// the store cannot write its file.
struct AtomicObjectGraph: Sendable {
    private(set) var objects: [Int64: AtomicObject] = [:]
    private(set) var keysByEntity: [String: Set<Int64>] = [:]
    /// The next primary key `reserveKeys(_:)` hands out (an XML store's `nextObjectID`).
    var nextKey: Int64
    /// Object IDs a file spelled otherwise than `z<key>` (hand-made XML stores), kept so the
    /// file is written back with the same IDs.
    var externalIDs: [Int64: String] = [:]

    init(nextKey: Int64 = 1) {
        self.nextKey = nextKey
    }

    subscript(key: Int64) -> AtomicObject? { objects[key] }

    var count: Int { objects.count }

    /// Puts, replaces or (with nil) removes one object.
    mutating func set(_ object: AtomicObject?, for key: Int64) {
        if let object {
            if objects.updateValue(object, forKey: key) == nil { keysByEntity[object.entity, default: []].insert(key) }
        } else if let old = objects.removeValue(forKey: key) {
            keysByEntity[old.entity]?.remove(key)
            externalIDs[key] = nil
        }
        if key >= nextKey { nextKey = key + 1 }
    }

    /// The keys of objects whose entity is one of `entities`, in key order when `sorted`.
    func keys(ofEntities entities: [String], sorted: Bool = true) -> [Int64] {
        var keys: [Int64] = []
        for entity in entities { keys += keysByEntity[entity] ?? [] }
        return sorted ? keys.sorted() : keys
    }

    /// Reserves `count` new keys.
    mutating func reserveKeys(_ count: Int) -> ClosedRange<Int64> {
        let first = nextKey
        nextKey += Int64(count)
        return first...(nextKey - 1)
    }

    /// Takes back keys `reserveKeys` handed out, when they are the last it handed out.
    mutating func giveBackKeys(_ keys: ClosedRange<Int64>) {
        if keys.upperBound == nextKey - 1 { nextKey = keys.lowerBound }
    }

    // MARK: Saving

    /// The objects a save changed, as they were before it, for `revert(_:)`.
    struct Undo: Sendable {
        fileprivate(set) var originals: [Int64: AtomicObject?] = [:]
        fileprivate var externalIDs: [Int64: String] = [:]
    }

    /// Applies a save: inserts, updates (each one bumps the object's version), deletes (taking the
    /// object out of every relationship that holds it), many-to-many links and orders. A to-one
    /// change moves the object between its destinations' inverse to-many relationships, as a
    /// foreign key does in SQLite. Throws `StoreSaveError.conflicts` (changing nothing) when an
    /// update or delete was made against a version that is no longer the stored one, and
    /// `StoreSaveError.uniquenessViolation` (after reverting) when a uniqueness constraint breaks.
    mutating func apply(_ request: StoreSaveRequest, model: ManagedObjectModel, storeIdentifier: String) throws -> Undo {
        try checkVersions(request)
        for change in request.inserted where change.objectID.primaryKey.map({ objects[$0] != nil }) ?? false {
            throw StoreSaveError.uniquenessViolation(entity: change.objectID.entityName, properties: ["(object ID)"], objectID: change.objectID)
        }
        var undo = Undo()
        var toOneChanges: [(source: Int64, relationship: RelationshipDescription, old: Int64?, new: Int64?)] = []
        for change in request.inserted {
            guard let key = change.objectID.primaryKey else { continue }
            record(key, in: &undo)
            var object = AtomicObject(entity: change.objectID.entityName)
            for case let (name, value?) in change.attributes { object.attributes[name] = value }
            set(object, for: key)
            toOneChanges += applyToOne(change.toOne, to: key, model: model)
        }
        for change in request.updated {
            guard let key = change.objectID.primaryKey, var object = objects[key] else { continue }
            record(key, in: &undo)
            for (name, value) in change.attributes { object.attributes[name] = value }
            object.version += 1
            objects[key] = object
            toOneChanges += applyToOne(change.toOne, to: key, model: model)
        }
        for change in toOneChanges {
            guard let inverse = model.inverse(of: change.relationship), inverse.isToMany else { continue }
            if let old = change.old { modify(old, &undo) { $0.toMany[inverse.name]?.remove(change.source) } }
            if let new = change.new, objects[change.source] != nil {
                modify(new, &undo) { _ = $0.toMany[inverse.name, default: []].append(change.source) }
            }
        }
        for deletion in request.deleted {
            guard let key = deletion.objectID.primaryKey else { continue }
            delete(key, model: model, undo: &undo)
        }
        for link in request.links {
            guard let source = link.source.primaryKey, let object = objects[source],
                  let relationship = model.relationship(link.relationship, of: object.entity) else { continue }
            let inverse = model.inverse(of: relationship).flatMap { $0.isToMany ? $0 : nil }
            for destination in link.added.compactMap(\.primaryKey) where objects[destination] != nil {
                modify(source, &undo) { _ = $0.toMany[link.relationship, default: []].append(destination) }
                if let inverse { modify(destination, &undo) { _ = $0.toMany[inverse.name, default: []].append(source) } }
            }
            for destination in link.removed.compactMap(\.primaryKey) {
                modify(source, &undo) { $0.toMany[link.relationship]?.remove(destination) }
                if let inverse { modify(destination, &undo) { $0.toMany[inverse.name]?.remove(source) } }
            }
        }
        for order in request.orders {
            guard let owner = order.owner.primaryKey else { continue }
            let destinations = OrderedSet(order.destinations.compactMap(\.primaryKey).filter { objects[$0] != nil })
            modify(owner, &undo) { $0.toMany[order.relationship] = destinations }
        }
        updateDerivedAttributes(&undo, model: model, storeIdentifier: storeIdentifier, report: request.derivedValues)
        do {
            try checkUniqueness(of: request.inserted + request.updated, model: model, storeIdentifier: storeIdentifier)
        } catch {
            revert(undo)
            throw error
        }
        return undo
    }

    /// Puts back every object a save changed.
    mutating func revert(_ undo: Undo) {
        for (key, original) in undo.originals {
            set(original, for: key)
        }
        for (key, id) in undo.externalIDs { externalIDs[key] = id }
    }

    private func checkVersions(_ request: StoreSaveRequest) throws {
        var conflicts: [StoreSaveError.VersionConflict] = []
        func check(_ id: ManagedObjectID, _ expected: Int64?) {
            guard let expected, let key = id.primaryKey else { return }
            let stored = objects[key]?.version
            if stored != expected {
                conflicts.append(.init(objectID: id, expectedVersion: expected, storedVersion: stored))
            }
        }
        for change in request.updated { check(change.objectID, change.expectedVersion) }
        for deletion in request.deleted { check(deletion.objectID, deletion.expectedVersion) }
        guard conflicts.isEmpty else { throw StoreSaveError.conflicts(conflicts) }
    }

    private mutating func record(_ key: Int64, in undo: inout Undo) {
        guard undo.originals[key] == nil else { return }
        undo.originals[key] = .some(objects[key])
        if let id = externalIDs[key] { undo.externalIDs[key] = id }
    }

    /// Changes an existing object, remembering it first.
    mutating func modify(_ key: Int64, _ undo: inout Undo, _ change: (inout AtomicObject) -> Void) {
        guard var object = objects[key] else { return }
        record(key, in: &undo)
        change(&object)
        objects[key] = object
    }

    private mutating func applyToOne(_ changes: [String: ManagedObjectID?], to key: Int64, model: ManagedObjectModel) -> [(Int64, RelationshipDescription, Int64?, Int64?)] {
        guard var object = objects[key] else { return [] }
        var applied: [(Int64, RelationshipDescription, Int64?, Int64?)] = []
        for (name, destination) in changes {
            guard let relationship = model.relationship(name, of: object.entity) else { continue }
            let old = object.toOne[name]
            let new = destination.flatMap { $0 }?.primaryKey
            object.toOne[name] = new
            if old != new { applied.append((key, relationship, old, new)) }
        }
        objects[key] = object
        return applied
    }

    /// Removes an object and takes it out of the relationships of the objects it was related to.
    private mutating func delete(_ key: Int64, model: ManagedObjectModel, undo: inout Undo) {
        guard let object = objects[key] else { return }
        record(key, in: &undo)
        for relationship in model.relationships(of: object.entity) {
            guard let inverse = model.inverse(of: relationship) else { continue }
            let destinations = relationship.isToMany ? Array(object.toMany[relationship.name] ?? []) : object.toOne[relationship.name].map { [$0] } ?? []
            for destination in destinations {
                modify(destination, &undo) { other in
                    if inverse.isToMany {
                        other.toMany[inverse.name]?.remove(key)
                    } else if other.toOne[inverse.name] == key {
                        other.toOne[inverse.name] = nil
                    }
                }
            }
        }
        set(nil, for: key)
    }

    /// Checks the uniqueness constraints of the entities of the changed objects (and their
    /// ancestors') over each constraint's hierarchy. As in SQLite's unique indexes, a
    /// combination that holds a nil is never a duplicate.
    private func checkUniqueness(of changes: [StoreSaveRequest.RowChange], model: ManagedObjectModel, storeIdentifier: String) throws {
        var checked: Set<String> = []
        var changedKeys: Set<Int64> = []
        for change in changes { if let key = change.objectID.primaryKey { changedKeys.insert(key) } }
        for change in changes {
            let entity = change.objectID.entityName
            for declaring in [model.entity(named: entity)].compactMap({ $0 }) + model.ancestors(of: entity) {
                for constraint in declaring.uniquenessConstraints where checked.insert(declaring.name + "\u{0}" + constraint.joined(separator: ",")).inserted {
                    var seen: [[AnyHashable]: Int64] = [:]
                    for key in keys(ofEntities: model.hierarchy(from: declaring.name).map(\.name)) {
                        guard let object = objects[key] else { continue }
                        var values: [AnyHashable] = []
                        for property in constraint {
                            if let value = object.attributes[property] { values.append(value) }
                            else if let destination = object.toOne[property] { values.append(destination) }
                            else { break }
                        }
                        guard values.count == constraint.count else { continue }
                        if let other = seen.updateValue(key, forKey: values) {
                            let culprit = changedKeys.contains(key) ? key : other
                            let id = ManagedObjectID(entityName: objects[culprit]!.entity, storeIdentifier: storeIdentifier, primaryKey: culprit)
                            throw StoreSaveError.uniquenessViolation(entity: id.entityName, properties: constraint, objectID: id)
                        }
                    }
                }
            }
        }
    }
}
