import Foundation

/// A new store written whole, beside the path it is for, and moved there only when complete:
/// the destination of a conversion (`lade convert`, `migratePersistentStore`) and of a
/// migration by mapping model. Made for a store type by
/// `StoreType.wholeStoreWriter(at:model:metadata:overwrite:)`, so those never ask which kind
/// of store they write.
///
/// A copy writes the objects in batches (`write(_:)`), then the to-many destinations a store
/// keeps apart from them (`writeToMany(_:)`), then `finish()`; a migration by mapping model
/// saves into `store` through a context instead, then calls `finish()`. Until `finish()`
/// returns, nothing is at the path but what was there; `discard()` (called whatever happened)
/// removes what a writer that did not finish made.
///
/// ```swift
/// let writer = try PersistentStoreCoordinator.StoreType.xml
///     .wholeStoreWriter(at: url, model: model, metadata: metadata, overwrite: false)
/// defer { writer.discard() }
/// try writer.write(objects)
/// try writer.finish()
/// ```
protocol WholeStoreWriting: AnyObject {
    /// The new store while it is written (a SQLite file beside the path; an atomic store's
    /// objects in memory): what a migration by mapping model saves into and reads back.
    var store: PersistentStore { get }
    /// Whether keys must be unique across entities (atomic stores), not only within an
    /// inheritance hierarchy (SQLite); a copy shifts each hierarchy's keys past the previous
    /// one's then, starting at `firstKey`.
    var keysUniqueAcrossEntities: Bool { get }
    /// The first key of a new store of this type.
    var firstKey: Int64 { get }
    /// When a copy gives the destinations of `relationship` (a to-many one): with each object,
    /// after every object is written, or never (the store has them from the inverse's to-one,
    /// or from the other side of a many-to-many pair).
    func toManyWriting(of relationship: RelationshipDescription) -> ToManyWriting
    /// Writes objects (keys and store identifier already the new store's), with the to-many
    /// destinations `toManyWriting(of:)` asks for with them.
    func write(_ objects: [WholeStoreObject]) throws
    /// Writes the destinations of to-many relationships of objects written already.
    func writeToMany(_ destinations: [WholeStoreObject.ToMany]) throws
    /// Completes the store and moves it into place: over the store file there with
    /// `overwrite` (its `-wal` emptied into it first, so it stays whole until the rename), else
    /// only where no file is. Returns the store when it has no file (in memory).
    @discardableResult
    func finish() throws -> PersistentStore?
    /// Removes what the writer made, unless it finished.
    func discard()
    /// Gives the new store the source's persistent history (after every object is written):
    /// SQLite and PostgreSQL stores keep it; the others drop it, as Core Data keeps history in
    /// SQLite stores only.
    func writeHistory(_ rows: HistoryTableRows) throws
}

extension WholeStoreWriting {
    func writeHistory(_ rows: HistoryTableRows) throws {}
}

/// When a whole-store copy gives a to-many relationship's destinations to a writer.
enum ToManyWriting: Sendable, Equatable {
    /// Not at all: the store has them from the inverse's to-one, or from the other side.
    case never
    /// With each object (`write(_:)`): an atomic store keeps both sides of every relationship.
    case withObjects
    /// Once every object is written (`writeToMany(_:)`): SQLite's links and ordered positions,
    /// which name rows that must be there.
    case afterObjects
}

/// One object as a whole-store copy writes it: its row, its keys the new store's.
struct WholeStoreObject {
    /// Destinations of one to-many relationship of one object, in order.
    struct ToMany {
        var owner: ManagedObjectID
        var relationship: RelationshipDescription
        var destinations: [ManagedObjectID]
    }

    var row: StoreRow
    /// The to-many destinations the writer asked for with the object (none empty).
    var toMany: [ToMany] = []
}

/// The saves a table-layout store's writer makes of a copy's objects and their to-many
/// destinations (the SQLite and PostgreSQL writers: rows inserted as they are, links and
/// ordered positions after every object is written).
extension StoreSaveRequest {
    /// The objects inserted, each row as it is.
    init(inserting objects: [WholeStoreObject]) {
        self.init()
        inserted.reserveCapacity(objects.count)
        for object in objects {
            let row = object.row
            inserted.append(.init(
                objectID: row.objectID,
                positional: .init(layout: row.layout, values: row.values, toOneIDs: row.toOneIDs, changedAttributes: nil, changedToOne: nil)))
        }
    }

    /// Many-to-many links (from the side that takes them) and ordered positions.
    init(linking destinations: [WholeStoreObject.ToMany], in model: ManagedObjectModel) {
        self.init()
        for toMany in destinations {
            let relationship = toMany.relationship
            if model.linksTakenFromThisSide(relationship) {
                links.append(.init(source: toMany.owner, relationship: relationship.name, added: toMany.destinations, removed: []))
            }
            if relationship.isOrdered {
                orders.append(.init(owner: toMany.owner, relationship: relationship.name, destinations: toMany.destinations))
            }
        }
    }
}

extension ManagedObjectModel {
    /// When a table-layout store's writer takes a to-many relationship's destinations: a
    /// to-one's inverse is its key column; a many-to-many pair's links go into their join table
    /// from one side; ordered positions go into their own columns.
    func tableLayoutToManyWriting(of relationship: RelationshipDescription) -> ToManyWriting {
        guard keepsLinksApart(relationship) else { return .never }
        return relationship.isOrdered || linksTakenFromThisSide(relationship) ? .afterObjects : .never
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

extension ManagedObjectModel {
    /// Whether a to-many relationship's destinations are links of their own (many-to-many,
    /// without an inverse, or ordered), which a SQLite store keeps outside the owner's row and
    /// the destination's foreign key, rather than the other side of a to-one.
    func keepsLinksApart(_ relationship: RelationshipDescription) -> Bool {
        guard relationship.isToMany, !relationship.isTransient else { return false }
        if relationship.isOrdered { return true }
        guard let inverse = inverse(of: relationship) else { return true }
        return inverse.isToMany
    }

    /// Whether the links of a to-many relationship are taken from its side: always when it is
    /// ordered or has no to-many inverse; of an unordered many-to-many pair, from one side only
    /// (unless the other side is ordered and has them).
    func linksTakenFromThisSide(_ relationship: RelationshipDescription) -> Bool {
        guard let inverse = inverse(of: relationship) else { return true }
        guard inverse.isToMany else { return false }
        if relationship.isOrdered { return true }
        if inverse.isOrdered { return false }
        return (relationship.destinationEntityName, relationship.name) <= (inverse.destinationEntityName, inverse.name)
    }

    /// Whether a relationship's destinations count in `StoreMigrationSummary.relationshipLinks`:
    /// each link or position once, whatever the destination type.
    func countsLinks(_ relationship: RelationshipDescription) -> Bool {
        keepsLinksApart(relationship) && (relationship.isOrdered || linksTakenFromThisSide(relationship))
    }
}
