import Foundation
@testable import Lade

/// A coordinator on a fresh SQLite store of the sample Catalog model, in its own folder.
final class TestStack {
    let directory: URL
    let url: URL
    let model: ManagedObjectModel
    let coordinator: PersistentStoreCoordinator

    init() throws {
        directory = try Fixtures.temporaryDirectory()
        url = directory.appendingPathComponent("catalog.sqlite")
        model = try ManagedObjectModel(contentsOf: Fixtures.catalog)
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    func context(_ type: ManagedObjectContext.ConcurrencyType = .privateQueue) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: type)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    /// A second coordinator on the same file, as another process would have.
    func otherCoordinator() throws -> PersistentStoreCoordinator {
        let other = PersistentStoreCoordinator(managedObjectModel: model)
        try other.addPersistentStore(type: .sqlite, at: url)
        return other
    }

    /// Raw rows, read with a separate connection.
    func sql(_ query: String) throws -> [[SQLiteValue]] {
        try SQLiteConnection(path: url.path, mode: .readOnly).rows(query)
    }

    /// Inserts a product with the required attributes set.
    @discardableResult
    static func product(_ sku: String, in context: ManagedObjectContext, name: String? = nil, price: Decimal = 1) throws -> ManagedObject {
        let product = try context.insertObject(forEntityName: "Product")
        try product.setValue(sku, forKey: "sku")
        try product.setValue(name ?? "Product \(sku)", forKey: "name")
        try product.setValue(price, forKey: "price")
        return product
    }

    @discardableResult
    static func category(_ name: String, in context: ManagedObjectContext) throws -> ManagedObject {
        let category = try context.insertObject(forEntityName: "Category")
        try category.setValue(name, forKey: "name")
        return category
    }
}
