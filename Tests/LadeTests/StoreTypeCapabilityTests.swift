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
        var schema: (PostgresTestServer, String)?
        defer { if let (server, name) = schema { try? server.dropSchema(name) } }
        let url: URL?
        switch type {
        case .inMemory: url = nil
        case .postgresql:
            let server = try PostgresTestServer.fromEnvironment()
            let name = server.newSchemaName("capabilities")
            schema = (server, name)
            url = URL(string: server.storeURL(schema: name))
        default: url = directory.appendingPathComponent("s.\(type.name)")
        }
        let store = try type.openStore(at: url, model: Self.model, readOnly: false, creating: true)
        #expect(type.holdsSaves == (store.heldSaves != nil))
        #expect(type.bulkInserts == (store.bulkInserting != nil))
        #expect(type.bulkLoads == (store.bulkLoading != nil))
        // SQLite holds saves, inserts and loads in bulk; PostgreSQL holds saves and keeps the
        // table layout (bulk inserts once its batch writer lands; it has no page cache to size).
        let expected: [Bool] = switch type {
        case .sqlite: [true, true, true, true]
        case .postgresql: [true, type.bulkInserts, false, true]
        default: [false, false, false, false]
        }
        #expect([type.holdsSaves, type.bulkInserts, type.bulkLoads, type.keepsTableLayout] == expected)
    }
}
