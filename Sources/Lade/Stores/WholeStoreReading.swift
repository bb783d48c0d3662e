import Foundation

/// What reading a whole store needs beyond ``PersistentStore`` (a conversion, a migration by
/// mapping model): every store of Lade's answers it, so those copies never ask which kind of
/// store they read. A store of another implementation is read as a plain `PersistentStore`
/// (no snapshot, keys as they are).
protocol WholeStoreReading: PersistentStore {
    /// A store to read the same data through, on its own (a SQLite store: another read-only
    /// connection, so a coordinator's own reads and writes are not in its snapshot; a store in
    /// memory: itself).
    func separateReader(model: ManagedObjectModel) throws -> PersistentStore
    /// Runs `body` with every read of this store seeing one snapshot, whatever other
    /// connections commit meanwhile.
    func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T
    /// The objects as one graph, when the store holds them so (shared, not copied).
    var objectGraph: AtomicObjectGraph? { get }
    /// The largest primary key of each hierarchy, by root entity in the store's entity order,
    /// when keys count per hierarchy (SQLite); nil when they are unique across entities.
    func largestKeysPerHierarchy() throws -> [(root: String, largest: Int64)]?
    /// Changes when another connection commits to the store (nil: the store cannot tell).
    func changeCounter() throws -> Int64?
}

extension SQLiteStore: WholeStoreReading {
    func separateReader(model: ManagedObjectModel) throws -> PersistentStore {
        try SQLiteStore(url: fileURL, model: model, readOnly: true)
    }

    func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T {
        try beginReading()
        let result: T
        do {
            result = try body()
        } catch {
            try? endReading()
            throw error
        }
        try endReading()
        return result
    }

    var objectGraph: AtomicObjectGraph? { nil }

    func largestKeysPerHierarchy() throws -> [(root: String, largest: Int64)]? {
        let largest = try largestPrimaryKeys()
        return schema.entities.filter { $0.name == $0.rootName }.map { ($0.name, largest[$0.name] ?? 0) }
    }

    func changeCounter() throws -> Int64? { try dataVersion() }
}

extension AtomicStore: WholeStoreReading {
    func separateReader(model: ManagedObjectModel) throws -> PersistentStore { self }
    func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T { try body() }
    var objectGraph: AtomicObjectGraph? { graphSnapshot }
    func largestKeysPerHierarchy() throws -> [(root: String, largest: Int64)]? { nil }
    func changeCounter() throws -> Int64? { nil }
}
