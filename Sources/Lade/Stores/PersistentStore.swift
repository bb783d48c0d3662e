import Foundation

/// What every store type offers the coordinator. Stores speak in rows and object IDs; they
/// never see contexts or managed objects.
public protocol PersistentStore: AnyObject, Sendable {
    /// `NSStoreUUID`.
    var identifier: String { get }
    /// `NSStoreType`: "SQLite", "XML", "Binary", "InMemory".
    var type: String { get }
    var url: URL? { get }
    var model: ManagedObjectModel { get }
    var isReadOnly: Bool { get }
    var metadata: [String: PropertyListValue] { get }

    /// Rows matching a request, in the request's order.
    func fetch(_ request: StoreFetchRequest) throws -> [StoreRow]
    func count(_ request: StoreFetchRequest) throws -> Int
    /// The rows of these objects (fault firing; batch faulting); missing objects are left out.
    func rows(for ids: [ManagedObjectID]) throws -> [StoreRow]
    /// The destinations of a to-many relationship, in order when it is ordered.
    func relatedObjectIDs(of id: ManagedObjectID, relationship: String) throws -> [ManagedObjectID]
    /// Reserves primary keys and returns permanent IDs for new objects of an entity.
    func newObjectIDs(for entity: String, count: Int) throws -> [ManagedObjectID]
    /// Applies a save in one transaction, or nothing of it.
    func save(_ request: StoreSaveRequest) throws
}

/// A fetch as a store runs it.
public struct StoreFetchRequest: Sendable {
    public var entityName: String
    public var includesSubentities = true
    public var predicate: Predicate?
    public var sortDescriptors: [SortDescriptor] = []
    public var fetchLimit = 0
    public var fetchOffset = 0

    public init(entityName: String, predicate: Predicate? = nil, sortDescriptors: [SortDescriptor] = [], includesSubentities: Bool = true, fetchLimit: Int = 0, fetchOffset: Int = 0) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.includesSubentities = includesSubentities
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
    }
}

/// One object's stored state: its stored attributes and to-one relationships (nil ones left
/// out) and its version (`Z_OPT`), used for optimistic locking.
public struct StoreRow: Sendable, Equatable {
    public let objectID: ManagedObjectID
    public let version: Int64
    public let attributes: [String: AttributeValue]
    public let toOne: [String: ManagedObjectID]

    public init(objectID: ManagedObjectID, version: Int64, attributes: [String: AttributeValue], toOne: [String: ManagedObjectID]) {
        self.objectID = objectID
        self.version = version
        self.attributes = attributes
        self.toOne = toOne
    }
}

/// Everything one save changes in one store.
public struct StoreSaveRequest: Sendable {
    public struct RowChange: Sendable {
        public var objectID: ManagedObjectID
        /// For updates: the version the change was made against (optimistic locking).
        public var expectedVersion: Int64?
        /// Changed stored attributes; nil sets NULL.
        public var attributes: [String: AttributeValue?]
        /// Changed to-one relationships; nil clears.
        public var toOne: [String: ManagedObjectID?]

        public init(objectID: ManagedObjectID, expectedVersion: Int64? = nil, attributes: [String: AttributeValue?], toOne: [String: ManagedObjectID?]) {
            self.objectID = objectID
            self.expectedVersion = expectedVersion
            self.attributes = attributes
            self.toOne = toOne
        }
    }

    /// A many-to-many relationship's links added and removed for one source object.
    public struct LinkChange: Sendable {
        public var source: ManagedObjectID
        public var relationship: String
        public var added: [ManagedObjectID]
        public var removed: [ManagedObjectID]
    }

    /// The full order of an ordered to-many relationship of one object.
    public struct OrderChange: Sendable {
        public var owner: ManagedObjectID
        public var relationship: String
        public var destinations: [ManagedObjectID]
    }

    public var inserted: [RowChange] = []
    public var updated: [RowChange] = []
    public var deleted: [(objectID: ManagedObjectID, expectedVersion: Int64?)] = []
    public var links: [LinkChange] = []
    public var orders: [OrderChange] = []
    /// Metadata to write in the same transaction (the whole dictionary), or nil to leave it.
    public var metadata: [String: PropertyListValue]?

    public init() {}

    public var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && links.isEmpty && orders.isEmpty && metadata == nil
    }
}

/// Why a store refused a save.
public enum StoreSaveError: Error, Sendable, CustomStringConvertible {
    /// Objects changed or deleted by someone else since they were read (optimistic locking).
    case conflicts([VersionConflict])
    /// A uniqueness constraint would be broken.
    case uniquenessViolation(entity: String, properties: [String], objectID: ManagedObjectID)

    public struct VersionConflict: Sendable, Equatable {
        public let objectID: ManagedObjectID
        public let expectedVersion: Int64
        /// nil when the object is gone from the store.
        public let storedVersion: Int64?
    }

    public var description: String {
        switch self {
        case .conflicts(let conflicts):
            "\(conflicts.count) object(s) changed in the store since they were read: " + conflicts.map {
                "\($0.objectID) (read at version \($0.expectedVersion), now \($0.storedVersion.map(String.init) ?? "deleted"))"
            }.joined(separator: "; ")
        case .uniquenessViolation(let entity, let properties, let id):
            "\(id): another \(entity) already has the same \(properties.joined(separator: ", ")) (uniqueness constraint)"
        }
    }
}
