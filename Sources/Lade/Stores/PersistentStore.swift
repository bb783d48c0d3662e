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
    /// The destinations of a to-many relationship of each of `ids` (each in order when it is
    /// ordered): one read where a store can, as many as `ids` otherwise.
    func relatedObjectIDs(of ids: [ManagedObjectID], relationship: String) throws -> [ManagedObjectID: [ManagedObjectID]]
    /// Reserves primary keys and returns permanent IDs for new objects of an entity.
    func newObjectIDs(for entity: String, count: Int) throws -> [ManagedObjectID]
    /// Gives back keys `newObjectIDs(for:count:)` handed out for a save that failed, so the
    /// next ones are numbered as if they had never been asked for, as a rolled-back Core Data
    /// save leaves `Z_MAX` as it was. Only the last keys handed out can be given back: when
    /// `ids` are not one run of keys ending at the entity's counter (someone took keys since),
    /// nothing changes, and those keys stay unused.
    func giveBackObjectIDs(_ ids: [ManagedObjectID], for entity: String) throws
    /// Applies a save in one transaction, or nothing of it.
    func save(_ request: StoreSaveRequest) throws
    /// Calls `body` with the rows of the objects whose entity is exactly `entityName` (not its
    /// subentities), in primary key order, at most `batchSize` at a time: how conversions and
    /// exports read a whole store without holding it in memory.
    func forEachBatch(ofEntity entityName: String, batchSize: Int, _ body: ([StoreRow]) throws -> Void) throws
    /// What in the store breaks Core Data's invariants for the model, with counts (see
    /// `StoreDamage`); empty for a sound store. `thorough: false` finds, cheaply, what a
    /// whole-store read would otherwise skip or turn into nulls; `true` checks everything.
    func damage(thorough: Bool) throws -> [StoreDamage]
}

extension PersistentStore {
    public func relatedObjectIDs(of ids: [ManagedObjectID], relationship: String) throws -> [ManagedObjectID: [ManagedObjectID]] {
        var found: [ManagedObjectID: [ManagedObjectID]] = [:]
        for id in ids { found[id] = try relatedObjectIDs(of: id, relationship: relationship) }
        return found
    }
}

/// A fetch as a store runs it.
///
/// Public only as a type in `PersistentStore`'s requirements; its members are `package`:
/// only the coordinator and the stores make and read it.
public struct StoreFetchRequest: Sendable {
    package var entityName: String
    package var includesSubentities = true
    package var predicate: FetchPredicate?
    package var sortDescriptors: [FetchSortDescriptor] = []
    package var fetchLimit = 0
    package var fetchOffset = 0

    package init(entityName: String, predicate: FetchPredicate? = nil, sortDescriptors: [FetchSortDescriptor] = [], includesSubentities: Bool = true, fetchLimit: Int = 0, fetchOffset: Int = 0) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.includesSubentities = includesSubentities
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
    }
}

/// One object's stored state: its stored attribute values and to-one destinations, by
/// position in its entity's `EntityLayout`, and its version (`Z_OPT`), used for optimistic
/// locking.
///
/// Public only as a type in `PersistentStore`'s requirements; its members are `package`:
/// only the coordinator and the stores make and read it.
public struct StoreRow: Sendable, Equatable {
    package let objectID: ManagedObjectID
    package let version: Int64
    package let layout: EntityLayout
    /// Attribute values by position in `layout.attributes` (transient ones nil).
    package let values: [AttributeValue?]
    /// To-one destinations by position in `layout.relationships` (to-many positions nil).
    package let toOneIDs: [ManagedObjectID?]

    package init(objectID: ManagedObjectID, version: Int64, layout: EntityLayout, values: [AttributeValue?], toOneIDs: [ManagedObjectID?]) {
        self.objectID = objectID
        self.version = version
        self.layout = layout
        self.values = values
        self.toOneIDs = toOneIDs
    }

    /// A row from values and destinations by name.
    package init(objectID: ManagedObjectID, version: Int64, layout: EntityLayout, attributes: [String: AttributeValue], toOne: [String: ManagedObjectID]) {
        self.init(objectID: objectID, version: version, layout: layout, values: layout.values(from: attributes), toOneIDs: layout.toOneSlots(from: toOne))
    }

    /// The stored attributes by name, nil ones left out.
    package var attributes: [String: AttributeValue] { layout.dictionary(of: values) }

    /// The to-one destinations by name, nil ones left out.
    package var toOne: [String: ManagedObjectID] {
        var result: [String: ManagedObjectID] = [:]
        for (index, id) in toOneIDs.enumerated() { if let id { result[layout.relationships[index].name] = id } }
        return result
    }

    public static func == (lhs: StoreRow, rhs: StoreRow) -> Bool {
        lhs.objectID == rhs.objectID && lhs.version == rhs.version && lhs.layout === rhs.layout
            && lhs.values == rhs.values && lhs.toOneIDs == rhs.toOneIDs
    }
}

/// Everything one save changes in one store.
///
/// Public only as a type in `PersistentStore`'s requirements; its members are `package`:
/// only the coordinator and the stores make and read it.
public struct StoreSaveRequest: Sendable {
    /// One object's inserted or changed values. Made either by name (what changed, nil
    /// clears) or, as contexts make them, by position: the object's whole value arrays and
    /// which positions changed, shared with the object instead of copied.
    package struct RowChange: Sendable {
        package var objectID: ManagedObjectID
        /// For updates: the version the change was made against (optimistic locking).
        package var expectedVersion: Int64?
        private var storage: Storage

        private enum Storage: Sendable {
            case named(attributes: [String: AttributeValue?], toOne: [String: ManagedObjectID?])
            case positional(Positional)
        }

        /// Values by position in an entity's layout, with the positions that changed.
        package struct Positional: Sendable {
            package var layout: EntityLayout
            package var values: [AttributeValue?]
            package var toOneIDs: [ManagedObjectID?]
            /// Changed attribute positions; nil: all (an insert).
            package var changedAttributes: [Int]?
            /// Changed to-one positions; nil: all (an insert).
            package var changedToOne: [Int]?

            package init(layout: EntityLayout, values: [AttributeValue?], toOneIDs: [ManagedObjectID?], changedAttributes: [Int]?, changedToOne: [Int]?) {
                self.layout = layout
                self.values = values
                self.toOneIDs = toOneIDs
                self.changedAttributes = changedAttributes
                self.changedToOne = changedToOne
            }
        }

        package init(objectID: ManagedObjectID, expectedVersion: Int64? = nil, attributes: [String: AttributeValue?], toOne: [String: ManagedObjectID?]) {
            self.objectID = objectID
            self.expectedVersion = expectedVersion
            self.storage = .named(attributes: attributes, toOne: toOne)
        }

        package init(objectID: ManagedObjectID, expectedVersion: Int64? = nil, positional: Positional) {
            self.objectID = objectID
            self.expectedVersion = expectedVersion
            self.storage = .positional(positional)
        }

        /// The change by position, when it was made so (stores that can use it skip names).
        package var positional: Positional? {
            if case .positional(let change) = storage { return change }
            return nil
        }

        /// Changed stored attributes by name; nil sets NULL.
        package var attributes: [String: AttributeValue?] {
            switch storage {
            case .named(let attributes, _): return attributes
            case .positional(let change):
                var result: [String: AttributeValue?] = [:]
                for index in change.changedAttributes ?? Array(change.layout.attributes.indices) where !change.layout.attributes[index].isTransient {
                    result[change.layout.attributes[index].name] = .some(change.values[index])
                }
                return result
            }
        }

        /// Changed to-one relationships by name; nil clears.
        package var toOne: [String: ManagedObjectID?] {
            switch storage {
            case .named(_, let toOne): return toOne
            case .positional(let change):
                var result: [String: ManagedObjectID?] = [:]
                for index in change.changedToOne ?? Array(change.layout.relationships.indices) {
                    let relationship = change.layout.relationships[index]
                    guard !relationship.isToMany && !relationship.isTransient else { continue }
                    if change.changedToOne == nil && change.toOneIDs[index] == nil { continue }
                    result[relationship.name] = .some(change.toOneIDs[index])
                }
                return result
            }
        }
    }

    /// A many-to-many relationship's links added and removed for one source object.
    package struct LinkChange: Sendable {
        package var source: ManagedObjectID
        package var relationship: String
        package var added: [ManagedObjectID]
        package var removed: [ManagedObjectID]

        package init(source: ManagedObjectID, relationship: String, added: [ManagedObjectID], removed: [ManagedObjectID]) {
            self.source = source
            self.relationship = relationship
            self.added = added
            self.removed = removed
        }
    }

    /// The full order of an ordered to-many relationship of one object.
    package struct OrderChange: Sendable {
        package var owner: ManagedObjectID
        package var relationship: String
        package var destinations: [ManagedObjectID]

        package init(owner: ManagedObjectID, relationship: String, destinations: [ManagedObjectID]) {
            self.owner = owner
            self.relationship = relationship
            self.destinations = destinations
        }
    }

    package var inserted: [RowChange] = []
    package var updated: [RowChange] = []
    package var deleted: [(objectID: ManagedObjectID, expectedVersion: Int64?)] = []
    package var links: [LinkChange] = []
    package var orders: [OrderChange] = []
    /// Metadata to write in the same transaction (the whole dictionary), or nil to leave it.
    package var metadata: [String: PropertyListValue]?
    /// Where the store records the derived values it computed in this save (nil: not asked).
    package var derivedValues: DerivedValueReport?
    /// Who the commit is recorded as in a store that keeps persistent history.
    package var authorship = HistoryAuthorship()

    package init() {}

    package var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && links.isEmpty && orders.isEmpty && metadata == nil
    }

    /// The stores the changes go to, in the order they first appear.
    package var storeIdentifiers: [String] {
        var seen: Set<String> = []
        var order: [String] = []
        let ids = inserted.map(\.objectID) + updated.map(\.objectID) + deleted.map(\.objectID) + links.map(\.source) + orders.map(\.owner)
        for id in ids {
            guard let store = id.storeIdentifier, seen.insert(store).inserted else { continue }
            order.append(store)
        }
        return order
    }

    /// The part of this save that belongs to one store (metadata left out).
    package func part(for store: String) -> StoreSaveRequest {
        var part = StoreSaveRequest()
        part.inserted = inserted.filter { $0.objectID.storeIdentifier == store }
        part.updated = updated.filter { $0.objectID.storeIdentifier == store }
        part.deleted = deleted.filter { $0.objectID.storeIdentifier == store }
        part.links = links.filter { $0.source.storeIdentifier == store }
        part.orders = orders.filter { $0.owner.storeIdentifier == store }
        part.derivedValues = derivedValues
        part.authorship = authorship
        return part
    }

    /// The first relationship that would join objects of two stores, which no store can hold
    /// (Core Data refuses it too): the object, the relationship and the destination.
    package var firstCrossStoreRelationship: (source: ManagedObjectID, relationship: String, destination: ManagedObjectID)? {
        for change in inserted + updated {
            for (name, destination) in change.toOne {
                if let destination, destination.storeIdentifier != change.objectID.storeIdentifier { return (change.objectID, name, destination) }
            }
        }
        for link in links {
            if let destination = link.added.first(where: { $0.storeIdentifier != link.source.storeIdentifier }) { return (link.source, link.relationship, destination) }
        }
        for order in orders {
            if let destination = order.destinations.first(where: { $0.storeIdentifier != order.owner.storeIdentifier }) { return (order.owner, order.relationship, destination) }
        }
        return nil
    }
}

/// Why a store refused a save.
public enum StoreSaveError: Error, Sendable, CustomStringConvertible {
    /// Objects changed or deleted by someone else since they were read (optimistic locking).
    case conflicts([VersionConflict])
    /// A uniqueness constraint would be broken.
    case uniquenessViolation(entity: String, properties: [String], objectID: ManagedObjectID)
    /// A relationship would join objects of two stores, which no store can hold (refused by
    /// the coordinator before any store writes).
    case crossStoreRelationship(source: ManagedObjectID, relationship: String, destination: ManagedObjectID)

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
        case .crossStoreRelationship(let source, let relationship, let destination):
            "\(source).\(relationship) would name \(destination), an object of another store; a relationship cannot join objects of two stores"
        }
    }
}

extension Collection<ManagedObjectID> {
    /// The primary keys of these IDs as the one run `newObjectIDs(for:count:)` hands out, for
    /// `giveBackObjectIDs(_:for:)`; nil when they are not one run of distinct keys.
    var handedOutKeys: ClosedRange<Int64>? {
        let keys = compactMap(\.primaryKey)
        guard keys.count == count, let first = keys.min(), let last = keys.max(),
              last - first == Int64(keys.count - 1), Set(keys).count == keys.count else { return nil }
        return first...last
    }
}

extension StoreSaveError: LadeError {
    public var code: String {
        switch self {
        case .conflicts: "save.conflict"
        case .uniquenessViolation: "save.notUnique"
        case .crossStoreRelationship: "save.crossStore"
        }
    }
}
