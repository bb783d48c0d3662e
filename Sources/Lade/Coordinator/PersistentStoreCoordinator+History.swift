import Foundation

/// Reading and pruning a store's persistent history without a stack: what `lade history` runs.
/// SQLite and PostgreSQL stores keep history (Core Data: SQLite only); docs/history.md says what
/// Lade records.
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
        try historyStoreType(url).history(at: url, after: bound)
    }

    /// Deletes the transactions of the store at `url` before `bound`, with their changes, in
    /// one transaction (`NSPersistentHistoryChangeRequest.deleteHistory(before:)`).
    public static func deleteHistory(ofStoreAt url: URL, before bound: PersistentHistory.Bound) throws -> PersistentHistory.Pruned {
        try historyStoreType(url).deleteHistory(at: url, before: bound)
    }

    private static func historyStoreType(_ url: URL) throws -> StoreType {
        if StoreType(locationOf: url) == .postgresql { return .postgresql }
        return try StoreType(detectingFileAt: url)
    }
}
