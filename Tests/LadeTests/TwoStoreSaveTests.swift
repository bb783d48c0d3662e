import Foundation
import Testing
@testable import Lade

/// A save that reaches two stores commits one transaction per store, in order; there is no
/// two-phase commit (Core Data has none either). When a later store refuses, the earlier one
/// keeps what it wrote, the context counts those changes saved, and saving again writes the
/// rest only.
@Suite("A save across two stores, one of which fails")
struct TwoStoreSaveTests {
    /// Notes in "Local", Accounts (unique by name) in "Cloud".
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(
            entities: [
                EntityDescription(name: "Account", attributes: [AttributeDescription(name: "name", type: .string)], uniquenessConstraints: [["name"]]),
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: "title", type: .string)]),
            ],
            configurations: [ModelConfiguration(name: "Local", entityNames: ["Note"]), ModelConfiguration(name: "Cloud", entityNames: ["Account"])])
    }

    @Test("the first store keeps what it wrote, the second nothing; the retry writes the second store's changes only, with the keys the failed save would have used", arguments: [
        PersistentStoreCoordinator.StoreType.sqlite, .xml,
    ])
    func failedSecondStore(cloudType: PersistentStoreCoordinator.StoreType) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        let local = try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("local.sqlite"), configuration: "Local")
        let cloud = try coordinator.addPersistentStore(type: cloudType, at: directory.appendingPathComponent("cloud.\(cloudType.name)"), configuration: "Cloud")
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let first = try context.insertObject(forEntityName: "Account")
            try first.setValue("me", forKey: "name")
            try context.save()

            let note = try context.insertObject(forEntityName: "Note")
            try note.setValue("first", forKey: "title")
            let account = try context.insertObject(forEntityName: "Account")
            try account.setValue("me", forKey: "name")
            let error = #expect(throws: ContextError.self) { try context.save() }
            #expect(error?.code == "save.notUnique", "\(String(describing: error))")
            // The note is saved (its store committed); the account is new again.
            #expect(!note.objectID.isTemporaryID && !note.isInserted && !note.hasChanges)
            #expect(account.objectID.isTemporaryID && account.isInserted)
            #expect(context.insertedObjects == [account])

            try account.setValue("you", forKey: "name")
            try context.save()
            #expect(account.objectID.primaryKey == first.objectID.primaryKey.map { $0 + 1 }, "the failed save gave its key back")
            #expect(!context.hasChanges)
        }
        #expect(try local.count(StoreFetchRequest(entityName: "Note")) == 1, "the retry did not write the note again")
        #expect(try cloud.fetch(StoreFetchRequest(entityName: "Account", sortDescriptors: [FetchSortDescriptor("name")])).map { $0.attributes["name"] } == [.string("me"), .string("you")])
    }

    @Test("metadata staged for the failed store stays staged, and is written by the retry; the committed store's was written with its data")
    func stagedMetadata() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        let local = try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("local.sqlite"), configuration: "Local")
        let cloud = try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("cloud.sqlite"), configuration: "Cloud")
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            try context.insertObject(forEntityName: "Account").setValue("me", forKey: "name")
            try context.save()
            for store in [local, cloud] {
                var metadata = coordinator.metadata(for: store)
                metadata["step"] = .integer(1)
                try coordinator.setMetadata(metadata, for: store)
            }
            try context.insertObject(forEntityName: "Note").setValue("first", forKey: "title")
            let account = try context.insertObject(forEntityName: "Account")
            try account.setValue("me", forKey: "name")
            #expect(throws: ContextError.self) { try context.save() }
            #expect(local.metadata["step"] == .integer(1))
            #expect(cloud.metadata["step"] == nil)
            #expect(coordinator.metadata(for: cloud)["step"] == .integer(1), "still staged")
            try account.setValue("you", forKey: "name")
            try context.save()
        }
        #expect(cloud.metadata["step"] == .integer(1))
    }
}
