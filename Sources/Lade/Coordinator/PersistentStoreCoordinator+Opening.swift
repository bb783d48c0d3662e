import Foundation

extension PersistentStoreCoordinator {
    /// Opens (or, for a missing file and a writable store, creates) a store of `type` at `url`.
    /// Without a type, the file's is detected; a file of another type than the one given is
    /// refused, naming the type it has.
    static func openStore(type: StoreType?, at url: URL?, model: ManagedObjectModel, readOnly: Bool) throws -> PersistentStore {
        if type == .inMemory { return try StoreType.inMemory.openStore(at: nil, model: model, readOnly: readOnly, creating: true) }
        guard let url else {
            throw StoreError(.notFound, path: type?.rawValue ?? "store", "a \(type?.rawValue ?? "file") store needs a file URL; use the type .inMemory for a store without a file")
        }
        if let server = StoreType(locationOf: url) {
            if let type, type != server {
                throw StoreError(.wrongStoreType, path: PostgreSQLLocation.redact(url.absoluteString), "a \(url.scheme ?? "postgresql")://… URL names a \(server.rawValue) store, not \(type.rawValue); give the type \(server.name) or none")
            }
            do {
                return try server.openStore(at: url, model: model, readOnly: readOnly, creating: false)
            } catch let error as StoreError where error.kind == .notFound && !readOnly {
                do {
                    return try server.openStore(at: url, model: model, readOnly: readOnly, creating: true)
                } catch let error as StoreError where error.kind == .alreadyExists {
                    // Another process made the store meanwhile (the server serialises making
                    // one): open the store it made.
                    return try server.openStore(at: url, model: model, readOnly: readOnly, creating: false)
                }
            }
        }
        let exists = FileManager.default.fileExists(atPath: url.path)
        let resolved = try resolvedType(type, at: url, exists: exists)
        return try resolved.openStore(at: url, model: model, readOnly: readOnly, creating: !readOnly && !exists)
    }

    /// The type to use for the file at `url`: the one given, which must be the file's when it
    /// exists, or the one detected.
    static func resolvedType(_ type: StoreType?, at url: URL, exists: Bool) throws -> StoreType {
        guard exists else {
            guard let type else { throw StoreError(.notFound, path: url.path, "no store here; give a store type to create one") }
            return type
        }
        let detected = try StoreType(detectingFileAt: url)
        if let type, type != detected {
            throw StoreError(.wrongStoreType, path: url.path, "this is a \(detected.rawValue) store, not \(type.rawValue); give the type \(detected.rawValue) or none (it is detected)")
        }
        return detected
    }
}
