import Foundation
@testable import Lade

/// A model with every attribute type and every relationship cardinality, a data set for it
/// made from a fixed seed, and a comparable snapshot of a store's objects.
///
/// - `Item`: one attribute of each type; `owner` (to-one) / `Owner.items` (one-to-many);
///   `rankedBy` / `Owner.ranked` (ordered one-to-many); `tags` / `Tag.items` (many-to-many);
///   `featuredIn` / `Tag.featured` (ordered on one side of a many-to-many); `passport` /
///   `Passport.item` (one-to-one).
/// - `SpecialItem`: a subentity of `Item` with one more attribute.
/// - `Tag.name` is unique (a uniqueness constraint).
enum EveryType {
    static let attributeTypes: [(String, AttributeType)] = [
        ("i16", .integer16), ("i32", .integer32), ("i64", .integer64), ("decimal", .decimal),
        ("double", .double), ("float", .float), ("text", .string), ("flag", .boolean), ("date", .date),
        ("blob", .binary), ("uuid", .uuid), ("uri", .uri), ("transformed", .transformable),
    ]

    static func model() throws -> ManagedObjectModel {
        func name() -> AttributeDescription { AttributeDescription(name: "name", type: .string, isOptional: false) }
        func relationship(_ name: String, _ destination: String, inverse: String, toMany: Bool = false, ordered: Bool = false) -> RelationshipDescription {
            RelationshipDescription(name: name, destinationEntityName: destination, inverseName: inverse, isToMany: toMany, isOrdered: ordered)
        }
        return try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Item",
                attributes: [name()] + attributeTypes.map { AttributeDescription(name: $0.0, type: $0.1) }
                    + [AttributeDescription(name: "scratch", type: .string, isTransient: true)],
                relationships: [
                    relationship("owner", "Owner", inverse: "items"),
                    relationship("rankedBy", "Owner", inverse: "ranked"),
                    relationship("tags", "Tag", inverse: "items", toMany: true),
                    relationship("featuredIn", "Tag", inverse: "featured", toMany: true),
                    relationship("passport", "Passport", inverse: "item"),
                ]),
            EntityDescription(name: "SpecialItem", parentName: "Item", attributes: [AttributeDescription(name: "extra", type: .integer32)]),
            EntityDescription(name: "Owner", attributes: [name()], relationships: [
                relationship("items", "Item", inverse: "owner", toMany: true),
                relationship("ranked", "Item", inverse: "rankedBy", toMany: true, ordered: true),
            ]),
            EntityDescription(name: "Tag", attributes: [name()], relationships: [
                relationship("items", "Item", inverse: "tags", toMany: true),
                relationship("featured", "Item", inverse: "featuredIn", toMany: true, ordered: true),
            ], uniquenessConstraints: [["name"]]),
            EntityDescription(name: "Passport", attributes: [name()], relationships: [relationship("item", "Item", inverse: "passport")]),
        ])
    }

    /// The attribute values of item number `index`: edge values first, then seeded ones.
    /// (Decimals stay within 15 significant digits: SQLite keeps them as REAL, and the tests
    /// compare atomic stores with SQLite.)
    static func values(item index: Int, random: inout SeededGenerator) -> [String: AttributeValue] {
        switch index {
        case 0:
            return [
                "i16": .integer(Int64(Int16.min)), "i32": .integer(Int64(Int32.max)), "i64": .integer(Int64.min),
                "decimal": .decimal(Decimal(string: "1234567890.12345")!), "double": .double(-1e-300),
                "float": .float(Float.greatestFiniteMagnitude), "text": .string("Zoë ✓ 日本語 🎉 <&>\"' \r\n tabs\t "),
                "flag": .bool(true), "date": .date(Date(timeIntervalSinceReferenceDate: -978_307_200.123_456)),
                "blob": .binary(Data()), "uuid": .uuid(UUID(uuidString: "7F3C1C2E-9A4B-4B8E-9A0D-2F6E1B9D4C11")!),
                "uri": .uri(URL(string: "https://example.com/a%20b?c=d&e=f#g")!), "transformed": .binary(Data([0, 255, 0x3C])),
            ]
        case 1:
            return ["i16": .integer(Int64(Int16.max)), "i64": .integer(Int64.max), "text": .string(""), "flag": .bool(false),
                    "decimal": .decimal(Decimal(string: "-0.000000000000000000000000000001")!), "double": .double(.pi), "float": .float(-0.1)]
        default:
            var values: [String: AttributeValue] = [
                "i16": .integer(Int64(random.int(-32768...32767))), "i32": .integer(Int64(random.int(-2_000_000_000...2_000_000_000))),
                "i64": .integer(Int64(bitPattern: random.next())),
                "decimal": .decimal(Decimal(random.int(-1_000_000...1_000_000)) / 100),
                "double": .double(Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF)),
                "float": .float(Float(random.int(-1_000_000...1_000_000)) / 7),
                "text": .string("item \(index) " + String(repeating: "é", count: random.int(0...5))),
                "flag": .bool(random.next() % 2 == 0),
                "date": .date(Date(timeIntervalSinceReferenceDate: Double(random.int(0...800_000_000)) + Double(random.int(0...999)) / 1000)),
                "blob": .binary(random.bytes(random.int(1...300))),
                "uuid": .uuid(random.uuid()), "uri": .uri(URL(string: "file:///tmp/item-\(index).txt")!),
                "transformed": .binary(random.bytes(20)),
            ]
            // Some attributes left nil.
            for (name, _) in attributeTypes where random.next() % 7 == 0 { values[name] = nil }
            return values
        }
    }

    /// Inserts a data set made from `seed` through `context` and saves it.
    static func populate(_ context: ManagedObjectContext, seed: UInt64 = 42, items: Int = 24) throws {
        var random = SeededGenerator(seed: seed)
        try context.performAndWait {
            let owners = try (0..<3).map { index -> ManagedObject in
                let owner = try context.insertObject(forEntityName: "Owner")
                try owner.setValue("owner \(index)", forKey: "name")
                return owner
            }
            let tags = try (0..<4).map { index -> ManagedObject in
                let tag = try context.insertObject(forEntityName: "Tag")
                try tag.setValue("tag \(index)", forKey: "name")
                return tag
            }
            for index in 0..<items {
                let special = index % 5 == 3
                let item = try context.insertObject(forEntityName: special ? "SpecialItem" : "Item")
                try item.setValue("item \(String(format: "%03d", index))", forKey: "name")
                for (name, value) in values(item: index, random: &random) { try item.setAttributeValue(value, forKey: name) }
                if special { try item.setValue(index * 1000, forKey: "extra") }
                if index % 4 != 0 { try item.setValue(owners[index % 3], forKey: "owner") }
                if index % 3 != 0 { try item.setValue(owners[random.int(0...2)], forKey: "rankedBy") }
                for tag in tags where random.next() % 3 == 0 { try item.add(tag, toKey: "tags") }
                for tag in tags where random.next() % 4 == 0 { try item.add(tag, toKey: "featuredIn") }
                if index % 2 == 0 {
                    let passport = try context.insertObject(forEntityName: "Passport")
                    try passport.setValue("passport \(index)", forKey: "name")
                    try passport.setValue(item, forKey: "item")
                }
            }
            // Give ordered relationships an order that is not insertion order.
            for owner in owners {
                try owner.setValue(Array(owner.objects(forKey: "ranked").reversed()), forKey: "ranked")
            }
            for tag in tags {
                var featured = tag.objects(forKey: "featured")
                featured.sort { ($0["name"] as! String) > ($1["name"] as! String) }
                try tag.setValue(featured, forKey: "featured")
            }
            try context.save()
        }
    }

    /// Every object of a store, by "Entity/name", with its stored attributes and its
    /// relationships by destination name (ordered relationships in order).
    struct Snapshot: Equatable, CustomStringConvertible {
        struct Object: Equatable {
            var attributes: [String: AttributeValue]
            var relationships: [String: [String]]
        }

        var objects: [String: Object] = [:]

        var description: String {
            objects.keys.sorted().map { "\($0): \(objects[$0]!)" }.joined(separator: "\n")
        }

        /// What differs between two snapshots, for a readable failure.
        func differences(from other: Snapshot) -> [String] {
            Set(objects.keys).union(other.objects.keys).sorted().compactMap { key in
                objects[key] == other.objects[key] ? nil : "\(key):\n  \(String(describing: objects[key]))\n  \(String(describing: other.objects[key]))"
            }
        }
    }

    /// Reads every object through a fresh context on `coordinator`.
    static func snapshot(_ coordinator: PersistentStoreCoordinator) throws -> Snapshot {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let model = coordinator.managedObjectModel
        return try context.performAndWait {
            var snapshot = Snapshot()
            for entity in model.entities {
                var request = FetchRequest(entityName: entity.name)
                request.includesSubentities = false
                for object in try context.fetch(request) {
                    var attributes: [String: AttributeValue] = [:]
                    for attribute in model.attributes(of: entity.name) where !attribute.isTransient {
                        attributes[attribute.name] = object.attributeValue(forKey: attribute.name)
                    }
                    var relationships: [String: [String]] = [:]
                    for relationship in model.relationships(of: entity.name) {
                        let names = (relationship.isToMany ? object.objects(forKey: relationship.name) : [object.object(forKey: relationship.name)].compactMap { $0 })
                            .map { $0["name"] as! String }
                        if !names.isEmpty { relationships[relationship.name] = relationship.isOrdered ? names : names.sorted() }
                    }
                    snapshot.objects["\(entity.name)/\(object["name"] as! String)"] = Snapshot.Object(attributes: attributes, relationships: relationships)
                }
            }
            return snapshot
        }
    }
}
