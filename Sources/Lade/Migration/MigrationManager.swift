import Foundation

/// Migration of a store by mapping models, as Core Data's `NSMigrationManager` runs one with
/// the default `NSEntityMigrationPolicy`: the destination is built beside the store in three
/// stages (every entity mapping creates its destination objects and their attribute values;
/// then every mapping sets its objects' relationships; then the new objects are validated and
/// saved), and replaces the store whole, of the same type, only when all of it succeeded.
///
/// Several mapping models for one step run as passes, in order, into the same destination:
/// as in Core Data, a relationship expression finds only the objects of its own pass.
///
/// What would need the app's code (a migration policy class, a `FUNCTION` on an object of the
/// app's, a `CAST` to an app class) is refused by `init`, before anything is read or written:
/// running such a mapping without its code would give a different store than Core Data gives.
///
/// ```swift
/// let mapping = try MappingModel(contentsOf: url)
/// let manager = try MigrationManager(store: storeURL, from: v2, to: v3, mappings: [mapping])
/// print(manager.steps)
/// let counts = try manager.run()        // objects per destination entity
/// ```
///
/// Objects get new primary keys (in the order they are made); the store keeps its
/// `NSStoreUUID` and its other metadata, with the new version's hashes.
public struct MigrationManager: Sendable {
    public let url: URL
    public let source: ManagedObjectModel
    public let destination: ManagedObjectModel
    /// The mapping models, resolved against the two versions, in the order their passes run.
    public let mappings: [MappingModel]
    public let storeType: PersistentStoreCoordinator.StoreType
    /// What the migration does, one line per entity mapping, for `--dry-run`.
    public let steps: [String]

    /// Plans the migration of the store at `url`; throws `MigrationRefusal` naming the custom
    /// code any mapping needs, or `MappingModelError` when a mapping does not fit the versions
    /// (an entity, property, key path, filter key or entity mapping it names that they lack,
    /// see `MappingModel.resolved(from:to:)`). Nothing is read but the store's type.
    public init(store url: URL, from source: ManagedObjectModel, to destination: ManagedObjectModel, mappings: [MappingModel]) throws {
        self.url = url
        self.source = source
        self.destination = destination
        var refusals: [String] = []
        for mapping in mappings {
            refusals += mapping.customCode.map { "\(mapping.origin) needs the app's code, which Lade cannot run: \($0)" }
        }
        guard refusals.isEmpty else { throw MigrationRefusal(store: url.path, reasons: refusals, mapping: true) }
        self.mappings = try mappings.map { try $0.resolved(from: source, to: destination) }
        storeType = try PersistentStoreCoordinator.StoreType(detectingFileAt: url)
        guard storeType != .inMemory else {
            throw StoreError(.wrongStoreType, path: url.path, "an in-memory store has no file to migrate")
        }
        var steps: [String] = []
        for (pass, mapping) in self.mappings.enumerated() {
            let label = self.mappings.count > 1 ? "pass \(pass + 1) (\(URL(fileURLWithPath: mapping.origin).lastPathComponent)): " : ""
            for entity in mapping.entityMappings {
                let from = entity.sourceFetch.map { $0.predicate == "TRUEPREDICATE" ? $0.entity : "\($0.entity) where \($0.predicate)" } ?? "nothing"
                let mapped = (entity.attributeMappings + entity.relationshipMappings).filter { $0.valueExpression != nil }.map(\.name)
                steps.append(label + "\(entity.name) (\(entity.kind)): \(from) → \(entity.destinationEntityName ?? "nothing")"
                    + (mapped.isEmpty ? "" : "; sets \(mapped.joined(separator: ", "))"))
            }
            steps += mapping.notes.map { label + "note: " + $0 }
        }
        self.steps = steps
    }

    /// Objects read, made and saved at a time: what bounds the memory a migration takes.
    public var batchSize = 5_000

    /// Runs the migration; returns the number of objects of each destination entity (exactly
    /// that entity). On any failure the store is as it was.
    ///
    /// The destination is a store of the same type written whole (`WholeStoreWriting`): a
    /// SQLite store is built beside the old one, batch by batch (the objects of a batch
    /// forgotten once saved; the links from each source object to its new one kept as two
    /// numbers), then validated, batch by batch, and moved over the old file; an XML or binary
    /// store, which is read whole anyway, is rebuilt in memory and its file written anew
    /// beside the old one and renamed over it.
    @discardableResult
    public func run(progress: (@Sendable (String) -> Void)? = nil) throws -> [String: Int] {
        // A store that cannot be replaced is refused before the new one is built.
        try FileSystem.requireWritableStore(try FileSystem.resolvingLink(url), directoryUse: "the new store is built there and moved over the old one")
        let sourceCoordinator = PersistentStoreCoordinator(managedObjectModel: source)
        let sourceStore = try sourceCoordinator.addPersistentStore(type: storeType, at: url, readOnly: true)
        let metadata = Self.carried(sourceCoordinator.metadata(for: sourceStore), StoreMetadata.make(for: destination, storeType: storeType.rawValue))
        let writer = try storeType.wholeStoreWriter(at: url, model: destination, metadata: metadata, overwrite: true)
        defer { writer.discard() }
        // One snapshot of the old store for the whole read; a change another process commits
        // meanwhile would be lost by the replacement, so it stops the migration.
        let reader = sourceStore.wholeStoreReading
        let version = try reader.changeCounter()
        let counts = try reader.readingOneSnapshot {
            try migrate(from: sourceStore, sourceCoordinator, to: writer.store, progress: progress)
        }
        if let version, try reader.changeCounter() != version {
            throw MigrationFailure(store: url.path, code: "migration.storeChanged", "another process changed the store while it was migrated, so the new version was not moved into place; migrating again while nothing else writes to the store finishes it")
        }
        progress?("moving the new store into place")
        try writer.finish()
        return counts
    }

    /// The old store's metadata with the new version's hashes and identifiers.
    private static func carried(_ old: [String: PropertyListValue], _ made: [String: PropertyListValue]) -> [String: PropertyListValue] {
        var metadata = old
        for key in [StoreMetadata.Key.versionHashes, StoreMetadata.Key.versionHashesVersion, StoreMetadata.Key.versionHashesDigest,
                    StoreMetadata.Key.versionIdentifiers, StoreMetadata.Key.ladeVersionHashKind] {
            metadata[key] = made[key]
        }
        return metadata
    }

    /// Stages 1–3 from the source store into the destination store.
    private func migrate(from sourceStore: PersistentStore, _ sourceCoordinator: PersistentStoreCoordinator, to destinationStore: PersistentStore,
                         progress: (@Sendable (String) -> Void)?) throws -> [String: Int] {
        let damage = try sourceStore.damage(thorough: false)
        guard damage.isEmpty else { throw StoreError.damaged(damage, path: url.path) }
        let destinationCoordinator = PersistentStoreCoordinator(managedObjectModel: destination)
        try destinationCoordinator.appendStore(destinationStore)
        let sourceContext = ManagedObjectContext(concurrencyType: .privateQueue)
        sourceContext.persistentStoreCoordinator = sourceCoordinator
        let destinationContext = ManagedObjectContext(concurrencyType: .privateQueue)
        destinationContext.persistentStoreCoordinator = destinationCoordinator
        destinationContext.undoManager = nil
        destinationContext.validatesOnSave = false
        var counts: [String: Int] = [:]
        try sourceContext.performAndWait {
            try destinationContext.performAndWait {
                for (pass, mapping) in mappings.enumerated() {
                    var run = MappingRun(mapping: mapping, pass: pass, path: url.path, batchSize: max(1, batchSize),
                                         source: (sourceContext, sourceStore), destination: (destinationContext, destinationStore), progress: progress)
                    try run.createDestinationInstances()
                    try run.createRelationships()
                }
                // Stage 3: every new object checked against the new version's rules.
                progress?("validating the new objects")
                var failures: [ObjectValidationError.Failure] = []
                for entity in destination.entities where !entity.isAbstract {
                    var count = 0
                    try destinationStore.forEachBatch(ofEntity: entity.name, batchSize: max(1, batchSize)) { rows in
                        count += rows.count
                        if failures.count < 20 { failures += destinationContext.validationFailures(of: destinationContext.registeredObjects(for: rows)) }
                        destinationContext.reset()
                    }
                    counts[entity.name] = count
                }
                guard failures.isEmpty else {
                    throw MigrationFailure(store: url.path, "the migrated objects do not meet the new version's rules: \(ObjectValidationError(failures: Array(failures.prefix(20))))")
                }
            }
        }
        return counts
    }
}

/// A migration that started and could not finish: a value expression that fails on an object,
/// objects that do not validate. Nothing was written.
public struct MigrationFailure: LadeError, Sendable {
    public let store: String
    public let reason: String
    /// `migration.failed`; `migration.storeChanged` when another process wrote to the store
    /// during the migration (migrating again finishes it); `migration.noCurrentVersion` when the
    /// bundle names no current version and none was given to migrate to.
    public let code: String

    init(store: String, code: String = "migration.failed", _ reason: String) {
        self.store = store
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(store): the migration failed and the store is unchanged: \(reason)" }
}

// MARK: One pass

/// One mapping model's run: which new object each source object became (per entity mapping),
/// and the value expressions' evaluation. Objects are read, made and saved a batch at a time;
/// both contexts are reset after each batch.
private struct MappingRun {
    let mapping: MappingModel
    let pass: Int
    let path: String
    let batchSize: Int
    let source: ManagedObjectContext
    let sourceStore: PersistentStore
    let destination: ManagedObjectContext
    let destinationStore: PersistentStore
    let progress: (@Sendable (String) -> Void)?
    /// Per entity mapping: its source objects' keys (in increasing order) and the keys of the
    /// objects each became, in the mapping's destination entity.
    var associations: [String: Association] = [:]

    struct Association {
        var sourceEntity: String
        var destinationEntity: String
        private(set) var sourceKeys: [Int64] = []
        private(set) var destinationKeys: [Int64] = []
        /// Whether the new objects' keys rose as they were made (stores hand keys out in
        /// order), so that both columns can be searched by halving.
        private var destinationsAscending = true

        init(sourceEntity: String, destinationEntity: String) {
            self.sourceEntity = sourceEntity
            self.destinationEntity = destinationEntity
        }

        /// Records that the source object `source` became `destination` (sources come in key order).
        mutating func append(source: Int64, destination: Int64) {
            if let last = destinationKeys.last, destination <= last { destinationsAscending = false }
            sourceKeys.append(source)
            destinationKeys.append(destination)
        }

        func destinationKey(of source: Int64) -> Int64? {
            Self.position(of: source, in: sourceKeys).map { destinationKeys[$0] }
        }

        func sourceKey(of destination: Int64) -> Int64? {
            let found = destinationsAscending ? Self.position(of: destination, in: destinationKeys) : destinationKeys.firstIndex(of: destination)
            return found.map { sourceKeys[$0] }
        }

        private static func position(of key: Int64, in keys: [Int64]) -> Int? {
            var low = 0, high = keys.count
            while low < high {
                let middle = (low + high) / 2
                if keys[middle] < key { low = middle + 1 } else { high = middle }
            }
            return low < keys.count && keys[low] == key ? low : nil
        }
    }

    init(mapping: MappingModel, pass: Int, path: String, batchSize: Int, source: (ManagedObjectContext, PersistentStore),
         destination: (ManagedObjectContext, PersistentStore), progress: (@Sendable (String) -> Void)?) {
        self.mapping = mapping
        self.pass = pass
        self.path = path
        self.batchSize = batchSize
        (self.source, self.sourceStore) = source
        (self.destination, self.destinationStore) = destination
        self.progress = progress
    }

    /// Stage 1: for every source object of every entity mapping (its entity exactly, filtered
    /// by its predicate), a destination object with its attribute values.
    mutating func createDestinationInstances() throws {
        for entity in mapping.entityMappings {
            guard let fetch = entity.sourceFetch, let destinationName = entity.destinationEntityName else { continue }
            var predicate: FetchPredicate?
            if fetch.predicate != "TRUEPREDICATE" {
                do {
                    predicate = try FetchPredicate(format: fetch.predicate, arguments: [])
                } catch {
                    throw MappingModelError(mapping.origin, "entity mapping \(entity.name): its filter predicate '\(fetch.predicate)' does not parse: \(error)")
                }
            }
            var association = Association(sourceEntity: fetch.entity, destinationEntity: destinationName)
            try sourceStore.forEachBatch(ofEntity: fetch.entity, batchSize: batchSize) { rows in
                var made: [(Int64, ManagedObject)] = []
                for object in source.registeredObjects(for: rows) where try predicate?.evaluate(with: object) ?? true {
                    let new = try destination.insertObject(forEntityName: destinationName)
                    for property in entity.attributeMappings {
                        guard let expression = property.valueExpression else { continue }
                        let value = try evaluate(expression, source: object, destination: new, entity: entity, property: property.name)
                        try set(value, attribute: property.name, of: new, entity: entity, source: object)
                    }
                    made.append((object.objectID.primaryKey!, new))
                }
                try destination.save()
                for (key, new) in made {
                    association.append(source: key, destination: new.objectID.primaryKey!)
                }
                source.reset()
                destination.reset()
                progress?("\(entity.name): \(association.sourceKeys.count) \(destinationName) objects made")
            }
            associations[entity.name] = association
        }
    }

    /// Stage 2: every destination object's relationships, from its mapping's expressions. A
    /// batch ends early, saved and forgotten, once the objects it reached (a category's
    /// thousands of products) pass `memoryBound`.
    mutating func createRelationships() throws {
        for entity in mapping.entityMappings {
            let relationships = entity.relationshipMappings.filter { $0.valueExpression != nil }
            guard !relationships.isEmpty, let association = associations[entity.name] else { continue }
            var start = 0
            while start < association.sourceKeys.count {
                let range = start..<min(start + batchSize, association.sourceKeys.count)
                let sources = source.registeredObjects(for: try sourceStore.rows(for: range.map { ManagedObjectID(entityName: association.sourceEntity, storeIdentifier: sourceStore.identifier, primaryKey: association.sourceKeys[$0]) }))
                let news = destination.registeredObjects(for: try destinationStore.rows(for: range.map { ManagedObjectID(entityName: association.destinationEntity, storeIdentifier: destinationStore.identifier, primaryKey: association.destinationKeys[$0]) }))
                guard sources.count == range.count, news.count == range.count else {
                    throw MigrationFailure(store: path, "entity mapping \(entity.name): objects went missing while the migration ran")
                }
                for (object, new) in zip(sources, news) {
                    start += 1
                    for property in relationships {
                        let value = try evaluate(property.valueExpression!, source: object, destination: new, entity: entity, property: property.name)
                        let targets = try destinationObjects(value, entity: entity, property: property.name, source: object)
                        let relationship = destination.model.relationship(property.name, of: new.entity.name)!
                        if relationship.isToMany {
                            try new.setValue(targets, forKey: property.name)
                        } else {
                            guard targets.count <= 1 else {
                                throw failure(entity, property.name, object, "it gives \(targets.count) objects for the to-one relationship \(property.name)")
                            }
                            try new.setObject(targets.first, forKey: property.name)
                        }
                    }
                    if source.registeredCount + destination.registeredCount > memoryBound { break }
                }
                try destination.save()
                source.reset()
                destination.reset()
                progress?("\(entity.name): relationships of \(start) objects set")
            }
        }
    }

    /// Objects the two contexts may hold before a batch is cut short.
    var memoryBound: Int { max(batchSize * 8, 1_000) }

    /// The new objects `sources` became through the entity mapping `name` (as faults).
    func destinations(of sources: [ManagedObject], mapping name: String) -> [ManagedObject] {
        guard let association = associations[name] else { return [] }
        return sources.compactMap { object in
            guard object.entity.name == association.sourceEntity, let key = object.objectID.primaryKey,
                  let made = association.destinationKey(of: key) else { return nil }
            return destination.registeredObject(for: ManagedObjectID(entityName: association.destinationEntity, storeIdentifier: destinationStore.identifier, primaryKey: made))
        }
    }

    // MARK: Values

    /// What an expression gives: a value, an object (of the source or the destination), or a
    /// collection of them.
    enum Value {
        case null
        case attribute(AttributeValue)
        case object(ManagedObject)
        case collection([Value])

        var members: [Value] {
            switch self {
            case .null: []
            case .collection(let members): members
            default: [self]
            }
        }
    }

    func failure(_ entity: MappingModel.EntityMapping, _ property: String, _ object: ManagedObject, _ reason: String) -> MigrationFailure {
        Place(path: path, entity: entity.name, property: property, object: object, expression: nil)(reason)
    }

    /// Where an expression is evaluated, for the failure it may raise: `fail("reason")`.
    struct Place {
        let path: String
        let entity: String
        let property: String
        let object: ManagedObject
        let expression: MappingExpression?

        func callAsFunction(_ reason: String) -> MigrationFailure {
            let id = object.objectID
            var key = "?"
            if let number = id.primaryKey { key = String(number) }
            return MigrationFailure(store: path, "entity mapping \(entity), property \(property), on \(id.entityName) \(key): "
                + (expression.map { "\($0): " } ?? "") + reason)
        }
    }

    func evaluate(_ expression: MappingExpression, source object: ManagedObject, destination new: ManagedObject,
                  entity: MappingModel.EntityMapping, property: String, depth: Int = 0) throws -> Value {
        func sub(_ inner: MappingExpression) throws -> Value {
            try evaluate(inner, source: object, destination: new, entity: entity, property: property, depth: depth + 1)
        }
        let fail = Place(path: path, entity: entity.name, property: property, object: object, expression: expression)
        guard depth < KeyedArchive.maximumDepth else { throw fail("it nests too deep") }
        switch expression {
        case .constant(let value): return try Self.value(value)
        case .variable("source"): return .object(object)
        case .variable("destination"): return .object(new)
        case .variable(let name): throw fail("$\(name) has no value a migration without the app's code can give")
        case .evaluatedObject: return .object(object)
        case .keyPath(let operand, let path): return try walk(try sub(operand), path[...], fail)
        case .aggregate(let members): return .collection(try members.map(sub))
        case .fetch, .unsupported: throw fail("it cannot be a value expression")
        case .function(.variable("manager")?, let selector, let arguments):
            guard arguments.count == 2, case .constant(.attribute(.string(let name))) = arguments[0] else {
                throw fail("the migration manager's \(selector) takes a name and the source objects")
            }
            let given = try sub(arguments[1])
            switch selector {
            case "destinationInstancesForEntityMappingNamed:sourceInstances:":
                guard mapping.entityMappings.contains(where: { $0.name == name }) else {
                    throw fail("the mapping model has no entity mapping named \(name)" + (pass > 0 ? " in this pass" : ""))
                }
                return .collection(destinations(of: try sourceObjects(given, fail), mapping: name).map(Value.object))
            case "destinationInstancesForSourceRelationshipNamed:sourceInstances:":
                // Whichever mapping each source object went through, into the destination
                // relationship's entity hierarchy (each object once, in order).
                guard let relationship = destination.model.relationship(property, of: new.entity.name) else {
                    throw fail("it is not the value of a relationship")
                }
                let kinds = Set(destination.model.hierarchy(from: relationship.destinationEntityName).map(\.name))
                var seen: Set<ObjectIdentifier> = []
                var result: [Value] = []
                for member in try sourceObjects(given, fail) {
                    for candidate in mapping.entityMappings where candidate.sourceEntityName == member.entity.name
                        && candidate.destinationEntityName.map(kinds.contains) == true {
                        for made in destinations(of: [member], mapping: candidate.name) where seen.insert(ObjectIdentifier(made)).inserted {
                            result.append(.object(made))
                        }
                    }
                }
                return .collection(result)
            case "sourceInstancesForEntityMappingNamed:destinationInstances:":
                guard let association = associations[name] else { throw fail("the mapping model has no entity mapping named \(name)") }
                return .collection(try sourceObjects(given, fail).compactMap { made -> Value? in
                    guard made.entity.name == association.destinationEntity, let key = made.objectID.primaryKey,
                          let original = association.sourceKey(of: key) else { return nil }
                    return .object(source.registeredObject(for: ManagedObjectID(entityName: association.sourceEntity, storeIdentifier: sourceStore.identifier, primaryKey: original)))
                })
            default:
                throw fail("the migration manager has no method \(selector) a value expression may call")
            }
        case .function(nil, let selector, let arguments):
            let values = try arguments.map(sub)
            return try Self.builtIn(selector, values, fail)
        case .function:
            throw fail("it calls code of the app's")
        }
    }

    private func sourceObjects(_ value: Value, _ fail: Place) throws -> [ManagedObject] {
        try value.members.map { member in
            guard case .object(let object) = member else { throw fail("it gives a value where objects were expected") }
            return object
        }
    }

    /// The objects a relationship expression gives, which must be destination objects.
    private func destinationObjects(_ value: Value, entity: MappingModel.EntityMapping, property: String, source object: ManagedObject) throws -> [ManagedObject] {
        try value.members.map { member in
            guard case .object(let target) = member, target.managedObjectContext === destination else {
                throw failure(entity, property, object, "its value is not objects of the new store (a relationship's value must come from the migration manager's destinationInstances… functions)")
            }
            return target
        }
    }

    /// `valueForKeyPath:` on a value: attributes, to-one and to-many relationships, and the
    /// collection operators.
    private func walk(_ value: Value, _ path: ArraySlice<String>, _ fail: Place) throws -> Value {
        guard let key = path.first else { return value }
        let rest = path.dropFirst()
        if key.hasPrefix("@") {
            let members = value.members
            switch key {
            case "@count":
                guard rest.isEmpty else { throw fail("@count ends a key path") }
                return .attribute(.integer(Int64(members.count)))
            case "@sum", "@avg", "@min", "@max":
                let values = try members.map { member -> PredicateValue in
                    switch try walk(member, rest, fail) {
                    case .null: return .null
                    case .attribute(let attribute): return .attribute(attribute)
                    default: throw fail("\(key) is over values, not objects")
                    }
                }
                let op = CollectionOperator(rawValue: key)!
                return try Self.value(PredicateEvaluator.aggregate(op, values))
            case "@unionOfObjects", "@distinctUnionOfObjects", "@unionOfSets", "@distinctUnionOfSets", "@unionOfArrays", "@distinctUnionOfArrays":
                let flattens = !key.hasSuffix("Objects")
                var result: [Value] = []
                for member in members {
                    let reached = try walk(member, rest, fail)
                    result += flattens ? reached.members : [reached]
                }
                if key.hasPrefix("@distinct") { result = Self.distinct(result) }
                return .collection(result)
            default:
                throw fail("\(key) is not a collection operator Lade knows")
            }
        }
        switch value {
        case .null: return .null
        case .collection(let members): return .collection(try members.map { try walk($0, path, fail) })
        case .attribute: throw fail("'\(key)' is asked of a value, which has no properties")
        case .object(let object):
            let model = object.managedObjectContext!.model
            if model.attribute(key, of: object.entity.name) != nil {
                return try walk(object.attributeValue(forKey: key).map(Value.attribute) ?? .null, rest, fail)
            }
            guard let relationship = model.relationship(key, of: object.entity.name) else {
                throw fail("\(object.entity.name) has no property '\(key)'")
            }
            if relationship.isToMany { return try walk(.collection(object.objects(forKey: key).map(Value.object)), rest, fail) }
            return try walk(object.object(forKey: key).map(Value.object) ?? .null, rest, fail)
        }
    }

    private static func distinct(_ values: [Value]) -> [Value] {
        var objects: Set<ObjectIdentifier> = []
        var attributes: Set<AttributeValue> = []
        var sawNull = false
        return values.filter { value in
            switch value {
            case .object(let object): return objects.insert(ObjectIdentifier(object)).inserted
            case .attribute(let attribute): return attributes.insert(attribute).inserted
            case .null: defer { sawNull = true }; return !sawNull
            case .collection: return true
            }
        }
    }

    private static func value(_ constant: PredicateValue) throws -> Value {
        switch constant {
        case .null: return .null
        case .attribute(let attribute): return .attribute(attribute)
        case .collection(let members): return .collection(try members.map(value))
        case .object: throw MigrationFailure(store: "store", "an object ID cannot be a constant of a mapping model")
        }
    }

    /// Foundation's expression functions on numbers and text; exact or refused.
    private static func builtIn(_ selector: String, _ values: [Value], _ fail: Place) throws -> Value {
        func number(_ value: Value) throws -> (integer: Int64?, double: Double) {
            switch value {
            case .attribute(.integer(let n)): return (n, Double(n))
            case .attribute(.double(let d)): return (nil, d)
            case .attribute(.float(let f)): return (nil, Double(f))
            case .attribute(.bool(let b)): return (b ? 1 : 0, b ? 1 : 0)
            default: throw fail("\(selector) takes numbers")
            }
        }
        func arithmetic(_ integer: (Int64, Int64) -> (Int64, Bool), _ double: (Double, Double) -> Double) throws -> Value {
            guard values.count == 2 else { throw fail("\(selector) takes two numbers") }
            if case .null = values[0] { return .null }
            if case .null = values[1] { return .null }
            let a = try number(values[0]), b = try number(values[1])
            if let x = a.integer, let y = b.integer {
                let (result, overflow) = integer(x, y)
                guard !overflow else { throw fail("\(selector) overflows 64-bit integers") }
                return .attribute(.integer(result))
            }
            let result = double(a.double, b.double)
            guard result.isFinite else { throw fail("\(selector) gives \(result), which no attribute keeps") }
            return .attribute(.double(result))
        }
        switch selector {
        case "add:to:": return try arithmetic({ $0.addingReportingOverflow($1) }, +)
        case "from:subtract:": return try arithmetic({ $0.subtractingReportingOverflow($1) }, -)
        case "multiply:by:": return try arithmetic({ $0.multipliedReportingOverflow(by: $1) }, *)
        case "divide:by:":
            guard values.count == 2 else { throw fail("divide:by: takes two numbers") }
            if case .null = values[0] { return .null }
            let divisor = try number(values[1])
            guard divisor.double != 0 else { throw fail("it divides by zero") }
            return .attribute(.double(try number(values[0]).double / divisor.double))
        case "modulus:by:": return try arithmetic({ $1 == 0 ? (0, true) : $0.remainderReportingOverflow(dividingBy: $1) }, { $0.truncatingRemainder(dividingBy: $1) })
        case "abs:":
            guard values.count == 1 else { throw fail("abs: takes one number") }
            let a = try number(values[0])
            if let n = a.integer { guard n != .min else { throw fail("abs: overflows") }; return .attribute(.integer(Swift.abs(n))) }
            return .attribute(.double(Swift.abs(a.double)))
        case "lowercase:", "uppercase:":
            guard values.count == 1 else { throw fail("\(selector) takes one text") }
            if case .null = values[0] { return .null }
            guard case .attribute(.string(let text)) = values[0] else { throw fail("\(selector) takes text") }
            return .attribute(.string(selector == "lowercase:" ? text.lowercased() : text.uppercased()))
        case "now": return .attribute(.date(Date()))
        case "count:": return .attribute(.integer(Int64(values.first?.members.count ?? 0)))
        case "sum:", "min:", "max:", "average:":
            let op: CollectionOperator = ["sum:": .sum, "min:": .min, "max:": .max, "average:": .avg][selector]!
            let members = try values.flatMap(\.members).map { member -> PredicateValue in
                guard case .attribute(let attribute) = member else { throw fail("\(selector) takes values") }
                return .attribute(attribute)
            }
            return try value(PredicateEvaluator.aggregate(op, members))
        case "castObject:toType:":
            guard values.count == 2 else { throw fail("CAST takes a value and a type") }
            return values[0]
        default:
            throw fail("\(selector) is not a function Lade runs")
        }
    }

    /// Sets an attribute of a new object from an expression's value, converting between
    /// number types only where the value is kept exactly.
    private func set(_ value: Value, attribute name: String, of new: ManagedObject, entity: MappingModel.EntityMapping, source object: ManagedObject) throws {
        guard let attribute = destination.model.attribute(name, of: new.entity.name) else { return }
        let converted: AttributeValue?
        switch value {
        case .null: converted = nil
        case .attribute(let given):
            guard let exact = Self.converted(given, to: attribute.type) else {
                throw failure(entity, name, object, "its value \(given.canonicalText) cannot be kept exactly as \(attribute.type.rawValue)")
            }
            converted = exact
        case .object, .collection:
            throw failure(entity, name, object, "it gives objects or a collection where the attribute \(name) (\(attribute.type.rawValue)) needs a value")
        }
        try new.setAttributeValue(converted, forKey: name)
    }

    static func converted(_ value: AttributeValue, to type: AttributeType) -> AttributeValue? {
        if value.fits(type) { return value }
        switch (value, type) {
        case (.integer(let n), .double): return Double(exactly: n).map { .double($0) }
        case (.integer(let n), .float): return Float(exactly: n).map { .float($0) }
        case (.integer(let n), .decimal): return .decimal(Decimal(n))
        case (.integer(let n), .boolean) where n == 0 || n == 1: return .bool(n == 1)
        case (.bool(let b), _) where type.isInteger: return .integer(b ? 1 : 0)
        case (.double(let d), _) where type.isInteger:
            guard let n = Int64(exactly: d), type.integerRange!.contains(n) else { return nil }
            return .integer(n)
        case (.double(let d), .float): return Float(exactly: d).map { .float($0) }
        case (.float(let f), .double): return .double(Double(f))
        case (.float(let f), _) where type.isInteger:
            guard let n = Int64(exactly: f), type.integerRange!.contains(n) else { return nil }
            return .integer(n)
        default: return nil
        }
    }
}
