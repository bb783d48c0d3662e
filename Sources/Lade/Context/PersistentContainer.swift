import Foundation

/// A model, a coordinator with its store, a main-queue context for the UI side and
/// background contexts for work, set up together.
///
/// ```swift
/// let container = PersistentContainer(name: "Catalog", model: model)
/// container.storeURL = URL(fileURLWithPath: "out/catalog.sqlite")
/// try container.loadPersistentStores()
/// let context = container.newBackgroundContext()
/// ```
public final class PersistentContainer: @unchecked Sendable {
    public let name: String
    public let managedObjectModel: ManagedObjectModel
    public let persistentStoreCoordinator: PersistentStoreCoordinator
    /// Where `loadPersistentStores()` opens the store; default `<name>.sqlite` in the current directory.
    public var storeURL: URL
    public var storeIsReadOnly = false

    /// A main-queue context on the coordinator.
    public lazy var viewContext: ManagedObjectContext = {
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = persistentStoreCoordinator
        context.name = "viewContext"
        return context
    }()

    public init(name: String, model: ManagedObjectModel) {
        self.name = name
        self.managedObjectModel = model
        self.persistentStoreCoordinator = PersistentStoreCoordinator(managedObjectModel: model)
        self.storeURL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("\(name).sqlite")
    }

    /// Opens (or creates) the SQLite store at `storeURL`.
    @discardableResult
    public func loadPersistentStores() throws -> PersistentStore {
        try persistentStoreCoordinator.addPersistentStore(type: .sqlite, at: storeURL, readOnly: storeIsReadOnly)
    }

    /// A new private-queue context on the coordinator.
    public func newBackgroundContext() -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = persistentStoreCoordinator
        return context
    }

    /// Runs `block` on a new private-queue context's queue.
    public func performBackgroundTask(_ block: @escaping @Sendable (ManagedObjectContext) -> Void) {
        let context = newBackgroundContext()
        context.perform { block(context) }
    }
}
