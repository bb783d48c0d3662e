import Foundation

extension ManagedObjectModel {
    /// The model a Core Data SQLite store carries in `Z_MODELCACHE` (Core Data writes it there
    /// since iOS 11 / macOS 10.13), read without changing the file (no `-wal` or `-shm` made
    /// where none is); nil when the store has no cache (no table, or no row).
    ///
    /// Its entities carry the version hashes the store's metadata records
    /// (`NSStoreModelVersionHashes`) when they name the same entities: the cache is the model
    /// the store was last saved with, and Core Data records that model's hashes.
    ///
    /// ```swift
    /// if let model = try ManagedObjectModel.modelCache(ofStoreAt: storeURL) { … }
    /// ```
    /// The entities Core Data adds to a store with persistent history (`Z_PRIMARYKEY` 16001–16003).
    static let historyEntityNames: Set<String> = ["CHANGE", "TRANSACTION", "TRANSACTIONSTRING"]

    public static func modelCache(ofStoreAt url: URL) throws -> ManagedObjectModel? {
        let origin = url.path + ", Z_MODELCACHE"
        let blob: Data
        let metadata: [String: PropertyListValue]
        do {
            let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
            let tables = try connection.tableNames()
            guard tables.contains("Z_METADATA") else {
                throw StoreError(.notAStore, path: url.path, "this SQLite file has no Z_METADATA table: it is not a Core Data store")
            }
            guard tables.contains("Z_MODELCACHE") else { return nil }
            let rows = try connection.rows("SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 2")
            guard let row = rows.first else { return nil }
            guard rows.count == 1 else { throw ModelError(file: origin, "the table has more than one row; Core Data keeps one model there") }
            switch row[0] {
            case .blob(let bytes): blob = bytes
            case .null: return nil
            default: throw ModelError(file: origin, "Z_CONTENT is not a blob: it is not Core Data's model cache")
            }
            metadata = (try? SQLiteStore.readMetadata(connection, path: url.path).1) ?? [:]
        } catch let error as SQLiteError {
            throw StoreError(path: url.path, sqlite: error)
        }
        let model = try ManagedObjectModel(modelCache: blob, origin: origin)
        guard case .dictionary(let stored)? = metadata[StoreMetadata.Key.versionHashes] else { return model }
        // A store with persistent history records hashes for its history entities too
        // (CHANGE, TRANSACTION, TRANSACTIONSTRING), which are Core Data's, not the model's.
        let hashes = stored.compactMapValues(\.dataValue).filter { !Self.historyEntityNames.contains($0.key) || model.entityNames.contains($0.key) }
        guard Set(hashes.keys) == Set(model.entityNames), hashes.values.allSatisfy({ $0.count == 32 }) else { return model }
        return try model.withAppleVersionHashes(hashes, source: url.path + ", Z_METADATA")
    }
}
