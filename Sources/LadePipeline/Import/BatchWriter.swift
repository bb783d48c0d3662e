import Foundation
import Lade

/// Counts of what an import did to objects and rows.
public struct ImportCounts: Sendable, Equatable, Codable {
    /// Objects created.
    public var inserted = 0
    /// Existing objects changed by a row.
    public var updated = 0
    /// Existing objects a row found already as it says.
    public var unchanged = 0
    /// Rows whose key an earlier row of the same batch had (applied to the same object, later rows win).
    public var duplicates = 0
    /// Rows left alone because an object has their key (`mode: insert`): one in the store, or
    /// one an earlier row of the run made (the first row for a key wins).
    public var existing = 0
    /// Rows not imported (each in the rejects file, or the reason the run stopped).
    public var rejected = 0
    /// Rows with a relationship key no destination has (left empty, as the job allows).
    public var unresolved = 0
    /// Destinations created for relationship keys (`create: true`).
    public var createdDestinations = 0

    package init() {}

    package mutating func subtract(_ other: ImportCounts) {
        inserted -= other.inserted
        updated -= other.updated
        unchanged -= other.unchanged
        duplicates -= other.duplicates
        existing -= other.existing
        rejected -= other.rejected
        unresolved -= other.unresolved
        createdDestinations -= other.createdDestinations
    }

    package mutating func add(_ other: ImportCounts) {
        inserted += other.inserted
        updated += other.updated
        unchanged += other.unchanged
        duplicates += other.duplicates
        existing += other.existing
        rejected += other.rejected
        unresolved += other.unresolved
        createdDestinations += other.createdDestinations
    }
}

/// Writes mapped batches into one context as managed objects: finds or creates objects by key
/// with one fetch per batch, wires relationships through per-context lookup caches, and sets
/// values. As an import session's writer (`BatchWriter+ImportWriter.swift`) it saves each batch
/// into a store transaction held open until the commit, or everything at the commit. Used on
/// the context's queue only.
final class BatchWriter {
    let context: ManagedObjectContext
    let plan: ImportPlan
    let model: ManagedObjectModel

    /// Objects of the target entity this context has by key (fetched or created since the last
    /// reset), so a batch finds objects earlier batches made but have not committed yet.
    private var objectsByKey: [KeyList: ManagedObject] = [:]
    /// Destinations by key, one table per entity and match attribute (`destinationSlots`);
    /// nil records a known miss.
    private var destinations: [[AttributeValue: ManagedObject?]]
    /// Objects a row changed since the last commit (or save): a second row for one is a duplicate.
    private var touched: Set<ObjectIdentifier> = []
    /// `Z_PK`s of the imported entity's objects rows changed in saves since the last commit
    /// (held in a store transaction; the objects may be gone with a reset since).
    private var savedTouched: Set<Int64> = []
    /// The smallest `Z_PK` of the objects rows inserted in saves since the last commit (which
    /// `savedTouched` then leaves out).
    private var firstSavedInsert: Int64?
    /// Where each object changed since the last commit came from (its last row), and how that
    /// row was counted, so a save the store refuses can name and drop the rows behind it.
    private var origins: [ObjectIdentifier: Origin] = [:]
    /// The rows before the last that changed an object since the last save (its key given
    /// again): a save the store refuses for the object rejects them with it, as nothing of
    /// theirs is kept. Empty unless a key repeats.
    private var earlierRows: [ObjectIdentifier: [Origin]] = [:]
    /// The raw text of the batches since the last commit, by batch number (for those rows).
    private var rawBatches: [Int: [UInt8]] = [:]
    private var batchNumber = 0

    struct Origin {
        let object: ManagedObject
        let line: Int
        let recordIndex: Int64
        let rawRange: Range<Int>
        /// The batch whose row changed the object last, and the first such batch.
        let batch: Int
        var firstBatch: Int
        let outcome: Outcome
    }

    enum Outcome { case inserted, updated, unchanged, duplicate, createdDestination }

    /// The number of the last batch written (batches are numbered from 1 in a run).
    var currentBatch: Int { batchNumber }

    /// The batch whose row last changed an object since the last commit.
    func originBatch(of object: ManagedObject) -> Int? {
        origins[ObjectIdentifier(object)]?.batch
    }

    /// Takes back everything batches `first` and later did, when no object they changed was
    /// also changed by an earlier batch (then it returns false and changes nothing).
    func dropBatches(from first: Int) -> Bool {
        let later = origins.values.filter { $0.batch >= first }
        guard later.allSatisfy({ $0.firstBatch >= first }) else { return false }
        for origin in later { _ = drop(origin.object) }
        return true
    }

    private struct DestinationKey: Hashable {
        let entity: String
        let attribute: String
    }

    /// Unsaved objects of earlier steps (a seed commits once): asked for keys the store lacks.
    var unsaved: UnsavedObjectIndex?

    /// `plan.attributes[i].attribute.name`, without copying each plan on every row.
    private let attributeNames: [String]
    /// Each plan attribute's and relationship's position in the entity's layout.
    private let attributePositions: [Int]
    private let relationshipPositions: [Int]
    private let entityLayout: EntityLayout
    /// The row rules this writer shares with the batch writer.
    private let rules: RowRules
    /// Per relationship of the plan, what every row needs of it, worked out once (copying a
    /// relationship's plan retains and releases each of its fields, on every row).
    private let destinationKeys: [DestinationKey]
    /// Per relationship of the plan, its table in `destinations`: relationships to the same
    /// entity matched by the same attribute share one (found by position, not by hashing
    /// the entity's and the attribute's names on every row).
    private let destinationSlots: [Int]
    private let relationshipNames: [String]
    private let relationshipIsToMany: [Bool]

    /// The store transaction each batch is saved into, held open until the commit (`lade run`
    /// on SQLite; see `BatchWriter+ImportWriter.swift`); nil once the last commit ended it.
    var transaction: StoreTransaction?
    /// Whether batches are saved into `transaction` as they are written; otherwise everything
    /// is saved at the commit (an XML or binary store, a seed).
    let savesHeld: Bool
    /// Set when the context must be reset before the next batch, whatever `resetEvery` says.
    var resetSoon = false

    /// `savingInto`: a transaction to save each batch into; nil, everything is saved at the commit.
    init(context: ManagedObjectContext, plan: ImportPlan, model: ManagedObjectModel, savingInto transaction: StoreTransaction? = nil) {
        self.context = context
        self.plan = plan
        self.model = model
        self.transaction = transaction
        savesHeld = transaction != nil
        attributeNames = plan.attributes.map(\.attribute.name)
        entityLayout = model.layout(of: plan.entity.name)!
        attributePositions = plan.attributes.map { [entityLayout] in entityLayout.attributeIndex(of: $0.attribute.name)! }
        relationshipPositions = plan.relationships.map { [entityLayout] in entityLayout.relationshipIndex(of: $0.relationship.name)! }
        rules = RowRules(plan: plan)
        destinationKeys = plan.relationships.map { DestinationKey(entity: $0.relationship.destinationEntityName, attribute: $0.match.name) }
        var slots: [DestinationKey: Int] = [:]
        destinationSlots = destinationKeys.map { key in
            if let slot = slots[key] { return slot }
            slots[key] = slots.count
            return slots.count - 1
        }
        destinations = Array(repeating: [:], count: slots.count)
        relationshipNames = plan.relationships.map(\.relationship.name)
        relationshipIsToMany = plan.relationships.map(\.relationship.isToMany)
        // A relationship whose destinations are found by the key of the entity being imported
        // (a category's parent by name, while importing categories by name) also finds the
        // objects this run makes.
        let keyName = plan.keyIndices.count == 1 ? attributeNames[plan.keyIndices[0]] : nil
        selfKeyed = plan.relationships.indices.filter { index in
            let relationship = plan.relationships[index]
            return relationship.match.name == keyName && model.entity(plan.entity.name, isKindOf: relationship.relationship.destinationEntityName)
        }
    }

    /// Whether saving this writer's objects could break a uniqueness constraint, which shows
    /// only while the store writes (so a save needs a savepoint to be undone alone). It cannot
    /// when every entity the rows write (the imported one, and destinations `create: true`
    /// makes) is the root of its hierarchy (no other entity's rows in its table) and the only
    /// constraint across that hierarchy is what the writer finds objects by before it creates
    /// any (the key; a destination's `match`).
    static func savesMayBreakConstraints(plan: ImportPlan, model: ManagedObjectModel) -> Bool {
        func foundFirst(_ entity: String, by key: [String]) -> Bool {
            guard model.rootEntity(of: entity)?.name == entity else { return false }
            return model.hierarchy(from: entity).allSatisfy { member in
                model.uniquenessConstraints(of: member.name).allSatisfy { !key.isEmpty && Set($0) == Set(key) }
            }
        }
        if !foundFirst(plan.entity.name, by: plan.step.key) { return true }
        return plan.relationships.contains { relationship in
            relationship.settings.create && !foundFirst(relationship.relationship.destinationEntityName, by: [relationship.match.name])
        }
    }

    /// Positions in `plan.relationships` of relationships matched by this import's own key.
    private let selfKeyed: [Int]

    /// Makes an object of the imported entity findable as a destination of the self-keyed
    /// relationships.
    private func registerAsDestination(_ object: ManagedObject, key: KeyList) {
        guard key.count == 1 else { return }
        for index in selfKeyed {
            destinations[destinationSlots[index]][key[0]] = .some(object)
        }
    }

    /// Forgets every cached object: call right after `context.reset()` (which comes after a
    /// commit, or after a save into a store transaction).
    func didReset() {
        objectsByKey.removeAll(keepingCapacity: true)
        for slot in destinations.indices { destinations[slot].removeAll(keepingCapacity: true) }
        forgetRows()
    }

    /// After a commit the saved objects need no origins for error messages.
    func didCommit() {
        // Committed objects are found in the store again; holding them here would keep every
        // object of the reset window alive.
        objectsByKey.removeAll(keepingCapacity: true)
        savedTouched.removeAll(keepingCapacity: true)
        firstSavedInsert = nil
        forgetRows()
    }

    /// After a save into a store transaction (not committed yet): the saved objects need no
    /// origins (a save that fails later holds later rows only), but a later row for one of
    /// them before the commit is still a duplicate.
    func didSave() {
        for origin in origins.values where origin.outcome != .createdDestination {
            guard let key = origin.object.objectID.primaryKey else { continue }
            if origin.outcome == .inserted && selfKeyed.isEmpty {
                // Kept as the smallest key inserted, not one by one (a set of the 60,000-odd
                // keys of a 2 s commit window holds about a megabyte).
                firstSavedInsert = min(firstSavedInsert ?? key, key)
            } else {
                savedTouched.insert(key)
            }
        }
        forgetRows()
    }

    /// Whether a row since the last commit, saved already, changed `object`.
    private func savedSinceCommit(_ object: ManagedObject) -> Bool {
        guard let key = object.objectID.primaryKey else { return false }
        // The store transaction holds the write lock, so keys from the first this writer
        // inserted on were all taken by this writer, for objects of the imported entity (a
        // destination of that entity, which would take one too, is never made when
        // `selfKeyed` is empty).
        if let first = firstSavedInsert, key >= first { return true }
        return savedTouched.contains(key)
    }

    private func forgetRows() {
        touched.removeAll(keepingCapacity: true)
        origins.removeAll(keepingCapacity: true)
        earlierRows.removeAll(keepingCapacity: true)
        rawBatches.removeAll(keepingCapacity: true)
    }

    /// The row an object changed since the last commit came from, as a rejected row with
    /// `reason`; nil when no row of this run changed it.
    func rejectedRow(for object: ManagedObject, reason: String) -> RejectedRow? {
        origins[ObjectIdentifier(object)].map { rejectedRow($0, reason: reason) }
    }

    private func rejectedRow(_ origin: Origin, reason: String) -> RejectedRow {
        let raw = rawBatches[origin.batch].map { RowMapper.rawText($0, origin.rawRange) } ?? ""
        return RejectedRow(line: origin.line, recordIndex: origin.recordIndex, column: nil, field: nil, value: nil, reason: reason, raw: raw)
    }

    /// Takes back the rows behind objects a save refused (`ImportStack.refusedObjects`): each
    /// becomes a rejected row (the object's last row with the store's reason, rows before it
    /// since the last save saying which row the store refused) and its object is dropped.
    /// Returns those rows and the counts to take back; an object no row of this run changed is
    /// left as it is.
    func takeBack(_ refused: [(ManagedObject, String)]) -> (rows: [RejectedRow], undone: ImportCounts) {
        var rows: [RejectedRow] = []
        var undone = ImportCounts()
        for (object, reason) in refused {
            guard let row = rejectedRow(for: object, reason: reason) else { continue }
            rows.append(row)
            for earlier in earlierRows.removeValue(forKey: ObjectIdentifier(object)) ?? [] {
                rows.append(rejectedRow(earlier, reason: "the store refused its object as line \(row.line) left it: \(reason)"))
                undone.add(Self.counted(earlier.outcome))
            }
            undone.add(drop(object))
        }
        return (rows, undone)
    }

    /// The counts a row with `outcome` added.
    private static func counted(_ outcome: Outcome) -> ImportCounts {
        var counts = ImportCounts()
        switch outcome {
        case .inserted: counts.inserted = 1
        case .updated: counts.updated = 1
        case .unchanged: counts.unchanged = 1
        case .duplicate: counts.duplicates = 1
        case .createdDestination: counts.createdDestinations = 1
        }
        return counts
    }

    /// Takes back what an object's row did, after the store refused it: a new object is
    /// deleted, an existing one loses its unsaved changes. Returns the counts to take back.
    func drop(_ object: ManagedObject) -> ImportCounts {
        var undone = ImportCounts()
        let id = ObjectIdentifier(object)
        if let origin = origins.removeValue(forKey: id) { undone = Self.counted(origin.outcome) }
        earlierRows[id] = nil
        // No row changed it now: the next one is not a duplicate (the batch writer's refused
        // row touched nothing either).
        touched.remove(id)
        if object.isNew {
            if let key = keyOf(object) { objectsByKey[key] = nil }
            context.delete(object)
        } else {
            context.refresh(object, mergeChanges: false)
        }
        return undone
    }

    private func keyOf(_ object: ManagedObject) -> KeyList? {
        guard !plan.keyIndices.isEmpty else { return nil }
        let values = plan.keyIndices.map { object.attributeValue(forKey: attributeNames[$0]) }
        return values.contains { $0 == nil } ? nil : KeyList(values.map { $0! })
    }

    /// What to do with each row of a batch, decided before anything is changed.
    private enum Decision {
        case create
        case apply(ManagedObject)
        case leave
        case reject(RejectedRow)
    }

    /// Decides every row of the batch, then applies them unless more than `allowedRejects` rows
    /// were rejected (then nothing of the batch is changed). Returns the rows rejected here and
    /// whether the batch was applied. Saves nothing (`write` saves when `savesHeld`).
    func apply(_ batch: MappedBatch, allowedRejects: Int, counts: inout ImportCounts) throws -> (rejects: [RejectedRow], applied: Bool) {
        let rows = batch.rows
        batchNumber += 1
        rawBatches[batchNumber] = batch.raw
        try fetchExisting(rows)
        if !selfKeyed.isEmpty {
            for (key, object) in objectsByKey { registerAsDestination(object, key: key) }
        }
        let missing = try resolveDestinations(rows, batchKeys: selfKeyed.isEmpty ? [] : Set(rows.compactMap { $0.key.count == 1 ? $0.key[0] : nil }))
        var localCounts = ImportCounts()
        let (decisions, rejects) = decisions(for: batch, missing: missing, counts: &localCounts)
        if rejects.count > allowedRejects { return (rejects, false) }
        // First every row's object (found or new), then values and relationships: a row may
        // name, as a destination, an object another row of the batch makes.
        let (objects, isNew) = try objects(for: batch, decisions)
        try applyRows(of: batch, to: objects, isNew: isNew, counts: &localCounts)
        localCounts.rejected = rejects.count
        counts.add(localCounts)
        return (rejects, true)
    }

    /// What to do with each row of the batch (by row index), and the rows rejected.
    private func decisions(for batch: MappedBatch, missing: [Int: Set<AttributeValue>], counts: inout ImportCounts) -> ([Decision], [RejectedRow]) {
        let rows = batch.rows
        var decisions = [Decision](repeating: .leave, count: rows.count)
        var rejects: [RejectedRow] = []
        // In key order, as the rows are applied (and as the batch writer writes them): a row
        // whose key an earlier row of the batch makes an object for (rows with one key are
        // next to each other) is for that object, not a new one.
        var madeKey: KeyList?
        for index in batch.keyOrder {
            let follows = madeKey != nil && madeKey == rows[index].key
            let decision = decide(rows[index], batch: batch, missing: missing, follows: follows, counts: &counts)
            if !follows { madeKey = nil }
            switch decision {
            case .reject(let reject): rejects.append(reject)
            case .create where !rows[index].key.isEmpty: madeKey = rows[index].key
            // `mode: insert`: a destination made from the key, which its first row fills in.
            case .apply where plan.step.mode == .insert: madeKey = rows[index].key
            default: break
            }
            decisions[index] = decision
        }
        return (decisions, rejects)
    }

    /// Each row's object (by row index): the one found, or a new one (its key set, so that
    /// rows naming it as a destination find it); and which are new.
    private func objects(for batch: MappedBatch, _ decisions: [Decision]) throws -> (objects: [ManagedObject?], isNew: [Bool]) {
        let rows = batch.rows
        var objects = [ManagedObject?](repeating: nil, count: rows.count)
        var isNew = [Bool](repeating: false, count: rows.count)
        // Key order: inserts reach the unique index in order, which SQLite writes far faster.
        for index in batch.keyOrder {
            switch decisions[index] {
            case .leave, .reject: continue
            case .apply(let found): objects[index] = found
            case .create:
                let key = rows[index].key
                // An earlier row of the batch may have made it (`objectsByKey` has every object made).
                if !key.isEmpty, let made = objectsByKey[key] {
                    objects[index] = made
                } else {
                    let object = try context.insertObject(forEntityName: plan.entity.name)
                    objects[index] = object
                    isNew[index] = true
                    if !key.isEmpty {
                        objectsByKey[key] = object
                        // The key now, so that rows naming it as a destination find it (by
                        // position: the object is of the imported entity itself).
                        for keyIndex in plan.keyIndices { try object.setAttributeValue(rows[index].values[keyIndex] ?? nil, at: attributePositions[keyIndex]) }
                        registerAsDestination(object, key: key)
                    }
                }
            }
        }
        return (objects, isNew)
    }

    /// Applies each row to its object, in key order, counting what it did and keeping where
    /// the object came from (`origins`).
    private func applyRows(of batch: MappedBatch, to objects: [ManagedObject?], isNew: [Bool], counts: inout ImportCounts) throws {
        let rows = batch.rows
        for index in batch.keyOrder {
            guard let object = objects[index] else { continue }
            let id = ObjectIdentifier(object)
            let firstTouch = touched.insert(id).inserted && !savedSinceCommit(object)
            let hadChanges = object.hasChanges
            try apply(rows[index], to: object, counts: &counts)
            let outcome: Outcome
            if !firstTouch {
                outcome = .duplicate
                counts.duplicates += 1
            } else if isNew[index] {
                outcome = .inserted
                counts.inserted += 1
            } else if object.hasChanges && !hadChanges {
                outcome = .updated
                counts.updated += 1
            } else {
                outcome = .unchanged
                counts.unchanged += 1
            }
            // One lookup when the object has no origin yet (a new object; the first row for it).
            let origin = Origin(object: object, line: rows[index].line, recordIndex: rows[index].recordIndex, rawRange: rows[index].rawRange,
                                batch: batchNumber, firstBatch: batchNumber, outcome: outcome)
            if let previous = origins.updateValue(origin, forKey: id) {
                if previous.firstBatch != batchNumber { origins[id]!.firstBatch = previous.firstBatch }
                if previous.outcome != .createdDestination { earlierRows[id, default: []].append(previous) }
            }
        }
    }

    /// `follows`: an earlier row of the batch (in key order) makes the object for the row's key.
    private func decide(_ row: MappedRow, batch: MappedBatch, missing: [Int: Set<AttributeValue>], follows: Bool, counts: inout ImportCounts) -> Decision {
        func absent(_ index: Int, _ key: AttributeValue) -> Bool { missing[index]?.contains(key) ?? false }
        if let problem = rules.missingRequiredLink(in: row, absent: absent) { return .reject(problem.rejected(row, raw: batch.raw)) }
        if follows {
            // The object exists by the time this row is applied: left alone (`mode: insert`), or
            // changed (`.create` finds the object the earlier row made); never a new object.
            if plan.step.mode == .insert {
                counts.existing += 1
                return .leave
            }
            return .create
        }
        let existing = row.key.isEmpty ? nil : objectsByKey[row.key]
        switch plan.step.mode {
        case .insert:
            // An object that has the key is left alone, whether it was in the store or an
            // earlier row of this run made it (the first row for a key wins). Only a
            // destination made from the key (`create: true`), not saved yet, takes the row,
            // which fills it in.
            if let existing, !(existing.isNew && origins[ObjectIdentifier(existing)]?.outcome == .createdDestination) {
                counts.existing += 1
                return .leave
            }
        case .update:
            if existing == nil { return .reject(rules.noObjectToUpdate(row).rejected(row, raw: batch.raw)) }
        case .upsert:
            break
        }
        if let existing { return .apply(existing) }
        if let problem = rules.newObjectProblem(in: row, absent: absent) { return .reject(problem.rejected(row, raw: batch.raw)) }
        return .create
    }

    private func apply(_ row: MappedRow, to object: ManagedObject, counts: inout ImportCounts) throws {
        // By layout position: the entity's positions hold in its subentities' layouts too.
        let byPosition = object.layout === entityLayout || model.entity(object.layout.name, isKindOf: plan.entity.name)
        if byPosition {
            try object.setAttributeValues(row.values, at: attributePositions)
        } else {
            for (index, value) in row.values.enumerated() {
                guard case .some(let newValue) = value else { continue }
                try object.setAttributeValue(newValue, forKey: attributeNames[index])
            }
        }
        var unresolved = false
        for index in plan.relationships.indices {
            guard let keys = row.links[index] else { continue }
            if relationshipIsToMany[index] {
                var found: [ManagedObject] = []
                for key in keys {
                    if let destination = try destination(key, of: index, for: row, counts: &counts) { found.append(destination) } else { unresolved = true }
                }
                try object.setValue(found, forKey: relationshipNames[index])
                continue
            }
            // A to-one: at most one key (none clears it), no array.
            var found: ManagedObject?
            if let key = keys.first {
                found = try destination(key, of: index, for: row, counts: &counts)
                if found == nil { unresolved = true }
            }
            if byPosition {
                try object.setObject(found, at: relationshipPositions[index])
            } else {
                try object.setObject(found, forKey: relationshipNames[index])
            }
        }
        if unresolved { counts.unresolved += 1 }
    }

    /// The destination of relationship `index` with `key`: cached, or made now when the
    /// relationship says `create: true`; nil when there is none.
    private func destination(_ key: AttributeValue, of index: Int, for row: MappedRow, counts: inout ImportCounts) throws -> ManagedObject? {
        let slot = destinationSlots[index]
        if let destination = destinations[slot][key] ?? nil { return destination }
        let relationship = plan.relationships[index]
        guard relationship.settings.create else { return nil }
        let destination = try context.insertObject(forEntityName: relationship.relationship.destinationEntityName)
        try destination.setAttributeValue(key, forKey: relationship.match.name)
        destinations[slot][key] = destination
        if selfKeyed.contains(index), destination.entity.name == plan.entity.name {
            objectsByKey[KeyList(key)] = destination  // a later row with this key fills it in
        }
        origins[ObjectIdentifier(destination)] = Origin(object: destination, line: row.line, recordIndex: row.recordIndex, rawRange: row.rawRange,
                                                        batch: batchNumber, firstBatch: batchNumber, outcome: .createdDestination)
        counts.createdDestinations += 1
        return destination
    }

    // MARK: Fetching by key

    /// Loads the batch's objects that exist in the store and are not known yet: one query.
    private func fetchExisting(_ rows: [MappedRow]) throws {
        guard !plan.keyIndices.isEmpty else { return }
        var wanted: Set<KeyList> = []
        for row in rows where objectsByKey[row.key] == nil { wanted.insert(row.key) }
        guard !wanted.isEmpty else { return }
        let keyNames = plan.keyIndices.map { attributeNames[$0] }
        var parts: [FetchPredicate] = []
        for (position, name) in keyNames.enumerated() {
            let values = Set(wanted.map { $0[position] })
            parts.append(.compare(.keyPath(name), .in, .constant(.collection(values.map { .attribute($0) }))))
        }
        var request = FetchRequest(entityName: plan.entity.name, predicate: parts.count == 1 ? parts[0] : .and(parts))
        request.includesPendingChanges = false
        request.returnsObjectsAsFaults = false
        for object in try context.fetch(request) {
            let key = keyNames.map { object.attributeValue(forKey: $0) }
            guard key.allSatisfy({ $0 != nil }) else { continue }
            let values = KeyList(key.map { $0! })
            // With a compound key the IN lists also match mixed tuples: keep the wanted ones.
            if wanted.contains(values), objectsByKey[values] == nil { objectsByKey[values] = object }
        }
        if let unsaved {
            for values in wanted where objectsByKey[values] == nil {
                objectsByKey[values] = unsaved.object(entity: plan.entity.name, attributes: keyNames, values: values.values)
            }
        }
    }

    /// Looks up every destination key of the batch not cached yet, one query per relationship;
    /// returns, per relationship, the keys no destination has and none will be created for.
    private func resolveDestinations(_ rows: [MappedRow], batchKeys: Set<AttributeValue>) throws -> [Int: Set<AttributeValue>] {
        var missing: [Int: Set<AttributeValue>] = [:]
        for (index, relationship) in plan.relationships.enumerated() {
            let pending = selfKeyed.contains(index) ? batchKeys : []
            let cacheKey = destinationKeys[index]
            // Taken out while it is filled in (left in place, every change would copy it), and
            // put back however the loop's turn ends.
            let slot = destinationSlots[index]
            var cache = destinations[slot]
            destinations[slot] = [:]
            defer { destinations[slot] = cache }
            var wanted: Set<AttributeValue> = []
            for row in rows {
                guard let keys = row.links[index] else { continue }
                for key in keys where cache[key] == nil { wanted.insert(key) }
            }
            if !wanted.isEmpty {
                var request = FetchRequest(
                    entityName: relationship.relationship.destinationEntityName,
                    predicate: .compare(.keyPath(relationship.match.name), .in, .constant(.collection(wanted.map { .attribute($0) }))))
                request.includesPendingChanges = false
                for object in try context.fetch(request) {
                    if let key = object.attributeValue(forKey: relationship.match.name), cache[key] == nil {
                        cache[key] = .some(object)
                    }
                }
                if let unsaved {
                    for key in wanted where cache[key] == nil {
                        if let object = unsaved.object(entity: cacheKey.entity, attributes: [cacheKey.attribute], values: [key]) { cache[key] = .some(object) }
                    }
                }
                for key in wanted where cache[key] == nil {
                    // Made when a row that is applied needs it, or by a row of this batch.
                    if relationship.settings.create || pending.contains(key) { continue }
                    cache[key] = .some(nil)
                }
            }
            if !relationship.settings.create {
                var absent: Set<AttributeValue> = []
                for (key, value) in cache where value == nil { absent.insert(key) }
                missing[index] = absent
            }
        }
        return missing
    }

    /// Row positions in key order (stable: rows with one key keep their order); the rows'
    /// order when there is no key. One text key, the common case, is compared as bytes.
    static func keyOrder(_ rows: [MappedRow], keyed: Bool) -> [Int] {
        guard keyed else { return Array(rows.indices) }
        var texts: [String] = []
        texts.reserveCapacity(rows.count)
        // Each row's key read in place: a copy of the row retained and released its arrays.
        for index in rows.indices {
            guard rows[index].key.count == 1, case .string(let text) = rows[index].key[0] else { texts = []; break }
            texts.append(text)
        }
        if texts.count == rows.count { return textOrder(texts) }
        return rows.indices.sorted { a, b in
            let order = compare(rows[a].key, rows[b].key)
            return order != 0 ? order < 0 : a < b
        }
    }

    /// Positions of `texts` in UTF-8 byte order, equal texts in position order. Each text is
    /// first stood for by the 8 bytes after the prefix all of them share, as a big-endian
    /// integer (zeros past its end): two texts whose integers differ are in that order, so
    /// only those whose integers tie are compared byte by byte. Keys such as `SKU-00805901`
    /// share their first bytes, which a plain comparison reads again for every pair.
    static func textOrder(_ texts: [String]) -> [Int] {
        guard let first = texts.first else { return [] }
        var shared = first.utf8.count
        first.withUTF8Bytes { head in
            for text in texts.dropFirst() where shared > 0 {
                text.withUTF8Bytes { bytes in
                    let limit = min(shared, bytes.count)
                    var length = 0
                    while length < limit && bytes[length] == head[length] { length += 1 }
                    shared = length
                }
            }
        }
        var entries: [(head: UInt64, position: Int)] = []
        entries.reserveCapacity(texts.count)
        for position in texts.indices {
            let head = texts[position].withUTF8Bytes { bytes -> UInt64 in
                // Every text is at least `shared` bytes long.
                let end = min(bytes.count, shared + 8)
                var head: UInt64 = 0
                for index in shared..<end { head = head << 8 | UInt64(bytes[index]) }
                return head << (8 * UInt64(8 - (end - shared)))
            }
            entries.append((head, position))
        }
        entries.sort { a, b in
            if a.head != b.head { return a.head < b.head }
            let order = AttributeValue.byteOrder(texts[a.position], texts[b.position])
            return order != 0 ? order < 0 : a.position < b.position
        }
        return entries.map(\.position)
    }

    /// Orders keys: numbers and dates by value, strings by UTF-8 bytes (SQLite's BINARY
    /// collation, the order the unique index keeps), anything else by its canonical text.
    static func compare(_ a: KeyList, _ b: KeyList) -> Int {
        func sign<T: Comparable>(_ x: T, _ y: T) -> Int { x == y ? 0 : (x < y ? -1 : 1) }
        for (x, y) in zip(a, b) {
            let order: Int
            switch (x, y) {
            case (.string(let s), .string(let t)): order = AttributeValue.byteOrder(s, t)
            case (.integer(let s), .integer(let t)): order = sign(s, t)
            case (.double(let s), .double(let t)): order = sign(s, t)
            case (.float(let s), .float(let t)): order = sign(s, t)
            case (.decimal(let s), .decimal(let t)): order = sign(s, t)
            case (.date(let s), .date(let t)): order = sign(s, t)
            default: order = sign(x.canonicalText, y.canonicalText)
            }
            if order != 0 { return order }
        }
        return a.count - b.count
    }
}
