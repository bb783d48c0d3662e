import Foundation
import Testing
@testable import Lade

/// Two stores in one coordinator, one per configuration (Core Data's
/// `addPersistentStore(ofType:configurationName:at:options:)`): objects land in their
/// entity's store, fetches read both, relationships across them are refused.
@Suite("Stores routed by configuration")
struct ConfigurationRoutingTests {
    /// Notes and Tags in "Local", Accounts in "Cloud"; Note.tags joins Local objects, and
    /// Note.account would join a Local object to a Cloud one.
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(
            entities: [
                EntityDescription(name: "Account", attributes: [AttributeDescription(name: "name", type: .string)]),
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [
                    RelationshipDescription(name: "tags", destinationEntityName: "Tag", inverseName: "notes", isToMany: true),
                    RelationshipDescription(name: "account", destinationEntityName: "Account"),
                ]),
                EntityDescription(name: "Tag", attributes: [AttributeDescription(name: "label", type: .string)], relationships: [
                    RelationshipDescription(name: "notes", destinationEntityName: "Note", inverseName: "tags", isToMany: true),
                ]),
            ],
            configurations: [ModelConfiguration(name: "Local", entityNames: ["Note", "Tag"]), ModelConfiguration(name: "Cloud", entityNames: ["Account"])])
    }

    @Test("every entity's objects land in its configuration's store; fetches and counts read both; a cross-store relationship is refused")
    func routing() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try Self.model()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let local = try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("local.sqlite"), configuration: "Local")
        let cloud = try coordinator.addPersistentStore(type: .xml, at: directory.appendingPathComponent("cloud.xml"), configuration: "Cloud")
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let note = try context.insertObject(forEntityName: "Note")
            try note.setValue("Groceries", forKey: "title")
            let tag = try context.insertObject(forEntityName: "Tag")
            try tag.setValue("home", forKey: "label")
            try note.add(tag, toKey: "tags")
            let account = try context.insertObject(forEntityName: "Account")
            try account.setValue("me", forKey: "name")
            try context.save()
            #expect(note.objectID.storeIdentifier == local.identifier)
            #expect(tag.objectID.storeIdentifier == local.identifier)
            #expect(account.objectID.storeIdentifier == cloud.identifier)

            // A relationship from a Local note to a Cloud account: refused, nothing saved.
            try note.setObject(account, forKey: "account")
            try note.setValue("Groceries (edited)", forKey: "title")
            let error = #expect(throws: ContextError.self) { try context.save() }
            #expect(error?.code == "context.crossStore", "\(String(describing: error))")
            context.rollback()
        }
        // Each file holds its own objects only.
        #expect(try local.count(StoreFetchRequest(entityName: "Note")) == 1)
        #expect(try local.count(StoreFetchRequest(entityName: "Account")) == 0)
        #expect(try cloud.count(StoreFetchRequest(entityName: "Account")) == 1)
        #expect(try cloud.count(StoreFetchRequest(entityName: "Note")) == 0)
        #expect(try SQLiteConnection(path: directory.appendingPathComponent("local.sqlite").path, mode: .readOnly).rows("SELECT ZTITLE FROM ZNOTE") == [[.text("Groceries")]])

        // A fresh context reads both stores, through one coordinator.
        let fresh = ManagedObjectContext(concurrencyType: .privateQueue)
        fresh.persistentStoreCoordinator = coordinator
        try fresh.performAndWait {
            #expect(try fresh.fetch(FetchRequest(entityName: "Account")).map { $0.value(forKey: "name") as? String } == ["me"])
            let notes = try fresh.fetch(FetchRequest(entityName: "Note"))
            #expect(notes.map { $0.value(forKey: "title") as? String } == ["Groceries"])
            #expect(notes.first?.objects(forKey: "tags").map { $0.value(forKey: "label") as? String } == ["home"])
            #expect(notes.first?.object(forKey: "account") == nil)
        }
    }

    @Test("two stores of one configuration: a fetch merges and sorts both, with limit and offset over the whole")
    func fetchMergesStores() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try Self.model()
        // Two separate files of Local, each filled through a coordinator of its own.
        for (name, type, titles) in [("a.sqlite", StoreType.sqlite, ["b", "d"]), ("b.xml", .xml, ["a", "c", "e"])] {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: type, at: directory.appendingPathComponent(name), configuration: "Local")
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                for title in titles { try context.insertObject(forEntityName: "Note").setValue(title, forKey: "title") }
                try context.save()
            }
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("a.sqlite"), configuration: "Local")
        try coordinator.addPersistentStore(type: .xml, at: directory.appendingPathComponent("b.xml"), configuration: "Local")
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait { () throws in
            var request = FetchRequest(entityName: "Note", sortDescriptors: [FetchSortDescriptor("title")])
            #expect(try context.fetch(request).map { $0.value(forKey: "title") as? String } == ["a", "b", "c", "d", "e"])
            request.fetchOffset = 1
            request.fetchLimit = 3
            #expect(try context.fetch(request).map { $0.value(forKey: "title") as? String } == ["b", "c", "d"])
            #expect(try context.count(for: FetchRequest(entityName: "Note")) == 5)
            #expect(try context.count(for: request) == 3)
        }
    }

    @Test("an unknown configuration, and an entity no store holds, are refused with what exists")
    func refusals() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        let error = #expect(throws: CoordinatorError.self) {
            try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("x.sqlite"), configuration: "Remote")
        }
        #expect(error?.description == "the model has no configuration 'Remote'; it has Default, Local, Cloud")
        try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("local.sqlite"), configuration: "Local")
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            _ = try context.insertObject(forEntityName: "Account")
            let refused = #expect(throws: CoordinatorError.self) { try context.save() }
            #expect(refused?.code == "coordinator.noStoreForEntity")
        }
    }
}
