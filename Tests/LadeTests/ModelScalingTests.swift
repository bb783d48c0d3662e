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
        // Before: 2,000 and 8,000 entities took 0.4 s and 6 s (debug), a ratio of 16.
        let growth = try Self.growth(size: 2_000, make: Self.hub) { entities in
            let model = try ManagedObjectModel(entities: entities)
            #expect(model.layout(of: "Hub")?.relationshipSlots.last?.inverseName == "hub")
        }
        #expect(growth.ratio < 8, "4× the entities took \(growth.ratio)× as long (\(growth.small) s, then \(growth.large) s)")
    }

    /// A SQLite store made for one entity `E`, whose model cache then names `count` String
    /// attributes of `E`: more columns than SQLite allows a table, so opening it is refused.
    static func storeCarrying(attributes count: Int, in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent("E\(count).sqlite")
        let small = try ManagedObjectModel(entities: [EntityDescription(name: "E", attributes: [AttributeDescription(name: "a0", type: .string)])])
        _ = try SQLiteStore.create(at: url, model: small)
        let wide = try ManagedObjectModel(entities: [EntityDescription(
            name: "E", attributes: (0..<count).map { AttributeDescription(name: "a\($0)", type: .string) })])
        let connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
        try connection.prepare("UPDATE Z_MODELCACHE SET Z_CONTENT = ?").run([.blob(try wide.modelCacheBlob())])
        return url
    }

    @Test("opening a store whose model cache names many attributes of one entity: each column's declaring entity is found by name")
    func storeOfManyAttributes() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Before: 1,000 and 4,000 attributes took 0.3 s and 4 s (debug), a ratio of 15.
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
}
