import Crypto
import Foundation

/// The metadata keys Core Data writes in every store, and how Lade fills them.
///
/// ```swift
/// let metadata = StoreMetadata.make(for: model, storeType: StoreMetadata.sqliteStoreType)
/// metadata[StoreMetadata.Key.storeType]   // .string("SQLite")
/// ```
public enum StoreMetadata {
    public enum Key {
        public static let storeType = "NSStoreType"
        /// Kept out of the SQLite plist by Core Data (it lives in `Z_METADATA.Z_UUID`), but
        /// present in the metadata a store reports.
        public static let storeUUID = "NSStoreUUID"
        public static let versionHashes = "NSStoreModelVersionHashes"
        package static let versionHashesVersion = "NSStoreModelVersionHashesVersion"
        package static let versionHashesDigest = "NSStoreModelVersionHashesDigest"
        public static let versionIdentifiers = "NSStoreModelVersionIdentifiers"
        package static let frameworkVersion = "NSPersistenceFrameworkVersion"
        package static let autoVacuumLevel = "_NSAutoVacuumLevel"
        /// Lade's own: present when the store's version hashes are Lade's, not Apple's.
        package static let ladeVersionHashKind = "_LadeVersionHashKind"
    }

    /// `NSStoreType` of each store type, as the one table of store types names it (`StoreType`).
    package static let sqliteStoreType = StoreType.sqlite.rawValue
    package static let xmlStoreType = StoreType.xml.rawValue
    package static let binaryStoreType = StoreType.binary.rawValue
    package static let inMemoryStoreType = StoreType.inMemory.rawValue
    /// The value of `_LadeVersionHashKind` for the entity hashes Lade writes now
    /// (docs/model-format.md); a store an earlier Lade wrote records the scheme it used.
    package static let ladeHashKind = VersionHash.Scheme.current.rawValue
    /// Written as `NSPersistenceFrameworkVersion`. Core Data writes its own build number
    /// (1044 on macOS 14); Lade is not that framework and says so with 0.
    package static let ladeFrameworkVersion: Int64 = 0

    /// Keys that belong to the stack; a user may not set or remove them.
    package static let reservedKeys: Set<String> = [Key.storeType, Key.storeUUID]

    /// The metadata Core Data writes for a store of `model`.
    package static func make(for model: ManagedObjectModel, storeType: String) -> [String: PropertyListValue] {
        var metadata: [String: PropertyListValue] = [
            Key.storeType: .string(storeType),
            Key.versionHashes: .dictionary(model.versionHashes.mapValues { .data($0) }),
            Key.versionHashesVersion: .integer(3),
            Key.versionHashesDigest: .string(digest(of: model.versionHashes).base64EncodedString()),
            Key.versionIdentifiers: .array(model.versionIdentifiers.map { .string($0) }),
            Key.frameworkVersion: .integer(ladeFrameworkVersion),
            Key.autoVacuumLevel: .string("2"),
        ]
        if !model.hasAppleVersionHashes {
            metadata[Key.ladeVersionHashKind] = .string(ladeHashKind)
        }
        return metadata
    }

    /// `NSStoreModelVersionHashesDigest`: SHA-512 over, for entities sorted by name, the
    /// UTF-8 name followed by its 32-byte hash.
    package static func digest(of hashes: [String: Data]) -> Data {
        var hasher = SHA512()
        for name in hashes.keys.sorted() {
            hasher.update(data: Data(name.utf8))
            hasher.update(data: hashes[name]!)
        }
        return Data(hasher.finalize())
    }

    /// The entities whose version hashes in a store's metadata differ from the model's, or nil
    /// when the two cannot be compared: the model has only Lade's hashes and the store Apple's
    /// (or none), so only the store's structure can tell.
    package static func entitiesWithDifferentHashes(in metadata: [String: PropertyListValue], model: ManagedObjectModel) -> Set<String>? {
        let storeHashes = versionHashes(in: metadata)
        guard let modelHashes = comparableHashes(for: metadata, model: model) else { return nil }
        return Set(Set(storeHashes.keys).union(modelHashes.keys).filter { storeHashes[$0] != modelHashes[$0] })
    }

    /// The model's hashes made the way the store's were: Lade's of the scheme the store records
    /// (an earlier Lade's too), or Apple's when both the store and the model have Apple's; nil
    /// when the two cannot be compared (no hashes in the store, Apple's in the store and Lade's
    /// only in the model, or a scheme this Lade does not know).
    static func comparableHashes(for metadata: [String: PropertyListValue], model: ManagedObjectModel) -> [String: Data]? {
        guard !versionHashes(in: metadata).isEmpty else { return nil }
        if let kind = metadata[Key.ladeVersionHashKind]?.stringValue {
            return VersionHash.Scheme(rawValue: kind).map { model.ladeVersionHashes(scheme: $0) }
        }
        return model.hasAppleVersionHashes ? model.versionHashes : nil
    }

    /// Whether the store's hashes are Lade's of a scheme that leaves out inputs the current one
    /// has (uniqueness constraints), so that versions differing only in those match it alike.
    static func hasEarlierLadeHashes(_ metadata: [String: PropertyListValue]) -> Bool {
        guard let kind = metadata[Key.ladeVersionHashKind]?.stringValue, let scheme = VersionHash.Scheme(rawValue: kind) else { return false }
        return scheme != .current
    }

    /// The entity hashes recorded in store metadata.
    package static func versionHashes(in metadata: [String: PropertyListValue]) -> [String: Data] {
        (metadata[Key.versionHashes]?.dictionaryValue ?? [:]).compactMapValues(\.dataValue)
    }
}
