import Foundation

/// Metadata without a stack: read or replace a store file's metadata without a model, a
/// coordinator or loading any object, as Core Data's class methods do.
extension PersistentStoreCoordinator {
    /// The metadata of the store file at `url` (`NSStoreType` and `NSStoreUUID` included),
    /// reading only what holds it: SQLite's `Z_METADATA` row, an XML store's `<databaseInfo>`
    /// (the parse stops there), a binary store's metadata block. It costs the same for a store
    /// of a million objects as for an empty one. Without a type, the file's is detected.
    ///
    /// ```swift
    /// let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
    /// metadata["NSStoreType"]   // .string("XML")
    /// ```
    public static func metadataForPersistentStore(ofType type: StoreType? = nil, at url: URL) throws -> [String: PropertyListValue] {
        try fileType(type, at: url).readMetadata(at: url)
    }

    /// Replaces the metadata of the store file at `url` with `metadata`, writing only the
    /// metadata: SQLite's `Z_METADATA` row in a transaction of its own (no other table changes;
    /// `NSStoreUUID` stays in `Z_UUID`); an XML store's `<databaseInfo>`, the rest of the file
    /// streamed through into a new file moved into place atomically; a binary store's metadata
    /// block, the compressed objects copied through likewise.
    ///
    /// `NSStoreType` and `NSStoreUUID` belong to the stack: `metadata` must carry both with
    /// their current values (start from `metadataForPersistentStore(ofType:at:)`); changing or
    /// leaving out either is refused. Other keys, yours and Core Data's, are written as given.
    ///
    /// ```swift
    /// var metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
    /// metadata["seeded"] = .bool(true)
    /// try PersistentStoreCoordinator.setMetadata(metadata, forPersistentStoreOfType: nil, at: url)
    /// ```
    ///
    /// As in Core Data, do not set metadata this way on a store a coordinator has open: that
    /// coordinator's next save writes its own view of the metadata.
    public static func setMetadata(_ metadata: [String: PropertyListValue], forPersistentStoreOfType type: StoreType? = nil, at url: URL) throws {
        let resolved = try fileType(type, at: url)
        let current = try metadataForPersistentStore(ofType: resolved, at: url)
        for key in StoreMetadata.reservedKeys.sorted() where metadata[key] != current[key] {
            let change = metadata[key] == nil ? "removed" : "changed"
            throw StoreError(
                .reservedMetadataKey, path: url.path,
                "\(key) belongs to the stack and cannot be \(change) (it is \(current[key].map(describe) ?? "absent")); start from the store's current metadata and change only other keys")
        }
        // What the stack reads back is written only as the type Core Data keeps it as.
        if let problem = StoreMetadata.mistypedKey(in: metadata) {
            throw StoreError(.reservedMetadataKey, path: url.path, "the metadata would hold \(problem); the stack reads that key, so it is written only as that type: give it so, or leave it as it is")
        }
        try resolved.writeMetadata(metadata, at: url)
    }

    /// The type of an existing store file: the one given (checked against the file) or detected.
    private static func fileType(_ type: StoreType?, at url: URL) throws -> StoreType {
        guard type != .inMemory else {
            throw StoreError(.wrongStoreType, path: url.path, "an in-memory store has no file; ask its coordinator for its metadata (metadata(for:))")
        }
        if let server = StoreType(locationOf: url) {
            if let type, type != server {
                throw StoreError(.wrongStoreType, path: PostgreSQLLocation.redact(url.absoluteString), "a \(url.scheme ?? "postgresql")://… URL names a \(server.rawValue) store, not \(type.rawValue)")
            }
            return server
        }
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError(.notFound, path: url.path, "no store here")
        }
        return try resolvedType(type, at: url, exists: true)
    }

    private static func describe(_ value: PropertyListValue) -> String {
        value.stringValue.map { "'\($0)'" } ?? "\(value)"
    }
}
