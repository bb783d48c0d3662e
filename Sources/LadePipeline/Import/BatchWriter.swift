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
    /// Rows for existing objects left alone (`mode: insert`).
    public var existing = 0
    /// Rows not imported (each in the rejects file, or the reason the run stopped).
    public var rejected = 0
    /// Rows with a relationship key no destination has (left empty, as the job allows).
    public var unresolved = 0
    /// Destinations created for relationship keys (`create: true`).
    public var createdDestinations = 0

    public init() {}

    public mutating func add(_ other: ImportCounts) {
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

/// Writes mapped batches into one context: finds or creates objects by key with one fetch
/// per batch, wires relationships through per-context lookup caches, sets values, and leaves
/// saving and resetting to its caller. Used on the context's queue only.
final class BatchWriter {
    let context: ManagedObjectContext
    let plan: ImportPlan
    let model: ManagedObjectModel

    /// Objects of the target entity this context has by key (fetched or created since the last
    /// reset), so a batch finds objects earlier batches made but have not committed yet.
    private var objectsByKey: [[AttributeValue]: ManagedObject] = [:]
    /// Destinations by entity and match attribute, then by key; nil records a known miss.
    private var destinations: [DestinationKey: [AttributeValue: ManagedObject?]] = [:]
    /// Objects a row changed since the last commit: a second row for one is a duplicate.
    private var touched: Set<ObjectIdentifier> = []
    /// The row (line) each object changed since the last commit came from, for save errors.
    private(set) var linesByObject: [ObjectIdentifier: (line: Int, recordIndex: Int64, raw: String)] = [:]

    private struct DestinationKey: Hashable {
        let entity: String
        let attribute: String
    }

    /// Unsaved objects of earlier steps (a seed commits once): asked for keys the store lacks.
    var unsaved: UnsavedObjectIndex?

    /// `plan.attributes[i].attribute.name`, without copying each plan on every row.
    private let attributeNames: [String]
    private let requiredWithoutDefault: [Int]

    init(context: ManagedObjectContext, plan: ImportPlan, model: ManagedObjectModel) {
        self.context = context
        self.plan = plan
        self.model = model
        attributeNames = plan.attributes.map(\.attribute.name)
        requiredWithoutDefault = plan.requiredWithoutDefault
    }

    /// Forgets every cached object: call right after `context.reset()`.
    func didReset() {
        touched.removeAll(keepingCapacity: true)
        objectsByKey.removeAll(keepingCapacity: true)
        destinations.removeAll(keepingCapacity: true)
        linesByObject.removeAll(keepingCapacity: true)
    }

    /// After a commit the saved objects need no lines for error messages.
    func didCommit() {
        touched.removeAll(keepingCapacity: true)
        linesByObject.removeAll(keepingCapacity: true)
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
    /// whether the batch was applied.
    func write(_ batch: MappedBatch, allowedRejects: Int, counts: inout ImportCounts) throws -> (rejects: [RejectedRow], applied: Bool) {
        let rows = batch.rows
        // Key order: inserts reach the unique index in order, which SQLite writes far faster.
        let order: [Int]
        if plan.keyIndices.isEmpty {
            order = Array(rows.indices)
        } else {
            order = rows.indices.sorted { a, b in
                let order = Self.compare(rows[a].key, rows[b].key)
                return order != 0 ? order < 0 : a < b
            }
        }
        try fetchExisting(rows)
        let missing = try resolveDestinations(rows)

        var decisions: [Decision] = []
        decisions.reserveCapacity(rows.count)
        var rejects: [RejectedRow] = []
        var localCounts = ImportCounts()
        for row in rows {
            let decision = decide(row, batch: batch, missing: missing, counts: &localCounts)
            if case .reject(let reject) = decision { rejects.append(reject) }
            decisions.append(decision)
        }
        if rejects.count > allowedRejects { return (rejects, false) }

        var created: [[AttributeValue]: ManagedObject] = [:]
        for index in order {
            let row = rows[index]
            let object: ManagedObject
            var isNew = false
            switch decisions[index] {
            case .leave, .reject: continue
            case .apply(let found): object = found
            case .create:
                if !row.key.isEmpty, let made = created[row.key] {
                    object = made
                } else {
                    object = try context.insertObject(forEntityName: plan.entity.name)
                    isNew = true
                    if !row.key.isEmpty {
                        created[row.key] = object
                        objectsByKey[row.key] = object
                    }
                }
            }
            let firstTouch = touched.insert(ObjectIdentifier(object)).inserted
            let hadChanges = object.hasChanges
            try apply(row, to: object, counts: &localCounts)
            linesByObject[ObjectIdentifier(object)] = (row.line, row.recordIndex, RowMapper.rawText(batch.raw, row.rawRange))
            if !firstTouch {
                localCounts.duplicates += 1
            } else if isNew {
                localCounts.inserted += 1
            } else if object.hasChanges && !hadChanges {
                localCounts.updated += 1
            } else {
                localCounts.unchanged += 1
            }
        }
        localCounts.rejected = rejects.count
        counts.add(localCounts)
        return (rejects, true)
    }

    private func decide(_ row: MappedRow, batch: MappedBatch, missing: [Int: Set<AttributeValue>], counts: inout ImportCounts) -> Decision {
        func reject(_ field: String?, _ value: String?, _ reason: String) -> Decision {
            .reject(RejectedRow(line: row.line, recordIndex: row.recordIndex, column: nil, field: field, value: value, reason: reason, raw: RowMapper.rawText(batch.raw, row.rawRange)))
        }
        for (index, relationship) in plan.relationships.enumerated() where relationship.settings.required {
            guard let keys = row.links[index] else { continue }
            if keys.isEmpty {
                return reject(relationship.settings.from.components.joined(separator: "."), nil, "\(relationship.relationship.name) is required and the record gives no key")
            }
            if let absent = keys.first(where: { missing[index]?.contains($0) ?? false }) {
                return reject(relationship.settings.from.components.joined(separator: "."), absent.canonicalText,
                              "no \(relationship.relationship.destinationEntityName) has \(relationship.match.name) '\(absent.canonicalText)' (the relationship \(relationship.relationship.name) is required)")
            }
        }
        let existing = row.key.isEmpty ? nil : objectsByKey[row.key]
        switch plan.step.mode {
        case .insert:
            // Objects already in the store are left alone; one this run made takes later rows.
            if let existing, !existing.isNew {
                counts.existing += 1
                return .leave
            }
        case .update:
            if existing == nil {
                return reject(plan.step.key.joined(separator: ", "), row.key.map(\.canonicalText).joined(separator: ", "),
                              "no \(plan.entity.name) has \(plan.step.key.joined(separator: ", ")) \(row.key.map { "'\($0.canonicalText)'" }.joined(separator: ", ")) to update (mode: update)")
            }
        case .upsert:
            break
        }
        if let existing { return .apply(existing) }
        // A new object must end up with every required attribute, from the row or a default.
        for index in requiredWithoutDefault {
            if case .none = row.values[index] {
                let attribute = plan.attributes[index]
                return reject(attribute.fieldIndices.first.map { plan.readerFields[$0].components.joined(separator: ".") }, nil,
                              "\(attribute.attribute.name) is required and the record has no value for it")
            }
        }
        return .create
    }

    private func apply(_ row: MappedRow, to object: ManagedObject, counts: inout ImportCounts) throws {
        for (index, value) in row.values.enumerated() {
            guard case .some(let newValue) = value else { continue }
            try object.setAttributeValue(newValue, forKey: attributeNames[index])
        }
        var unresolved = false
        for (index, relationship) in plan.relationships.enumerated() {
            guard let keys = row.links[index] else { continue }
            let cacheKey = DestinationKey(entity: relationship.relationship.destinationEntityName, attribute: relationship.match.name)
            var found: [ManagedObject] = []
            for key in keys {
                if let destination = destinations[cacheKey]?[key] ?? nil {
                    found.append(destination)
                } else if relationship.settings.create {
                    let destination = try context.insertObject(forEntityName: relationship.relationship.destinationEntityName)
                    try destination.setAttributeValue(key, forKey: relationship.match.name)
                    destinations[cacheKey, default: [:]][key] = destination
                    counts.createdDestinations += 1
                    found.append(destination)
                } else {
                    unresolved = true
                }
            }
            if relationship.relationship.isToMany {
                try object.setValue(found, forKey: relationship.relationship.name)
            } else {
                try object.setObject(found.first, forKey: relationship.relationship.name)
            }
        }
        if unresolved { counts.unresolved += 1 }
    }

    // MARK: Fetching by key

    /// Loads the batch's objects that exist in the store and are not known yet: one query.
    private func fetchExisting(_ rows: [MappedRow]) throws {
        guard !plan.keyIndices.isEmpty else { return }
        var wanted: Set<[AttributeValue]> = []
        for row in rows where objectsByKey[row.key] == nil { wanted.insert(row.key) }
        guard !wanted.isEmpty else { return }
        let keyNames = plan.keyIndices.map { attributeNames[$0] }
        var parts: [Lade.Predicate] = []
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
            let values = key.map { $0! }
            // With a compound key the IN lists also match mixed tuples: keep the wanted ones.
            if wanted.contains(values), objectsByKey[values] == nil { objectsByKey[values] = object }
        }
        if let unsaved {
            for values in wanted where objectsByKey[values] == nil {
                objectsByKey[values] = unsaved.object(entity: plan.entity.name, attributes: keyNames, values: values)
            }
        }
    }

    /// Looks up every destination key of the batch not cached yet, one query per relationship;
    /// returns, per relationship, the keys no destination has and none will be created for.
    private func resolveDestinations(_ rows: [MappedRow]) throws -> [Int: Set<AttributeValue>] {
        var missing: [Int: Set<AttributeValue>] = [:]
        for (index, relationship) in plan.relationships.enumerated() {
            let cacheKey = DestinationKey(entity: relationship.relationship.destinationEntityName, attribute: relationship.match.name)
            var cache = destinations[cacheKey] ?? [:]
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
                    if relationship.settings.create {
                        continue  // made when a row that is applied needs it
                    }
                    cache[key] = .some(nil)
                }
            }
            destinations[cacheKey] = cache
            if !relationship.settings.create {
                var absent: Set<AttributeValue> = []
                for (key, value) in cache where value == nil { absent.insert(key) }
                missing[index] = absent
            }
        }
        return missing
    }

    /// Orders keys: numbers and dates by value, strings by UTF-8 bytes (SQLite's BINARY
    /// collation, the order the unique index keeps), anything else by its canonical text.
    static func compare(_ a: [AttributeValue], _ b: [AttributeValue]) -> Int {
        func sign<T: Comparable>(_ x: T, _ y: T) -> Int { x == y ? 0 : (x < y ? -1 : 1) }
        for (x, y) in zip(a, b) {
            let order: Int
            switch (x, y) {
            case (.string(let s), .string(let t)): order = s == t ? 0 : (s.utf8.lexicographicallyPrecedes(t.utf8) ? -1 : 1)
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
