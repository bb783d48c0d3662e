import Foundation
import Testing
@testable import Lade

/// Metadata staged on the coordinator is taken out for the transaction that writes it, and put
/// back when that transaction fails, by one rule for every write (a save, a store transaction's
/// or a batch insert session's commit): unless newer metadata was staged meanwhile.
@Suite("Staged metadata and failed commits")
struct StagedMetadataRuleTests {
    @Test("metadata staged while a commit that fails runs is kept, not overwritten by what the commit took")
    func newerKept() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try TwoStoreSaveTests.model())
        let store = try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("s.sqlite"))
        var first = store.metadata, second = store.metadata
        first["checkpoint"] = .integer(1)
        second["checkpoint"] = .integer(2)
        try coordinator.setMetadata(first, for: store)
        struct Failed: Error {}
        #expect(throws: Failed.self) {
            try coordinator.withStagedMetadata(for: store) { taken in
                #expect(taken?["checkpoint"] == .integer(1))
                try coordinator.setMetadata(second, for: store)   // staged meanwhile
                throw Failed()
            }
        }
        #expect(coordinator.metadata(for: store)["checkpoint"] == .integer(2))
        #expect(throws: Failed.self) {
            try coordinator.withStagedMetadata(for: store) { _ in throw Failed() }
        }
        #expect(coordinator.metadata(for: store)["checkpoint"] == .integer(2), "put back when nothing newer was staged")
    }

    @Test("a batch insert session whose commit fails keeps the metadata staged, and a later save writes it")
    func batchInsertCommit() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try TwoStoreSaveTests.model())
        let store = try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("s.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            var metadata = store.metadata
            metadata["checkpoint"] = .integer(7)
            try coordinator.setMetadata(metadata, for: store)
            let session = try context.beginBatchInsert(entityName: "Account")
            let target = try session.target(entityName: "Account", attributes: ["name"], key: ["name"])
            _ = try session.write([.init(values: [.string("me")])], to: target)
            // What SQLite does after some errors: the transaction is gone, and the commit fails.
            try #require(store as? SQLiteStore).withConnection { try $0.execute("ROLLBACK") }
            #expect(throws: (any Error).self) { try session.commit() }
            #expect(coordinator.metadata(for: store)["checkpoint"] == .integer(7))
            #expect(store.metadata["checkpoint"] == nil)
            try context.save()
        }
        #expect(store.metadata["checkpoint"] == .integer(7))
    }
}
