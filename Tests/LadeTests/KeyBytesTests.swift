import Foundation
import Testing
@testable import Lade

/// Keys compare as the stores compare them, byte for byte, not by Unicode equivalence.
@Suite("Keys compare as bytes")
struct KeyBytesTests {
    static let composed = "caf\u{E9}", decomposed = "cafe\u{301}"

    @Test("NFC and NFD spellings are two values, with two hashes")
    func values() {
        #expect(Self.composed == Self.decomposed, "Swift's own String equality, for contrast")
        #expect(AttributeValue.string(Self.composed) != AttributeValue.string(Self.decomposed))
        #expect(Set([AttributeValue.string(Self.composed), .string(Self.decomposed)]).count == 2)
        #expect(AttributeValue.string(Self.composed) == AttributeValue.string("caf\u{E9}"))
    }

    @Test("two categories named café in NFC and NFD are two objects under a uniqueness constraint, in every store type",
          arguments: [StoreType.sqlite, .xml, .binary])
    func uniqueness(type: StoreType) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("catalog")
        let model = try ManagedObjectModel(contentsOf: Fixtures.catalog)
        func context() throws -> ManagedObjectContext {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: type, at: url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            return context
        }
        let writer = try context()
        try writer.performAndWait {
            try TestStack.category(Self.composed, in: writer)
            try TestStack.category(Self.decomposed, in: writer)
            try writer.save()
        }
        let reader = try context()
        let names = try reader.performAndWait {
            try reader.fetch(FetchRequest(entityName: "Category")).compactMap { $0.value(forKey: "name") as? String }
        }
        #expect(names.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
                == [Array(Self.composed.utf8), Array(Self.decomposed.utf8)].sorted { $0.lexicographicallyPrecedes($1) })
    }
}
