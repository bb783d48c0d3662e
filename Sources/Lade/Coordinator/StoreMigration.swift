import Foundation
import OrderedCollections

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

/// What a migration copied.
public struct StoreMigrationSummary: Sendable, Equatable {
    /// Objects copied, by entity (exactly that entity, not counting subentities).
    public var objects: [String: Int] = [:]
    /// Destinations copied for to-many relationships that the destination keeps apart from
    /// the objects' rows (many-to-many links, ordered relationships' positions).
    public var relationshipLinks = 0

    public var objectCount: Int { objects.values.reduce(0, +) }
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
        let reader = try (store as? WholeStoreReading)?.separateReader(model: managedObjectModel) ?? store
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
        guard FileManager.default.fileExists(atPath: source.path) else {
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
    public static func removeInterruptedWrites(beside url: URL) -> [String] {
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

    /// Copies `source` to a new store of `type` at `url`; an in-memory destination (no `url`)
    /// is returned as `built`. The new store takes `source`'s metadata, or `metadata` (a
    /// mapping migration's: the old store's, with the new version's hashes).
    func copy(from source: PersistentStore, to url: URL?, type: PersistentStoreCoordinator.StoreType,
              metadata given: [String: PropertyListValue]? = nil) throws -> (summary: StoreMigrationSummary, built: PersistentStore?) {
        if let url {
            try checkDestination(url, source: source)
        } else if type != .inMemory {
            throw StoreError(.notFound, path: type.rawValue, "a \(type.rawValue) store needs a file URL to migrate to")
        }
        guard let whole = source as? WholeStoreReading else { return try copyReading(source, to: url, type: type, metadata: given) }
        return try whole.readingOneSnapshot { try copyReading(source, to: url, type: type, metadata: given) }
    }

    /// `copy`, its source read in one snapshot.
    private func copyReading(_ source: PersistentStore, to url: URL?, type: PersistentStoreCoordinator.StoreType,
                             metadata given: [String: PropertyListValue]?) throws -> (summary: StoreMigrationSummary, built: PersistentStore?) {
        // What the copy would skip (an unknown Z_ENT) or carry as a key to nothing is refused,
        // with counts, before anything is written.
        let damage = try source.damage(thorough: false)
        guard damage.isEmpty else { throw StoreError.damaged(damage, path: source.url?.path ?? source.type) }
        var metadata = given ?? source.metadata
        let identifier = metadata[StoreMetadata.Key.storeUUID]?.stringValue ?? source.identifier
        switch type {
        case .sqlite:
            metadata[StoreMetadata.Key.storeType] = .string(StoreMetadata.sqliteStoreType)
            metadata[StoreMetadata.Key.autoVacuumLevel] = metadata[StoreMetadata.Key.autoVacuumLevel] ?? .string("2")
            return (try copyToSQLite(from: source, at: url!, identifier: identifier, metadata: metadata), nil)
        case .xml, .binary, .inMemory:
            let storeType = switch type {
            case .xml: StoreMetadata.xmlStoreType
            case .binary: StoreMetadata.binaryStoreType
            default: StoreMetadata.inMemoryStoreType
            }
            metadata[StoreMetadata.Key.storeType] = .string(storeType)
            metadata[StoreMetadata.Key.autoVacuumLevel] = nil
            metadata[StoreMetadata.Key.storeUUID] = .string(identifier)
            let (contents, summary) = try atomicContents(from: source, metadata: metadata, firstKey: type.atomicFileFormat?.firstKey ?? 1)
            guard let format = type.atomicFileFormat, let url else {
                return (summary, try InMemoryStore(model: model, contents: contents))
            }
            try format.check(model, path: url.path)
            try retireIfOverwriting(url)
            let write: (FileOutput) throws -> Void = { try format.write(contents, model: model, to: $0) }
            try options.overwrite ? AtomicFileWriter.replace(url, write) : AtomicFileWriter.create(url, write)
            return (summary, nil)
        }
    }

    // MARK: Destination checks

    private func checkDestination(_ given: URL, source: PersistentStore) throws {
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
            throw StoreError(.alreadyExists, path: path, "a file is already there; remove it, choose another destination, or overwrite it (lade convert --overwrite)")
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
    /// keys stay unique across entities.
    private struct KeyMap {
        var offsets: [String: Int64] = [:]
        let rootOf: [String: String]

        func key(_ id: ManagedObjectID) -> Int64 {
            id.primaryKey! + (offsets.isEmpty ? 0 : offsets[rootOf[id.entityName] ?? id.entityName] ?? 0)
        }
    }

    private func keyMap(for source: PersistentStore, uniqueAcrossEntities: Bool, firstKey: Int64) throws -> KeyMap {
        var map = KeyMap(rootOf: Dictionary(uniqueKeysWithValues: model.entities.map { ($0.name, model.rootEntity(of: $0.name)!.name) }))
        guard uniqueAcrossEntities, let largest = try (source as? WholeStoreReading)?.largestKeysPerHierarchy() else { return map }
        var next = firstKey - 1
        for (root, keys) in largest {
            map.offsets[root] = next
            next += keys
        }
        return map
    }

    // MARK: To SQLite

    private func copyToSQLite(from source: PersistentStore, at url: URL, identifier: String, metadata: [String: PropertyListValue]) throws -> StoreMigrationSummary {
        let temporary = try StagedFile(beside: url)
        defer { temporary.remove() }
        let summary = try fillSQLite(at: temporary.url, for: url, from: source, identifier: identifier, metadata: metadata)
        try moveIntoPlace(temporary)
        return summary
    }

    /// Moves the closed SQLite store `temporary` into place: with `overwrite`, over the store
    /// there (retired first), else only where no file is.
    func moveIntoPlace(_ temporary: StagedFile) throws {
        let replacing = options.overwrite && FileManager.default.fileExists(atPath: temporary.target.path)
        if replacing { try retireIfOverwriting(temporary.target) }
        try temporary.moveIntoPlace(replacing ? .replace : .create, subject: "the source")
    }

    /// Builds the new store at `temporary` and closes it (the store goes out of scope here).
    private func fillSQLite(at temporary: URL, for url: URL, from source: PersistentStore, identifier: String, metadata: [String: PropertyListValue]) throws -> StoreMigrationSummary {
        let destination = try SQLiteStore.create(at: temporary, model: model, identifier: identifier, metadata: metadata)
        let keys = try keyMap(for: source, uniqueAcrossEntities: false, firstKey: 1)
        var summary = StoreMigrationSummary()
        do {
            for entity in model.entities where !entity.isAbstract {
                try source.forEachBatch(ofEntity: entity.name, batchSize: batchSize) { rows in
                    var request = StoreSaveRequest()
                    request.inserted.reserveCapacity(rows.count)
                    for row in rows {
                        let toOne = row.toOneIDs.map { $0.map { ManagedObjectID(entityName: $0.entityName, storeIdentifier: identifier, primaryKey: keys.key($0)) } }
                        request.inserted.append(.init(
                            objectID: ManagedObjectID(entityName: row.objectID.entityName, storeIdentifier: identifier, primaryKey: keys.key(row.objectID)),
                            positional: .init(layout: row.layout, values: row.values, toOneIDs: toOne, changedAttributes: nil, changedToOne: nil)))
                    }
                    try destination.save(request)
                    summary.objects[entity.name, default: 0] += rows.count
                    options.progress?(summary)
                }
            }
            // Relationships the destination keeps apart from the rows, once every row is in.
            for entity in model.entities where !entity.isAbstract {
                let separate = model.relationships(of: entity.name).filter(keptApart)
                guard !separate.isEmpty else { continue }
                try source.forEachBatch(ofEntity: entity.name, batchSize: batchSize) { rows in
                    var request = StoreSaveRequest()
                    for row in rows {
                        let owner = ManagedObjectID(entityName: row.objectID.entityName, storeIdentifier: identifier, primaryKey: keys.key(row.objectID))
                        for relationship in separate {
                            let destinations = try source.relatedObjectIDs(of: row.objectID, relationship: relationship.name)
                                .map { ManagedObjectID(entityName: $0.entityName, storeIdentifier: identifier, primaryKey: keys.key($0)) }
                            guard !destinations.isEmpty else { continue }
                            if linksCopied(from: relationship) {
                                request.links.append(.init(source: owner, relationship: relationship.name, added: destinations, removed: []))
                            }
                            if relationship.isOrdered {
                                request.orders.append(.init(owner: owner, relationship: relationship.name, destinations: destinations))
                            }
                            if countsLinks(relationship) { summary.relationshipLinks += destinations.count }
                        }
                    }
                    try destination.save(request)
                    options.progress?(summary)
                }
            }
            try destination.adoptPrimaryKeys()
            try destination.checkpoint()
        } catch let error as StoreError {
            throw diskFull(error, destination: url)
        }
        return summary
    }

    /// To-many relationships whose destinations a SQLite store keeps outside the owner's row
    /// and the destination's foreign key: many-to-many (and inverse-less) links, and the
    /// positions of ordered ones.
    private func keptApart(_ relationship: RelationshipDescription) -> Bool {
        guard relationship.isToMany, !relationship.isTransient else { return false }
        if relationship.isOrdered { return true }
        guard let inverse = model.inverse(of: relationship) else { return true }
        return inverse.isToMany
    }

    /// Whether the links of a to-many relationship are copied from its side: always when it
    /// is ordered or has no to-many inverse; of an unordered many-to-many pair, from one side
    /// only (unless the other side is ordered and copies them).
    private func linksCopied(from relationship: RelationshipDescription) -> Bool {
        guard let inverse = model.inverse(of: relationship) else { return true }
        guard inverse.isToMany else { return false }
        if relationship.isOrdered { return true }
        if inverse.isOrdered { return false }
        return (relationship.destinationEntityName, relationship.name) <= (inverse.destinationEntityName, inverse.name)
    }

    /// Whether a relationship's destinations count in `StoreMigrationSummary.relationshipLinks`
    /// (each link or position once, whatever the destination type).
    private func countsLinks(_ relationship: RelationshipDescription) -> Bool {
        keptApart(relationship) && (relationship.isOrdered || linksCopied(from: relationship))
    }

    /// A write that failed for want of space says so, and that nothing was moved into place.
    private func diskFull(_ error: StoreError, destination: URL) -> Error {
        if case .sqlite(let code) = error.kind, code & 0xFF == 13 {
            return StoreError(.io, path: destination.path, "the disk is full; free some space and convert again: the source is unchanged and nothing was written here (\(error.message))")
        }
        return error
    }

    // MARK: To atomic stores

    private func atomicContents(from source: PersistentStore, metadata: [String: PropertyListValue], firstKey: Int64) throws -> (AtomicStoreContents, StoreMigrationSummary) {
        if let graph = (source as? WholeStoreReading)?.objectGraph {
            // Atomic to atomic: the same keys, so the source's objects are taken as they are
            // (shared until either store changes), versions and both sides of relationships included.
            var summary = StoreMigrationSummary()
            for entity in model.entities where !entity.isAbstract {
                let keys = graph.keys(ofEntities: [entity.name], sorted: false)
                summary.objects[entity.name] = keys.count
                let separate = model.relationships(of: entity.name).filter(countsLinks)
                for key in keys where !separate.isEmpty {
                    for relationship in separate { summary.relationshipLinks += graph[key]?.toMany[relationship.name]?.count ?? 0 }
                }
            }
            options.progress?(summary)
            return (AtomicStoreContents(metadata: metadata, graph: graph), summary)
        }
        let keys = try keyMap(for: source, uniqueAcrossEntities: true, firstKey: firstKey)
        var graph = AtomicObjectGraph(nextKey: firstKey)
        var summary = StoreMigrationSummary()
        for entity in model.entities where !entity.isAbstract {
            let toMany = model.relationships(of: entity.name).filter { $0.isToMany && !$0.isTransient }
            try source.forEachBatch(ofEntity: entity.name, batchSize: batchSize) { rows in
                for row in rows {
                    var object = AtomicObject(entity: row.objectID.entityName, attributes: row.attributes)
                    for (index, destination) in row.toOneIDs.enumerated() {
                        if let destination { object.toOne[row.layout.relationships[index].name] = keys.key(destination) }
                    }
                    for relationship in toMany {
                        let destinations = try source.relatedObjectIDs(of: row.objectID, relationship: relationship.name)
                        guard !destinations.isEmpty else { continue }
                        object.toMany[relationship.name] = OrderedSet(destinations.map(keys.key))
                        if countsLinks(relationship) { summary.relationshipLinks += destinations.count }
                    }
                    graph.set(object, for: keys.key(row.objectID))
                }
                summary.objects[entity.name, default: 0] += rows.count
                options.progress?(summary)
            }
        }
        return (AtomicStoreContents(metadata: metadata, graph: graph), summary)
    }

    // MARK: Files

    /// Before a new store replaces the file at `url` (with `overwrite`): when that file is a
    /// SQLite store, empties its `-wal` into it (a stale `-wal` beside the new file would be
    /// read as the new file's); then removes its `-wal`, `-shm` and `-journal`. The old store
    /// stays whole until the rename replaces it.
    private func retireIfOverwriting(_ given: URL) throws {
        guard options.overwrite, FileManager.default.fileExists(atPath: given.path) else { return }
        // Through a symbolic link, the companions SQLite made are beside the file it names.
        let url = try FileSystem.resolvingLink(given)
        try FileSystem.requireWritableStore(url, directoryUse: "the new store is moved there over the old one")
        guard (try? PersistentStoreCoordinator.StoreType(detectingFileAt: url)) == .sqlite else {
            FileSystem.removeCompanions(of: url.path)
            return
        }
        if FileManager.default.fileExists(atPath: FileSystem.Companion.wal.path(beside: url.path)) {
            do {
                let connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
                let rows = try connection.rows("PRAGMA wal_checkpoint(TRUNCATE)")
                if case .integer(let busy) = rows.first?.first, busy != 0 {
                    throw StoreError(.io, path: url.path, "the store being overwritten is in use by another process; try again when it is closed")
                }
            } catch let error as SQLiteError {
                throw StoreError(path: url.path, sqlite: error)
            }
        }
        FileSystem.removeCompanions(of: url.path)
    }
}
