import Foundation

/// Lade's binary store: an atomic store in a compact file of its own design
/// (`docs/binary-store.md`), whose metadata can be read without reading the objects. Core
/// Data's own binary store is a keyed archive of Objective-C classes, which Linux cannot
/// read; this one plays the same role (`NSStoreType` "Binary").
///
/// ```swift
/// let store = try BinaryStore.create(at: URL(fileURLWithPath: "catalog.ladebin"), model: model)
/// store.type   // "Binary"
/// ```
package final class BinaryStore: AtomicStore, AtomicFileStore, @unchecked Sendable {
    package static let storeType = StoreType.binary

    /// Opens the store at `url` with `model`, which must have every entity and property the
    /// store records and, when the hashes compare, the same version hashes.
    package convenience init(url: URL, model: ManagedObjectModel, readOnly: Bool = false) throws {
        try self.init(url: url, model: model, readOnly: readOnly, format: BinaryStoreFile.self)
    }
}

extension BinaryStoreFile: AtomicStoreFileFormat {
    static var storeType: String { StoreMetadata.binaryStoreType }
    static var firstKey: Int64 { 1 }
    static func check(_ model: ManagedObjectModel, path: String) throws {
        if let refusal = StoreError.refusingComposites(in: model, storeType: storeType, path: path) { throw refusal }
    }
}
