import Foundation
import Testing
@testable import Lade

/// Atomic stores fetch in memory with the predicate evaluator; the SQLite store compiles the
/// same requests to SQL. On the same objects they must give the same answers.
@Suite("Atomic store fetches agree with SQLite's")
struct AtomicStoreFetchTests {
    typealias Request = StoreFetchRequest

    static func request(_ entity: String, _ predicate: FetchPredicate? = nil, sort: [FetchSortDescriptor] = [FetchSortDescriptor("name")], subentities: Bool = true, limit: Int = 0, offset: Int = 0) -> Request {
        Request(entityName: entity, predicate: predicate, sortDescriptors: sort, includesSubentities: subentities, fetchLimit: limit, fetchOffset: offset)
    }

    static func key(_ path: String) -> FetchExpression { .keyPath(path) }

    static let requests: [(String, Request)] = [
        ("all items, by name", request("Item")),
        ("items without subentities", request("Item", subentities: false)),
        ("the subentity alone", request("SpecialItem")),
        ("to-one key path", request("Item", .compare(key("owner.name"), .equal, .constant(.string("owner 1"))))),
        ("one-to-one key path, BEGINSWITH", request("Item", .compare(key("passport.name"), .beginsWith, .constant(.string("passport 1"))))),
        ("nil to-one", request("Item", .compare(key("owner"), .equal, .constant(.null)))),
        ("not nil to-one", request("Item", .compare(key("owner"), .notEqual, .constant(.null)))),
        ("integer comparison, sorted descending", request("Item", .compare(key("i16"), .greaterThan, .constant(.integer(0))), sort: [FetchSortDescriptor("i16", ascending: false)])),
        ("BEGINSWITH", request("Item", .compare(key("text"), .beginsWith, .constant(.string("item 1"))))),
        ("CONTAINS non-ASCII", request("Item", .compare(key("text"), .contains, .constant(.string("éé"))))),
        ("AND, OR, NOT", request("Item", .or([.and([.compare(key("flag"), .equal, .constant(.bool(true))), .compare(key("decimal"), .lessThan, .constant(.decimal(0)))]), .not(.compare(key("i32"), .notEqual, .constant(.null)))]))),
        ("IN with nil", request("Item", .compare(key("name"), .in, .constant(.collection([.string("item 003"), .string("item 010"), .null]))))),
        ("BETWEEN", request("Item", .compare(key("i32"), .between, .constant(.collection([.integer(-1_000_000_000), .integer(1_000_000_000)]))))),
        ("dates before", request("Item", .compare(key("date"), .lessThan, .constant(.date(Date(timeIntervalSinceReferenceDate: 400_000_000)))))),
        ("double ordering", request("Item", .compare(key("double"), .greaterThanOrEqual, .constant(.double(1))), sort: [FetchSortDescriptor("double")])),
        ("sorted through a to-one, nil first", request("Item", sort: [FetchSortDescriptor("owner.name"), FetchSortDescriptor("name", ascending: false)])),
        ("limit and offset", request("Item", limit: 5, offset: 3)),
        ("offset past the end", request("Item", offset: 100)),
        ("equal to an object", request("Item", .compare(key("rankedBy.name"), .equal, .constant(.string("owner 2"))), sort: [FetchSortDescriptor("float")])),
        ("UUID equality", request("Item", .compare(key("uuid"), .equal, .constant(.uuid(UUID(uuidString: "7F3C1C2E-9A4B-4B8E-9A0D-2F6E1B9D4C11")!))))),
        ("owners through the inverse to-one", request("Passport", .compare(key("item.owner.name"), .notEqual, .constant(.string("owner 0"))))),
    ]

    /// The names of the rows a request returns, in order.
    static func names(_ store: PersistentStore, _ request: Request) throws -> [String] {
        try store.fetch(request).map { row in
            if case .string(let name)? = row.attributes["name"] { name } else { "?" }
        }
    }

    @Test("the same requests return the same objects in the same order, and count alike", arguments: [StoreType.xml, .binary, .inMemory])
    func agreeWithSQLite(type: StoreType) throws {
        let reference = try AtomicTestStack(.sqlite)
        try EveryType.populate(reference.context())
        let stack = try AtomicTestStack(type)
        try EveryType.populate(stack.context())
        let sqlite = try #require(reference.coordinator.persistentStores.first)
        let atomic = try #require(stack.coordinator.persistentStores.first)
        for (description, request) in Self.requests {
            let expected = try Self.names(sqlite, request)
            #expect(try Self.names(atomic, request) == expected, "\(description)")
            #expect(try atomic.count(request) == sqlite.count(request), "\(description)")
        }
        #expect(try Self.names(sqlite, Self.request("Item")).count == 24)
        #expect(try Self.names(atomic, Self.requests[3].1).count > 0)
        // ENDSWITH through a to-one path, checked against the data itself and against SQLite.
        let endsWith = Self.request("Item", .compare(Self.key("passport.name"), .endsWith, .constant(.string("2"))))
        #expect(try Self.names(atomic, endsWith) == ["item 002", "item 012", "item 022"])
        #expect(try Self.names(sqlite, endsWith) == ["item 002", "item 012", "item 022"])
    }

    @Test("an unknown key or entity is an error, as in SQL, even where no object is reached", arguments: [StoreType.xml, .binary, .inMemory])
    func unknownKeys(type: StoreType) throws {
        let stack = try AtomicTestStack(type)
        let store = try #require(stack.coordinator.persistentStores.first)
        // An empty store: no object to evaluate the predicate on.
        let unknown = Self.request("Item", .compare(Self.key("colour"), .equal, .constant(.string("red"))))
        #expect(throws: FetchPredicateError.unknownKey(entity: "Item", key: "colour")) { try store.fetch(unknown) }
        #expect(throws: FetchPredicateError.unknownKey(entity: "Item", key: "colour")) { try store.count(unknown) }
        try EveryType.populate(stack.context(), items: 2)
        let error = #expect(throws: FetchPredicateError.self) { try store.fetch(Self.request("Item", .compare(Self.key("owner.title"), .equal, .constant(.string("x"))))) }
        #expect(error == .unknownKey(entity: "Owner", key: "title"))
        // An unknown entity is the one error for it, wherever it is asked for.
        #expect(throws: UnknownEntityError.self) { try store.fetch(Self.request("Widget")) }
    }

    @Test("fetches through a context see the store's objects and relationships as faults fire")
    func throughContext() throws {
        let stack = try AtomicTestStack(.xml)
        try EveryType.populate(stack.context())
        let context = stack.context()
        try context.performAndWait {
            var request = FetchRequest(entityName: "Owner", predicate: .compare(.keyPath("name"), .equal, .constant(.string("owner 2"))))
            request.returnsObjectsAsFaults = true
            let owner = try #require(try context.fetch(request).first)
            #expect(owner.isFault)
            let ranked = owner.objects(forKey: "ranked").map { $0["name"] as! String }
            #expect(ranked == ranked.sorted().reversed())
            #expect(owner.objects(forKey: "items").allSatisfy { ($0.object(forKey: "owner"))?.objectID == owner.objectID })
            #expect(try context.count(for: FetchRequest(entityName: "Item")) == 24)
        }
    }
}
