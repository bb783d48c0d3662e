import Foundation

/// A new store file without a stack: what `lade init` runs.
extension PersistentStoreCoordinator {
    /// Creates an empty store file of `type` for `model` at `url`, which must not exist yet,
    /// laid out as Core Data lays out its stores and with the metadata Core Data writes, without
    /// adding it to a coordinator or opening it. The file is built beside `url` and moved into
    /// place only when complete. Returns the store's `NSStoreType` and new `NSStoreUUID`.
    ///
    /// A store added to a coordinator with `addPersistentStore` is created the same way when
    /// there is none; this is for making the file alone (opening a SQLite store makes SQLite
    /// read its whole schema, which takes time in the square of its tables).
    ///
    /// ```swift
    /// let created = try PersistentStoreCoordinator.createStore(
    ///     at: URL(fileURLWithPath: "catalog.sqlite"), type: .sqlite, model: model)
    /// created.type         // "SQLite"
    /// created.identifier   // the new store's NSStoreUUID
    /// ```
    ///
    /// With `history`, the store gets Core Data's persistent history tables, as Core Data makes
    /// them for a store opened with `NSPersistentHistoryTrackingKey`, and every write Lade makes
    /// to it records history (docs/history.md). SQLite and PostgreSQL stores keep history.
    ///
    /// Throws `StoreError`: `store.alreadyExists` when a file is already at `url`;
    /// `HistoryError` `history.unsupportedStoreType` for history in another store type.
    @discardableResult
    public static func createStore(at url: URL, type: StoreType, model: ManagedObjectModel, history: Bool = false) throws -> (type: String, identifier: String) {
        try type.createFile(at: url, model: model, history: history)
    }
}
