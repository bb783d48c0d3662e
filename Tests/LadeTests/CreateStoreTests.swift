import Foundation
import Testing
@testable import Lade

/// `PersistentStoreCoordinator.createStore(at:type:model:)`: a new store file without a stack.
@Suite("Creating a store file")
struct CreateStoreTests {
    static let model = try! ManagedObjectModel(entities: [EntityDescription(name: "Item", attributes: [AttributeDescription(name: "name", type: .string)])])

    @Test("each file type makes an empty store of that type, whose metadata carries the UUID returned", arguments: PersistentStoreCoordinator.StoreType.fileTypes)
    func creates(type: PersistentStoreCoordinator.StoreType) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("new.\(type.name)")
        let created = try PersistentStoreCoordinator.createStore(at: url, type: type, model: Self.model)
        #expect(created.type == type.rawValue)
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
        #expect(metadata[StoreMetadata.Key.storeType] == .string(type.rawValue))
        #expect(metadata[StoreMetadata.Key.storeUUID] == .string(created.identifier))
        let context = try privateContext(model: Self.model, store: url)
        #expect(try context.performAndWait { try context.count(for: FetchRequest(entityName: "Item")) } == 0)
    }

    @Test("a file already there is refused and left as it was")
    func existing() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for type in PersistentStoreCoordinator.StoreType.fileTypes {
            let url = directory.appendingPathComponent("taken.\(type.name)")
            try Data("mine".utf8).write(to: url)
            #expect { try PersistentStoreCoordinator.createStore(at: url, type: type, model: Self.model) } throws: { error in
                (error as? StoreError)?.code == "store.alreadyExists"
            }
            #expect(try Data(contentsOf: url) == Data("mine".utf8))
        }
    }

    @Test("the in-memory type has no file to create")
    func inMemory() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("never-\(UUID().uuidString)")
        #expect(throws: StoreError.self) { try PersistentStoreCoordinator.createStore(at: url, type: .inMemory, model: Self.model) }
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }
}
