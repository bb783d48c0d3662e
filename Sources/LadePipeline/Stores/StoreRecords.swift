import Foundation
import Lade

/// One field of a record `lade export` or `lade fetch` writes: nothing, a value, or a list (a
/// to-many relationship's destinations).
public enum RecordCell: Sendable, Equatable {
    case null
    case value(AttributeValue)
    case list([RecordCell])

    /// As JSON: `null`, the value as `ExportText.json` writes it, or an array of the same.
    public var json: String {
        switch self {
        case .null: "null"
        case .value(let value): ExportText.json(value)
        case .list(let items): "[" + items.map(\.json).joined(separator: ",") + "]"
        }
    }

    /// As a CSV field: nothing for null, the value's text quoted as RFC 4180 needs (an empty
    /// string as `""`), a list as its JSON text in one field.
    public var csv: String {
        switch self {
        case .null: ""
        case .value(let value): ExportText.csvField(ExportText.text(value))
        case .list: ExportText.csvField(json)
        }
    }

    /// As a table cell: nothing for null, the value's text, a list as JSON.
    public var text: String {
        switch self {
        case .null: ""
        case .value(let value): ExportText.text(value)
        case .list: json
        }
    }
}

/// The columns of an entity's records, in order: `_uri`, every non-transient attribute in the
/// entity's layout order (inherited ones first), then every non-transient relationship (to-one
/// only, when asked). A relationship is written as its destinations' unique keys when the
/// destination entity, or one of its ancestors, has a uniqueness constraint on a single
/// attribute (the entity's own constraints first, then its ancestors', nearest first; the
/// first such constraint), else as their URIs.
package struct RecordColumns: Sendable {
    package enum Column: Sendable, Equatable {
        case uri
        case attribute(String)
        /// `key`: the destination's unique key attribute, or nil to write URIs.
        case relationship(String, isToMany: Bool, isOrdered: Bool, key: String?)
    }

    package let entityName: String
    package let columns: [Column]

    /// The column names, `_uri` first.
    package var names: [String] {
        columns.map {
            switch $0 {
            case .uri: "_uri"
            case .attribute(let name), .relationship(let name, _, _, _): name
            }
        }
    }

    package init(model: ManagedObjectModel, entity entityName: String, includesToMany: Bool = true) throws {
        guard let layout = model.layout(of: entityName) else { throw UnknownEntityError(entityName, in: model) }
        self.entityName = entityName
        var columns: [Column] = [.uri]
        for attribute in layout.attributes where !attribute.isTransient {
            columns.append(.attribute(attribute.name))
        }
        for relationship in layout.relationships where !relationship.isTransient && (includesToMany || !relationship.isToMany) {
            columns.append(.relationship(
                relationship.name, isToMany: relationship.isToMany, isOrdered: relationship.isOrdered,
                key: Self.uniqueKey(of: relationship.destinationEntityName, in: model)))
        }
        self.columns = columns
    }

    /// The single attribute a uniqueness constraint of the entity or of an ancestor covers.
    package static func uniqueKey(of entityName: String, in model: ManagedObjectModel) -> String? {
        guard let entity = model.entity(named: entityName) else { return nil }
        for candidate in [entity] + model.ancestors(of: entityName) {
            for constraint in candidate.uniquenessConstraints where constraint.count == 1 {
                if let attribute = model.attribute(constraint[0], of: entityName), !attribute.isTransient { return attribute.name }
            }
        }
        return nil
    }
}

/// Turns store rows into records (`RecordColumns`), looking destinations' unique keys up a
/// group of rows at a time: one `rows(for:)` for all the destinations of a group, and one
/// `relatedObjectIDs(of:relationship:)` per object and to-many relationship. A group closes
/// when its rows reach `destinationsPerGroup` destinations, so the "one" side of a large
/// one-to-many (a category of a million products) costs the memory of its own record, not of
/// a whole batch of such records.
package struct StoreRecordReader {
    package let store: PersistentStore
    /// Destinations whose keys are looked up (and held) at once, at most (a single row with
    /// more is looked up alone).
    package var destinationsPerGroup = 10_000

    package init(store: PersistentStore) {
        self.store = store
    }

    /// Every row's record, in order.
    package func records(of rows: [StoreRow], columns: RecordColumns) throws -> [[RecordCell]] {
        var records: [[RecordCell]] = []
        records.reserveCapacity(rows.count)
        try forEachRecord(of: rows, columns: columns) { records.append($0) }
        return records
    }

    /// Calls `body` with each row's record, in order, a group of rows at a time.
    package func forEachRecord(of rows: [StoreRow], columns: RecordColumns, _ body: ([RecordCell]) throws -> Void) throws {
        var group: [(row: StoreRow, toMany: [[ManagedObjectID]?])] = []
        var needKeys = Set<ManagedObjectID>()
        func flush() throws {
            guard !group.isEmpty else { return }
            let keyed = try destinationRows(Array(needKeys))
            for (row, toMany) in group { try body(try record(row, toMany: toMany, columns: columns, keyed: keyed)) }
            group.removeAll(keepingCapacity: true)
            needKeys.removeAll(keepingCapacity: true)
        }
        for row in rows {
            var perColumn: [[ManagedObjectID]?] = []
            var wanted: [ManagedObjectID] = []
            for column in columns.columns {
                guard case .relationship(let name, let isToMany, let isOrdered, let key) = column else {
                    perColumn.append(nil)
                    continue
                }
                if isToMany {
                    var ids = try store.relatedObjectIDs(of: row.objectID, relationship: name)
                    if !isOrdered { ids.sort(by: Self.primaryKeyOrder) }
                    if key != nil { wanted += ids }
                    perColumn.append(ids)
                } else {
                    if key != nil, let index = row.layout.relationshipIndex(of: name), let id = row.toOneIDs[index] { wanted.append(id) }
                    perColumn.append(nil)
                }
            }
            if !group.isEmpty && needKeys.count + wanted.count > destinationsPerGroup { try flush() }
            needKeys.formUnion(wanted)
            group.append((row, perColumn))
        }
        try flush()
    }

    private func record(_ row: StoreRow, toMany: [[ManagedObjectID]?], columns: RecordColumns, keyed: [ManagedObjectID: StoreRow]) throws -> [RecordCell] {
        func reference(_ id: ManagedObjectID, key: String?, relationship: String) throws -> RecordCell {
            guard let key else { return .value(.string(id.uriRepresentation().absoluteString)) }
            guard let destination = keyed[id] else {
                // A key naming no object is damage: never printed as if there were no destination.
                throw StoreError.damaged([StoreDamage(
                    .danglingReference, place: "\(row.objectID.entityName).\(relationship)", count: 1,
                    example: "key \(row.objectID.primaryKey ?? 0) names \(id.entityName) key \(id.primaryKey ?? 0)",
                    problem: "reference to an object that is not in the store")], path: store.url.map(StoreLocation.displayName) ?? store.type)
            }
            guard let index = destination.layout.attributeIndex(of: key), let value = destination.values[index] else { return .null }
            return .value(value)
        }
        return try columns.columns.enumerated().map { columnIndex, column -> RecordCell in
            switch column {
            case .uri:
                return .value(.string(row.objectID.uriRepresentation().absoluteString))
            case .attribute(let name):
                guard let index = row.layout.attributeIndex(of: name), let value = row.values[index] else { return .null }
                return .value(value)
            case .relationship(let name, let isToMany, _, let key):
                if isToMany {
                    return .list(try (toMany[columnIndex] ?? []).map { try reference($0, key: key, relationship: name) })
                }
                guard let index = row.layout.relationshipIndex(of: name), let id = row.toOneIDs[index] else { return .null }
                return try reference(id, key: key, relationship: name)
            }
        }
    }

    private func destinationRows(_ ids: [ManagedObjectID]) throws -> [ManagedObjectID: StoreRow] {
        guard !ids.isEmpty else { return [:] }
        var result: [ManagedObjectID: StoreRow] = [:]
        for row in try store.rows(for: ids) { result[row.objectID] = row }
        return result
    }

    /// Destinations of an unordered to-many: by primary key (then entity name, for stores
    /// whose subentities number their objects apart).
    static func primaryKeyOrder(_ a: ManagedObjectID, _ b: ManagedObjectID) -> Bool {
        let (left, right) = (a.primaryKey ?? 0, b.primaryKey ?? 0)
        return left != right ? left < right : a.entityName < b.entityName
    }
}

/// Opening an existing store read-only, its type detected from the file.
package enum ReadOnlyStore {
    /// Opens the store at `url` read-only through a coordinator (the type is detected from the
    /// file, or named by a PostgreSQL URL); the store is never written.
    package static func open(_ url: URL, model: ManagedObjectModel) throws -> PersistentStore {
        guard StoreLocation(url: url).isServer || FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError(.notFound, path: url.path, "no store here; check the path")
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        return try coordinator.addPersistentStore(type: nil, at: url, readOnly: true)
    }
}
