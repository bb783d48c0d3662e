import Foundation

/// Bulk loading into an empty table: the model's fetch indexes on it (indexed attributes, fetch
/// indexes, compound indexes) are dropped in the first write transaction and built again, each
/// in one sorted pass over the table, by the commit that `buildDeferredIndexesAtNextCommit`
/// marks, in the same transaction as the last rows. Inserting rows in random order into an
/// index touches its pages all over the file, and once the index outgrows the page cache
/// nearly every row costs a page read and a page written back; building it from the finished
/// table sorts once. Uniqueness constraints and the indexes of to-one keys and `Z_ENT` stay:
/// the load itself looks rows up by them.
///
/// Between the load's commits the store has no such indexes: queries give the same answers,
/// slower. A process killed before the last commit leaves them missing; the next deferral on
/// that table finds them missing and keeps them out until its own last commit, so the run that
/// resumes the load builds them.
extension SQLiteStore {
    /// Keeps the fetch indexes of `entityName`'s table out of the file from the next write
    /// transaction (a `StoreTransaction` or a batch insert session) until the commit after
    /// `buildDeferredIndexesAtNextCommit`: all of them when the table has no rows, otherwise
    /// only those already missing (a load killed before its last commit). An index whose first
    /// column is one of `keeping` (the attributes or to-one relationships the load looks rows
    /// up by) stays. Returns the names of the indexes kept out, in the schema's order.
    package func deferFetchIndexes(ofEntity entityName: String, keeping properties: Set<String>) throws -> [String] {
        guard !isReadOnly else { throw StoreError(.readOnly, path: fileURL.path, "the store was opened read-only") }
        guard let table = schema.entity(named: entityName)?.tableName else {
            throw StoreError(.modelMismatch(entities: [entityName]), path: fileURL.path, "the model has no entity \(entityName)")
        }
        let kept = Set(properties.compactMap { schema.columnName(ofProperty: $0, entity: entityName, in: model) })
        let candidates = schema.indexes.filter { $0.table == table && $0.kind == .fetch && !kept.contains($0.columns[0]) }
        return try withConnection { connection in
            guard !connection.isInTransaction else {
                throw StoreError(.transactionOpen, path: fileURL.path, "a transaction is open on this store: indexes can be deferred only before it begins")
            }
            let present = try connection.indexNames()
            let empty = try connection.rows("SELECT 1 FROM \(TableLayout.quoted(table)) LIMIT 1").isEmpty
            deferredIndexes = candidates.filter { empty || !present.contains($0.name) }
            buildsDeferredIndexes = false
            return deferredIndexes.map(\.name)
        }
    }

    /// Makes the next commit build the deferred indexes, in its transaction; after it the
    /// store keeps no index out.
    package func buildDeferredIndexesAtNextCommit() {
        try? withConnection { _ in buildsDeferredIndexes = !deferredIndexes.isEmpty }
    }

    /// The indexes kept out until a commit builds them (`deferFetchIndexes`).
    package var deferredIndexNames: [String] {
        (try? withConnection { _ in deferredIndexes.map(\.name) }) ?? []
    }

    /// In a write transaction just begun (`beginWrite`): drops the deferred indexes the file
    /// still has.
    func dropDeferredIndexes(_ connection: SQLiteConnection) throws {
        for index in deferredIndexes {
            try connection.execute("DROP INDEX IF EXISTS \(TableLayout.quoted(index.name))")
        }
    }

    /// In the transaction about to commit (`commitWrite`): builds the deferred indexes when
    /// this is the commit that should. Returns whether it did.
    ///
    /// The build runs with a page cache of `indexBuildCacheKiB`: SQLite's sorter holds up to the
    /// page cache's size in memory, about twice over as measured. Building the name index of
    /// 1,000,000 rows (`sqlite3` on a store `lade run` filled, `/usr/bin/time`, one run each)
    /// took 1.47 s and 36.5 MiB with 16 MiB of cache, 1.07 s and 8.2 MiB with 2 MiB.
    func buildDeferredIndexesIfDue(_ connection: SQLiteConnection) throws -> Bool {
        guard buildsDeferredIndexes else { return false }
        let previous = try connection.rows("PRAGMA cache_size").first?.first
        try connection.execute("PRAGMA cache_size = -\(Self.indexBuildCacheKiB)")
        defer {
            if case .integer(let size)? = previous { try? connection.execute("PRAGMA cache_size = \(size)") }
        }
        for index in deferredIndexes { try connection.execute(index.createStatement(ifNotExists: true)) }
        return true
    }

    /// The page cache while deferred indexes are built, in KiB.
    static let indexBuildCacheKiB = 2048

    /// After the commit that built them (`commitWrite`).
    func deferredIndexesBuilt() {
        deferredIndexes = []
        buildsDeferredIndexes = false
    }
}
