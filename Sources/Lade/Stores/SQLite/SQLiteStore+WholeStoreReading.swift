import Foundation

extension SQLiteStore: WholeStoreReading {
    func separateReader(model: ManagedObjectModel) throws -> PersistentStore {
        try SQLiteStore(url: fileURL, model: model, readOnly: true)
    }

    func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T {
        try beginReading()
        let result: T
        do {
            result = try body()
        } catch {
            try? endReading()
            throw error
        }
        try endReading()
        return result
    }

    func largestKeysPerHierarchy() throws -> [(root: String, largest: Int64)]? {
        let largest = try largestPrimaryKeys()
        return schema.entities.filter { $0.name == $0.rootName }.map { ($0.name, largest[$0.name] ?? 0) }
    }

    func changeCounter() throws -> Int64? { try dataVersion() }

    /// Rows are copied one by one: keys count per hierarchy here, and no other store keeps rows.
    func writeObjectsAsTheyAre(into writer: WholeStoreWriting) throws -> StoreMigrationSummary? { nil }
}
