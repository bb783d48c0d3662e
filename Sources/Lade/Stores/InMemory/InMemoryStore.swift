import Foundation

/// The in-memory store (`NSInMemoryStoreType`): an atomic store without a file, gone when the
/// last reference to it goes.
///
/// ```swift
/// let store = try coordinator.addPersistentStore(type: .inMemory, at: nil)
/// store.url    // nil
/// ```
package final class InMemoryStore: AtomicStore, @unchecked Sendable {
    /// A new, empty store for `model`.
    package init(model: ManagedObjectModel) throws {
        let contents = AtomicStoreContents.empty(model: model, storeType: StoreMetadata.inMemoryStoreType, firstKey: 1)
        try super.init(type: StoreMetadata.inMemoryStoreType, url: nil, model: model, readOnly: false, contents: contents)
    }

    /// A store holding `contents` (a migration's result).
    init(model: ManagedObjectModel, contents: AtomicStoreContents) throws {
        try super.init(type: StoreMetadata.inMemoryStoreType, url: nil, model: model, readOnly: false, contents: contents)
    }
}
