import Foundation
import Testing
@testable import Lade
import LadeTestSupport
import LadeTestTraits

/// Every corpus store Lade reads, converted SQLite → PostgreSQL → SQLite on the real test server:
/// the same objects (by entity and key), values and relationships at each end.
@Suite("PostgreSQL: corpus stores through the server and back", .needsCorpus, .slow)
struct PostgreSQLCorpusConversionTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let store: String
        /// The model; nil: the one the store carries (its Z_MODELCACHE).
        let model: (@Sendable () throws -> ManagedObjectModel)?
        var testDescription: String { store.split(separator: "/").last.map(String.init) ?? store }
    }

    static let cases: [Case] = CorpusSchemaTests.pairs.map { pair in
        Case(store: pair.store, model: { try ManagedObjectModel(contentsOf: Corpus.file(pair.model), version: pair.version) })
    } + [
        // Written by Core Data with persistent history and a derived attribute, Book.pagesCount
        // = pages.@count, which the PostgreSQL store keeps by its triggers; read with the models
        // they carry.
        Case(store: SampleModel2.storeV1, model: nil),
        Case(store: "alemar11/CoreDataPlus/Tests/Resources/SampleModel2/Fixtures/SampleModel2_V2.sqlite", model: nil),
    ]

    /// Every object of a store by "Entity/key": attributes, to-one destinations and to-many
    /// destinations (in order when ordered), as the store itself reads them.
    static func snapshot(_ store: PersistentStore) throws -> [String: String] {
        var objects: [String: String] = [:]
        for entity in store.model.entities where !entity.isAbstract {
            try store.forEachBatch(ofEntity: entity.name, batchSize: 500) { rows in
                for row in rows {
                    var parts = row.attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                    parts += row.toOne.sorted { $0.key < $1.key }.map { "\($0.key)->\($0.value.entityName)/\($0.value.primaryKey ?? -1)" }
                    for relationship in store.model.relationships(of: entity.name) where relationship.isToMany && !relationship.isTransient {
                        var keys = try store.relatedObjectIDs(of: row.objectID, relationship: relationship.name).map { "\($0.entityName)/\($0.primaryKey ?? -1)" }
                        if !relationship.isOrdered { keys.sort() }
                        parts.append("\(relationship.name)->[\(keys.joined(separator: ","))]")
                    }
                    objects["\(entity.name)/\(row.objectID.primaryKey ?? -1)"] = parts.joined(separator: "; ")
                }
            }
        }
        return objects
    }

    @Test("SQLite → PostgreSQL → SQLite gives identical objects", arguments: cases)
    func roundTrip(_ item: Case) throws {
        let server = try PostgresTestServer.fromEnvironment()
        let schema = server.newSchemaName("corpus")
        defer { try? server.dropSchema(schema) }
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try copyCorpusStore(item.store, to: temp)
        let model = try item.model?() ?? ManagedObjectModel(carriedByStoreAt: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let source = try coordinator.addPersistentStore(type: .sqlite, at: url, readOnly: true)
        let before = try Self.snapshot(source)

        let onServer = try coordinator.migratePersistentStore(source, to: URL(string: server.storeURL(schema: schema))!, options: .init(batchSize: 500), type: .postgresql)
        let middle = try Self.snapshot(onServer)
        var snapshots = [("PostgreSQL", middle)]
        // Apple stored some of SampleModel2_V1's Book.price decimals as doubles of 17 significant
        // digits (3.3333333332999993): the PostgreSQL store keeps them as numeric, and the SQLite
        // store Lade writes as the doubles they read back from.
        let back = try coordinator.migratePersistentStore(onServer, to: temp.appendingPathComponent("back.sqlite"), options: .init(batchSize: 500), type: .sqlite)
        snapshots.append(("SQLite again", try Self.snapshot(back)))
        for (name, snapshot) in snapshots {
            let differing = Set(before.keys).union(snapshot.keys).filter { before[$0] != snapshot[$0] }.sorted()
            #expect(differing.isEmpty, "\(name): \(differing.count) objects differ, e.g. \(differing.prefix(2).map { "\($0): \(before[$0] ?? "absent") vs \(snapshot[$0] ?? "absent")" })")
        }
        print("corpus \(item.testDescription): \(before.count) objects, identical through \(snapshots.map(\.0).joined(separator: " and "))")
    }
}
