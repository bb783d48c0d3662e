import Foundation

extension AtomicStore: WholeStoreReading {
    func separateReader(model: ManagedObjectModel) throws -> PersistentStore { self }
    func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T { try body() }
    func largestKeysPerHierarchy() throws -> [(root: String, largest: Int64)]? { nil }
    func changeCounter() throws -> Int64? { nil }

    /// Into another atomic store's writer, the objects go as the graph they are in (shared
    /// until either store changes): no row is made, and each object keeps its key, its
    /// version, its object ID as an XML file spelled it, and both sides of its relationships.
    func writeObjectsAsTheyAre(into writer: WholeStoreWriting) throws -> StoreMigrationSummary? {
        guard let writer = writer as? AtomicStoreWriter, writer.store.model.versionHashes == model.versionHashes else { return nil }
        let graph = graphSnapshot
        writer.adopt(graph)
        var summary = StoreMigrationSummary()
        for entity in model.entities where !entity.isAbstract {
            let keys = graph.keys(ofEntities: [entity.name], sorted: false)
            summary.objects[entity.name] = keys.count
            let counted = model.relationships(of: entity.name).filter(model.countsLinks)
            for key in keys where !counted.isEmpty {
                for relationship in counted { summary.relationshipLinks += graph[key]?.toMany[relationship.name]?.count ?? 0 }
            }
        }
        return summary
    }
}
