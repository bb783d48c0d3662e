import Foundation

/// How `migratePersistentStore(_:to:options:type:)` and `migrateStore(at:…)` work.
public struct StoreMigrationOptions: Sendable {
    /// Replace a store already at the destination; by default an existing file is refused.
    public var overwrite = false
    /// Objects read from the source at a time, and written per transaction to a SQLite
    /// destination: what bounds the memory a migration from SQLite to SQLite takes.
    public var batchSize = 5_000
    /// Called after each batch (on the migrating thread): for progress reports.
    public var progress: (@Sendable (StoreMigrationSummary) -> Void)?

    public init(overwrite: Bool = false, batchSize: Int = 5_000, progress: (@Sendable (StoreMigrationSummary) -> Void)? = nil) {
        self.overwrite = overwrite
        self.batchSize = batchSize
        self.progress = progress
    }
}

extension PersistentStoreCoordinator {
    /// Moves `store` to another location and/or store type, as Core Data's
    /// `migratePersistentStore(_:to:options:withType:)` does: the objects are copied, in batches,
    /// into a new store of `type` built beside `url` and moved into place when complete; the old
    /// store is removed from this coordinator and the new one, added in its place, is returned.
    /// The source file is never written. Without `options.overwrite`, an existing file at `url`
    /// is refused.
    ///
    /// The new store keeps the source's metadata (its `NSStoreUUID` included, so object URIs
    /// keep naming the same store) with `NSStoreType` set to the new type. Objects keep their
    /// primary keys where the destination allows (SQLite to SQLite, atomic to atomic, atomic to
    /// SQLite); from SQLite, whose keys count per inheritance hierarchy, to an atomic store,
    /// whose keys are unique across entities, each hierarchy's keys are shifted past the
    /// previous one's. Either way the order of objects' keys within an entity is kept.
    ///
    /// ```swift
    /// let sqlite = try coordinator.addPersistentStore(type: .sqlite, at: sqliteURL)
    /// let xml = try coordinator.migratePersistentStore(sqlite, to: xmlURL, type: .xml)
    /// ```
    ///
    /// Objects registered in contexts belong to the old store: reset the contexts afterwards.
    @discardableResult
    public func migratePersistentStore(_ store: PersistentStore, to url: URL?, options: StoreMigrationOptions = .init(), type: StoreType) throws -> PersistentStore {
        guard persistentStores.contains(where: { $0 === store }) else {
            throw StoreError(.notFound, path: store.url?.path ?? store.type, "this store is not added to the coordinator; add it before migrating it")
        }
        // A SQLite store is read through a connection of its own, so the copy reads one snapshot.
        let reader = try store.wholeStoreReading.separateReader(model: managedObjectModel)
        let (_, built) = try StoreMigration(model: managedObjectModel, options: options).copy(from: reader, to: url, type: type)
        let added = try built ?? Self.openStore(type: type, at: url, model: managedObjectModel, readOnly: false)
        remove(store)
        // Same UUID as the store it replaces, which is gone from the list now.
        try appendStore(added)
        return added
    }

    /// Copies the store file at `source` into a new store of `type` at `destination`, without
    /// a stack of the caller's: what `lade convert` runs. The source is opened read-only and
    /// never written; the destination is built beside its final path and moved into place only
    /// when complete, so a crash at any moment leaves no destination, or a complete one (or,
    /// with `overwrite`, the file that was there before).
    ///
    /// ```swift
    /// let summary = try PersistentStoreCoordinator.migrateStore(
    ///     at: URL(fileURLWithPath: "catalog.sqlite"), to: URL(fileURLWithPath: "catalog.xml"),
    ///     type: .xml, model: model)
    /// summary.objectCount
    /// ```
    @discardableResult
    public static func migrateStore(
        at source: URL, ofType sourceType: StoreType? = nil, to destination: URL, type: StoreType,
        model: ManagedObjectModel, options: StoreMigrationOptions = .init()
    ) throws -> StoreMigrationSummary {
        guard type != .inMemory else {
            throw StoreError(.wrongStoreType, path: destination.path, "an in-memory store has no file to convert to; choose sqlite, xml or binary")
        }
        // A PostgreSQL source (postgresql://…) is no file: opening it says whether it is there.
        guard StoreType(locationOf: source) != nil || FileManager.default.fileExists(atPath: source.path) else {
            throw StoreError(.notFound, path: source.path, "no store here to convert")
        }
        let store = try openStore(type: sourceType, at: source, model: model, readOnly: true)
        return try StoreMigration(model: model, options: options).copy(from: store, to: destination, type: type).summary
    }

}

extension PersistentStoreCoordinator {
    /// Removes the temporary files that runs killed while writing a store at `url` left beside
    /// it (`.NAME.lade-…`, with their `-wal`, `-shm` and `-journal`, and `..NAME.lade-…`, left
    /// while such a file was itself being made), and returns their names. For a store reached
    /// through a symbolic link, those beside the file it names, where they are made, as well.
    /// Nothing else ever reads them. Call it only while no other process writes that store
    /// (`lade convert` holds the store's lock when it does).
    @discardableResult
    package static func removeInterruptedWrites(beside url: URL) -> [String] {
        StagedFile.removeInterruptedWrites(beside: url)
    }
}

/// One migration: reads every object of a source store, batch by batch, and writes them with
/// their relationships into a new store.
struct StoreMigration {
    let model: ManagedObjectModel
    let options: StoreMigrationOptions

    init(model: ManagedObjectModel, options: StoreMigrationOptions) {
        self.model = model
        self.options = options
    }

    private var batchSize: Int { max(1, options.batchSize) }

    /// Copies `source` to a new store of `type` at `url`, with `source`'s metadata; an
    /// in-memory destination (no `url`) is returned as `built`.
    func copy(from source: PersistentStore, to url: URL?, type: PersistentStoreCoordinator.StoreType) throws -> (summary: StoreMigrationSummary, built: PersistentStore?) {
        if let url {
            try checkDestination(url, source: source)
        } else if type != .inMemory {
            throw StoreError(.notFound, path: type.rawValue, "a \(type.rawValue) store needs a file URL to migrate to")
        }
        return try source.wholeStoreReading.readingOneSnapshot {
            // What the copy would skip (an unknown Z_ENT) or carry as a key to nothing is
            // refused, with counts, before anything is written.
            let damage = try source.damage(thorough: false)
            guard damage.isEmpty else { throw StoreError.damaged(damage, path: source.url?.path ?? source.type) }
            var metadata = source.metadata
            metadata[StoreMetadata.Key.storeUUID] = .string(metadata[StoreMetadata.Key.storeUUID]?.stringValue ?? source.identifier)
            let writer = try type.wholeStoreWriter(at: url, model: model, metadata: metadata, overwrite: options.overwrite)
            defer { writer.discard() }
            let summary = try write(source, into: writer)
            // Keys and entity numbers are the source's: its history's changes name the same objects.
            if let history = try source.historyKeeping?.historyTableRows() { try writer.writeHistory(history) }
            return (summary, try writer.finish())
        }
    }

    // MARK: Objects

    /// Writes every object of `source` into `writer`: as they are when the writer keeps them
    /// as the source does, else batch by batch in key order, entity by entity, each with the
    /// to-many destinations the writer takes with its objects, then, once every object is in,
    /// those it keeps apart from them.
    private func write(_ source: PersistentStore, into writer: WholeStoreWriting) throws -> StoreMigrationSummary {
        let whole = source.wholeStoreReading
        if let summary = try whole.writeObjectsAsTheyAre(into: writer) {
            options.progress?(summary)
            return summary
        }
        let keys = try keyMap(for: whole, into: writer)
        var summary = StoreMigrationSummary()
        for entity in model.entities where !entity.isAbstract {
            let withObjects = model.relationships(of: entity.name).filter { writer.toManyWriting(of: $0) == .withObjects }
            try source.forEachBatch(ofEntity: entity.name, batchSize: batchSize) { rows in
                var objects: [WholeStoreObject] = []
                objects.reserveCapacity(rows.count)
                var carried = 0
                for row in rows {
                    let owner = keys.id(row.objectID)
                    var object = WholeStoreObject(row: StoreRow(objectID: owner, version: row.version, layout: row.layout,
                                                                values: row.values, toOneIDs: row.toOneIDs.map { $0.map(keys.id) }))
                    object.toMany = try destinations(of: row.objectID, owner: owner, withObjects, in: source, keys: keys, counting: &summary)
                    objects.append(object)
                    // Objects with many to-many destinations (the one side of a large
                    // one-to-many) go out before the batch is read, so a batch holds at most
                    // about `batchSize` destinations besides its rows.
                    carried += object.toMany.reduce(0) { $0 + $1.destinations.count }
                    if carried >= batchSize {
                        try writer.write(objects)
                        objects.removeAll(keepingCapacity: true)
                        carried = 0
                    }
                }
                if !objects.isEmpty { try writer.write(objects) }
                summary.objects[entity.name, default: 0] += rows.count
                options.progress?(summary)
            }
        }
        for entity in model.entities where !entity.isAbstract {
            let afterObjects = model.relationships(of: entity.name).filter { writer.toManyWriting(of: $0) == .afterObjects }
            guard !afterObjects.isEmpty else { continue }
            try source.forEachBatch(ofEntity: entity.name, batchSize: batchSize) { rows in
                var toMany: [WholeStoreObject.ToMany] = []
                for row in rows {
                    toMany += try destinations(of: row.objectID, owner: keys.id(row.objectID), afterObjects, in: source, keys: keys, counting: &summary)
                }
                try writer.writeToMany(toMany)
                options.progress?(summary)
            }
        }
        return summary
    }

    /// The destinations of `relationships` of the source object `id` (those it has), as the
    /// new store's objects; counted in `summary` as `StoreMigrationSummary` counts them.
    private func destinations(of id: ManagedObjectID, owner: ManagedObjectID, _ relationships: [RelationshipDescription], in source: PersistentStore,
                              keys: KeyMap, counting summary: inout StoreMigrationSummary) throws -> [WholeStoreObject.ToMany] {
        var result: [WholeStoreObject.ToMany] = []
        for relationship in relationships {
            let destinations = try source.relatedObjectIDs(of: id, relationship: relationship.name)
            guard !destinations.isEmpty else { continue }
            result.append(.init(owner: owner, relationship: relationship, destinations: destinations.map(keys.id)))
            if model.countsLinks(relationship) { summary.relationshipLinks += destinations.count }
        }
        return result
    }

    // MARK: Destination checks

    private func checkDestination(_ given: URL, source: PersistentStore) throws {
        if let destination = try PostgreSQLLocation(url: given) {
            // Written over, the source would be dropped while it is read (the writer waiting
            // for the reader's locks for ever): refused, however the URL is spelled.
            if let sourceURL = source.url, let origin = try PostgreSQLLocation(url: sourceURL), origin.isSameStore(as: destination) {
                throw StoreError(.alreadyExists, path: destination.redacted, "the destination is the source itself; choose another destination (the source is never written)")
            }
            return
        }
        let manager = FileManager.default
        // A symbolic link is written through (and one that leads nowhere refused here).
        let url = try FileSystem.resolvingLink(given)
        let path = url.path
        if let sourceURL = source.url, sourceURL.resolvingSymlinksInPath().standardizedFileURL == url.resolvingSymlinksInPath().standardizedFileURL || sameFile(sourceURL.path, path) {
            throw StoreError(.alreadyExists, path: path, "the destination is the source itself; choose another destination (the source is never written)")
        }
        // Neither the source's companions (-wal, -shm, the lock) nor a device, pipe or socket.
        let sourceFiles = source.url.map { OutputFile.storeFiles($0).map { OutputFile.Read($0.url, $0.what.replacingOccurrences(of: "the store", with: "the source store")) } } ?? []
        if try OutputFile.check(url, role: "the destination", reads: sourceFiles) == .stream {
            throw StoreError(.alreadyExists, path: path, "the destination is a device, pipe or socket, which a store cannot be; give a file path")
        }
        if manager.fileExists(atPath: path) && !options.overwrite {
            throw StoreError(.alreadyExists, path: path, "a file is already there; remove it, choose another destination, or let the conversion overwrite it (`StoreMigrationOptions.overwrite`)")
        }
        let directory = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw StoreError(.notFound, path: path, "the directory \(directory) does not exist; create it first")
        }
        guard access(directory, W_OK) == 0 else {
            throw StoreError(.io, path: path, "the directory \(directory) is not writable: \(String(cString: strerror(errno)))")
        }
    }

    private func sameFile(_ a: String, _ b: String) -> Bool {
        var first = stat(), second = stat()
        guard stat(a, &first) == 0, stat(b, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    // MARK: Keys

    /// Primary keys in the destination: kept, or (SQLite to atomic) shifted per hierarchy so
    /// keys stay unique across entities; object IDs of the destination store.
    private struct KeyMap {
        var offsets: [String: Int64] = [:]
        let rootOf: [String: String]
        let storeIdentifier: String

        func key(_ id: ManagedObjectID) -> Int64 {
            id.primaryKey! + (offsets.isEmpty ? 0 : offsets[rootOf[id.entityName] ?? id.entityName] ?? 0)
        }

        func id(_ id: ManagedObjectID) -> ManagedObjectID {
            ManagedObjectID(entityName: id.entityName, storeIdentifier: storeIdentifier, primaryKey: key(id))
        }
    }

    private func keyMap(for source: WholeStoreReading, into writer: WholeStoreWriting) throws -> KeyMap {
        var map = KeyMap(rootOf: Dictionary(uniqueKeysWithValues: model.entities.map { ($0.name, model.rootEntity(of: $0.name)!.name) }),
                         storeIdentifier: writer.store.identifier)
        guard writer.keysUniqueAcrossEntities, let largest = try source.largestKeysPerHierarchy() else { return map }
        var next = writer.firstKey - 1
        for (root, keys) in largest {
            map.offsets[root] = next
            next += keys
        }
        return map
    }
}
