import Foundation
import Testing
@testable import Lade

/// What a store type says its stores can do, before one is open (a job's writer and commit
/// policy are chosen from it), is what an open store of that type answers.
@Suite("Store types' capabilities")
struct StoreTypeCapabilityTests {
    static let model = try! ManagedObjectModel(entities: [EntityDescription(name: "Item", attributes: [AttributeDescription(name: "name", type: .string)])])

    @Test("holdsSaves, bulkInserts and bulkLoads agree with the capabilities an open store of the type answers", arguments: StoreType.allCases)
    func agree(type: StoreType) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try type.openStore(at: type == .inMemory ? nil : directory.appendingPathComponent("s.\(type.name)"), model: Self.model, readOnly: false, creating: true)
        #expect(type.holdsSaves == (store.heldSaves != nil))
        #expect(type.bulkInserts == (store.bulkInserting != nil))
        #expect(type.bulkLoads == (store.bulkLoading != nil))
        // Only SQLite holds saves, inserts in bulk and loads in bulk today; a PostgreSQL store will too.
        #expect([type.holdsSaves, type.bulkInserts, type.bulkLoads, type.keepsTableLayout] == Array(repeating: type == .sqlite, count: 4))
    }
}
