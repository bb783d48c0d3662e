import Foundation

extension ManagedObjectModel {
    /// The model the store at `url` carries: what a command or job that names no model works
    /// with. Core Data's SQLite stores keep their model in `Z_MODELCACHE` (since iOS 11 and
    /// macOS 10.13, and every SQLite store Lade writes); nothing else keeps one.
    ///
    /// Throws `StoreError` `store.noModel` when the store carries no model, or is not there
    /// (a new store needs its model named), and what reading the cache throws (a damaged cache
    /// is `ModelError`).
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(carriedByStoreAt: URL(fileURLWithPath: "App.sqlite"))
    /// ```
    public init(carriedByStoreAt url: URL) throws {
        if let location = try PostgreSQLLocation(url: url) {
            guard let cache = try PostgreSQLStore.modelCache(at: location) else {
                throw StoreError(.noModel, path: location.redacted, "no model was named, and this store carries none (its Z_MODELCACHE is empty)")
            }
            self = try ManagedObjectModel(modelCache: cache, origin: location.redacted + ", Z_MODELCACHE")
            return
        }
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError(.noModel, path: url.path, "no model was named, and there is no store here to read one from; a new store needs its model named")
        }
        let type = try StoreType(detectingFileAt: url)
        guard type == .sqlite else {
            throw StoreError(.noModel, path: url.path, "no model was named, and \(type == .xml ? "an XML" : "a binary") store carries none (only SQLite stores keep their model, in Z_MODELCACHE)")
        }
        guard let model = try ManagedObjectModel.modelCache(ofStoreAt: url) else {
            throw StoreError(.noModel, path: url.path, "no model was named, and this store carries none: it has no model cache (Z_MODELCACHE), which Core Data writes since iOS 11 and macOS 10.13")
        }
        self = model
    }
}
