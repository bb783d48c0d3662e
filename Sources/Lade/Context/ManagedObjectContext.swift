import Foundation
import OrderedCollections

/// A scratch pad of managed objects: fetch, change, insert and delete objects, then save them
/// to the stores in one go. Each context has its own queue; use its objects only inside
/// `perform`/`performAndWait` (or on the main thread for a `.mainQueue` context).
///
/// ```swift
/// let context = container.newBackgroundContext()
/// try context.performAndWait {
///     let product = try context.insertObject(forEntityName: "Product")
///     try product.setValue("A-100", forKey: "sku")
///     try context.save()
/// }
/// ```
///
/// A context holds strong references only to objects with unsaved changes; other objects stay
/// registered while something else keeps them alive. Set `LADE_CONCURRENCY_DEBUG=1` to make
/// any use off the context's queue fail at once.
public final class ManagedObjectContext: @unchecked Sendable {
    public enum ConcurrencyType: Sendable {
        case privateQueue
        case mainQueue
    }

    public let concurrencyType: ConcurrencyType
    /// The context's name, recorded as the context name of each commit its saves and batch
    /// requests make in a store that keeps persistent history (Core Data's `name`).
    public var name: String?
    /// Recorded as the author of each commit this context's saves and batch requests make in a
    /// store that keeps persistent history (Core Data's `transactionAuthor`; docs/history.md).
    public var transactionAuthor: String?
    /// `transactionAuthor` and `name`, as a store records them.
    var historyAuthorship: HistoryAuthorship { HistoryAuthorship(author: transactionAuthor, contextName: name) }
    public var mergePolicy: MergePolicy = .error
    /// Nil by default: no undo bookkeeping, as Core Data on iOS.
    public var undoManager: ContextUndoManager?

    /// Set it once, before use. Set to nil (which the guide advises against: let the context
    /// go instead), the context keeps its model, so the objects it holds still read, and every
    /// request (insert, fetch, save, a batch request) throws `ContextError.noCoordinator`.
    public var persistentStoreCoordinator: PersistentStoreCoordinator? {
        didSet {
            if let persistentStoreCoordinator { modelStorage = persistentStoreCoordinator.managedObjectModel }
        }
    }

    /// A parent context: saving this context pushes its changes into the parent (not to the
    /// store), and fetches and faults see the parent's unsaved state. Setting it also sets
    /// the coordinator.
    public var parent: ManagedObjectContext? {
        didSet {
            persistentStoreCoordinator = parent?.persistentStoreCoordinator
        }
    }

    let queue: DispatchQueue
    private var modelStorage: ManagedObjectModel?
    private var registered: [ManagedObjectID: WeakObject] = [:]
    private var registeredAtLastPrune = 0
    private var inserted: OrderedSet<ManagedObject> = []
    private var updated: OrderedSet<ManagedObject> = []
    private var deleted: OrderedSet<ManagedObject> = []
    /// The first fault an accessor that cannot throw (`value(forKey:)`, the subscript,
    /// `attributeValue(forKey:)`, `object(forKey:)`, `objects(forKey:)`) could not fire: the store
    /// failed (`.faultFailed`), or the object's row is gone, deleted by another context or
    /// process (`.faultNotFulfilled`, the guide's "Core Data could not fulfill a fault"). Kept
    /// until `reset()` or `rollback()`: `save()` refuses while it is set, so the nil such an
    /// accessor gave in place of a value is never written as if it were the object's.
    ///
    /// Core Data raises an exception there, which Swift cannot catch; Lade's accessors answer
    /// nil and leave the error here. Where a caller wants the error at the point of use, the
    /// throwing ways fire a fault and throw instead, keeping nothing: `fulfillFault()`,
    /// `existingObject(with:)` and the setters.
    public private(set) var faultFailure: ContextError?
    /// By layout identity (the layout kept alongside, so the identity stays its own): a save
    /// asks for every object it checks, and hashing an entity's name each time cost more.
    private var entityInfos: [ObjectIdentifier: (layout: EntityLayout, info: EntityInfo)] = [:]

    private static let queueKey = DispatchSpecificKey<ObjectIdentifier>()
    static let checksConcurrency = ProcessInfo.processInfo.environment["LADE_CONCURRENCY_DEBUG"] == "1"

    public init(concurrencyType: ConcurrencyType) {
        self.concurrencyType = concurrencyType
        switch concurrencyType {
        case .privateQueue: queue = DispatchQueue(label: "lade.context")
        case .mainQueue: queue = DispatchQueue.main
        }
        if concurrencyType == .privateQueue {
            queue.setSpecific(key: Self.queueKey, value: ObjectIdentifier(self))
        }
    }

    /// The model of the context's objects. Every way to get an object starts with
    /// `requireModel()`, so an object's context always has one (`object(with:)` alone cannot
    /// throw, and traps without a coordinator, as Core Data's raises).
    var model: ManagedObjectModel {
        guard let modelStorage else { preconditionFailure("\(ContextError.noCoordinator)") }
        return modelStorage
    }

    /// The model, for a request that starts from nothing (an insert, a fetch, a batch request,
    /// a save): without a coordinator, `noCoordinator` where `model` would trap (Troubleshooting
    /// Core Data: "make sure that the managed object context has an associated coordinator").
    func requireModel() throws -> ManagedObjectModel {
        guard persistentStoreCoordinator != nil, let modelStorage else { throw ContextError.noCoordinator }
        return modelStorage
    }

    func coordinator() throws -> PersistentStoreCoordinator {
        guard let persistentStoreCoordinator else { throw ContextError.noCoordinator }
        return persistentStoreCoordinator
    }

    // MARK: Queues

    private var isOnQueue: Bool {
        switch concurrencyType {
        case .mainQueue: Thread.isMainThread
        case .privateQueue: DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(self)
        }
    }

    func assertOnQueue() {
        if Self.checksConcurrency {
            precondition(isOnQueue, "LADE_CONCURRENCY_DEBUG: context \(name ?? "") used off its queue")
        }
    }

    /// Runs `block` on the context's queue and returns at once.
    public func perform(_ block: @escaping @Sendable () -> Void) {
        queue.async(execute: block)
    }

    /// Runs `block` on the context's queue and waits for it; runs it at once when already there.
    public func performAndWait<T>(_ block: () throws -> T) rethrows -> T {
        if isOnQueue { return try block() }
        return try queue.sync(execute: block)
    }

    /// Runs `block` on the context's queue and returns its result to the awaiting task.
    public func perform<T: Sendable>(_ block: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try block() })
            }
        }
    }

    // MARK: Registered objects

    /// Objects the context knows, with or without changes, that are still alive.
    public var registeredObjects: Set<ManagedObject> {
        assertOnQueue()
        return Set(registered.values.compactMap(\.object))
    }

    public var insertedObjects: Set<ManagedObject> { assertOnQueue(); return Set(inserted.filter { !$0.isDeleted }) }
    public var updatedObjects: Set<ManagedObject> { assertOnQueue(); return Set(updated) }
    public var deletedObjects: Set<ManagedObject> { assertOnQueue(); return Set(deleted.filter { !$0.isInserted }) }

    public var hasChanges: Bool {
        assertOnQueue()
        return !updated.isEmpty || !deleted.isEmpty || !inserted.isEmpty
    }

    /// The object with this ID in this context, as a fault if it is not loaded (uniquing: one
    /// object per ID per context). It is not checked against the store until used.
    /// A context without a coordinator has no model to make it with: that traps, as in Core
    /// Data; `existingObject(with:)` throws `ContextError.noCoordinator` instead.
    public func object(with id: ManagedObjectID) -> ManagedObject {
        assertOnQueue()
        return registeredObject(for: id)
    }

    /// The object with this ID, loaded; throws `objectNotFound` when the store has no such
    /// object, and `faultFailed` when the store could not be read (neither kept by the context:
    /// the caller has the error).
    public func existingObject(with id: ManagedObjectID) throws -> ManagedObject {
        _ = try requireModel()
        let object = object(with: id)
        if object.isInserted { return object }
        if !object.isMaterialized && object.snapshot == nil {
            do {
                try fulfill(object)
            } catch {
                // (A `catch` with the case as pattern crashes Swift 6.3's SILGen on a typed throw.)
                if case .faultNotFulfilled = error { throw ContextError.objectNotFound(id) }
                throw error
            }
        }
        guard object.snapshot != nil else { throw ContextError.objectNotFound(id) }
        return object
    }

    /// The objects of rows a store gave (a batch read by `forEachBatch` or `rows(for:)`),
    /// registered with those rows as their saved values, as a fetch registers its results.
    func registeredObjects(for rows: [StoreRow]) -> [ManagedObject] {
        assertOnQueue()
        return rows.map { row in
            let object = registeredObject(for: row.objectID)
            if !object.hasChanges { object.snapshot = row }
            return object
        }
    }

    /// How many objects the context has registered (released ones until the next prune).
    var registeredCount: Int { registered.count }

    func registeredObject(for id: ManagedObjectID) -> ManagedObject {
        if let object = registered[id]?.object { return object }
        let object = ManagedObject(objectID: id, layout: model.layout(of: id.entityName)!, context: self)
        register(object)
        return object
    }

    private func register(_ object: ManagedObject) {
        registered[object.objectID] = WeakObject(object)
        // Drop entries of released objects now and then, so memory stays flat.
        if registered.count > max(1024, registeredAtLastPrune * 2) {
            registered = registered.filter { $0.value.object != nil }
            registeredAtLastPrune = registered.count
        }
    }

    private func unregister(_ object: ManagedObject) {
        // One lookup: taken out, and put back in the rare case it is another object's entry.
        if let entry = registered.removeValue(forKey: object.objectID), entry.object !== object { registered[object.objectID] = entry }
    }

    func checkSameContext(_ other: ManagedObject) throws {
        guard other.managedObjectContext === self else { throw ContextError.differentContexts(other.objectID) }
    }

    // MARK: Inserting and deleting

    /// Inserts a new object of an entity, with the model's default values.
    @discardableResult
    public func insertObject(forEntityName name: String) throws -> ManagedObject {
        assertOnQueue()
        let model = try requireModel()
        // The layout alone (one lookup, no copy of the entity's description per object).
        guard let layout = model.layout(of: name) else { throw UnknownEntityError(name, in: model) }
        guard !layout.entity.isAbstract else { throw ContextError.abstractEntity(name) }
        let object = ManagedObject(objectID: ManagedObjectID(temporaryFor: name), layout: layout, context: self)
        object.isInserted = true
        object.isMaterialized = true
        object.values = layout.defaultValues
        object.toOneObjects = [ManagedObject?](repeating: nil, count: layout.relationships.count)
        register(object)
        inserted.append(object)
        withUndoGroup {
            undoManager?.register { [weak self, weak object] in
                guard let self, let object else { return }
                self.undoInsert(object)
            }
        }
        return object
    }

    private func undoInsert(_ object: ManagedObject) {
        inserted.remove(object)
        unregister(object)
        undoManager?.register { [weak self, weak object] in
            guard let self, let object else { return }
            self.inserted.append(object)
            self.register(object)
            self.undoManager?.register { [weak self, weak object] in
                guard let self, let object else { return }
                self.undoInsert(object)
            }
        }
    }

    /// Marks an object deleted; delete rules are applied, and the store changed, at the next save.
    public func delete(_ object: ManagedObject) {
        assertOnQueue()
        guard object.managedObjectContext === self, !object.isDeleted else { return }
        object.isDeleted = true
        deleted.append(object)
        updated.remove(object)
        withUndoGroup {
            undoManager?.register { [weak self, weak object] in
                guard let self, let object else { return }
                self.undoDelete(object)
            }
        }
    }

    private func undoDelete(_ object: ManagedObject) {
        object.isDeleted = false
        deleted.remove(object)
        if !object.changedKeys.isEmpty && !object.isInserted { updated.append(object) }
        undoManager?.register { [weak self, weak object] in
            guard let self, let object else { return }
            self.delete(object)
        }
    }

    func objectDidChange(_ object: ManagedObject) {
        if !object.isInserted && !object.isDeleted && object.managedObjectContext === self {
            updated.append(object)
        }
    }

    // MARK: Undo

    enum UndoValue {
        case attribute(AttributeValue)
        case object(ManagedObject)
    }

    /// Runs `body` in an undo group of its own unless one is open: a change asked for, with
    /// the inverse changes it makes, is one undo step.
    func withUndoGroup<T>(_ body: () throws -> T) rethrows -> T {
        guard let undoManager, undoManager.groupingLevel == 0 else { return try body() }
        undoManager.beginUndoGrouping()
        defer { undoManager.endUndoGrouping() }
        return try body()
    }

    func registerUndo(_ object: ManagedObject, key: String, oldValue: UndoValue?) {
        guard let undoManager else { return }
        let mark = object.unchangedMark(for: key)
        undoManager.register { [weak self, weak object] in
            guard let object else { return }
            if object.model?.attribute(key, of: object.layout.name) != nil {
                if case .attribute(let value)? = oldValue {
                    try? object.setAttributeValue(value, forKey: key)
                } else {
                    try? object.setAttributeValue(nil, forKey: key)
                }
            } else if case .object(let destination)? = oldValue {
                object.setToOneRaw(key, destination)
            } else {
                object.setToOneRaw(key, nil)
            }
            self?.undid(key, of: object, unchangedMark: mark)
        }
    }

    func registerUndoLink(_ object: ManagedObject, key: String, destination: ManagedObject, added: Bool) {
        guard let undoManager else { return }
        // Taken before the change (`toManyAdd`/`toManyRemove` mark the key after registering).
        let mark = object.unchangedMark(for: key)
        undoManager.register { [weak self, weak object, weak destination] in
            guard let object, let destination, let index = object.layout.relationshipIndex(of: key) else { return }
            let slot = object.layout.relationshipSlots[index]
            if added { object.toManyRemove(destination, key, slot) } else { object.toManyAdd(destination, key, slot) }
            self?.undid(key, of: object, unchangedMark: mark)
        }
    }

    /// After an undo put `key` back as it was before a change: when it was unchanged then, and
    /// nothing has replaced the object's saved state since (`unchangedMark(for:)`), it is
    /// unchanged again. An object with no change left leaves `updatedObjects`, and the context
    /// holds it weakly again (the guide's "Strong References in Change and Undo Management": "If
    /// the calls to undo cause all changes to be undone on a particular object, the object's
    /// strong reference will revert back to a weak reference"), so a save writes nothing for it.
    private func undid(_ key: String, of object: ManagedObject, unchangedMark: Int?) {
        guard let unchangedMark, unchangedMark == object.undoEpoch, object.managedObjectContext === self, !object.isInserted else { return }
        object.changedKeys.remove(key)
        object.linkChanges[key] = nil
        if object.changedKeys.isEmpty && object.linkChanges.isEmpty { updated.remove(object) }
    }

    // MARK: Faults

    /// Reads the row a fault stands for, from the parent or the store, into its snapshot.
    /// - Throws: `ContextError.faultNotFulfilled` when there is no such row (deleted by another
    ///   context or process, or by the parent; never saved), `.faultFailed` when the store could
    ///   not be read, `.noCoordinator`.
    func fulfill(_ object: ManagedObject) throws(ContextError) {
        let id = object.objectID
        var row: StoreRow?
        do {
            if let parent {
                row = try parent.performAndWait { try parent.currentRow(for: id) }
            } else if !id.isTemporaryID {
                guard let persistentStoreCoordinator else { throw ContextError.noCoordinator }
                row = try persistentStoreCoordinator.rows(for: [id]).first
            }
        } catch let error as ContextError {
            throw error
        } catch {
            throw .faultFailed(id, reason: "\(error)")
        }
        guard let row else { throw .faultNotFulfilled(id) }
        object.snapshot = row
    }

    /// Keeps the first fault a non-throwing accessor could not fire (see `faultFailure`).
    func noteFaultFailure(_ failure: ContextError) {
        if faultFailure == nil { faultFailure = failure }
    }

    /// A to-many relationship's destinations from the parent or the store; nil when the store
    /// failed (kept in `faultFailure`; the relationship stays a fault, to be tried again).
    func loadToMany(of object: ManagedObject, key: String) -> OrderedSet<ManagedObject>? {
        if let parent {
            let id = object.objectID
            let ids = parent.performAndWait { parent.currentToMany(of: id, key: key) }
            return OrderedSet(ids.map { registeredObject(for: $0) })
        }
        guard !object.objectID.isTemporaryID, let coordinator = persistentStoreCoordinator else { return [] }
        do {
            let ids = try coordinator.relatedObjectIDs(of: object.objectID, relationship: key)
            return OrderedSet(ids.map { registeredObject(for: $0) })
        } catch {
            noteFaultFailure(.faultFailed(object.objectID, reason: "\(error)"))
            return nil
        }
    }

    /// An object's state as this context sees it, for a child: its current values when this
    /// context has it loaded or changed, otherwise what this context's parent or store says.
    func currentRow(for id: ManagedObjectID) throws -> StoreRow? {
        if let object = registered[id]?.object {
            if object.isDeleted { return nil }
            if object.isMaterialized || object.isInserted {
                return StoreRow(
                    objectID: id, version: object.snapshot?.version ?? 0, layout: object.layout,
                    values: object.values.isEmpty ? object.layout.defaultValues.map { _ in nil } : object.values,
                    toOneIDs: object.toOneIDs)
            }
            if let snapshot = object.snapshot { return snapshot }
        }
        if let parent { return try parent.performAndWait { try parent.currentRow(for: id) } }
        guard !id.isTemporaryID, let coordinator = persistentStoreCoordinator else { return nil }
        return try coordinator.rows(for: [id]).first
    }

    /// A to-many relationship's destinations as this context sees them, for a child.
    func currentToMany(of id: ManagedObjectID, key: String) -> [ManagedObjectID] {
        registeredObject(for: id).objects(forKey: key).filter { !$0.isDeleted }.map(\.objectID)
    }

    /// IDs this context and its ancestors have changed, inserted or deleted, by entity name.
    func pendingIDs(entities: Set<String>) -> (changed: Set<ManagedObjectID>, deleted: Set<ManagedObjectID>) {
        var changed = Set((inserted.elements + updated.elements).filter { !$0.isDeleted && entities.contains($0.entity.name) }.map(\.objectID))
        var gone = Set(deleted.filter { entities.contains($0.entity.name) }.map(\.objectID))
        if let parent {
            let above = parent.performAndWait { parent.pendingIDs(entities: entities) }
            changed.formUnion(above.changed.subtracting(gone))
            gone.formUnion(above.deleted)
        }
        return (changed, gone)
    }

    // MARK: Fetching

    /// The objects a request matches, as faults unless `returnsObjectsAsFaults` is false.
    public func fetch(_ request: FetchRequest) throws -> [ManagedObject] {
        assertOnQueue()
        let model = try requireModel()
        _ = try model.requireEntity(request.entityName)
        // Every store whose configuration has the entity; their rows are merged in memory.
        let coordinator = try coordinator()
        let storeCount = try coordinator.stores(forEntity: request.entityName).count
        var pending = request.includesPendingChanges ? pendingObjects(for: request) : []
        var hiddenByAncestors: Set<ManagedObjectID> = []
        if let parent, request.includesPendingChanges {
            // A child sees its parent's unsaved state: objects the parent changed are judged by
            // their values there; objects the parent deleted are gone.
            let entities = Set(request.includesSubentities ? model.hierarchy(from: request.entityName).map(\.name) : [request.entityName])
            let above = parent.performAndWait { parent.pendingIDs(entities: entities) }
            hiddenByAncestors = above.deleted.union(above.changed)
            for id in above.changed {
                let object = registeredObject(for: id)
                if !pending.contains(object) { pending.append(object) }
            }
            for id in above.deleted { if let object = registered[id]?.object, !pending.contains(object) { pending.append(object) } }
        }
        var storeRequest = request.storeRequest
        let ordersInMemory = !pending.isEmpty || storeCount > 1
        if ordersInMemory {
            storeRequest.fetchLimit = 0
            storeRequest.fetchOffset = 0
        }
        var results: [ManagedObject] = []
        var seen: Set<ManagedObject> = []
        let rows = try coordinator.rows(matching: storeRequest)
        for row in rows {
            let object = registeredObject(for: row.objectID)
            if !object.hasChanges {
                object.snapshot = row
                if object.isMaterialized && !request.returnsObjectsAsFaults { object.materialize() }
            }
            if pending.isEmpty || (!object.isDeleted && !object.hasChanges && !hiddenByAncestors.contains(row.objectID)) {
                results.append(object)
                seen.insert(object)
            }
        }
        if ordersInMemory {
            // Unsaved changes count: changed and inserted objects are judged by their current values.
            for object in pending where !object.isDeleted && !seen.contains(object) && !(parent?.performAndWait { parent!.isDeletedInChain(object.objectID) } ?? false) {
                if try request.predicate?.evaluate(with: object) ?? true {
                    results.append(object)
                }
            }
            results = try sorted(results, by: request.sortDescriptors, entity: request.entityName)
            if request.fetchOffset > 0 { results = Array(results.dropFirst(request.fetchOffset)) }
            if request.fetchLimit > 0 { results = Array(results.prefix(request.fetchLimit)) }
        }
        if !request.returnsObjectsAsFaults {
            for object in results { object.fireFault() }
        }
        try prefetch(request.relationshipKeyPathsForPrefetching, from: results)
        return results
    }

    /// Whether this context or an ancestor has deleted the object.
    func isDeletedInChain(_ id: ManagedObjectID) -> Bool {
        if let object = registered[id]?.object, object.isDeleted { return true }
        return parent.map { parent in parent.performAndWait { parent.isDeletedInChain(id) } } ?? false
    }

    /// The IDs of the objects a request matches.
    public func fetchObjectIDs(_ request: FetchRequest) throws -> [ManagedObjectID] {
        try fetch(request).map(\.objectID)
    }

    /// The attribute values of the objects a request matches (all stored attributes, or
    /// `propertiesToFetch`); nil values are left out.
    public func fetchDictionaries(_ request: FetchRequest) throws -> [[String: AttributeValue]] {
        let keys = request.propertiesToFetch
        return try fetch(request).map { object in
            var row: [String: AttributeValue] = [:]
            for attribute in model.attributes(of: object.layout.name) where keys?.contains(attribute.name) ?? !attribute.isTransient {
                if let value = object.attributeValue(forKey: attribute.name) { row[attribute.name] = value }
            }
            return row
        }
    }

    /// How many objects a request matches.
    public func count(for request: FetchRequest) throws -> Int {
        assertOnQueue()
        _ = try requireModel()
        if request.includesPendingChanges && (!pendingObjects(for: request).isEmpty || parent != nil) {
            return try fetch(request).count
        }
        let coordinator = try coordinator()
        if try coordinator.stores(forEntity: request.entityName).count > 1 && (request.fetchLimit > 0 || request.fetchOffset > 0) { return try fetch(request).count }
        return try coordinator.count(matching: request.storeRequest)
    }

    /// Changed, inserted and deleted objects of the request's entity (and subentities).
    private func pendingObjects(for request: FetchRequest) -> [ManagedObject] {
        let entities = Set(request.includesSubentities ? model.hierarchy(from: request.entityName).map(\.name) : [request.entityName])
        return (inserted.elements + updated.elements + deleted.elements).filter { entities.contains($0.entity.name) }
    }

    /// Sorts as the store's `ORDER BY` does: by the descriptors (`FetchSortDescriptor.compare`),
    /// then saved objects in key order (the SQL's final Z_PK), new ones after them.
    func sorted(_ objects: [ManagedObject], by descriptors: [FetchSortDescriptor], entity: String) throws -> [ManagedObject] {
        for descriptor in descriptors { try descriptor.check(on: entity, in: model) }
        return objects.sorted { a, b in
            let order = FetchSortDescriptor.compare(a, b, by: descriptors)
            if order != 0 { return order < 0 }
            // (Written without a tuple switch: that form crashes Swift 6.3's optimizer.)
            let x = a.objectID.primaryKey, y = b.objectID.primaryKey
            if let x, let y { return x < y }
            return x != nil && y == nil
        }
    }

    /// Loads the destinations of to-one key paths in one query per step.
    private func prefetch(_ keyPaths: [String], from objects: [ManagedObject]) throws {
        for keyPath in keyPaths {
            var level = objects
            for key in keyPath.split(separator: ".").map(String.init) {
                var next: [ManagedObject] = []
                var missing: [ManagedObjectID] = []
                for object in level {
                    guard let relationship = model.relationship(key, of: object.layout.name) else { continue }
                    if relationship.isToMany {
                        next += object.objects(forKey: key)
                    } else if let destination = object.object(forKey: key) {
                        next.append(destination)
                        if destination.snapshot == nil && !destination.isInserted { missing.append(destination.objectID) }
                    }
                }
                if !missing.isEmpty {
                    for row in try coordinator().rows(for: missing) {
                        registeredObject(for: row.objectID).snapshot = row
                    }
                }
                level = next
            }
        }
    }

    // MARK: Reset, rollback, refresh

    /// Forgets every object and change. Objects fetched before are no longer usable.
    public func reset() {
        assertOnQueue()
        // Related objects hold each other strongly (product.category, category.products);
        // forgetting their values breaks those cycles, so everything the caller dropped is freed.
        var alive = 0
        for box in registered.values {
            guard let object = box.object else { continue }
            alive += 1
            object.managedObjectContext = nil
            object.turnIntoFault()
            object.snapshot = nil
        }
        // A context reset between batches registers about as many objects again: prune no
        // sooner than twice as many as were alive (a prune while they are all alive frees
        // nothing and costs a pass over every entry). The room is not kept: a context reset
        // after a million objects should not hold their entries' memory.
        registeredAtLastPrune = alive
        registered.removeAll()
        inserted.removeAll()
        updated.removeAll()
        deleted.removeAll()
        faultFailure = nil
        undoManager?.removeAllActions()
    }

    /// Discards every unsaved change: inserted objects go, changed and deleted ones return to
    /// their saved state.
    public func rollback() {
        assertOnQueue()
        for object in inserted {
            unregister(object)
            object.managedObjectContext = nil
        }
        for object in updated.elements + deleted.elements where !object.isInserted {
            object.isDeleted = false
            object.turnIntoFault()
        }
        inserted.removeAll()
        updated.removeAll()
        deleted.removeAll()
        if faultFailure != nil {
            // Objects a failed read left empty are read again when next used.
            for box in registered.values {
                guard let object = box.object, !object.isInserted else { continue }
                object.turnIntoFault()
                object.snapshot = nil
            }
            faultFailure = nil
        }
        undoManager?.removeAllActions()
    }

    /// The object with this ID when this context holds it (nil: never fetched, or let go).
    func registeredObjectIfLoaded(_ id: ManagedObjectID) -> ManagedObject? {
        registered[id]?.object
    }

    /// Forgets an object deleted in the store by someone else (a batch delete, merged): it
    /// leaves the context, its changes with it; a reference kept to it reads empty.
    func forgetDeletedElsewhere(_ object: ManagedObject) {
        guard !object.isInserted else { return }
        updated.remove(object)
        deleted.remove(object)
        unregister(object)
        object.turnIntoFault()
        object.snapshot = nil
        object.managedObjectContext = nil
    }

    /// Brings an object up to date with its store (the guide's "Ensuring Data Is Up to Date",
    /// Core Data's `refreshObject:mergeChanges:`).
    ///
    /// Without `mergeChanges` the object turns into a fault: its unsaved changes are dropped, its
    /// strong references to related objects broken, and its values read again when next used.
    /// With `mergeChanges` its values are read from the store now, then its unsaved changes and
    /// its transient values are put back on top ("Merging Changes with Transient Properties":
    /// transient properties "are restored to their prerefresh value"), so a save writes only its
    /// own changes, over the store's current version. A merging refresh that cannot read the
    /// row leaves the object as it was: a failed read is kept in `faultFailure`, as a fault's is;
    /// a row that is gone turns an unchanged object into a fault, whose next use reports it.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        assertOnQueue()
        guard object.managedObjectContext === self, !object.isInserted else { return }
        guard mergeChanges, object.isMaterialized || object.hasChanges else {
            object.turnIntoFault()
            object.snapshot = nil
            updated.remove(object)
            return
        }
        do {
            try fulfill(object)
        } catch {
            if case .faultFailed = error {
                noteFaultFailure(error)
            } else if !object.hasChanges {
                object.turnIntoFault()
                object.snapshot = nil
            }
            return
        }
        let saved = (values: object.values, toOne: object.toOneObjects, toMany: object.toMany, links: object.linkChanges, changes: object.changedKeys)
        let layout = object.layout
        let transients = layout.attributes.filter(\.isTransient).map(\.name) + layout.relationships.filter(\.isTransient).map(\.name)
        object.turnIntoFault()
        object.materialize()
        for key in saved.changes.union(transients) {
            if let index = layout.attributeIndex(of: key) {
                object.setStoredValue(index < saved.values.count ? saved.values[index] : nil, key)
            }
            if let index = layout.relationshipIndex(of: key) {
                object.setToOneObject(index < saved.toOne.count ? saved.toOne[index] : nil, key)
                if let many = saved.toMany[key] { object.toMany[key] = many }
                if let links = saved.links[key] { object.linkChanges[key] = links }
            }
        }
        object.changedKeys = saved.changes
        if saved.changes.isEmpty { updated.remove(object) }
    }

    // MARK: Permanent IDs

    /// Gives new objects their permanent IDs now, instead of at save. A save that fails later
    /// keeps these (a save gives back only the keys it took itself).
    public func obtainPermanentIDs(for objects: [ManagedObject]) throws {
        assertOnQueue()
        _ = try assignPermanentIDs(to: objects)
    }

    /// Permanent IDs a save gave one entity's new objects, with the temporary IDs they had:
    /// what a save that fails gives back (`takeBackPermanentIDs`).
    private struct AssignedIDs {
        let store: String
        let entity: String
        let objects: [ManagedObject]
        let temporaryIDs: [ManagedObjectID]
    }

    /// Gives the temporary objects among `objects` permanent IDs, one entity at a time; when a
    /// store refuses, the IDs given so far are taken back before the error is thrown.
    private func assignPermanentIDs(to objects: [ManagedObject]) throws -> [AssignedIDs] {
        let temporary = objects.filter { $0.objectID.isTemporaryID && $0.managedObjectContext === self }
        let byEntity = Dictionary(grouping: temporary, by: \.layout.name)
        var assigned: [AssignedIDs] = []
        do {
            for (entity, group) in byEntity.sorted(by: { $0.key < $1.key }) {
                let ids = try coordinator().newObjectIDs(forEntity: entity, count: group.count)
                assigned.append(AssignedIDs(store: ids.first?.storeIdentifier ?? "", entity: entity, objects: group, temporaryIDs: group.map(\.objectID)))
                for (object, id) in zip(group, ids) { reidentify(object, as: id) }
            }
        } catch {
            _ = takeBackPermanentIDs(assigned)
            throw error
        }
        return assigned
    }

    /// Gives the objects of `assigned` their temporary IDs back, and their stores the keys, as
    /// Core Data's failed save leaves its new objects new and `Z_MAX` as it was: a later save
    /// numbers them as if the failed one had never asked. Keys are given back in the reverse
    /// order of their taking (entities of one hierarchy share a counter). Returns the
    /// permanent IDs taken back with the temporary ones that replace them.
    private func takeBackPermanentIDs(_ assigned: [AssignedIDs]) -> [ManagedObjectID: ManagedObjectID] {
        var replaced: [ManagedObjectID: ManagedObjectID] = [:]
        for group in assigned.reversed() {
            let permanent = group.objects.map(\.objectID)
            for (object, id) in zip(group.objects, group.temporaryIDs) {
                replaced[object.objectID] = id
                reidentify(object, as: id)
            }
            // A store that cannot take them back (an I/O error) leaves the keys unused: a gap
            // in the numbering, no harm to any row.
            try? persistentStoreCoordinator?.giveBackObjectIDs(permanent, forEntity: group.entity)
        }
        return replaced
    }

    /// `error` with the permanent IDs a failed save took back replaced by the objects' IDs now.
    private static func naming(_ replaced: [ManagedObjectID: ManagedObjectID], in error: Error) -> Error {
        func current(_ id: ManagedObjectID) -> ManagedObjectID { replaced[id] ?? id }
        switch error {
        case let validation as ObjectValidationError:
            return ObjectValidationError(failures: validation.failures.map {
                ObjectValidationError.Failure(objectID: current($0.objectID), property: $0.property, rule: $0.rule, value: $0.value, message: $0.message)
            })
        case ContextError.uniquenessViolation(let entity, let properties, let id):
            return ContextError.uniquenessViolation(entity: entity, properties: properties, objectID: current(id))
        case ContextError.crossStoreRelationship(let id, let relationship, let destination):
            return ContextError.crossStoreRelationship(current(id), relationship: relationship, destination: current(destination))
        default:
            return error
        }
    }

    private func reidentify(_ object: ManagedObject, as id: ManagedObjectID) {
        unregister(object)
        object.replaceObjectID(id)
        register(object)
    }

    // MARK: Saving

    /// Writes every change to the stores in one transaction per store, after applying delete
    /// rules and validating; all validation failures are reported together.
    ///
    /// A save that reaches several stores (configurations) commits them one after another;
    /// there is no two-phase commit (Core Data has none either). When a store refuses, the
    /// stores before it keep what they wrote, and the context counts those changes saved; the
    /// refused store's changes stay unsaved (its new objects new again, their keys given back),
    /// so that fixing them and saving again writes those only.
    public func save() throws {
        assertOnQueue()
        _ = try requireModel()
        if let faultFailure { throw faultFailure }
        guard hasChanges else {
            // Metadata staged on the coordinator is written even when no object changed.
            try persistentStoreCoordinator?.saveStagedMetadata()
            return
        }
        try applyDeleteRules()
        if validatesOnSave { try validate() }
        if let parent {
            let changes = pushedChanges()
            try parent.performAndWait { try parent.apply(changes) }
            didPushToParent()
            return
        }
        let coordinator = try coordinator()
        let assigned = try assignPermanentIDs(to: Array(inserted.filter { !$0.isDeleted }))
        var savedStores: Set<String> = []
        var request = makeSaveRequest()
        let derivedValues = DerivedValueReport()
        request.derivedValues = derivedValues
        do {
            try coordinator.save(request, saved: &savedStores) { conflicts, store, _ in
                guard mergePolicy != .error else { throw StoreSaveError.conflicts(conflicts) }
                try resolve(conflicts)
                return makeSaveRequest().part(for: store.identifier)
            }
        } catch {
            // What the stores that committed wrote is saved: those changes are done, so that
            // saving again writes only the rest (Core Data has no two-phase commit either).
            if !savedStores.isEmpty {
                didSave(stores: savedStores)
                applyDerivedValues(derivedValues)
            }
            // The objects of stores that did not save are new again; the error names them
            // by the IDs they have now, so `object(with:)` finds them.
            let replaced = takeBackPermanentIDs(assigned.filter { !savedStores.contains($0.store) })
            let stated = Self.contextError(for: error)
            throw replaced.isEmpty ? stated : Self.naming(replaced, in: stated)
        }
        didSave()
        applyDerivedValues(derivedValues)
    }

    /// A store's refusal as the context states it.
    private static func contextError(for error: Error) -> Error {
        switch error {
        case StoreSaveError.conflicts(let conflicts): ContextError.mergeConflict(conflicts)
        case StoreSaveError.uniquenessViolation(let entity, let properties, let id):
            ContextError.uniquenessViolation(entity: entity, properties: properties, objectID: id)
        case StoreSaveError.crossStoreRelationship(let source, let relationship, let destination):
            ContextError.crossStoreRelationship(source, relationship: relationship, destination: destination)
        default: error
        }
    }

    /// Cascades, nullifies and denies, as each deleted object's relationships say.
    private func applyDeleteRules() throws {
        var index = 0
        while index < deleted.count {
            let object = deleted[index]
            index += 1
            for relationship in model.relationships(of: object.layout.name) {
                let destinations = relationship.isToMany ? object.objects(forKey: relationship.name) : [object.object(forKey: relationship.name)].compactMap { $0 }
                switch relationship.deleteRule {
                case .cascade:
                    for destination in destinations where !destination.isDeleted { delete(destination) }
                case .nullify:
                    if let inverse = model.inverse(of: relationship) {
                        for destination in destinations where !destination.isDeleted {
                            destination.inverseRemove(object, forKey: inverse.name, isToMany: inverse.isToMany)
                        }
                    }
                case .deny, .noAction:
                    break
                }
            }
        }
    }

    private func validate() throws {
        var failures: [ObjectValidationError.Failure] = []
        for object in deleted where !object.isInserted {
            for relationship in model.relationships(of: object.layout.name) where relationship.deleteRule == .deny {
                let remaining = (relationship.isToMany ? object.objects(forKey: relationship.name) : [object.object(forKey: relationship.name)].compactMap { $0 })
                    .filter { !$0.isDeleted }
                if !remaining.isEmpty {
                    failures.append(.init(objectID: object.objectID, property: relationship.name, rule: .deny, value: "\(remaining.count) object(s)",
                                          message: "cannot be deleted while '\(relationship.name)' is not empty (delete rule Deny)"))
                }
            }
        }
        for object in inserted.elements + updated.elements where !object.isDeleted {
            failures += validationFailures(of: object)
        }
        guard failures.isEmpty else { throw ObjectValidationError(failures: failures) }
    }

    /// Whether `save` validates the changed objects (a mapping migration saves its new objects
    /// in batches before their relationships are set, and validates them all at the end).
    var validatesOnSave = true

    /// What breaks the model's validation rules in `objects` (their attributes' rules,
    /// required relationships and counts), as `save` checks them.
    func validationFailures(of objects: [ManagedObject]) -> [ObjectValidationError.Failure] {
        assertOnQueue()
        return objects.flatMap(validationFailures)
    }

    private func validationFailures(of object: ManagedObject) -> [ObjectValidationError.Failure] {
        var failures: [ObjectValidationError.Failure] = []
        func fail(_ property: String, _ rule: ObjectValidationError.Rule, _ value: AttributeValue?, _ message: String) {
            failures.append(.init(objectID: object.objectID, property: property, rule: rule, value: value?.canonicalText, message: message))
        }
        let info = info(for: object.layout)
        object.fireFault()
        let values = object.values
        for (index, validator) in info.validators {
            let value = index < values.count ? values[index] : nil
            if let violation = validator.violation(of: value) {
                fail(validator.attribute.name, violation.rule, value, violation.message)
            }
        }
        for relationship in info.checkedRelationships {
            if relationship.isToMany {
                let count = object.objects(forKey: relationship.name).filter { !$0.isDeleted }.count
                if count < relationship.minCount || (!relationship.isOptional && count == 0) {
                    fail(relationship.name, .minimumCount, .integer(Int64(count)), "has \(count) object(s); at least \(max(relationship.minCount, 1)) required")
                } else if relationship.maxCount > 0 && count > relationship.maxCount {
                    fail(relationship.name, .maximumCount, .integer(Int64(count)), "has \(count) object(s); at most \(relationship.maxCount) allowed")
                }
            } else if !relationship.isOptional, object.object(forKey: relationship.name).map({ $0.isDeleted }) ?? true {
                fail(relationship.name, .required, nil, "is required")
            }
        }
        return failures
    }

    /// What saves need to know of an entity, worked out once per context.
    final class EntityInfo {
        /// The attributes with rules (`AttributeValidator.hasRules`), by layout position.
        let validators: [(index: Int, validator: AttributeValidator)]
        let transientAttributes: Set<String>
        let orderedRelationships: [RelationshipDescription]
        /// Relationships whose count or presence can fail validation.
        let checkedRelationships: [RelationshipDescription]

        init(entity: String, model: ManagedObjectModel) {
            let attributes = model.attributes(of: entity)
            validators = attributes.enumerated().map { ($0.offset, AttributeValidator($0.element, in: model)) }.filter { $0.1.hasRules }
            transientAttributes = Set(attributes.filter(\.isTransient).map(\.name))
            let relationships = model.relationships(of: entity)
            orderedRelationships = relationships.filter(\.isOrdered)
            checkedRelationships = relationships.filter { relationship in
                // An optional to-many without bounds cannot fail: it is never loaded to be
                // counted (a category's products may be millions).
                relationship.isToMany ? (!relationship.isOptional || relationship.minCount > 0 || relationship.maxCount > 0) : !relationship.isOptional
            }
        }
    }

    func info(for layout: EntityLayout) -> EntityInfo {
        if let known = entityInfos[ObjectIdentifier(layout)] { return known.info }
        let made = EntityInfo(entity: layout.name, model: model)
        entityInfos[ObjectIdentifier(layout)] = (layout, made)
        return made
    }

    private func makeSaveRequest() -> StoreSaveRequest {
        var request = StoreSaveRequest()
        request.authorship = historyAuthorship
        for object in inserted where !object.isDeleted {
            // The object's value arrays go to the store as they are (shared, not copied).
            request.inserted.append(.init(objectID: object.objectID, positional: .init(
                layout: object.layout, values: object.values, toOneIDs: object.toOneIDs, changedAttributes: nil, changedToOne: nil)))
            appendRelationshipChanges(of: object, to: &request)
        }
        for object in updated where !object.isDeleted {
            let storedKeys = object.changedKeys.filter { key in
                if let attribute = model.attribute(key, of: object.layout.name) { return !attribute.isTransient }
                return !(model.relationship(key, of: object.layout.name)?.isTransient ?? true)
            }
            guard !storedKeys.isEmpty else { continue }
            var changedAttributes: [Int] = []
            var changedToOne: [Int] = []
            for key in storedKeys {
                if let index = object.layout.attributeIndex(of: key) {
                    changedAttributes.append(index)
                } else if let index = object.layout.relationshipIndex(of: key), !object.layout.relationships[index].isToMany {
                    changedToOne.append(index)
                }
            }
            request.updated.append(.init(objectID: object.objectID, expectedVersion: object.snapshot?.version, positional: .init(
                layout: object.layout, values: object.values, toOneIDs: object.toOneIDs,
                changedAttributes: changedAttributes.sorted(), changedToOne: changedToOne.sorted())))
            appendRelationshipChanges(of: object, to: &request)
        }
        for object in deleted where !object.isInserted {
            request.deleted.append((object.objectID, object.snapshot?.version))
        }
        return request
    }

    private func appendRelationshipChanges(of object: ManagedObject, to request: inout StoreSaveRequest) {
        for (key, change) in object.linkChanges {
            request.links.append(.init(
                source: object.objectID, relationship: key,
                added: change.added.filter { !$0.isDeleted }.map(\.objectID), removed: change.removed.map(\.objectID)))
        }
        for relationship in info(for: object.layout).orderedRelationships {
            guard object.isInserted || object.changedKeys.contains(relationship.name) else { continue }
            let destinations = object.objects(forKey: relationship.name).filter { !$0.isDeleted }.map(\.objectID)
            // A new object's empty ordered relationship has no rows to number.
            if object.isInserted && destinations.isEmpty { continue }
            request.orders.append(.init(owner: object.objectID, relationship: relationship.name, destinations: destinations))
        }
    }

    /// Applies the merge policy to objects the store changed meanwhile.
    private func resolve(_ conflicts: [StoreSaveError.VersionConflict]) throws {
        let rows = Dictionary(try coordinator().rows(for: conflicts.map(\.objectID)).map { ($0.objectID, $0) }, uniquingKeysWith: { first, _ in first })
        for conflict in conflicts {
            guard let object = registered[conflict.objectID]?.object else { continue }
            guard let current = rows[conflict.objectID] else {
                // Deleted in the store: nothing left to update or delete.
                updated.remove(object)
                if deleted.remove(object) != nil { object.isDeleted = true }
                object.changedKeys = []
                continue
            }
            let old = object.snapshot
            switch mergePolicy {
            case .error:
                return
            case .mergeByPropertyObjectTrump:
                object.snapshot = current
            case .overwrite:
                // The whole object as it is in memory replaces the store's row.
                object.fireFault()
                object.snapshot = current
                for attribute in model.attributes(of: object.layout.name) where !attribute.isTransient { object.changedKeys.insert(attribute.name) }
                for relationship in model.relationships(of: object.layout.name) where !relationship.isToMany && !relationship.isTransient {
                    object.changedKeys.insert(relationship.name)
                }
            case .mergeByPropertyStoreTrump:
                let oldAttributes = old?.attributes ?? [:], oldToOne = old?.toOne ?? [:]
                let currentAttributes = current.attributes, currentToOne = current.toOne
                for key in object.changedKeys {
                    let storeChanged = oldAttributes[key] != currentAttributes[key] || oldToOne[key] != currentToOne[key]
                    if storeChanged {
                        object.changedKeys.remove(key)
                        if object.layout.attributeIndex(of: key) != nil { object.setStoredValue(currentAttributes[key], key) }
                        if object.layout.relationshipIndex(of: key) != nil { object.setToOneObject(currentToOne[key].map { registeredObject(for: $0) }, key) }
                    }
                }
                object.snapshot = current
            case .rollback:
                object.snapshot = current
                object.turnIntoFault()
                updated.remove(object)
                if deleted.remove(object) != nil { object.isDeleted = false }
            }
        }
    }

    /// A child's changes, by object ID, for its parent to apply.
    struct PushedChanges: Sendable {
        var inserted: [ManagedObjectID] = []
        var attributes: [(ManagedObjectID, [String: AttributeValue?])] = []
        var toOne: [(ManagedObjectID, [String: ManagedObjectID?])] = []
        var toMany: [(ManagedObjectID, String, [ManagedObjectID])] = []
        var deleted: [ManagedObjectID] = []
    }

    private func pushedChanges() -> PushedChanges {
        var changes = PushedChanges()
        for object in inserted where !object.isDeleted { changes.inserted.append(object.objectID) }
        for object in inserted.elements + updated.elements where !object.isDeleted {
            let keys = object.isInserted ? Set(model.attributes(of: object.layout.name).map(\.name) + model.relationships(of: object.layout.name).map(\.name)) : object.changedKeys
            var attributes: [String: AttributeValue?] = [:]
            var toOne: [String: ManagedObjectID?] = [:]
            for key in keys {
                if model.attribute(key, of: object.layout.name) != nil {
                    attributes[key] = .some(object.storedValue(key))
                } else if let relationship = model.relationship(key, of: object.layout.name) {
                    if relationship.isToMany {
                        if object.isInserted && object.toMany[key] == nil { continue }
                        changes.toMany.append((object.objectID, key, object.objects(forKey: key).filter { !$0.isDeleted }.map(\.objectID)))
                    } else {
                        toOne[key] = .some(object.toOneObject(key).flatMap { $0.isDeleted ? nil : $0.objectID })
                    }
                }
            }
            changes.attributes.append((object.objectID, attributes))
            changes.toOne.append((object.objectID, toOne))
        }
        for object in deleted where !object.isInserted { changes.deleted.append(object.objectID) }
        return changes
    }

    /// Applies a child's save: its inserts become this context's inserts, its changes and
    /// deletes this context's unsaved changes.
    func apply(_ changes: PushedChanges) throws {
        for id in changes.inserted where registered[id]?.object == nil {
            let layout = model.layout(of: id.entityName)!
            let object = ManagedObject(objectID: id, layout: layout, context: self)
            object.isInserted = true
            object.isMaterialized = true
            object.values = [AttributeValue?](repeating: nil, count: layout.attributes.count)
            object.toOneObjects = [ManagedObject?](repeating: nil, count: layout.relationships.count)
            register(object)
            inserted.append(object)
        }
        for (id, values) in changes.attributes {
            let object = registeredObject(for: id)
            for (key, value) in values { try object.setAttributeValue(value, forKey: key) }
        }
        for (id, values) in changes.toOne {
            let object = registeredObject(for: id)
            for (key, value) in values { try object.setObject(value.map { registeredObject(for: $0) }, forKey: key) }
        }
        for (id, key, destinations) in changes.toMany {
            try registeredObject(for: id).setValue(destinations.map { registeredObject(for: $0) }, forKey: key)
        }
        for id in changes.deleted { delete(registeredObject(for: id)) }
    }

    /// After pushing to the parent: the child's objects are clean, their state the parent's.
    private func didPushToParent() {
        for object in inserted.elements + updated.elements where !object.isDeleted {
            object.snapshot = snapshot(of: object, version: object.snapshot?.version ?? 0)
            object.isInserted = false
            object.isMaterialized = true
            object.changedKeys = []
            object.linkChanges = [:]
        }
        for object in deleted {
            unregister(object)
            object.managedObjectContext = nil
        }
        inserted.removeAll()
        updated.removeAll()
        deleted.removeAll()
    }

    /// After a successful save: snapshots are the saved state; no object has changes.
    /// Marks the changes saved: all of them, or those of the objects in `stores` (a save whose
    /// later store failed, after earlier ones committed).
    private func didSave(stores: Set<String>? = nil) {
        if let stores {
            func saved(_ object: ManagedObject) -> Bool { object.objectID.storeIdentifier.map(stores.contains) ?? false }
            let (keptInserted, keptUpdated, keptDeleted) = (inserted.filter { !saved($0) }, updated.filter { !saved($0) }, deleted.filter { !saved($0) })
            inserted.removeAll(where: { !saved($0) })
            updated.removeAll(where: { !saved($0) })
            deleted.removeAll(where: { !saved($0) })
            didSave()
            for object in keptInserted { inserted.append(object) }
            for object in keptUpdated { updated.append(object) }
            for object in keptDeleted { deleted.append(object) }
            return
        }
        // Saved to-many relationships go back to being faults: the store has them now, and a
        // category's set of every product added to it would otherwise grow until a reset.
        for object in inserted where !object.isDeleted {
            object.isInserted = false
            object.snapshot = snapshot(of: object, version: 1)
            object.linkChanges = [:]
            object.toMany = [:]
        }
        for object in updated where !object.isDeleted {
            object.snapshot = snapshot(of: object, version: (object.snapshot?.version ?? 0) + 1)
            object.changedKeys = []
            object.linkChanges = [:]
            object.toMany = [:]
        }
        for object in deleted {
            unregister(object)
            object.managedObjectContext = nil
        }
        inserted.removeAll()
        updated.removeAll()
        deleted.removeAll()
    }

    private func snapshot(of object: ManagedObject, version: Int64) -> StoreRow {
        var values = object.values
        if values.isEmpty { values = [AttributeValue?](repeating: nil, count: object.layout.attributes.count) }
        if object.layout.hasTransientAttributes {
            for (index, attribute) in object.layout.attributes.enumerated() where attribute.isTransient { values[index] = nil }
        }
        // Shared with the object (copy on write) when nothing is transient.
        return StoreRow(objectID: object.objectID, version: version, layout: object.layout, values: values, toOneIDs: object.toOneIDs)
    }
}

/// A weak reference, for the registry of objects a context knows but does not own.
struct WeakObject {
    weak var object: ManagedObject?
    init(_ object: ManagedObject) { self.object = object }
}

extension ManagedObject {
    var model: ManagedObjectModel? { managedObjectContext?.model }
}
