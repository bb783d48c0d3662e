import Foundation
import Testing
@testable import Lade

typealias StoreType = PersistentStoreCoordinator.StoreType

/// A coordinator of the every-type model on a fresh store of `type` in a temporary folder.
final class AtomicTestStack {
    let directory: URL
    let url: URL
    let type: StoreType
    let model: ManagedObjectModel
    let coordinator: PersistentStoreCoordinator

    init(_ type: StoreType, model: ManagedObjectModel? = nil) throws {
        self.type = type
        directory = try Fixtures.temporaryDirectory()
        url = directory.appendingPathComponent("store.\(type.rawValue.lowercased())")
        self.model = try model ?? EveryType.model()
        coordinator = PersistentStoreCoordinator(managedObjectModel: self.model)
        try coordinator.addPersistentStore(type: type, at: type == .inMemory ? nil : url)
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    func context() -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    /// A new coordinator on the same file, its type detected.
    func reopened() throws -> PersistentStoreCoordinator {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(at: url)
        return coordinator
    }
}

@Suite("Atomic stores (XML, binary, in-memory) through the stack")
struct AtomicStoreTests {
    static let fileTypes: [StoreType] = [.xml, .binary]

    @Test("every attribute type and relationship cardinality survives save and reopen, equal to what SQLite keeps", arguments: fileTypes)
    func roundTrip(type: StoreType) throws {
        let reference = try AtomicTestStack(.sqlite)
        try EveryType.populate(reference.context())
        let expected = try EveryType.snapshot(reference.coordinator)
        #expect(expected.objects.count == 3 + 4 + 24 + 12)

        let stack = try AtomicTestStack(type)
        try EveryType.populate(stack.context())
        let saved = try EveryType.snapshot(stack.coordinator)
        let reopened = try EveryType.snapshot(stack.reopened())
        #expect(saved == expected, "\(saved.differences(from: expected).joined(separator: "\n"))")
        #expect(reopened == expected, "\(reopened.differences(from: expected).joined(separator: "\n"))")
    }

    @Test("atomic stores keep a 38-digit decimal exactly (SQLite rounds it to a REAL)", arguments: fileTypes + [.inMemory])
    func exactDecimals(type: StoreType) throws {
        let stack = try AtomicTestStack(type)
        let exact = Decimal(string: "12345678901234567890.123456789012345678")!
        let context = stack.context()
        try context.performAndWait {
            let item = try context.insertObject(forEntityName: "Item")
            try item.setValue("exact", forKey: "name")
            try item.setValue(exact, forKey: "decimal")
            try context.save()
        }
        let coordinator = type == .inMemory ? stack.coordinator : try stack.reopened()
        #expect(try EveryType.snapshot(coordinator).objects["Item/exact"]?.attributes["decimal"] == .decimal(exact))
    }

    @Test("the in-memory store keeps every value and relationship for fresh contexts, without a file")
    func inMemoryRoundTrip() throws {
        let reference = try AtomicTestStack(.sqlite)
        try EveryType.populate(reference.context())
        let stack = try AtomicTestStack(.inMemory)
        try EveryType.populate(stack.context())
        let store = try #require(stack.coordinator.persistentStores.first)
        #expect(store.type == "InMemory" && store.url == nil)
        #expect(try EveryType.snapshot(stack.coordinator) == EveryType.snapshot(reference.coordinator))
        #expect(try FileManager.default.contentsOfDirectory(atPath: stack.directory.path).isEmpty)
    }

    @Test("updates, relationship changes and deletes are saved and survive reopening", arguments: fileTypes + [.inMemory, .sqlite])
    func changes(type: StoreType) throws {
        let stack = try AtomicTestStack(type)
        try EveryType.populate(stack.context())
        let context = stack.context()
        try context.performAndWait {
            let items = try context.fetch(FetchRequest(entityName: "Item", sortDescriptors: [FetchSortDescriptor("name")]))
            let owners = try context.fetch(FetchRequest(entityName: "Owner", sortDescriptors: [FetchSortDescriptor("name")]))
            let tags = try context.fetch(FetchRequest(entityName: "Tag", sortDescriptors: [FetchSortDescriptor("name")]))
            try items[1].setValue("changed ✓", forKey: "text")
            try items[1].setValue(nil, forKey: "i64")
            try items[2].setValue(owners[2], forKey: "owner")            // moves between one-to-many sets
            try items[2].setValue(owners[0], forKey: "rankedBy")         // appended to an ordered set
            try tags[0].setValue(Array(items.prefix(3)), forKey: "items") // many-to-many replaced
            try owners[1].setValue([items[9], items[7], items[5]], forKey: "ranked")
            context.delete(items[4])
            context.delete(tags[3])
            try context.save()
        }
        let expected = try EveryType.snapshot(stack.coordinator)
        #expect(expected.objects["Item/item 001"]?.attributes["text"] == .string("changed ✓"))
        #expect(expected.objects["Item/item 004"] == nil && expected.objects["Tag/tag 3"] == nil)
        #expect(expected.objects["Owner/owner 1"]?.relationships["ranked"]?.prefix(3) == ["item 009", "item 007", "item 005"])
        #expect(expected.objects.values.allSatisfy { !($0.relationships["tags"] ?? []).contains("tag 3") })
        let reopened = type == .inMemory ? stack.coordinator : try stack.reopened()
        let after = try EveryType.snapshot(reopened)
        #expect(after == expected, "\(after.differences(from: expected).joined(separator: "\n"))")
    }

    @Test("two contexts changing one object: the second save is refused with a merge conflict, as on SQLite", arguments: fileTypes + [.inMemory, .sqlite])
    func optimisticLocking(type: StoreType) throws {
        let stack = try AtomicTestStack(type)
        try EveryType.populate(stack.context(), items: 4)
        let first = stack.context(), second = stack.context()
        let request = FetchRequest(entityName: "Owner", predicate: .compare(.keyPath("name"), .equal, .constant(.string("owner 1"))))
        let a = try first.performAndWait { try #require(try first.fetch(request).first) }
        let b = try second.performAndWait { try #require(try second.fetch(request).first) }
        try first.performAndWait { _ = a["name"]; try a.setValue("owner one", forKey: "name"); try first.save() }
        let error = second.performAndWait {
            _ = b["name"]
            b["name"] = "owner uno"
            return #expect(throws: ContextError.self) { try second.save() }
        }
        guard case .mergeConflict(let conflicts)? = error else { Issue.record("expected a merge conflict, got \(String(describing: error))"); return }
        #expect(conflicts.map(\.expectedVersion) == [1] && conflicts.map(\.storedVersion) == [2])
        // With a merge policy, the second save goes through and wins.
        try second.performAndWait {
            second.mergePolicy = .mergeByPropertyObjectTrump
            try second.save()
        }
        #expect(try EveryType.snapshot(stack.coordinator).objects["Owner/owner uno"] != nil)
        // A delete against a stale version conflicts too.
        let third = stack.context()
        try third.performAndWait {
            let stale = try #require(try third.fetch(FetchRequest(entityName: "Tag")).first)
            _ = stale["name"]
            try first.performAndWait {
                let fresh = try first.existingObject(with: stale.objectID)
                try fresh.setValue("renamed", forKey: "name")
                try first.save()
            }
            third.delete(stale)
            #expect(throws: ContextError.self) { try third.save() }
        }
    }

    @Test("a uniqueness constraint holds as on SQLite: a duplicate is refused and nothing of the save is kept", arguments: fileTypes + [.inMemory, .sqlite])
    func uniqueness(type: StoreType) throws {
        let stack = try AtomicTestStack(type)
        try EveryType.populate(stack.context(), items: 2)
        let before = try EveryType.snapshot(stack.coordinator)
        let context = stack.context()
        try context.performAndWait {
            let tag = try context.insertObject(forEntityName: "Tag")
            try tag.setValue("tag 1", forKey: "name")
            let owner = try context.insertObject(forEntityName: "Owner")
            try owner.setValue("owner new", forKey: "name")
            let error = #expect(throws: ContextError.self) { try context.save() }
            guard case .uniquenessViolation(let entity, let properties, _)? = error else { Issue.record("got \(String(describing: error))"); return }
            #expect(entity == "Tag" && properties == ["name"])
        }
        #expect(try EveryType.snapshot(stack.coordinator) == before)
        if type != .inMemory { #expect(try EveryType.snapshot(stack.reopened()) == before) }
    }

    @Test("metadata set on the coordinator is written at the next save, with no object changed; the stack's keys stay", arguments: fileTypes + [.inMemory])
    func coordinatorMetadata(type: StoreType) throws {
        let stack = try AtomicTestStack(type)
        let store = try #require(stack.coordinator.persistentStores.first)
        var metadata = stack.coordinator.metadata(for: store)
        metadata["seeded"] = .bool(true)
        try stack.coordinator.setMetadata(metadata, for: store)
        #expect(store.metadata["seeded"] == nil)
        let context = stack.context()
        try context.performAndWait { try context.save() }
        #expect(store.metadata == metadata)
        if type != .inMemory {
            #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: stack.url) == metadata)
        }
        var changed = metadata
        changed["NSStoreType"] = .string("SQLite")
        #expect(throws: StoreError.self) { try stack.coordinator.setMetadata(changed, for: store) }
        var request = StoreSaveRequest()
        request.metadata = changed
        #expect(throws: StoreError.self) { try store.save(request) }
    }
}
