import Foundation
import Lade

/// A private-queue context on a coordinator of its own, with the store at `url` added (created
/// when missing; `type` nil: detected from the file): how tests fill and read one store.
public func privateContext(model: ManagedObjectModel, store url: URL, type: PersistentStoreCoordinator.StoreType? = nil) throws -> ManagedObjectContext {
    let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
    try coordinator.addPersistentStore(type: type, at: url)
    let context = ManagedObjectContext(concurrencyType: .privateQueue)
    context.persistentStoreCoordinator = coordinator
    return context
}
