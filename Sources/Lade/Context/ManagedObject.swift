import Foundation
import OrderedCollections

/// An object of an entity, living in one context. Objects are confined to their context's
/// queue (they are not `Sendable`); pass `objectID` between queues instead.
///
/// Properties are read and written by key, checked against the model:
/// ```swift
/// let product = try context.insertObject(forEntityName: "Product")
/// try product.setValue("A-100", forKey: "sku")
/// try product.setValue(Decimal(string: "9.99"), forKey: "price")
/// try product.setValue(category, forKey: "category")     // the inverse (category.products) follows
/// product["sku"] as? String                               // "A-100"
/// ```
/// A fetched object is a fault until a property is first read; to-many relationships are
/// loaded when first read.
public final class ManagedObject: Hashable, CustomStringConvertible {
    public private(set) var objectID: ManagedObjectID
    /// The object's entity (from its layout: objects do not carry a copy each).
    public var entity: EntityDescription { layout.entity }
    /// The context the object lives in; nil once the context forgot it (reset, or deleted and saved).
    public internal(set) weak var managedObjectContext: ManagedObjectContext?

    /// The entity's properties in the order `values` and `toOneObjects` keep them.
    public let layout: EntityLayout
    /// The state last read from or written to the store (nil for a new object).
    var snapshot: StoreRow? {
        didSet { undoEpoch &+= 1 }
    }
    /// Advanced whenever the object's saved state is replaced (its snapshot set) or it changes in
    /// a way no undo records: an undo brings a key back to unchanged only within the epoch of
    /// the change it undoes (`unchangedMark(for:)`).
    var undoEpoch = 0
    var isMaterialized = false
    /// Attribute values by position in `layout.attributes`; empty while a fault.
    var values: [AttributeValue?] = []
    /// To-one destinations by position in `layout.relationships`; empty while a fault.
    var toOneObjects: [ManagedObject?] = []
    var toMany: [String: ToMany] = [:]
    /// Keys changed since the object was last saved or fetched.
    var changedKeys: Set<String> = []
    /// Many-to-many links added and removed since the last save, by relationship.
    var linkChanges: [String: (added: OrderedSet<ManagedObject>, removed: OrderedSet<ManagedObject>)] = [:]
    var isInserted = false
    var isDeleted = false

    /// A to-many relationship's value: a fault until read (with changes made meanwhile kept
    /// aside), then its objects in order.
    enum ToMany {
        case fault(added: OrderedSet<ManagedObject>, removed: Set<ManagedObject>)
        case loaded(OrderedSet<ManagedObject>)
    }

    init(objectID: ManagedObjectID, layout: EntityLayout, context: ManagedObjectContext) {
        self.objectID = objectID
        self.layout = layout
        self.managedObjectContext = context
    }

    // MARK: Stored state by name (no faulting; for the context's bookkeeping)

    /// An attribute's current value as held (nil also while a fault).
    func storedValue(_ key: String) -> AttributeValue? {
        guard let index = layout.attributeIndex(of: key), index < values.count else { return nil }
        return values[index]
    }

    func setStoredValue(_ value: AttributeValue?, _ key: String) {
        guard let index = layout.attributeIndex(of: key) else { return }
        if values.isEmpty { values = layout.defaultValues.map { _ in nil } }
        values[index] = value
    }

    /// A to-one relationship's destination as held (nil also while a fault).
    func toOneObject(_ key: String) -> ManagedObject? {
        layout.relationshipIndex(of: key).flatMap(toOneObject(at:))
    }

    /// The destination of the to-one relationship at `index` (none before any is set).
    func toOneObject(at index: Int) -> ManagedObject? {
        index < toOneObjects.count ? toOneObjects[index] : nil
    }

    func setToOneObject(_ destination: ManagedObject?, _ key: String) {
        guard let index = layout.relationshipIndex(of: key) else { return }
        setToOneObject(destination, at: index)
    }

    func setToOneObject(_ destination: ManagedObject?, at index: Int) {
        if toOneObjects.isEmpty { toOneObjects = [ManagedObject?](repeating: nil, count: layout.relationships.count) }
        toOneObjects[index] = destination
    }

    /// The destinations' IDs by position, deleted ones left out (as a save writes them).
    var toOneIDs: [ManagedObjectID?] {
        guard !toOneObjects.isEmpty else { return [ManagedObjectID?](repeating: nil, count: layout.relationships.count) }
        return toOneObjects.map { destination in destination.flatMap { $0.isDeleted ? nil : $0.objectID } }
    }

    // MARK: Identity

    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String {
        "<\(layout.name) \(objectID)\(isFault ? " (fault)" : "")>"
    }

    /// Whether the object's data has not been loaded yet.
    public var isFault: Bool { !isMaterialized && !isInserted }

    /// Whether the object has unsaved changes (inserted, updated or deleted).
    public var hasChanges: Bool { isInserted || isDeleted || !changedKeys.isEmpty }

    /// True for an object inserted and not yet saved.
    public var isNew: Bool { isInserted }

    /// True for an object deleted in its context and not yet saved.
    public var isMarkedDeleted: Bool { isDeleted }

    func replaceObjectID(_ id: ManagedObjectID) { objectID = id }

    // MARK: Reading

    /// The value of an attribute or relationship: `Int`, `Double`, `Float`, `Decimal`, `String`,
    /// `Bool`, `Date`, `Data`, `UUID` or `URL` for attributes (`[String: Any]` of those for a
    /// composite attribute; set one with `[String: AttributeValue]`); `ManagedObject` for to-one,
    /// `Set<ManagedObject>` for to-many and `[ManagedObject]` for ordered to-many relationships.
    ///
    /// Reading fires the object's fault. When that fails (the object was deleted by another
    /// context or process, or the store could not be read) the answer is nil, the error stays in
    /// the context's `faultFailure` and the context refuses to save; `fulfillFault()` throws it
    /// instead.
    public func value(forKey key: String) -> Any? {
        guard let context = checkedContext(), let model = Optional(context.model) else { return nil }
        if model.attribute(key, of: layout.name) != nil {
            return attributeValue(forKey: key).map(Self.swiftValue)
        }
        if let relationship = model.relationship(key, of: layout.name) {
            if !relationship.isToMany { return object(forKey: key) }
            let objects = objects(forKey: key)
            return relationship.isOrdered ? objects : Set(objects) as Any
        }
        return nil
    }

    /// Reads like `value(forKey:)`; writing traps on a key or value the model refuses, like
    /// Core Data. Use `setValue(_:forKey:)` to get an error instead.
    public subscript(key: String) -> Any? {
        get { value(forKey: key) }
        set {
            do { try setValue(newValue, forKey: key) } catch { preconditionFailure("\(error)") }
        }
    }

    /// An attribute's value as Lade's value enum.
    public func attributeValue(forKey key: String) -> AttributeValue? {
        fireFault()
        return storedValue(key)
    }

    /// A to-one relationship's destination.
    public func object(forKey key: String) -> ManagedObject? {
        fireFault()
        return toOneObject(key)
    }

    /// A to-many relationship's destinations, in order (their stored order for ordered
    /// relationships).
    public func objects(forKey key: String) -> [ManagedObject] {
        Array(loadedToMany(key))
    }

    // MARK: Writing

    /// Sets an attribute or relationship, checking the key and the value's type against the
    /// model. Setting a relationship keeps its inverse in step. An attribute or to-one setter
    /// fires the object's fault first and throws what `fulfillFault()` throws, changing nothing.
    public func setValue(_ value: Any?, forKey key: String) throws {
        guard let context = checkedContext() else { throw ContextError.objectHasNoContext(objectID) }
        let model = context.model
        if let attribute = model.attribute(key, of: layout.name) {
            let converted = try value.map { try Self.attributeValue(from: $0, for: attribute, entity: layout.name) }
            try setAttributeValue(converted, forKey: key)
        } else if let relationship = model.relationship(key, of: layout.name) {
            if relationship.isToMany {
                let objects: [ManagedObject]
                switch value {
                case nil: objects = []
                case let set as Set<ManagedObject>: objects = Array(set)
                case let array as [ManagedObject]: objects = array
                case let ordered as OrderedSet<ManagedObject>: objects = Array(ordered)
                default: throw ContextError.wrongType(entity: layout.name, key: key, expected: "a set or array of \(relationship.destinationEntityName) objects", got: "\(type(of: value!))")
                }
                try context.withUndoGroup { try replaceToMany(key, with: objects) }
            } else {
                guard value == nil || value is ManagedObject else {
                    throw ContextError.wrongType(entity: layout.name, key: key, expected: "a \(relationship.destinationEntityName) object", got: "\(type(of: value!))")
                }
                try setObject(value as? ManagedObject, forKey: key)
            }
        } else {
            throw ContextError.unknownKey(entity: layout.name, key: key)
        }
    }

    /// Sets an attribute from Lade's value enum (checked against the attribute's type).
    public func setAttributeValue(_ value: AttributeValue?, forKey key: String) throws {
        guard let index = layout.attributeIndex(of: key) else {
            throw ContextError.unknownKey(entity: layout.name, key: key)
        }
        try setAttributeValue(value, at: index)
    }

    /// Sets the attribute at `index` of the object's layout (`layout.attributeIndex(of:)`,
    /// the same for an entity and its subentities), as `setAttributeValue(_:forKey:)` does,
    /// without looking the name up: for code that sets many objects' values by position.
    public func setAttributeValue(_ value: AttributeValue?, at index: Int) throws {
        guard let context = checkedContext() else { throw ContextError.objectHasNoContext(objectID) }
        var noGroup: Bool?
        try assign(value, at: index, layout.attributeTypes, context, undoGroup: &noGroup)
    }

    /// Sets several attributes by layout position, as calling `setAttributeValue(_:at:)` for
    /// each in order does (the same checks and change tracking; on an error the values before
    /// it stay set), with the context found once: for code that fills in many objects.
    /// `values[i]` goes to position `positions[i]`; a `nil` element (`.none`) leaves that
    /// attribute as it is, `.some(nil)` clears it. With an undo manager and no undo group open,
    /// the changes are one undo step.
    public func setAttributeValues(_ values: [AttributeValue??], at positions: [Int]) throws {
        precondition(values.count == positions.count, "\(values.count) values for \(positions.count) positions")
        guard let context = checkedContext() else { throw ContextError.objectHasNoContext(objectID) }
        let types = layout.attributeTypes
        var openedGroup: Bool? = false
        defer { if openedGroup == true { context.undoManager?.endUndoGrouping() } }
        for item in values.indices {
            guard case .some(let value) = values[item] else { continue }
            try assign(value, at: positions[item], types, context, undoGroup: &openedGroup)
        }
    }

    /// What both setters do for one value: checks it against the attribute's type, fires the
    /// fault, and, when the value differs, registers the undo and records the change.
    /// `undoGroup` nil opens no undo group; false opens one before the first undo is registered
    /// (when none is open) and turns true, for the caller to close. Inlined: as a call per value
    /// it cost the object writer about 7% of its time on 1M rows (24.25 s against 22.72 s).
    @inline(__always)
    private func assign(_ value: AttributeValue?, at index: Int, _ types: [AttributeType], _ context: ManagedObjectContext,
                        undoGroup: inout Bool?) throws {
        guard types.indices.contains(index) else {
            throw ContextError.unknownKey(entity: layout.name, key: "#\(index)")
        }
        // The type and, only when needed, the name: not a copy of the whole description (its
        // strings and arrays retained and released on every value set).
        if let value, !value.fits(types[index]) {
            throw ContextError.wrongType(entity: layout.name, key: layout.attributes[index].name, expected: types[index].rawValue, got: value.canonicalText)
        }
        try fulfillFault()
        if values.isEmpty { values = [AttributeValue?](repeating: nil, count: types.count) }
        let old = values[index]
        guard old != value else { return }
        if let undoManager = context.undoManager {
            if undoGroup == false && undoManager.groupingLevel == 0 {
                undoManager.beginUndoGrouping()
                undoGroup = true
            }
            context.registerUndo(self, key: layout.attributes[index].name, oldValue: old.map { .attribute($0) })
        }
        values[index] = value
        if !isInserted { markChanged(layout.attributes[index].name) }
    }

    /// Sets a to-one relationship; the destination's inverse follows.
    public func setObject(_ destination: ManagedObject?, forKey key: String) throws {
        guard let index = layout.relationshipIndex(of: key), !layout.relationshipSlots[index].isToMany else {
            guard checkedContext() != nil else { throw ContextError.objectHasNoContext(objectID) }
            throw ContextError.unknownKey(entity: layout.name, key: key)
        }
        try setObject(destination, at: index)
    }

    /// Sets the to-one relationship at `index` of the object's layout
    /// (`layout.relationshipIndex(of:)`, the same for an entity and its subentities), as
    /// `setObject(_:forKey:)` does, without looking the name up: for code that sets many
    /// objects' relationships by position.
    public func setObject(_ destination: ManagedObject?, at index: Int) throws {
        guard let context = checkedContext() else { throw ContextError.objectHasNoContext(objectID) }
        guard layout.relationshipSlots.indices.contains(index), !layout.relationshipSlots[index].isToMany else {
            throw ContextError.unknownKey(entity: layout.name, key: "#\(index)")
        }
        let slot = layout.relationshipSlots[index]
        let key = slot.name
        if let destination {
            try context.checkSameContext(destination)
            guard destination.layout.name == slot.destinationEntityName || context.model.entity(destination.layout.name, isKindOf: slot.destinationEntityName) else {
                throw ContextError.wrongType(entity: layout.name, key: key, expected: "a \(slot.destinationEntityName) object", got: destination.layout.name)
            }
        }
        try fulfillFault()
        let old = toOneObject(at: index)
        guard old !== destination else { return }
        context.withUndoGroup {
            setToOneRaw(at: index, key, destination)
            if let inverse = slot.inverseName {
                if let old { old.inverseRemove(self, forKey: inverse, isToMany: slot.inverseIsToMany) }
                if let destination { destination.inverseAdd(self, forKey: inverse, isToMany: slot.inverseIsToMany) }
            }
        }
    }

    /// Adds an object to a to-many relationship (at the end of an ordered one).
    public func add(_ destination: ManagedObject, toKey key: String) throws {
        let slot = try toManySlot(key)
        try checkedContext()?.checkSameContext(destination)
        guard destination.layout.name == slot.destinationEntityName || checkedContext()!.model.entity(destination.layout.name, isKindOf: slot.destinationEntityName) else {
            throw ContextError.wrongType(entity: layout.name, key: key, expected: "a \(slot.destinationEntityName) object", got: destination.layout.name)
        }
        managedObjectContext?.withUndoGroup {
            guard toManyAdd(destination, key, slot) else { return }
            if let inverse = slot.inverseName {
                destination.inverseAdd(self, forKey: inverse, isToMany: slot.inverseIsToMany)
            }
        }
    }

    /// Removes an object from a to-many relationship.
    public func remove(_ destination: ManagedObject, fromKey key: String) throws {
        let slot = try toManySlot(key)
        managedObjectContext?.withUndoGroup {
            guard toManyRemove(destination, key, slot) else { return }
            if let inverse = slot.inverseName {
                destination.inverseRemove(self, forKey: inverse, isToMany: slot.inverseIsToMany)
            }
        }
    }

    private func replaceToMany(_ key: String, with objects: [ManagedObject]) throws {
        let current = loadedToMany(key)
        let wanted = OrderedSet(objects)
        for object in current where !wanted.contains(object) { try remove(object, fromKey: key) }
        for object in wanted where !current.contains(object) { try add(object, toKey: key) }
        // An ordered relationship also takes the given order.
        if case .loaded(let now)? = toMany[key], now != wanted, try toManySlot(key).isOrdered {
            toMany[key] = .loaded(wanted)
            markChanged(key)
            undoEpoch &+= 1   // no undo records the new order
        }
    }

    private func toManySlot(_ key: String) throws -> RelationshipSlot {
        guard checkedContext() != nil else { throw ContextError.objectHasNoContext(objectID) }
        guard let index = layout.relationshipIndex(of: key), layout.relationshipSlots[index].isToMany else {
            throw ContextError.unknownKey(entity: layout.name, key: key)
        }
        return layout.relationshipSlots[index]
    }

    // MARK: Raw changes (no inverse work)

    func setToOneRaw(_ key: String, _ destination: ManagedObject?) {
        guard let index = layout.relationshipIndex(of: key) else { return }
        setToOneRaw(at: index, key, destination)
    }

    /// `setToOneRaw` for the relationship at `index` (named `key`).
    func setToOneRaw(at index: Int, _ key: String, _ destination: ManagedObject?) {
        fireFault()
        if let context = managedObjectContext, context.undoManager != nil {
            context.registerUndo(self, key: key, oldValue: toOneObject(at: index).map { .object($0) } ?? .none)
        }
        setToOneObject(destination, at: index)
        markChanged(key)
    }

    /// Returns false when nothing changed.
    @discardableResult
    func toManyAdd(_ destination: ManagedObject, _ key: String, _ slot: RelationshipSlot) -> Bool {
        // Taken out of the dictionary while changed, so the set is not copied on every add.
        switch toMany.removeValue(forKey: key) {
        case .loaded(var set)?:
            guard !set.contains(destination) else {
                toMany[key] = .loaded(set)
                return false
            }
            set.append(destination)
            toMany[key] = .loaded(set)
        case .fault(var added, var removed)?:
            if removed.remove(destination) == nil { added.append(destination) }
            toMany[key] = .fault(added: added, removed: removed)
        case nil:
            if isInserted {
                toMany[key] = .loaded([destination])
            } else {
                toMany[key] = .fault(added: [destination], removed: [])
            }
        }
        recordLink(destination, key, slot, added: true)
        if let context = managedObjectContext, context.undoManager != nil {
            context.registerUndoLink(self, key: key, destination: destination, added: true)
        }
        markChanged(key)
        return true
    }

    @discardableResult
    func toManyRemove(_ destination: ManagedObject, _ key: String, _ slot: RelationshipSlot) -> Bool {
        switch toMany.removeValue(forKey: key) {
        case .loaded(var set)?:
            let found = set.remove(destination) != nil
            toMany[key] = .loaded(set)
            guard found else { return false }
        case .fault(var added, var removed)?:
            if added.remove(destination) == nil { removed.insert(destination) }
            toMany[key] = .fault(added: added, removed: removed)
        case nil:
            guard !isInserted else { return false }
            toMany[key] = .fault(added: [], removed: [destination])
        }
        recordLink(destination, key, slot, added: false)
        if let context = managedObjectContext, context.undoManager != nil {
            context.registerUndoLink(self, key: key, destination: destination, added: false)
        }
        markChanged(key)
        return true
    }

    private func recordLink(_ destination: ManagedObject, _ key: String, _ slot: RelationshipSlot, added: Bool) {
        guard slot.keepsLinks else { return }
        var change = linkChanges.removeValue(forKey: key) ?? ([], [])
        if added {
            if change.removed.remove(destination) == nil { change.added.append(destination) }
        } else {
            if change.added.remove(destination) == nil { change.removed.append(destination) }
        }
        linkChanges[key] = change
    }

    /// The inverse side of a change made on the other object.
    func inverseAdd(_ source: ManagedObject, forKey key: String, isToMany: Bool) {
        guard let index = layout.relationshipIndex(of: key) else { return }
        let slot = layout.relationshipSlots[index]
        if isToMany {
            toManyAdd(source, key, slot)
        } else {
            fireFault()
            if let previous = toOneObject(key), previous !== source, let inverse = slot.inverseName {
                // One-to-many moved: take this object out of its previous owner's set.
                previous.inverseRemove(self, forKey: inverse, isToMany: slot.inverseIsToMany)
            }
            if toOneObject(key) !== source { setToOneRaw(key, source) }
        }
    }

    func inverseRemove(_ source: ManagedObject, forKey key: String, isToMany: Bool) {
        guard let index = layout.relationshipIndex(of: key) else { return }
        if isToMany {
            toManyRemove(source, key, layout.relationshipSlots[index])
        } else {
            fireFault()
            if toOneObject(key) === source { setToOneRaw(key, nil) }
        }
    }

    func markChanged(_ key: String) {
        guard !isInserted else { return }
        changedKeys.insert(key)
        managedObjectContext?.objectDidChange(self)
    }

    /// Taken when an undo is registered for a change of `key`, before the change: the epoch when
    /// the key was unchanged (as saved), nil when it was changed already (or the object is new).
    /// Undoing that change restores the saved value if the epoch is still the same.
    func unchangedMark(for key: String) -> Int? {
        isInserted || changedKeys.contains(key) ? nil : undoEpoch
    }

    // MARK: Faulting

    func checkedContext() -> ManagedObjectContext? {
        guard let context = managedObjectContext else { return nil }
        context.assertOnQueue()
        return context
    }

    /// Fires the fault now, as the first use of a property would: loads the object's values
    /// from its snapshot, or else from its parent context or store. Does nothing for an object
    /// already loaded, or new.
    ///
    /// The accessors that cannot throw (`value(forKey:)` and the like) answer nil for an object
    /// whose fault cannot be fired and leave the error in the context's `faultFailure`, which
    /// refuses to save until `reset()` or `rollback()`. Call this first to get the error here
    /// instead (the context keeps nothing):
    /// ```swift
    /// do {
    ///     try product.fulfillFault()
    ///     print(product["name"] as? String ?? "")
    /// } catch ContextError.faultNotFulfilled {
    ///     // Deleted by another context or process: drop every reference to `product`.
    /// }
    /// ```
    /// The object stays a fault when this throws.
    ///
    /// - Throws: `ContextError.faultNotFulfilled` when the object's row is gone (deleted by
    ///   another context or process: the Programming Guide's "Core Data could not fulfill a
    ///   fault", Troubleshooting Core Data), `.faultFailed` when the store could not be read.
    public func fulfillFault() throws(ContextError) {
        guard !isMaterialized, !isInserted else { return }
        if snapshot == nil, let context = checkedContext() { try context.fulfill(self) }
        materialize()
    }

    /// `fulfillFault()` for the accessors that cannot throw: a fault that cannot be fired stays
    /// a fault (tried again when next used), and its context keeps the error and refuses to save.
    func fireFault() {
        do {
            try fulfillFault()
        } catch {
            managedObjectContext?.noteFaultFailure(error)
        }
    }

    /// Fills the object's values from its snapshot (none without one: an object that has left
    /// its context reads empty).
    func materialize() {
        isMaterialized = true
        guard let snapshot, let context = managedObjectContext else { return }
        values = snapshot.values
        toOneObjects = snapshot.toOneIDs.map { id in id.map { context.registeredObject(for: $0) } }
    }

    /// A to-many relationship's objects, loading them from the store the first time.
    func loadedToMany(_ key: String) -> OrderedSet<ManagedObject> {
        switch toMany[key] {
        case .loaded(let set)?: return set
        case .fault(let added, let removed)?:
            guard var set = storedToMany(key) else {
                return OrderedSet(added)   // the store failed: the context keeps the error
            }
            set.removeAll { removed.contains($0) }
            for object in added where !set.contains(object) { set.append(object) }
            toMany[key] = .loaded(set)
            return set
        case nil:
            guard let set = isInserted ? [] : storedToMany(key) else {
                return []   // the store failed: the context keeps the error
            }
            toMany[key] = .loaded(set)
            return set
        }
    }

    /// The destinations the parent or store holds (none without a context); nil when the
    /// store failed.
    private func storedToMany(_ key: String) -> OrderedSet<ManagedObject>? {
        guard let context = managedObjectContext else { return [] }
        return context.loadToMany(of: self, key: key)
    }

    /// Forgets loaded values, keeping only the identity (refresh without merging).
    func turnIntoFault() {
        undoEpoch &+= 1
        isMaterialized = false
        values = []
        toOneObjects = []
        toMany = [:]
        changedKeys = []
        linkChanges = [:]
    }

    // MARK: Type conversion

    static func swiftValue(_ value: AttributeValue) -> Any {
        switch value {
        case .integer(let v): Int(v)
        case .double(let v): v
        case .float(let v): v
        case .decimal(let v): v
        case .string(let v): v
        case .bool(let v): v
        case .date(let v): v
        case .binary(let v): v
        case .uuid(let v): v
        case .uri(let v): v
        case .composite(let v): v.mapValues(swiftValue)
        }
    }

    /// Converts a Swift value for an attribute, refusing values of another type and integers
    /// outside the attribute's range.
    static func attributeValue(from value: Any, for attribute: AttributeDescription, entity: String) throws -> AttributeValue {
        func wrong() -> ContextError {
            ContextError.wrongType(entity: entity, key: attribute.name, expected: attribute.type.rawValue, got: "\(type(of: value)) \(value)")
        }
        if let value = value as? AttributeValue {
            guard value.fits(attribute.type) else { throw wrong() }
            return value
        }
        switch attribute.type {
        case .integer16, .integer32, .integer64:
            let number: Int64?
            switch value {
            case let v as Int: number = Int64(v)
            case let v as Int64: number = v
            case let v as Int32: number = Int64(v)
            case let v as Int16: number = Int64(v)
            case let v as Int8: number = Int64(v)
            case let v as UInt32: number = Int64(v)
            case let v as UInt16: number = Int64(v)
            case let v as UInt8: number = Int64(v)
            default: number = nil
            }
            guard let number, attribute.type.integerRange!.contains(number) else { throw wrong() }
            return .integer(number)
        case .double:
            switch value {
            case let v as Double: return .double(v)
            case let v as Float: return .double(Double(v))
            case let v as Int: return .double(Double(v))
            default: throw wrong()
            }
        case .float:
            switch value {
            case let v as Float: return .float(v)
            case let v as Double: return .float(Float(v))
            case let v as Int: return .float(Float(v))
            default: throw wrong()
            }
        case .decimal:
            switch value {
            case let v as Decimal: return .decimal(v)
            case let v as Int: return .decimal(Decimal(v))
            default: throw wrong()
            }
        case .string: if let v = value as? String { return .string(v) }
        case .boolean: if let v = value as? Bool, type(of: value) == Bool.self { return .bool(v) }
        case .date: if let v = value as? Date { return .date(v) }
        case .binary, .transformable: if let v = value as? Data { return .binary(v) }
        case .uuid: if let v = value as? UUID { return .uuid(v) }
        case .uri: if let v = value as? URL { return .uri(v) }
        case .composite: if let v = value as? [String: AttributeValue] { return .composite(v) }
        case .undefined: break
        }
        throw wrong()
    }
}
