import Foundation
import Testing
@testable import Lade

/// Issue 43 §4 "Slow": reading a model must cost in proportion to its size. Each test reads a
/// shape at a size and at four times that size, in the same run, and asks that the larger take
/// less than eight times as long: linear work takes about four times, quadratic sixteen. No
/// absolute time is asked, so a loaded machine slows both sizes alike.
@Suite("Reading a model costs in proportion to its size (issue 43 §4 Slow)", .serialized)
struct ModelScalingTests {
    /// The best of three timings of `body`, in seconds: the least disturbed by other work.
    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        var best = Double.infinity
        for _ in 0..<3 {
            let started = DispatchTime.now().uptimeNanoseconds
            try body()
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
        }
        return best
    }

    /// How much longer `read` takes on the shape made at `4 × size` than at `size`.
    static func growth<Input>(size: Int, make: (Int) throws -> Input, read: (Input) throws -> Void) throws -> (ratio: Double, small: Double, large: Double) {
        let small = try make(size), large = try make(size * 4)
        let smallSeconds = try seconds { try read(small) }
        let largeSeconds = try seconds { try read(large) }
        return (largeSeconds / smallSeconds, smallSeconds, largeSeconds)
    }

    /// `count` entities, each with a to-one to `Hub`, whose `count` to-many relationships are
    /// their inverses.
    static func hub(_ count: Int) -> [EntityDescription] {
        var hub = EntityDescription(name: "Hub", attributes: [AttributeDescription(name: "name", type: .string)])
        var entities: [EntityDescription] = []
        for index in 0..<count {
            entities.append(EntityDescription(
                name: "E\(index)", attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [RelationshipDescription(name: "hub", destinationEntityName: "Hub", inverseName: "e\(index)")]))
            hub.relationships.append(RelationshipDescription(name: "e\(index)", destinationEntityName: "E\(index)", inverseName: "hub", isToMany: true))
        }
        return entities + [hub]
    }

    @Test("a hub of many relationships, each the inverse of another entity's: its inverses are found by name, not by a scan each")
    func hubInverses() throws {
        // Before: 2,000 and 8,000 entities took 0.64 s and 9.1 s (debug), a ratio of 14.
        let growth = try Self.growth(size: 2_000, make: Self.hub) { entities in
            let model = try ManagedObjectModel(entities: entities)
            #expect(model.layout(of: "Hub")?.relationshipSlots.last?.inverseName == "hub")
        }
        #expect(growth.ratio < 8, "4× the entities took \(growth.ratio)× as long (\(growth.small) s, then \(growth.large) s)")
    }

    /// A SQLite store made for one entity `E`, whose model cache then names `count` String
    /// attributes of `E`: more columns than SQLite allows a table, so opening it is refused.
    static func storeCarrying(attributes count: Int, in directory: URL) throws -> URL {
        try storeCarrying(try ManagedObjectModel(entities: [EntityDescription(
            name: "E", attributes: (0..<count).map { AttributeDescription(name: "a\($0)", type: .string) })]), in: directory)
    }

    /// A SQLite store made for one entity `E`, whose model cache then holds `model`: the store
    /// an app could leave whose model no longer fits its tables (opening it is refused).
    static func storeCarrying(_ model: ManagedObjectModel, in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent("\(UUID().uuidString).sqlite")
        let small = try ManagedObjectModel(entities: [EntityDescription(name: "E", attributes: [AttributeDescription(name: "a0", type: .string)])])
        _ = try SQLiteStore.create(at: url, model: small)
        let connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
        try connection.prepare("UPDATE Z_MODELCACHE SET Z_CONTENT = ?").run([.blob(try model.modelCacheBlob())])
        return url
    }

    @Test("opening a store whose model cache names many attributes of one entity: each column's declaring entity is found by name")
    func storeOfManyAttributes() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Before: 1,000 and 4,000 attributes took 0.31 s and 4.2 s (debug), a ratio of 14.
        let growth = try Self.growth(size: 1_000, make: { try Self.storeCarrying(attributes: $0, in: directory) }) { url in
            let model = try ManagedObjectModel(carriedByStoreAt: url)
            #expect(throws: StoreError.self) { try SQLiteStore(url: url, model: model, readOnly: true) }
        }
        #expect(growth.ratio < 8, "4× the attributes took \(growth.ratio)× as long (\(growth.small) s, then \(growth.large) s)")
    }

    @Test("the refusal of such a store lists the first 20 missing columns and how many more, not all of them")
    func shortRefusal() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Self.storeCarrying(attributes: 3_000, in: directory)
        let model = try ManagedObjectModel(carriedByStoreAt: url)
        let error = #expect(throws: StoreError.self) { try SQLiteStore(url: url, model: model, readOnly: true) }
        let message = error?.description ?? ""
        #expect(message.contains("ZE lacks columns ZA1, ZA10, ZA100,"), "\(message.prefix(500))")
        #expect(message.contains(" and 2979 more"), "\(message.prefix(500))")
        #expect(message.count < 2_000, "the message is \(message.count) characters")
    }

    /// The growth of opening a store carrying the model `make` makes, at `size` and 4 × `size`
    /// (the model read from the cache beforehand, so that the open alone is timed).
    static func openingGrowth(size: Int, _ make: (Int) throws -> [EntityDescription]) throws -> (ratio: Double, small: Double, large: Double) {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        return try growth(size: size, make: { count -> (URL, ManagedObjectModel) in
            let url = try storeCarrying(try ManagedObjectModel(entities: try make(count)), in: directory)
            return (url, try ManagedObjectModel(carriedByStoreAt: url))
        }) { url, model in
            #expect(throws: StoreError.self) { try SQLiteStore(url: url, model: model, readOnly: true) }
        }
    }

    @Test("opening a store of many entities, each with a to-many without inverse to one entity: each entity's owner keys are gathered once")
    func toManysWithoutInverse() throws {
        // Before: 1,000 and 4,000 entities took 0.54 s and 8.0 s (debug), a ratio of 15.
        let growth = try Self.openingGrowth(size: 1_000) { count in
            [EntityDescription(name: "Hub", attributes: [AttributeDescription(name: "name", type: .string)])] + (0..<count).map { index in
                EntityDescription(name: "E\(index)", attributes: [AttributeDescription(name: "name", type: .string)],
                                  relationships: (0..<4).map { RelationshipDescription(name: "hubs\($0)", destinationEntityName: "Hub", isToMany: true) })
            }
        }
        #expect(growth.ratio < 8, "4× the entities took \(growth.ratio)× as long (\(growth.small) s, then \(growth.large) s)")
    }

    @Test("opening a store whose hub has a to-one to each of many entities, each with a to-many back without inverse: who names a relationship as inverse is gathered once")
    func hubOfToOnes() throws {
        // Before: 1,000 and 4,000 entities took 0.47 s and 6.0 s (debug), a ratio of 13.
        let growth = try Self.openingGrowth(size: 1_000) { count in
            var hub = EntityDescription(name: "Hub", attributes: [AttributeDescription(name: "name", type: .string)])
            var entities: [EntityDescription] = []
            for index in 0..<count {
                entities.append(EntityDescription(name: "E\(index)", attributes: [AttributeDescription(name: "name", type: .string)],
                                                  relationships: [RelationshipDescription(name: "hubs", destinationEntityName: "Hub", isToMany: true)]))
                hub.relationships.append(RelationshipDescription(name: "e\(index)", destinationEntityName: "E\(index)"))
            }
            return entities + [hub]
        }
        #expect(growth.ratio < 8, "4× the entities took \(growth.ratio)× as long (\(growth.small) s, then \(growth.large) s)")
    }

    @Test("opening a store of many to-ones to an entity of many subentities: whether it has subentities is asked, not listed")
    func toOnesToAParentOfMany() throws {
        // Before: 1,000 and 4,000 entities took 0.29 s and 5.2 s (debug), a ratio of 18.
        let growth = try Self.openingGrowth(size: 1_000) { count in
            [EntityDescription(name: "P", attributes: [AttributeDescription(name: "name", type: .string)])] + (0..<count).flatMap { index in
                [EntityDescription(name: "S\(index)", parentName: "P"),
                 EntityDescription(name: "E\(index)", attributes: [AttributeDescription(name: "name", type: .string)],
                                   relationships: [RelationshipDescription(name: "p", destinationEntityName: "P")])]
            }
        }
        #expect(growth.ratio < 8, "4× the entities took \(growth.ratio)× as long (\(growth.small) s, then \(growth.large) s)")
    }

    @Test("opening a store of many many-to-manys of one name to one entity: each join column's name is made unique in a step")
    func manyToManysOfOneName() throws {
        // Before: 1,000 and 4,000 entities took 0.10 s and 1.15 s (debug), a ratio of 11.
        let growth = try Self.openingGrowth(size: 1_000) { count in
            var hub = EntityDescription(name: "Hub", attributes: [AttributeDescription(name: "name", type: .string)])
            var entities: [EntityDescription] = []
            for index in 0..<count {
                entities.append(EntityDescription(name: "E\(index)", attributes: [AttributeDescription(name: "name", type: .string)],
                                                  relationships: [RelationshipDescription(name: "hubs", destinationEntityName: "Hub", inverseName: "e\(index)", isToMany: true)]))
                hub.relationships.append(RelationshipDescription(name: "e\(index)", destinationEntityName: "E\(index)", inverseName: "hubs", isToMany: true))
            }
            return entities + [hub]
        }
        #expect(growth.ratio < 8, "4× the entities took \(growth.ratio)× as long (\(growth.small) s, then \(growth.large) s)")
    }
}

