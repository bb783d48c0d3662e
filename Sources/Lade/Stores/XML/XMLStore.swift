import Foundation

/// Core Data's XML store (`NSXMLStoreType`): an atomic store whose file is the XML described
/// in `XMLStoreFile`, read as a stream with libxml2's reader and written with its text writer.
/// Files Core Data wrote open here, and files written here are laid out as Core Data writes
/// them.
///
/// ```swift
/// let store = try XMLStore.create(at: URL(fileURLWithPath: "catalog.xml"), model: model)
/// let again = try XMLStore(url: store.url!, model: model, readOnly: true)
/// again.objectCount   // 0
/// ```
///
/// Each save writes the whole file beside the store and renames it into place
/// (`AtomicFileWriter`), so a crash leaves the old file or the new one.
package final class XMLStore: AtomicStore, AtomicFileStore, @unchecked Sendable {
    package static let storeType = StoreType.xml

    /// Opens the store at `url` with `model`: every object is read, and each must be of an
    /// entity (and have properties) the model has; when the store records version hashes
    /// comparable with the model's, they must match.
    package convenience init(url: URL, model: ManagedObjectModel, readOnly: Bool = false) throws {
        try self.init(url: url, model: model, readOnly: readOnly, format: XMLStoreFile.self)
    }
}

extension XMLStoreFile: AtomicStoreFileFormat {
    static var storeType: String { StoreMetadata.xmlStoreType }
    static var firstKey: Int64 { firstObjectID }

    static func check(_ model: ManagedObjectModel, path: String) throws {
        if let refusal = StoreError.refusingComposites(in: model, storeType: storeType, path: path) { throw refusal }
        _ = try XMLStoreNames(model: model, path: path)
    }
}
