import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// What a store type says its stores can do, before one is open (a job's writer and commit
/// policy are chosen from it), is what an open store of that type answers.
@Suite("Store types' capabilities")
struct StoreTypeCapabilityTests {
    static let model = try! ManagedObjectModel(entities: [EntityDescription(name: "Item", attributes: [AttributeDescription(name: "name", type: .string)])])

    @Test("holdsSaves, bulkInserts and bulkLoads agree with the capabilities an open store of the type answers", arguments: StoreType.allCases)
    func agree(type: StoreType) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A PostgreSQL store in a schema of its own on the test server.
        let schema = type == .postgresql ? try PostgreSQLStoreTests.Schema("capabilities") : nil
        let url = schema?.url ?? (type == .inMemory ? nil : directory.appendingPathComponent("s.\(type.name)"))
        let store = try type.openStore(at: url, model: Self.model, readOnly: false, creating: true)
        #expect(type.holdsSaves == (store.heldSaves != nil))
        #expect(type.bulkInserts == (store.bulkInserting != nil))
        #expect(type.bulkLoads == (store.bulkLoading != nil))
        // SQLite and PostgreSQL stores hold saves and insert in bulk; only SQLite has a page
        // cache and indexes to defer while loading.
        let tables = type == .sqlite || type == .postgresql
        #expect([type.holdsSaves, type.bulkInserts, type.bulkLoads, type.keepsTableLayout] == [tables, tables, type == .sqlite, tables])
    }
}
