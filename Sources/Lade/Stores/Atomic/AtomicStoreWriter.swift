import Foundation
import OrderedCollections

/// Writes a new atomic store whole (`WholeStoreWriting`): its objects are gathered in memory, in
/// the store they will make (`store`), and when finished its file (XML, binary) is written
/// beside its path and moved into place by `AtomicFileWriter`; a store in memory is handed back.
/// An atomic store read into it gives its objects as they are
/// (`AtomicStore.writeObjectsAsTheyAre(into:)`).
final class AtomicStoreWriter: WholeStoreWriting {
    private let built: AtomicStore
    private let format: AtomicStoreFileFormat.Type?
    private let url: URL?
    private let overwrite: Bool

    /// A writer of a store of `format` at `url`, or (both nil) of a store in memory, with
    /// `metadata` (its `NSStoreUUID` kept; a new one when it has none). A model the format
    /// cannot hold is refused here, before anything is read.
    init(format: AtomicStoreFileFormat.Type?, at url: URL?, model: ManagedObjectModel, metadata given: [String: PropertyListValue], overwrite: Bool) throws {
        let type = format?.storeType ?? StoreMetadata.inMemoryStoreType
        if let format, let url { try format.check(model, path: url.path) }
        var metadata = given
        metadata[StoreMetadata.Key.storeType] = .string(type)
        // SQLite's own setting; an atomic store has no pages to vacuum.
        metadata[StoreMetadata.Key.autoVacuumLevel] = nil
        if metadata[StoreMetadata.Key.storeUUID] == nil { metadata[StoreMetadata.Key.storeUUID] = .string(UUID().uuidString) }
        let contents = AtomicStoreContents(metadata: metadata, graph: AtomicObjectGraph(nextKey: format?.firstKey ?? 1))
        // Until it is finished the store has no file: a save into it changes the objects only.
        built = format == nil
            ? try InMemoryStore(model: model, contents: contents)
            : try AtomicStore(type: type, url: nil, model: model, readOnly: false, contents: contents)
        self.format = format
        self.url = url
        self.overwrite = overwrite
    }

    var store: PersistentStore { built }
    var keysUniqueAcrossEntities: Bool { true }
    var firstKey: Int64 { format?.firstKey ?? 1 }

    /// Both sides of every relationship are kept, each with its objects.
    func toManyWriting(of relationship: RelationshipDescription) -> ToManyWriting {
        relationship.isToMany && !relationship.isTransient ? .withObjects : .never
    }

    func write(_ objects: [WholeStoreObject]) throws {
        built.modifyGraph { graph in
            for object in objects {
                let row = object.row
                guard let key = row.objectID.primaryKey else { continue }
                var atomic = AtomicObject(entity: row.objectID.entityName, attributes: row.attributes)
                for (index, destination) in row.toOneIDs.enumerated() {
                    if let destination = destination?.primaryKey { atomic.toOne[row.layout.relationships[index].name] = destination }
                }
                for toMany in object.toMany {
                    atomic.toMany[toMany.relationship.name] = OrderedSet(toMany.destinations.compactMap(\.primaryKey))
                }
                graph.set(atomic, for: key)
            }
        }
    }

    func writeToMany(_ destinations: [WholeStoreObject.ToMany]) throws {
        built.modifyGraph { graph in
            for toMany in destinations {
                guard let key = toMany.owner.primaryKey, var object = graph[key] else { continue }
                object.toMany[toMany.relationship.name] = OrderedSet(toMany.destinations.compactMap(\.primaryKey))
                graph.set(object, for: key)
            }
        }
    }

    /// Takes `graph` as the new store's objects (shared, not copied): an atomic store's whole.
    func adopt(_ graph: AtomicObjectGraph) {
        built.modifyGraph { $0 = graph }
    }

    func finish() throws -> PersistentStore? {
        guard let format, let url else { return built }
        let contents = AtomicStoreContents(metadata: built.metadata, graph: built.graphSnapshot)
        if overwrite { try StoreFiles.retire(url) }
        let model = built.model
        let write: (FileOutput) throws -> Void = { try format.write(contents, model: model, to: $0) }
        try overwrite ? AtomicFileWriter.replace(url, write) : AtomicFileWriter.create(url, write)
        return nil
    }

    /// Nothing is on disk before `finish()`, which leaves no temporary file whatever happens.
    func discard() {}
}
