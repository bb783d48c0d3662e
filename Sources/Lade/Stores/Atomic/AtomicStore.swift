import Foundation

/// What an atomic store's file holds: its metadata (with `NSStoreType` and `NSStoreUUID`) and
/// every object.
struct AtomicStoreContents: Sendable {
    var metadata: [String: PropertyListValue]
    var graph: AtomicObjectGraph

    var identifier: String? { metadata[StoreMetadata.Key.storeUUID]?.stringValue }

    /// An empty store of `model`: Core Data's metadata keys for it and a new UUID.
    static func empty(model: ManagedObjectModel, storeType: String, firstKey: Int64) -> AtomicStoreContents {
        var metadata = StoreMetadata.make(for: model, storeType: storeType)
        // SQLite's own setting; an atomic store has no pages to vacuum.
        metadata[StoreMetadata.Key.autoVacuumLevel] = nil
        metadata[StoreMetadata.Key.storeUUID] = .string(UUID().uuidString)
        return AtomicStoreContents(metadata: metadata, graph: AtomicObjectGraph(nextKey: firstKey))
    }
}

/// The file of an atomic store kind: how it is read, written, and how its metadata alone is
/// read and replaced.
protocol AtomicStoreFileFormat {
    /// `NSStoreType`.
    static var storeType: String { get }
    /// The first primary key of a new store.
    static var firstKey: Int64 { get }
    /// Refuses models the format cannot hold.
    static func check(_ model: ManagedObjectModel, path: String) throws
    static func read(at url: URL, model: ManagedObjectModel) throws -> AtomicStoreContents
    static func write(_ contents: AtomicStoreContents, model: ManagedObjectModel, to output: FileOutput) throws
    /// The metadata (with `NSStoreType` and `NSStoreUUID`), reading as little of the file as the format allows.
    static func readMetadata(at url: URL) throws -> [String: PropertyListValue]
    /// Replaces the metadata, rewriting the file atomically.
    static func writeMetadata(_ metadata: [String: PropertyListValue], at url: URL) throws
}

/// A store that keeps every object in memory and, for the file-backed kinds, writes its whole
/// file at each save: Core Data's atomic stores. `XMLStore`, `BinaryStore` and
/// `InMemoryStore` are its kinds; they differ only in their file.
///
/// Fetches run in memory with `PredicateEvaluator` (key paths follow relationships), sorted
/// as the SQLite store sorts (nil first, then values, then primary key). A save is applied all
/// or nothing: optimistic-locking conflicts are found before anything changes, and when the
/// file cannot be written the objects in memory go back to what they were.
///
/// ```swift
/// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
/// let store = try coordinator.addPersistentStore(type: .xml, at: URL(fileURLWithPath: "catalog.xml"))
/// store.type   // "XML"
/// ```
///
/// Two coordinators (or processes) on one file do not see each other's saves: as in Core Data,
/// the last save writes the file.
package class AtomicStore: PersistentStore, @unchecked Sendable {
    package let identifier: String
    /// `NSStoreType`: "XML", "Binary" or "InMemory".
    package let type: String
    package let url: URL?
    package let model: ManagedObjectModel
    package let isReadOnly: Bool

    private let format: AtomicStoreFileFormat.Type?
    private let lock = NSLock()
    private var graph: AtomicObjectGraph
    private var currentMetadata: [String: PropertyListValue]

    /// Creates the file of an empty store for `model` at `url`, which must not exist yet;
    /// returns its `NSStoreUUID`.
    @discardableResult
    static func createFile(at url: URL, model: ManagedObjectModel, format: AtomicStoreFileFormat.Type) throws -> String {
        try format.check(model, path: url.path)
        try AtomicObjectGraph.checkDerivedAttributes(of: model, storeType: format.storeType)
        let contents = AtomicStoreContents.empty(model: model, storeType: format.storeType, firstKey: format.firstKey)
        try AtomicFileWriter.create(url) { try format.write(contents, model: model, to: $0) }
        // `empty` gives every new store a UUID.
        return contents.identifier!
    }

    /// Opens the file of a store of `format`.
    convenience init(url: URL, model: ManagedObjectModel, readOnly: Bool, format: AtomicStoreFileFormat.Type) throws {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError(.notFound, path: url.path, "no store here; add it to a coordinator (not read-only) to create one")
        }
        try format.check(model, path: url.path)
        let contents = try format.read(at: url, model: model)
        try self.init(type: format.storeType, url: url, model: model, readOnly: readOnly, contents: contents, format: format)
    }

    /// Takes loaded contents after checking that they are a store of this type made from `model`.
    init(type: String, url: URL?, model: ManagedObjectModel, readOnly: Bool, contents: AtomicStoreContents, format: AtomicStoreFileFormat.Type? = nil) throws {
        let path = url?.path ?? type
        try StoreMetadata.checkTypes(contents.metadata, path: path, place: "the file's metadata")
        guard let identifier = contents.identifier else {
            throw StoreError(.notAStore, path: path, "the store has no NSStoreUUID")
        }
        let storedType = contents.metadata[StoreMetadata.Key.storeType]?.stringValue
        guard storedType == type else {
            throw StoreError(.wrongStoreType, path: path, "its metadata says store type '\(storedType ?? "none")', not \(type)")
        }
        if let differing = StoreMetadata.entitiesWithDifferentHashes(in: contents.metadata, model: model), !differing.isEmpty {
            let names = differing.sorted()
            throw StoreError(
                .modelMismatch(entities: names), path: path,
                "the store does not match the model (version hashes differ for \(names.joined(separator: ", "))); open it with the model version it was made with, or migrate it to this version first")
        }
        // Objects the model cannot place, or references to objects that are not there, would
        // be skipped or read as nulls: refused, with counts.
        let damage = contents.graph.damage(model: model, thorough: false)
        guard damage.isEmpty else { throw StoreError.damaged(damage, path: path) }
        if !readOnly { try AtomicObjectGraph.checkDerivedAttributes(of: model, storeType: type) }
        self.identifier = identifier
        self.type = type
        self.url = url
        self.model = model
        self.isReadOnly = readOnly
        self.format = format
        self.graph = contents.graph
        self.currentMetadata = contents.metadata
    }

    /// Writes the whole store file, atomically; the in-memory store has none.
    private func persist(_ contents: AtomicStoreContents) throws {
        guard let format, let url else { return }
        try AtomicFileWriter.replace(url) { try format.write(contents, model: model, to: $0) }
    }

    private var path: String { url?.path ?? "\(type) store \(identifier)" }

    // MARK: Metadata

    /// The store's metadata, `NSStoreType` and `NSStoreUUID` included.
    package var metadata: [String: PropertyListValue] {
        lock.withLock { currentMetadata }
    }

    /// Every object as the store holds it now (shared, not copied, until either side changes).
    var graphSnapshot: AtomicObjectGraph {
        lock.withLock { graph }
    }

    /// Changes the objects in place, under the store's lock, without a save: how a store being
    /// written whole (`AtomicStoreWriter`) is filled.
    func modifyGraph<T>(_ body: (inout AtomicObjectGraph) throws -> T) rethrows -> T {
        try lock.withLock { try body(&graph) }
    }

    /// The number of objects in the store.
    package var objectCount: Int {
        lock.withLock { graph.count }
    }

    // MARK: PersistentStore

    /// The SQLite layout of the model, made on first use: the SQL compiler checks predicates'
    /// key paths against it, so a key that names no property is an error here as on SQLite,
    /// not merely a predicate that no object happens to reach.
    private lazy var keyCheckSchema = TableLayout(model: model)

    private func checkKeys(_ request: StoreFetchRequest) throws {
        guard let predicate = request.predicate, predicate != .true, predicate != .false else { return }
        try SQLPredicateCompiler.checkKeys(of: predicate, on: request.entityName, in: model, schema: lock.withLock { keyCheckSchema })
    }

    package func fetch(_ request: StoreFetchRequest) throws -> [StoreRow] {
        try checkKeys(request)
        return try lock.withLock {
            let query = AtomicQuery(graph: graph, model: model, storeIdentifier: identifier)
            return try query.matchingKeys(request).map { query.row($0) }
        }
    }

    package func count(_ request: StoreFetchRequest) throws -> Int {
        try checkKeys(request)
        var unordered = request
        unordered.sortDescriptors = []
        return try lock.withLock {
            try AtomicQuery(graph: graph, model: model, storeIdentifier: identifier).matchingKeys(unordered, ordered: false).count
        }
    }

    package func rows(for ids: [ManagedObjectID]) throws -> [StoreRow] {
        lock.withLock {
            let query = AtomicQuery(graph: graph, model: model, storeIdentifier: identifier)
            return ids.compactMap { id in
                guard id.storeIdentifier == identifier, let key = id.primaryKey, graph[key] != nil else { return nil }
                return query.row(key)
            }
        }
    }

    package func relatedObjectIDs(of id: ManagedObjectID, relationship: String) throws -> [ManagedObjectID] {
        lock.withLock {
            guard id.storeIdentifier == identifier, let key = id.primaryKey, let destinations = graph[key]?.toMany[relationship] else { return [] }
            return destinations.compactMap { destination in
                graph[destination].map { ManagedObjectID(entityName: $0.entity, storeIdentifier: identifier, primaryKey: destination) }
            }
        }
    }

    package func damage(thorough: Bool) throws -> [StoreDamage] {
        let graph = graphSnapshot
        return graph.damage(model: model, thorough: thorough)
    }

    package func forEachBatch(ofEntity entityName: String, batchSize: Int, _ body: ([StoreRow]) throws -> Void) throws {
        _ = try model.requireEntity(entityName)
        let keys = lock.withLock { graph.keys(ofEntities: [entityName]) }
        for start in stride(from: 0, to: keys.count, by: max(1, batchSize)) {
            let rows = lock.withLock {
                let query = AtomicQuery(graph: graph, model: model, storeIdentifier: identifier)
                return keys[start..<min(start + max(1, batchSize), keys.count)].compactMap { graph[$0] == nil ? nil : query.row($0) }
            }
            try body(rows)
        }
    }

    package func newObjectIDs(for entity: String, count: Int) throws -> [ManagedObjectID] {
        guard !isReadOnly else { throw StoreError(.readOnly, path: path, "the store was opened read-only") }
        guard count > 0 else { return [] }
        return lock.withLock {
            graph.reserveKeys(count).map { ManagedObjectID(entityName: entity, storeIdentifier: identifier, primaryKey: $0) }
        }
    }

    package func giveBackObjectIDs(_ ids: [ManagedObjectID], for entity: String) throws {
        guard let keys = ids.handedOutKeys else { return }
        lock.withLock { graph.giveBackKeys(keys) }
    }

    package func save(_ request: StoreSaveRequest) throws {
        guard !isReadOnly else { throw StoreError(.readOnly, path: path, "the store was opened read-only") }
        guard !request.isEmpty else { return }
        try lock.withLock {
            if let metadata = request.metadata {
                for key in StoreMetadata.reservedKeys where metadata[key] != nil && metadata[key] != currentMetadata[key] {
                    throw StoreError(.reservedMetadataKey, path: path, "\(key) belongs to the stack and cannot be changed")
                }
            }
            let undo = try graph.apply(request, model: model, storeIdentifier: identifier)
            let previousMetadata = currentMetadata
            if var metadata = request.metadata {
                for key in StoreMetadata.reservedKeys { metadata[key] = currentMetadata[key] }
                currentMetadata = metadata
            }
            do {
                try persist(AtomicStoreContents(metadata: currentMetadata, graph: graph))
            } catch {
                graph.revert(undo)
                currentMetadata = previousMetadata
                throw error
            }
        }
    }
}

/// An atomic store kept in a file (`XMLStore`, `BinaryStore`): what creating one takes.
package protocol AtomicFileStore: AtomicStore {
    /// The store type of the file.
    static var storeType: StoreType { get }
    /// Opens the store at `url` with `model`.
    init(url: URL, model: ManagedObjectModel, readOnly: Bool) throws
}

extension AtomicFileStore {
    /// Creates an empty store for `model` at `url`, which must not exist yet. The file is
    /// written beside `url` and linked into place only when complete.
    ///
    /// ```swift
    /// let store = try XMLStore.create(at: URL(fileURLWithPath: "catalog.xml"), model: model)
    /// ```
    @discardableResult
    package static func create(at url: URL, model: ManagedObjectModel) throws -> Self {
        try createFile(at: url, model: model, format: storeType.atomicFileFormat!)
        return try Self(url: url, model: model, readOnly: false)
    }
}
