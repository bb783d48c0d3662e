import Foundation

/// The identity of a managed object: which store, which entity, which row. `Sendable`, so it
/// is what crosses between contexts and queues (objects themselves never do).
///
/// An object inserted into a context has a temporary ID until it is saved (or
/// `obtainPermanentIDs(for:)` is called); then its ID is permanent and its URI is
/// `x-coredata://<store UUID>/<Entity>/p<primary key>`, as in Core Data.
///
/// ```swift
/// let id = product.objectID
/// id.uriRepresentation()   // x-coredata://1F2E…/Product/p42
/// ```
public struct ManagedObjectID: Sendable, Hashable, CustomStringConvertible {
    enum Storage: Sendable, Hashable {
        case permanent(store: String, primaryKey: Int64)
        case temporary(UUID)
    }

    public let entityName: String
    let storage: Storage

    init(entityName: String, storeIdentifier: String, primaryKey: Int64) {
        self.entityName = entityName
        self.storage = .permanent(store: storeIdentifier, primaryKey: primaryKey)
    }

    init(temporaryFor entityName: String) {
        self.entityName = entityName
        self.storage = .temporary(TemporaryIDs.next())
    }

    /// Hashes the row key (or the temporary UUID) alone: IDs are hashed for every registered
    /// object, and the store UUID and entity name would only repeat in every one of them.
    /// Equality still compares everything.
    public func hash(into hasher: inout Hasher) {
        switch storage {
        case .permanent(_, let key): hasher.combine(key)
        case .temporary(let uuid): hasher.combine(uuid)
        }
    }

    public var isTemporaryID: Bool {
        if case .temporary = storage { return true }
        return false
    }

    /// The row's `Z_PK`, for a permanent ID.
    package var primaryKey: Int64? {
        if case .permanent(_, let key) = storage { return key }
        return nil
    }

    /// The identifier (`NSStoreUUID`) of the store the object lives in, for a permanent ID.
    package var storeIdentifier: String? {
        if case .permanent(let store, _) = storage { return store }
        return nil
    }

    /// `x-coredata://<store UUID>/<Entity>/p<N>`; a temporary ID has `t<UUID>` instead.
    public func uriRepresentation() -> URL {
        switch storage {
        case .permanent(let store, let key):
            return URL(string: "x-coredata://\(store)/\(Self.escape(entityName))/p\(key)")!
        case .temporary(let uuid):
            return URL(string: "x-coredata:///\(Self.escape(entityName))/t\(uuid.uuidString)")!
        }
    }

    public var description: String { uriRepresentation().absoluteString }

    private static func escape(_ name: String) -> String {
        name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? name
    }

    /// Parses a permanent ID's URI into its parts; nil for anything else.
    static func parse(uri: URL) -> (store: String, entity: String, primaryKey: Int64)? {
        guard uri.scheme == "x-coredata", let store = uri.host, !store.isEmpty else { return nil }
        let parts = uri.path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[1].first == "p", let key = Int64(parts[1].dropFirst()), key > 0 else { return nil }
        return (store, String(parts[0]).removingPercentEncoding ?? String(parts[0]), key)
    }
}

/// Temporary IDs: a random prefix chosen once per process and a counter. `UUID()` would read
/// /dev/urandom for every inserted object.
private enum TemporaryIDs {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var counter: UInt64 = 0
    private static let prefix: UInt64 = UInt64.random(in: .min ... .max)

    static func next() -> UUID {
        let count = lock.withLock { () -> UInt64 in
            counter &+= 1
            return counter
        }
        var bytes = (prefix.bigEndian, count.bigEndian)
        return withUnsafeBytes(of: &bytes) { raw in
            UUID(uuid: (raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7],
                        raw[8], raw[9], raw[10], raw[11], raw[12], raw[13], raw[14], raw[15]))
        }
    }
}
