import Foundation

/// Reading and pruning a store's persistent history without a stack: what `lade history` runs.
/// Only SQLite stores keep history (as in Core Data); docs/history.md says what Lade records.
extension PersistentStoreCoordinator {
    /// The transactions of the store at `url` after `bound` (all when nil), oldest first, each
    /// with its changes (`NSPersistentHistoryChangeRequest.fetchHistory(after:)`). No model is
    /// needed: entities are named from the store's `Z_PRIMARYKEY`.
    ///
    /// ```swift
    /// let transactions = try PersistentStoreCoordinator.history(ofStoreAt: url, after: .token(41))
    /// transactions.first?.changes.first?.entityName   // "Feedback"
    /// ```
    ///
    /// Throws `HistoryError` (`history.notTracked`, `history.unsupportedStoreType`) or `StoreError`.
    public static func history(ofStoreAt url: URL, after bound: PersistentHistory.Bound? = nil) throws -> [PersistentHistory.Transaction] {
        try requireHistoryStore(url)
        return try SQLiteHistory.transactions(at: url, after: bound)
    }

    /// Deletes the transactions of the store at `url` before `bound`, with their changes, in
    /// one transaction (`NSPersistentHistoryChangeRequest.deleteHistory(before:)`).
    public static func deleteHistory(ofStoreAt url: URL, before bound: PersistentHistory.Bound) throws -> PersistentHistory.Pruned {
        try requireHistoryStore(url)
        return try SQLiteHistory.deleteTransactions(at: url, before: bound)
    }

    private static func requireHistoryStore(_ url: URL) throws {
        if StoreType(locationOf: url) == .postgresql {
            throw HistoryError(.unsupportedStoreType, path: PostgreSQLLocation.redact(url.absoluteString), "persistent history in a PostgreSQL store is not kept yet (docs/postgresql.md); Lade keeps it in SQLite stores")
        }
        let type = try StoreType(detectingFileAt: url)
        guard type == .sqlite else {
            throw HistoryError(.unsupportedStoreType, path: url.path, "this is a \(type.rawValue) store; persistent history is kept by SQLite stores only (as in Core Data)")
        }
    }
}
