import Foundation
@testable import Lade
import LadeTestSupport

/// A model with every attribute type, a hierarchy, to-one, one-to-many and many-to-many
/// relationships, and a store filled from a seed, for the predicate tests.
///
/// Owner(name, score, manager ↔ reports, items) — Item(every type, owner, tags) ← Gadget(power) — Tag(label, weight, items)
final class PredicateTestStack {
    let directory: URL
    let model: ManagedObjectModel
    let coordinator: PersistentStoreCoordinator

    static let itemAttributes: [(String, AttributeType)] = [
        ("i16", .integer16), ("i32", .integer32), ("i64", .integer64), ("dec", .decimal), ("dbl", .double),
        ("flt", .float), ("str", .string), ("note", .string), ("flag", .boolean), ("date", .date),
        ("bin", .binary), ("uuid", .uuid), ("uri", .uri),
    ]

    static func makeModel(fetchRequestTemplates: [FetchRequestTemplate] = [], ownerFetchedProperties: [FetchedPropertyDescription] = []) throws -> ManagedObjectModel {
        let owner = EntityDescription(
            name: "Owner",
            attributes: [AttributeDescription(name: "name", type: .string), AttributeDescription(name: "score", type: .integer32)],
            relationships: [
                RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "owner", isToMany: true),
                RelationshipDescription(name: "manager", destinationEntityName: "Owner", inverseName: "reports"),
                RelationshipDescription(name: "reports", destinationEntityName: "Owner", inverseName: "manager", isToMany: true),
            ],
            fetchedProperties: ownerFetchedProperties)
        let item = EntityDescription(
            name: "Item",
            attributes: itemAttributes.map { AttributeDescription(name: $0.0, type: $0.1) },
            relationships: [
                RelationshipDescription(name: "owner", destinationEntityName: "Owner", inverseName: "items"),
                RelationshipDescription(name: "tags", destinationEntityName: "Tag", inverseName: "items", isToMany: true),
            ])
        let gadget = EntityDescription(name: "Gadget", parentName: "Item", attributes: [AttributeDescription(name: "power", type: .integer32)])
        let tag = EntityDescription(
            name: "Tag",
            attributes: [AttributeDescription(name: "label", type: .string), AttributeDescription(name: "weight", type: .double)],
            relationships: [RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "tags", isToMany: true)])
        return try ManagedObjectModel(entities: [owner, item, gadget, tag], fetchRequestTemplates: fetchRequestTemplates)
    }

    /// The PostgreSQL schema of the store, when it is a PostgreSQL store (dropped at the end).
    private var postgreSQL: (server: PostgresTestServer, schema: String)?

    init(model: ManagedObjectModel? = nil, type: PersistentStoreCoordinator.StoreType = .sqlite) throws {
        directory = try Fixtures.temporaryDirectory()
        self.model = try model ?? Self.makeModel()
        coordinator = PersistentStoreCoordinator(managedObjectModel: self.model)
        let url: URL?
        switch type {
        case .inMemory: url = nil
        case .postgresql:
            let server = try PostgresTestServer.fromEnvironment()
            let schema = server.newSchemaName("predicates")
            postgreSQL = (server, schema)
            url = URL(string: server.storeURL(schema: schema))
        default: url = directory.appendingPathComponent("predicates.\(type.rawValue)")
        }
        try coordinator.addPersistentStore(type: type, at: url)
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
        if let postgreSQL { try? postgreSQL.server.dropSchema(postgreSQL.schema) }
    }

    func context() -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    // MARK: Values

    /// Strings that tell byte, case, diacritic and canonical-equivalence comparisons apart.
    static let strings = [
        "", "a", "A", "abc", "ABC", "Straße", "STRASSE", "strasse", "café", "cafe\u{301}", "CAFÉ", "Cafe", "naïve",
        "NAIVE", "😀", "👍🏽", "a👍🏽b", "ﬁle", "file", "file2", "file10", "File1", "İstanbul", "istanbul", "Ωmega",
        "ωmega", "日本語", "x*y", "x?y", "100%", "a_b", "résumé", "Resume", "ǅ", "zebra", "Zebra", " spaced ",
        "line\nbreak", "quote'\"s", "back\\slash", "Ä", "a\u{308}", "ä",
    ]
    static let integers: [Int64] = [-5, -1, 0, 1, 2, 3, 5, 7, 100, -32768, 32767]
    static let bigIntegers: [Int64] = [0, 1, -3, 9_007_199_254_740_993, -9_007_199_254_740_993, Int64.max, Int64.min + 1]
    /// Dyadic fractions, so sums do not depend on the order SQLite adds them in.
    static let doubles: [Double] = [-3.5, -1, 0, 0.25, 1.5, 2, 7.75, 1e10, 9_007_199_254_740_992]
    static let floats: [Float] = [-2, 0, 0.5, 1.25, 3, 1024.75]
    static let decimals: [Decimal] = [0, 1, Decimal(string: "1.5")!, Decimal(string: "-2.25")!, 10, Decimal(string: "3.125")!, Decimal(string: "100.5")!]
    static let dates: [Date] = [0, 86_400.5, -1000, 700_000_000, 1e9].map { Date(timeIntervalSinceReferenceDate: $0) }
    static let datas: [Data] = [Data(), Data([0]), Data([0, 1]), Data([255]), Data([1, 2, 3]), Data([0, 0])]
    static let uuids: [UUID] = [
        "00000000-0000-0000-0000-000000000001", "7F3C1C2E-9A4B-4B8E-9A0D-2F6E1B9D4C11", "FFFFFFFF-0000-4000-8000-000000000000",
    ].map { UUID(uuidString: $0)! }
    static let uris: [URL] = ["https://example.com/a", "https://example.com/B", "file:///tmp/x", "mailto:someone@example.com"].map { URL(string: $0)! }
    static let weights: [Double] = [0, 0.5, 1, 1.5, 2.25, 7.75, -1]

    /// Values of each item attribute (nil left out), for generating constants that hit.
    static func values(of attribute: String) -> [AttributeValue] {
        switch attribute {
        case "i16", "i32": integers.map { .integer($0) }
        case "i64": bigIntegers.map { .integer($0) }
        case "dec": decimals.map { .decimal($0) }
        case "dbl": doubles.map { .double($0) }
        case "flt": floats.map { .float($0) }
        case "str", "note", "name", "label": strings.map { .string($0) }
        case "flag": [.bool(true), .bool(false)]
        case "date": dates.map { .date($0) }
        case "bin": datas.map { .binary($0) }
        case "uuid": uuids.map { .uuid($0) }
        case "uri": uris.map { .uri($0) }
        case "score": integers.map { .integer($0) }
        case "weight": weights.map { .double($0) }
        default: []
        }
    }

    /// Fills the store: owners with managers, tags, items and gadgets with random values (a
    /// fifth of them nil), owners and tags. Returns the saved object IDs by entity.
    @discardableResult
    func populate(seed: UInt64, items: Int = 48, gadgets: Int = 10, owners: Int = 8, tags: Int = 8) throws -> [String: [ManagedObjectID]] {
        var random = SeededGenerator(seed: seed)
        let context = context()
        return try context.performAndWait {
            func maybe(_ value: AttributeValue?) -> AttributeValue? {
                random.int(5) == 0 ? nil : value
            }
            var ownerObjects: [ManagedObject] = []
            for _ in 0..<owners {
                let owner = try context.insertObject(forEntityName: "Owner")
                try owner.setAttributeValue(maybe(Self.values(of: "name").randomElement(using: &random)), forKey: "name")
                try owner.setAttributeValue(maybe(Self.values(of: "score").randomElement(using: &random)), forKey: "score")
                if !ownerObjects.isEmpty, random.int(3) != 0 {
                    try owner.setObject(ownerObjects.randomElement(using: &random), forKey: "manager")
                }
                ownerObjects.append(owner)
            }
            var tagObjects: [ManagedObject] = []
            for _ in 0..<tags {
                let tag = try context.insertObject(forEntityName: "Tag")
                try tag.setAttributeValue(maybe(Self.values(of: "label").randomElement(using: &random)), forKey: "label")
                try tag.setAttributeValue(maybe(Self.values(of: "weight").randomElement(using: &random)), forKey: "weight")
                tagObjects.append(tag)
            }
            var itemObjects: [ManagedObject] = []
            for index in 0..<(items + gadgets) {
                let item = try context.insertObject(forEntityName: index < items ? "Item" : "Gadget")
                itemObjects.append(item)
                for (name, _) in Self.itemAttributes {
                    var value = maybe(Self.values(of: name).randomElement(using: &random))
                    if name == "i16", case .integer(let v)? = value { value = .integer(max(-32768, min(32767, v))) }
                    if name == "i32", case .integer(let v)? = value { value = .integer(v) }
                    try item.setAttributeValue(value, forKey: name)
                }
                if index >= items { try item.setValue(random.int(10), forKey: "power") }
                if random.int(5) != 0 { try item.setObject(ownerObjects.randomElement(using: &random), forKey: "owner") }
                for tag in tagObjects.shuffled(using: &random).prefix(random.int(4)) {
                    try item.add(tag, toKey: "tags")
                }
            }
            try context.save()
            // The objects made here, by entity (a context keeps only objects something holds).
            var ids: [String: [ManagedObjectID]] = [:]
            for object in ownerObjects + tagObjects + itemObjects { ids[object.entity.name, default: []].append(object.objectID) }
            return ids.mapValues { $0.sorted { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) } }
        }
    }
}
