import Foundation
import Lade
import Testing

/// `lade migrate`: lightweight migration of stores in place, held to Core Data's own
/// migration of a corpus store, and refusing what it cannot carry before writing anything.
@Suite("lade migrate, run as a process")
struct MigrateCLITests {
    /// Writes version `version` of the bundle at `bundle` (its `contents` holding `body`), and
    /// makes it the current one when `current`.
    static func writeVersion(_ version: String, of bundle: URL, _ body: String, current: Bool = false) throws {
        let directory = bundle.appendingPathComponent("\(version).xcdatamodel")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("""
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            \(body)
            </model>
            """.utf8).write(to: directory.appendingPathComponent("contents"))
        guard current else { return }
        try Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>\(version).xcdatamodel</string></dict></plist>
            """.utf8).write(to: bundle.appendingPathComponent(".xccurrentversion"))
    }

    /// `lade migrate STORE --model BUNDLE` to the bundle's current version: exit 0, the plan
    /// naming each of `changes`, and a sound store after it (`lade check`).
    static func migrate(_ store: URL, _ bundle: URL, saying changes: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let run = try LadeProcess.run(["migrate", store.path, "--model", bundle.path])
        #expect(run.status == 0, "\(run.stderr)", sourceLocation: sourceLocation)
        for change in changes { #expect(run.stdout.contains(change), "\(change): \(run.stdout)", sourceLocation: sourceLocation) }
        #expect(try LadeProcess.run(["check", store.path, "--model", bundle.path]).status == 0, "lade check after the migration", sourceLocation: sourceLocation)
    }

    /// A .xcdatamodeld with two versions of one entity: V2 renames `name` to `title`, widens
    /// `count`, adds `note` with a default, and makes `code` required with a default.
    func bundle(_ sandbox: ImportSandbox, v2Item: String? = nil) throws -> String {
        let bundle = sandbox.url("Things.xcdatamodeld")
        try Self.writeVersion("Things", of: bundle, """
            <entity name="Item"><attribute name="name" optional="YES" attributeType="String"/>
            <attribute name="count" optional="YES" attributeType="Integer 16" usesScalarValueType="YES"/>
            <attribute name="code" optional="YES" attributeType="String"/>
            <attribute name="old" optional="YES" attributeType="String"/></entity>
            """)
        try Self.writeVersion("Things 2", of: bundle, v2Item ?? """
            <entity name="Item"><attribute name="title" optional="YES" attributeType="String" elementID="name"/>
            <attribute name="count" optional="YES" attributeType="Integer 64" usesScalarValueType="YES"/>
            <attribute name="code" attributeType="String" defaultValueString="none"/>
            <attribute name="note" optional="YES" attributeType="String" defaultValueString="n/a"/></entity>
            """, current: true)
        return bundle.path
    }

    /// A store of version 1 with three items.
    func oldStore(_ sandbox: ImportSandbox, bundle: String) throws -> String {
        let store = sandbox.url("things.sqlite").path
        #expect(try LadeProcess.run(["init", store, "--model", bundle, "--model-version", "Things"]).status == 0)
        let model = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: bundle), version: "Things")
        let context = try privateContext(model: model, store: URL(fileURLWithPath: store), type: .sqlite)
        try context.performAndWait {
            for (name, count, code) in [("bolt", 7, "B1"), ("nut", 32000, nil), ("gear", -3, "G1")] as [(String, Int, String?)] {
                let item = try context.insertObject(forEntityName: "Item")
                try item.setValue(name, forKey: "name")
                try item.setValue(count, forKey: "count")
                try item.setValue(code, forKey: "code")
                try item.setValue("gone", forKey: "old")
            }
            try context.save()
        }
        return store
    }

    @Test("hierarchy changes: a new parent with an attribute moved up, an entity out of its hierarchy with inherited attributes moved down, a to-one moved up; keys go on from the right place",
          arguments: ["sqlite", "xml", "binary"])
    func hierarchyChanges(type: String) throws {
        let sandbox = try ImportSandbox()
        let bundle = sandbox.url("Garage.xcdatamodeld")
        let person = """
            <entity name="Person"><attribute name="name" optional="YES" attributeType="String"/>
            <relationship name="cars" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Car" inverseName="owner" inverseEntity="Car"/></entity>
            """
        try Self.writeVersion("Garage", of: bundle, person + """
            <entity name="Car"><attribute name="name" optional="YES" attributeType="String"/>
            <attribute name="wheels" optional="YES" attributeType="Integer 16"/>
            <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person" inverseName="cars" inverseEntity="Person"/></entity>
            <entity name="Animal"><attribute name="name" optional="YES" attributeType="String"/><attribute name="legs" optional="YES" attributeType="Integer 16"/></entity>
            <entity name="Dog" parentEntity="Animal"><attribute name="breed" optional="YES" attributeType="String"/>
            <relationship name="vet" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person"/>
            <relationship name="friends" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Cat" inverseName="friend" inverseEntity="Cat"/></entity>
            <entity name="Cat" parentEntity="Animal"><attribute name="indoor" optional="YES" attributeType="Boolean"/>
            <relationship name="friend" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Dog" inverseName="friends" inverseEntity="Dog"/></entity>
            """)
        try Self.writeVersion("Garage 2", of: bundle, person + """
            <entity name="Vehicle"><attribute name="name" optional="YES" attributeType="String"/></entity>
            <entity name="Car" parentEntity="Vehicle"><attribute name="wheels" optional="YES" attributeType="Integer 16"/>
            <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person" inverseName="cars" inverseEntity="Person"/></entity>
            <entity name="Animal"><attribute name="name" optional="YES" attributeType="String"/><attribute name="legs" optional="YES" attributeType="Integer 16"/>
            <relationship name="vet" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person"/></entity>
            <entity name="Dog" parentEntity="Animal"><attribute name="breed" optional="YES" attributeType="String"/>
            <relationship name="friends" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Cat" inverseName="friend" inverseEntity="Cat"/></entity>
            <entity name="Cat"><attribute name="name" optional="YES" attributeType="String"/><attribute name="legs" optional="YES" attributeType="Integer 16"/>
            <attribute name="indoor" optional="YES" attributeType="Boolean"/>
            <relationship name="friend" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Dog" inverseName="friends" inverseEntity="Dog"/></entity>
            """, current: true)
        let store = sandbox.url("garage.\(type)")
        let v1 = try ManagedObjectModel(contentsOf: bundle, version: "Garage")
        let context = try privateContext(model: v1, store: store, type: PersistentStoreCoordinator.StoreType(name: type)!)
        try context.performAndWait {
            let ann = try context.insertObject(forEntityName: "Person")
            try ann.setValue("Ann", forKey: "name")
            var dogs: [ManagedObject] = []
            for index in 0..<3 {
                let car = try context.insertObject(forEntityName: "Car")
                try car.setValue("car \(index)", forKey: "name")
                try car.setValue(index + 3, forKey: "wheels")
                if index != 1 { try car.setObject(ann, forKey: "owner") }
                let dog = try context.insertObject(forEntityName: "Dog")
                try dog.setValue("dog \(index)", forKey: "name")
                try dog.setValue(4, forKey: "legs")
                try dog.setValue("breed \(index)", forKey: "breed")
                if index == 2 { try dog.setObject(ann, forKey: "vet") }
                dogs.append(dog)
                let cat = try context.insertObject(forEntityName: "Cat")
                try cat.setValue("cat \(index)", forKey: "name")
                try cat.setValue(index, forKey: "legs")
                try cat.setValue(index % 2 == 0, forKey: "indoor")
                try cat.setObject(dogs[0], forKey: "friend")
            }
            try context.save()
        }
        try Self.migrate(store, bundle, saying: ["Vehicle: added", "Car: parent none → Vehicle", "Cat: parent Animal → none", "Animal.vet: moved from Dog.vet"])
        let v2 = try ManagedObjectModel(contentsOf: bundle)
        let migrated = try privateContext(model: v2, store: store)
        func text(_ object: ManagedObject?, _ key: String) -> String {
            guard let value = object?.attributeValue(forKey: key) else { return "-" }
            return value.canonicalText
        }
        try migrated.performAndWait {
            let cars = try migrated.fetch(FetchRequest(entityName: "Car")).sorted { text($0, "name") < text($1, "name") }
            #expect(cars.map { "\(text($0, "name")) \(text($0, "wheels")) \(text($0.object(forKey: "owner"), "name"))" } == ["car 0 3 Ann", "car 1 4 -", "car 2 5 Ann"])
            #expect(try migrated.count(for: FetchRequest(entityName: "Vehicle")) == 3)
            let dogs = try migrated.fetch(FetchRequest(entityName: "Dog")).sorted { text($0, "name") < text($1, "name") }
            #expect(dogs.map { "\(text($0, "name")) \(text($0, "legs")) \(text($0, "breed")) \(text($0.object(forKey: "vet"), "name")) \($0.objects(forKey: "friends").count)" }
                    == ["dog 0 4 breed 0 - 3", "dog 1 4 breed 1 - 0", "dog 2 4 breed 2 Ann 0"])
            #expect(try migrated.count(for: FetchRequest(entityName: "Animal")) == 3)
            let cats = try migrated.fetch(FetchRequest(entityName: "Cat")).sorted { text($0, "name") < text($1, "name") }
            #expect(cats.map { "\(text($0, "name")) \(text($0, "legs")) \(text($0, "indoor")) \(text($0.object(forKey: "friend"), "name"))" }
                    == ["cat 0 0 YES dog 0", "cat 1 1 NO dog 0", "cat 2 2 YES dog 0"])
            // New objects take keys past the ones the tables hold.
            for entity in ["Car", "Vehicle", "Cat", "Dog"] { _ = try migrated.insertObject(forEntityName: entity) }
            try migrated.save()
            #expect(try migrated.count(for: FetchRequest(entityName: "Vehicle")) == 5)
            #expect(try migrated.count(for: FetchRequest(entityName: "Cat")) == 4)
        }
        #expect(try LadeProcess.run(["check", store.path, "--model", bundle.path]).status == 0)
    }

    @Test("Integer to Decimal is carried exactly, past a double's 53 bits", arguments: ["sqlite", "xml", "binary"])
    func integerToDecimal(type: String) throws {
        let sandbox = try ImportSandbox()
        let bundle = sandbox.url("Ledger.xcdatamodeld")
        try Self.writeVersion("Ledger", of: bundle, "<entity name=\"Entry\"><attribute name=\"amount\" optional=\"YES\" attributeType=\"Integer 64\"/></entity>")
        try Self.writeVersion("Ledger 2", of: bundle, "<entity name=\"Entry\"><attribute name=\"amount\" optional=\"YES\" attributeType=\"Decimal\"/></entity>", current: true)
        let store = sandbox.url("ledger.\(type)")
        let amounts: [Int64?] = [9_007_199_254_740_993, -5, nil, .max]
        let context = try privateContext(model: try ManagedObjectModel(contentsOf: bundle, version: "Ledger"), store: store, type: PersistentStoreCoordinator.StoreType(name: type)!)
        try context.performAndWait {
            for amount in amounts { try context.insertObject(forEntityName: "Entry").setAttributeValue(amount.map { .integer($0) }, forKey: "amount") }
            try context.save()
        }
        try Self.migrate(store, bundle, saying: ["Entry.amount: widened from Integer 64 to Decimal"])
        let migrated = try privateContext(model: try ManagedObjectModel(contentsOf: bundle), store: store)
        try migrated.performAndWait {
            let values = Set(try migrated.fetch(FetchRequest(entityName: "Entry")).map { $0.attributeValue(forKey: "amount") })
            #expect(values == Set(amounts.map { $0.map { .decimal(Decimal($0)) } }))
        }
    }

    @Test("a store no version of the bundle matches is refused: exit 1, the closest version named, the store byte for byte as it was, nothing beside it")
    func noVersionMatches() throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("other.sqlite")
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Thing", attributes: [AttributeDescription(name: "a", type: .string)])])
        try SQLiteStore.create(at: store, model: model)
        let before = try Data(contentsOf: store)
        let listing = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).sorted()
        let run = try LadeProcess.run(["migrate", store.path, "--model", ImportSandbox.catalogModel.path])
        #expect(run.status == 1)
        #expect(run.stderr.contains("no version of the model matches the store; the closest is"), "\(run.stderr)")
        #expect(try Data(contentsOf: store) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).filter { !$0.hasSuffix(".lade-lock") }.sorted() == listing)
    }

    @Test("merging two hierarchies is refused, naming them")
    func mergingRefused() throws {
        let sandbox = try ImportSandbox()
        let bundle = sandbox.url("Fleet.xcdatamodeld")
        try Self.writeVersion("Fleet", of: bundle, """
            <entity name="Car"><attribute name="name" optional="YES" attributeType="String"/></entity>
            <entity name="Truck"><attribute name="name" optional="YES" attributeType="String"/></entity>
            """)
        try Self.writeVersion("Fleet 2", of: bundle, """
            <entity name="Vehicle"><attribute name="name" optional="YES" attributeType="String"/></entity>
            <entity name="Car" parentEntity="Vehicle"/>
            <entity name="Truck" parentEntity="Vehicle"/>
            """, current: true)
        let store = sandbox.url("fleet.sqlite")
        #expect(try LadeProcess.run(["init", store.path, "--model", bundle.path, "--model-version", "Fleet"]).status == 0)
        let run = try LadeProcess.run(["migrate", store.path, "--model", bundle.path])
        #expect(run.status == 1)
        #expect(run.stderr.contains("entity Vehicle: its hierarchy would merge the objects of Car and Truck, two hierarchies before"), "\(run.stderr)")
    }

    @Test("a relationship within one entity (a node's parent) is kept", arguments: ["sqlite", "xml"])
    func selfReference(type: String) throws {
        let sandbox = try ImportSandbox()
        let bundle = sandbox.url("Tree.xcdatamodeld")
        let node = """
            <entity name="Node"><attribute name="name" optional="YES" attributeType="String"/>
            <relationship name="parent" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Node" inverseName="children" inverseEntity="Node"/>
            <relationship name="children" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Node" inverseName="parent" inverseEntity="Node"/>
            """
        try Self.writeVersion("Tree", of: bundle, node + "</entity>")
        try Self.writeVersion("Tree 2", of: bundle, node + "<attribute name=\"depth\" optional=\"YES\" attributeType=\"Integer 16\" defaultValueString=\"0\"/></entity>", current: true)
        let store = sandbox.url("tree.\(type)")
        let v1 = try ManagedObjectModel(contentsOf: bundle, version: "Tree")
        let context = try privateContext(model: v1, store: store, type: PersistentStoreCoordinator.StoreType(name: type)!)
        try context.performAndWait {
            var made: [ManagedObject] = []
            for index in 0..<6 {
                let object = try context.insertObject(forEntityName: "Node")
                try object.setValue("n\(index)", forKey: "name")
                if index > 0 { try object.setObject(made[(index - 1) / 2], forKey: "parent") }
                made.append(object)
            }
            try context.save()
        }
        try Self.migrate(store, bundle, saying: ["Node.depth: added"])
        let migrated = try privateContext(model: try ManagedObjectModel(contentsOf: bundle), store: store)
        try migrated.performAndWait {
            let nodes = try migrated.fetch(FetchRequest(entityName: "Node"))
            let parents = Dictionary(uniqueKeysWithValues: nodes.map { node -> (String, String) in
                guard case .string(let name)? = node.attributeValue(forKey: "name") else { return ("?", "?") }
                guard case .string(let parent)? = node.object(forKey: "parent")?.attributeValue(forKey: "name") else { return (name, "-") }
                return (name, parent)
            })
            #expect(parents == ["n0": "-", "n1": "n0", "n2": "n0", "n3": "n1", "n4": "n1", "n5": "n2"])
        }
    }

    @Test("rename, widening, a new attribute and optional-to-required, in place: keys, Z_OPT and UUID kept, defaults filled")
    func lightweight() throws {
        let sandbox = try ImportSandbox()
        let model = try bundle(sandbox)
        let store = try oldStore(sandbox, bundle: model)
        let connection = { try SQLiteConnection(path: store, mode: .readOnly) }
        let before = try connection().rows("SELECT Z_PK, Z_OPT FROM ZITEM ORDER BY Z_PK")
        let uuid = try connection().rows("SELECT Z_UUID FROM Z_METADATA")
        let dry = try LadeProcess.run(["migrate", store, "--model", model, "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("Things → Things 2") && dry.stdout.contains("Item.title: renamed from name")
                && dry.stdout.contains("Item.count: widened from Integer 16 to Integer 64") && dry.stdout.contains("Item.note: added, existing objects take n/a")
                && dry.stdout.contains("Item.code: made required; objects without a value take none") && dry.stdout.contains("Item.old: removed"), "\(dry.stdout)")
        #expect(try connection().rows("PRAGMA table_info(ZITEM)").count == 7, "the dry run wrote nothing")
        let run = try LadeProcess.run(["migrate", store, "--model", model])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasSuffix("migrated: \(store) is at Things 2\n  Item: 3\n"), "\(run.stdout)")
        #expect(try connection().rows("SELECT Z_PK, Z_OPT FROM ZITEM ORDER BY Z_PK") == before)
        #expect(try connection().rows("SELECT Z_UUID FROM Z_METADATA") == uuid)
        #expect(try connection().rows("SELECT ZTITLE, ZCOUNT, ZCODE, ZNOTE FROM ZITEM ORDER BY Z_PK") == [
            [.text("bolt"), .integer(7), .text("B1"), .text("n/a")],
            [.text("nut"), .integer(32000), .text("none"), .text("n/a")],
            [.text("gear"), .integer(-3), .text("G1"), .text("n/a")],
        ])
        // It opens with the new version, is sound, and a second run has nothing to do.
        #expect(try LadeProcess.run(["check", store, "--model", model]).status == 0)
        let again = try LadeProcess.run(["migrate", store, "--model", model])
        #expect(again.status == 0 && again.stdout.contains("already at Things 2"), "\(again.stdout)")
        let inspect = try LadeProcess.run(["inspect", store, "--model", model])
        #expect(inspect.stdout.contains("Model version: Things 2 (current)"), "\(inspect.stdout)")
    }

    /// Adds a third version, made current.
    func addThirdVersion(_ bundle: String, item: String) throws {
        try Self.writeVersion("Things 3", of: URL(fileURLWithPath: bundle), item, current: true)
    }

    @Test("from the first version to the third: one step inferred directly, past the second; a change the versions' own steps refuse is refused, and nothing is written")
    func staged() throws {
        let sandbox = try ImportSandbox()
        let model = try bundle(sandbox)
        let store = try oldStore(sandbox, bundle: model)
        try addThirdVersion(model, item: """
            <entity name="Item"><attribute name="title" optional="YES" attributeType="String"/>
            <attribute name="count" optional="YES" attributeType="Integer 64" usesScalarValueType="YES"/>
            <attribute name="code" attributeType="String" defaultValueString="none"/>
            <attribute name="note" optional="YES" attributeType="String" defaultValueString="n/a"/>
            <attribute name="size" attributeType="Integer 32" defaultValueString="1" usesScalarValueType="YES"/></entity>
            """)
        let run = try LadeProcess.run(["migrate", store, "--model", model])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("Things → Things 3 (lightweight, in place; inferred directly, past Things 2)") && !run.stdout.contains("steps)"), "\(run.stdout)")
        #expect(try SQLiteConnection(path: store, mode: .readOnly).rows("SELECT ZTITLE, ZNOTE, ZSIZE FROM ZITEM ORDER BY Z_PK").first == [.text("bolt"), .text("n/a"), .integer(1)])

        let other = try ImportSandbox()
        let otherModel = try bundle(other)
        let otherStore = try oldStore(other, bundle: otherModel)
        try addThirdVersion(otherModel, item: """
            <entity name="Item"><attribute name="title" optional="YES" attributeType="Date"/></entity>
            """)
        let before = try Data(contentsOf: URL(fileURLWithPath: otherStore))
        let refused = try LadeProcess.run(["migrate", otherStore, "--model", otherModel])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("Things 2 → Things 3: attribute Item.title: its type changes from String to Date"), "\(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: otherStore)) == before, "no step ran")
    }

    @Test("XML and binary stores migrate through their objects: keys kept, renames, defaults, removals", arguments: ["xml", "binary"])
    func atomicStores(type: String) throws {
        let sandbox = try ImportSandbox()
        let model = try bundle(sandbox)
        let store = sandbox.url("things.\(type)")
        #expect(try LadeProcess.run(["init", store.path, "--model", model, "--model-version", "Things", "--type", type]).status == 0)
        let bundleURL = URL(fileURLWithPath: model)
        func items(_ version: String?, _ keys: [String]) throws -> [[String]] {
            let context = try privateContext(model: try ManagedObjectModel(contentsOf: bundleURL, version: version), store: store)
            return try context.performAndWait {
                try context.fetch(FetchRequest(entityName: "Item", sortDescriptors: [FetchSortDescriptor("count")])).map { item in
                    ["\(item.objectID.primaryKey ?? 0)"] + keys.map { item.value(forKey: $0).map { "\($0)" } ?? "nil" }
                }
            }
        }
        do {
            let context = try privateContext(model: try ManagedObjectModel(contentsOf: bundleURL, version: "Things"), store: store)
            try context.performAndWait {
                for (name, count, code) in [("bolt", 7, "B1"), ("nut", 32000, nil)] as [(String, Int, String?)] {
                    let item = try context.insertObject(forEntityName: "Item")
                    try item.setValue(name, forKey: "name")
                    try item.setValue(count, forKey: "count")
                    try item.setValue(code, forKey: "code")
                }
                try context.save()
            }
        }
        let keys = try items("Things", ["name"]).map { $0[0] }
        let run = try LadeProcess.run(["migrate", store.path, "--model", model])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try items(nil, ["title", "count", "code", "note"]) == [
            [keys[0], "bolt", "7", "B1", "n/a"],
            [keys[1], "nut", "32000", "none", "n/a"],
        ])
        #expect(try LadeProcess.run(["check", store.path, "--model", model]).status == 0)
    }

    @Test("a damaged store is refused before anything is written, not migrated with its stray rows dropped")
    func damagedStore() throws {
        let sandbox = try ImportSandbox()
        let model = try bundle(sandbox)
        let store = try oldStore(sandbox, bundle: model)
        try SQLiteConnection(path: store, mode: .readWrite(create: false)).execute("UPDATE ZITEM SET Z_ENT = 42 WHERE ZNAME = 'nut'")
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        let run = try LadeProcess.run(["migrate", store, "--model", model])
        #expect(run.status == 1)
        #expect(run.stderr.contains("the store is damaged") && run.stderr.hasSuffix("[store.damaged]\n"), "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }

    @Test("what lightweight migration cannot carry is refused with entity, property and rule, and the store is untouched")
    func refusal() throws {
        let sandbox = try ImportSandbox()
        let model = try bundle(sandbox, v2Item: """
            <entity name="Item"><attribute name="name" optional="YES" attributeType="Integer 32"/>
            <attribute name="count" optional="YES" attributeType="Integer 16" usesScalarValueType="YES"/>
            <attribute name="code" optional="YES" attributeType="String"/>
            <attribute name="fresh" attributeType="String"/></entity>
            """)
        let store = try oldStore(sandbox, bundle: model)
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        let run = try LadeProcess.run(["migrate", store, "--model", model])
        #expect(run.status == 1)
        #expect(run.stderr.contains("attribute Item.name: its type changes from String to Integer 32"), "\(run.stderr)")
        #expect(run.stderr.hasSuffix("[migration.refused]\n"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }

    @Test("a required attribute without a default, added or made required, is refused when objects lack a value (naming it, with a count and a key), and carried when none do, as Core Data's inferred mapping validates the new objects",
          arguments: ["sqlite", "xml", "binary"])
    func requiredWithoutDefault(type: String) throws {
        let sandbox = try ImportSandbox()
        let model = try bundle(sandbox, v2Item: """
            <entity name="Item"><attribute name="name" attributeType="String"/>
            <attribute name="count" optional="YES" attributeType="Integer 16" usesScalarValueType="YES"/>
            <attribute name="code" attributeType="String"/>
            <attribute name="fresh" attributeType="String"/></entity>
            """)
        let sqlite = try oldStore(sandbox, bundle: model)
        let store = sandbox.url("things.\(type)").path
        if type != "sqlite" {
            #expect(try LadeProcess.run(["convert", sqlite, store, "--model", model, "--model-version", "Things"]).status == 0)
        }
        let before = try storeFileDigests(URL(fileURLWithPath: store))
        let run = try LadeProcess.run(["migrate", store, "--model", model])
        #expect(run.status == 1, "\(run.stdout)")
        // `name` has a value everywhere; `code` lacks one for the nut, `fresh` for every object.
        #expect(!run.stderr.contains("attribute Item.name"), "\(run.stderr)")
        #expect(run.stderr.contains("attribute Item.code: required in the new version, without a default value, and 1 object has no value for it"), "\(run.stderr)")
        #expect(run.stderr.contains("attribute Item.fresh: required in the new version, without a default value, and 3 objects have no value for it"), "\(run.stderr)")
        #expect(run.stderr.hasSuffix("[migration.refused]\n"))
        #expect(try storeFileDigests(URL(fileURLWithPath: store)) == before)

        // With no objects to lack them, the same versions migrate.
        let empty = try ImportSandbox()
        let emptyModel = try bundle(empty, v2Item: """
            <entity name="Item"><attribute name="name" attributeType="String"/><attribute name="fresh" attributeType="String"/></entity>
            """)
        let emptyStore = empty.url("things.\(type)").path
        #expect(try LadeProcess.run(["init", emptyStore, "--model", emptyModel, "--model-version", "Things", "--type", type]).status == 0)
        let migrated = try LadeProcess.run(["migrate", emptyStore, "--model", emptyModel])
        #expect(migrated.status == 0 && migrated.stdout.contains("is at Things 2"), "\(migrated.stdout)\(migrated.stderr)")
    }

    /// The corpus' CoreDataPlus `SampleModel` folder, and a copy of its `SampleModel_V1.sqlite`
    /// (written by Core Data) in the sandbox.
    static func sampleModelV1(in sandbox: ImportSandbox) throws -> (base: URL, copy: URL) {
        let base = Corpus.root.appendingPathComponent("alemar11/CoreDataPlus/Tests/Resources/SampleModel")
        let copy = sandbox.url("v1.sqlite")
        try copyWritable(at: base.appendingPathComponent("Fixtures/SampleModel_V1.sqlite"), to: copy)
        return (base, copy)
    }

    @Test("Core Data's own migration of CoreDataPlus SampleModel_V1 to V2 is what lade migrate gives: rows, keys, Z_PRIMARYKEY, schema, UUID and, with the .momd, Apple's hashes",
          .needsCorpus)
    func golden() throws {
        let sandbox = try ImportSandbox()
        let (base, copy) = try Self.sampleModelV1(in: sandbox)
        let reference = base.appendingPathComponent("Fixtures/SampleModel_V2.sqlite").path
        let run = try LadeProcess.run(["migrate", copy.path, "--model", base.appendingPathComponent("SampleModel.xcdatamodeld").path,
                                       "--to", "SampleModel2", "--momd", base.appendingPathComponent("Fixtures/SampleModel.momd").path])
        #expect(run.status == 0, "\(run.stderr)")
        let ours = try SQLiteConnection(path: copy.path, mode: .readOnly), apple = try SQLiteConnection(path: reference, mode: .readOnly)
        for table in ["ZCAR", "ZPERSON", "Z_PRIMARYKEY"] {
            #expect(try ours.rows("SELECT * FROM \(table) ORDER BY 1") == apple.rows("SELECT * FROM \(table) ORDER BY 1"), "\(table)")
        }
        let schema = "SELECT sql FROM sqlite_master WHERE name NOT IN ('Z_METADATA', 'Z_MODELCACHE', 'Z_PRIMARYKEY') AND sql IS NOT NULL ORDER BY sql"
        #expect(try ours.rows(schema) == apple.rows(schema))
        #expect(try ours.rows("SELECT Z_UUID FROM Z_METADATA") == apple.rows("SELECT Z_UUID FROM Z_METADATA"))
        let hashes = { (path: String) throws -> PropertyListValue? in
            try PersistentStoreCoordinator.metadataForPersistentStore(at: URL(fileURLWithPath: path))[StoreMetadata.Key.versionHashes]
        }
        #expect(try hashes(copy.path) == hashes(reference))
    }

    @Test("CoreDataPlus SampleModel_V1 to SampleModel3 in one command, one lightweight step inferred directly as Core Data infers it: Person renumbered 4 → 5 behind the new Maker, every object, key and reference kept",
          .needsCorpus)
    func stagedToThird() throws {
        let sandbox = try ImportSandbox()
        let (base, copy) = try Self.sampleModelV1(in: sandbox)
        let bundle = base.appendingPathComponent("SampleModel.xcdatamodeld").path, momd = base.appendingPathComponent("Fixtures/SampleModel.momd").path
        let run = try LadeProcess.run(["migrate", copy.path, "--model", bundle, "--to", "SampleModel3", "--momd", momd])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("SampleModel → SampleModel3 (lightweight, in place; inferred directly, past SampleModel2)"), "\(run.stdout)")
        #expect(run.stdout.contains("Person: entity number 4 → 5"), "\(run.stdout)")
        // Against Core Data's own V2 of the same store: the same people and cars, Person under its new number.
        let ours = try SQLiteConnection(path: copy.path, mode: .readOnly)
        let apple = try SQLiteConnection(path: base.appendingPathComponent("Fixtures/SampleModel_V2.sqlite").path, mode: .readOnly)
        #expect(try ours.rows("SELECT Z_PK, Z_ENT + 1, Z_OPT, ZFIRSTNAME, ZLASTNAME FROM ZPERSON ORDER BY 1")
                == apple.rows("SELECT Z_PK, Z_ENT + 2, Z_OPT, ZFIRSTNAME, ZLASTNAME FROM ZPERSON ORDER BY 1"))
        #expect(try ours.rows("SELECT Z_PK, Z_ENT, Z_OPT, ZOWNER, ZNUMBERPLATE, ZMODEL FROM ZCAR ORDER BY 1")
                == apple.rows("SELECT Z_PK, Z_ENT, Z_OPT, ZOWNER, ZNUMBERPLATE, ZMODEL FROM ZCAR ORDER BY 1"))
        #expect(try ours.rows("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY 1")
                == [[.integer(1), .text("Car"), .integer(0), .integer(125)], [.integer(2), .text("SportCar"), .integer(1), .integer(0)],
                    [.integer(3), .text("ExpensiveSportCar"), .integer(2), .integer(0)], [.integer(4), .text("Maker"), .integer(0), .integer(0)],
                    [.integer(5), .text("Person"), .integer(0), .integer(20)]])
        #expect(try ours.rows("SELECT Z_UUID FROM Z_METADATA") == apple.rows("SELECT Z_UUID FROM Z_METADATA"))
        // Sound, and what the third version's compiled model says a store of it is.
        #expect(try LadeProcess.run(["check", copy.path, "--model", bundle, "--model-version", "SampleModel3"]).status == 0)
        let inspect = try LadeProcess.run(["inspect", copy.path, "--model", bundle, "--momd", momd, "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any], "\(inspect.stderr)")
        #expect(report["modelVersion"] as? String == "SampleModel3", "\(inspect.stdout)")
        // Every owned car still has its owner, read through Lade's stack with the third version.
        guard case .integer(let owned)? = try apple.rows("SELECT COUNT(ZOWNER) FROM ZCAR").first?.first else { Issue.record("no count"); return }
        let model = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: bundle), version: "SampleModel3")
        let context = try privateContext(model: model, store: copy, type: .sqlite)
        try context.performAndWait {
            let people = try context.fetch(FetchRequest(entityName: "Person"))
            #expect(people.count == 20)
            #expect(people.map { $0.objects(forKey: "cars").count }.reduce(0, +) == Int(owned))
        }
    }

    @Test("entities renumbered and a many-to-many renamed: Z_ENT, Z_PRIMARYKEY and the renamed join table follow, every link kept")
    func renumberedAndRenamedJoin() throws {
        let sandbox = try ImportSandbox()
        let bundle = sandbox.url("Library.xcdatamodeld")
        let book = """
            <entity name="Book"><attribute name="title" optional="YES" attributeType="String"/>
            <relationship name="readers" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Reader" inverseName="books" inverseEntity="Reader"/></entity>
            """
        try Self.writeVersion("Library", of: bundle, book + """
            <entity name="Reader"><attribute name="name" optional="YES" attributeType="String"/>
            <relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="readers" inverseEntity="Book"/></entity>
            """)
        // Author sorts first, so Book becomes 2 and Reader 3; Reader.books is renamed shelf.
        try Self.writeVersion("Library 2", of: bundle, """
            <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/></entity>
            <entity name="Book"><attribute name="title" optional="YES" attributeType="String"/>
            <relationship name="readers" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Reader" inverseName="shelf" inverseEntity="Reader"/></entity>
            <entity name="Reader"><attribute name="name" optional="YES" attributeType="String"/>
            <relationship name="shelf" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="readers" inverseEntity="Book" elementID="books"/></entity>
            """, current: true)
        let store = sandbox.url("library.sqlite")
        let context = try privateContext(model: try ManagedObjectModel(contentsOf: bundle, version: "Library"), store: store, type: .sqlite)
        let shelves = ["Ann": ["Dune", "Emma"], "Bo": ["Emma"], "Cy": []]
        try context.performAndWait {
            var books: [String: ManagedObject] = [:]
            for title in ["Dune", "Emma", "Faust"] {
                books[title] = try context.insertObject(forEntityName: "Book")
                try books[title]!.setValue(title, forKey: "title")
            }
            for (name, titles) in shelves {
                let reader = try context.insertObject(forEntityName: "Reader")
                try reader.setValue(name, forKey: "name")
                for title in titles { try reader.add(books[title]!, toKey: "books") }
            }
            try context.save()
        }
        try Self.migrate(store, bundle, saying: ["Book: entity number 1 → 2", "Reader: entity number 2 → 3", "Reader.shelf: renamed from books"])
        let migrated = try privateContext(model: try ManagedObjectModel(contentsOf: bundle), store: store, type: .sqlite)
        try migrated.performAndWait {
            var found: [String: [String]] = [:]
            for reader in try migrated.fetch(FetchRequest(entityName: "Reader")) {
                found[reader["name"] as! String] = reader.objects(forKey: "shelf").map { $0["title"] as! String }.sorted()
            }
            #expect(found == shelves)
            let emma = try #require(try migrated.fetch(FetchRequest(entityName: "Book", predicate: try FetchPredicate(format: "title == 'Emma'"))).first)
            #expect(Set(emma.objects(forKey: "readers").map { $0["name"] as! String }) == ["Ann", "Bo"])
        }
    }

    @Test("a to-one made to-many (many-to-many, and without an inverse): each object's destination becomes its one link; to-many to to-one is refused",
          arguments: ["sqlite", "xml", "binary"])
    func toOneMadeToMany(type: String) throws {
        let sandbox = try ImportSandbox()
        let bundle = sandbox.url("Garage.xcdatamodeld")
        try Self.writeVersion("Garage", of: bundle, """
            <entity name="Car"><attribute name="plate" optional="YES" attributeType="String"/>
            <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person" inverseName="cars" inverseEntity="Person"/>
            <relationship name="spot" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Spot"/></entity>
            <entity name="Person"><attribute name="name" optional="YES" attributeType="String"/>
            <relationship name="cars" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Car" inverseName="owner" inverseEntity="Car"/></entity>
            <entity name="Spot"><attribute name="number" optional="YES" attributeType="Integer 32"/></entity>
            """)
        try Self.writeVersion("Garage 2", of: bundle, """
            <entity name="Car"><attribute name="plate" optional="YES" attributeType="String"/>
            <relationship name="owners" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Person" inverseName="cars" inverseEntity="Person" elementID="owner"/>
            <relationship name="spots" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Spot" elementID="spot"/></entity>
            <entity name="Person"><attribute name="name" optional="YES" attributeType="String"/>
            <relationship name="cars" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Car" inverseName="owners" inverseEntity="Car"/></entity>
            <entity name="Spot"><attribute name="number" optional="YES" attributeType="Integer 32"/></entity>
            """, current: true)
        let store = sandbox.url("garage.\(type)")
        let kind = try #require(PersistentStoreCoordinator.StoreType(name: type))
        let context = try privateContext(model: try ManagedObjectModel(contentsOf: bundle, version: "Garage"), store: store, type: kind)
        try context.performAndWait {
            let ann = try context.insertObject(forEntityName: "Person"), bo = try context.insertObject(forEntityName: "Person")
            try ann.setValue("Ann", forKey: "name")
            try bo.setValue("Bo", forKey: "name")
            for (plate, owner, spot) in [("A-1", ann, 1), ("A-2", ann, nil), ("B-1", bo, 2), ("X-0", nil, 3)] as [(String, ManagedObject?, Int?)] {
                let car = try context.insertObject(forEntityName: "Car")
                try car.setValue(plate, forKey: "plate")
                try car.setObject(owner, forKey: "owner")
                if let spot {
                    let place = try context.insertObject(forEntityName: "Spot")
                    try place.setValue(spot, forKey: "number")
                    try car.setObject(place, forKey: "spot")
                }
            }
            try context.save()
        }
        try Self.migrate(store, bundle, saying: ["Car.owners: to-one made to-many"])
        let migrated = try privateContext(model: try ManagedObjectModel(contentsOf: bundle), store: store, type: kind)
        try migrated.performAndWait {
            var found: [String: [String]] = [:]
            for car in try migrated.fetch(FetchRequest(entityName: "Car")) {
                found[car["plate"] as! String] = car.objects(forKey: "owners").map { $0["name"] as! String }
                    + car.objects(forKey: "spots").map { "spot \($0["number"] as! Int)" }
            }
            #expect(found == ["A-1": ["Ann", "spot 1"], "A-2": ["Ann"], "B-1": ["Bo", "spot 2"], "X-0": ["spot 3"]])
            let ann = try #require(try migrated.fetch(FetchRequest(entityName: "Person", predicate: try FetchPredicate(format: "name == 'Ann'"))).first)
            #expect(Set(ann.objects(forKey: "cars").map { $0["plate"] as! String }) == ["A-1", "A-2"])
        }
        // And back: a to-many made to-one would keep one destination of several.
        try Self.writeVersion("Garage 3", of: bundle, """
            <entity name="Car"><attribute name="plate" optional="YES" attributeType="String"/>
            <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person" inverseName="cars" inverseEntity="Person"/>
            <relationship name="spots" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Spot"/></entity>
            <entity name="Person"><attribute name="name" optional="YES" attributeType="String"/>
            <relationship name="cars" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Car" inverseName="owner" inverseEntity="Car"/></entity>
            <entity name="Spot"><attribute name="number" optional="YES" attributeType="Integer 32"/></entity>
            """, current: true)
        let before = try Data(contentsOf: store)
        let back = try LadeProcess.run(["migrate", store.path, "--model", bundle.path])
        #expect(back.status == 1)
        #expect(back.stderr.contains("relationship Car.owner: changes between to-one, to-many and ordered (to-many to to-one would keep one destination of several)"), "\(back.stderr)")
        #expect(try Data(contentsOf: store) == before)
    }

    @Test("to-many relationships made ordered (one-to-many and many-to-many): members numbered in the order they were made; and unordered again",
          arguments: ["sqlite", "xml"])
    func orderingChanges(type: String) throws {
        let sandbox = try ImportSandbox()
        let bundle = sandbox.url("Deck.xcdatamodeld")
        func version(_ name: String, ordered: Bool, current: Bool = false) throws {
            let flag = ordered ? " ordered=\"YES\"" : ""
            try Self.writeVersion(name, of: bundle, """
                <entity name="Card"><attribute name="face" optional="YES" attributeType="String"/>
                <relationship name="deck" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Deck" inverseName="cards" inverseEntity="Deck"/>
                <relationship name="hands" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Hand" inverseName="cards" inverseEntity="Hand"/></entity>
                <entity name="Deck"><attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="cards" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Card" inverseName="deck" inverseEntity="Card"\(flag)/></entity>
                <entity name="Hand"><attribute name="player" optional="YES" attributeType="String"/>
                <relationship name="cards" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Card" inverseName="hands" inverseEntity="Card"\(flag)/></entity>
                """, current: current)
        }
        try version("Deck", ordered: false)
        try version("Deck 2", ordered: true, current: true)
        let store = sandbox.url("deck.\(type)")
        let kind = try #require(PersistentStoreCoordinator.StoreType(name: type))
        let context = try privateContext(model: try ManagedObjectModel(contentsOf: bundle, version: "Deck"), store: store, type: kind)
        try context.performAndWait {
            var decks: [ManagedObject] = [], hands: [ManagedObject] = []
            for name in ["red", "blue"] {
                decks.append(try context.insertObject(forEntityName: "Deck"))
                try decks.last!.setValue(name, forKey: "name")
                hands.append(try context.insertObject(forEntityName: "Hand"))
                try hands.last!.setValue(name, forKey: "player")
            }
            for (index, face) in ["A", "K", "Q", "J", "10"].enumerated() {
                let card = try context.insertObject(forEntityName: "Card")
                try card.setValue(face, forKey: "face")
                try card.setObject(decks[index % 2], forKey: "deck")
                try card.add(hands[index % 2], toKey: "hands")
                if index == 4 { try card.add(hands[1], toKey: "hands") }
            }
            try context.save()
        }
        try Self.migrate(store, bundle, saying: ["Deck.cards: made ordered", "Hand.cards: made ordered"])
        // The order the cards were made in.
        func members(_ model: ManagedObjectModel) throws -> [String: [String]] {
            let reader = try privateContext(model: model, store: store, type: kind)
            return try reader.performAndWait {
                var found: [String: [String]] = [:]
                for deck in try reader.fetch(FetchRequest(entityName: "Deck")) {
                    found["deck " + (deck["name"] as! String)] = deck.objects(forKey: "cards").map { $0["face"] as! String }
                }
                for hand in try reader.fetch(FetchRequest(entityName: "Hand")) {
                    found["hand " + (hand["player"] as! String)] = hand.objects(forKey: "cards").map { $0["face"] as! String }
                }
                return found
            }
        }
        let ordered = try members(try ManagedObjectModel(contentsOf: bundle))
        #expect(ordered == ["deck red": ["A", "Q", "10"], "deck blue": ["K", "J"], "hand red": ["A", "Q", "10"], "hand blue": ["K", "J", "10"]])
        // And back to unordered: the same members, the order dropped.
        try version("Deck 3", ordered: false, current: true)
        try Self.migrate(store, bundle, saying: ["Deck.cards: made unordered"])
        let unordered = try members(try ManagedObjectModel(contentsOf: bundle))
        #expect(unordered.mapValues { $0.sorted() } == ordered.mapValues { $0.sorted() })
    }

    @Test("removing a subentity drops its objects and clears references and links to them, so the migrated store is sound")
    func removedSubentity() throws {
        let sandbox = try ImportSandbox()
        let bundle = sandbox.url("Fleet.xcdatamodeld")
        let person = """
            <entity name="Person"><attribute name="name" optional="YES" attributeType="String"/>
            <relationship name="vehicle" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Vehicle" inverseName="owners" inverseEntity="Vehicle"/>
            <relationship name="fleet" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Vehicle" inverseName="crew" inverseEntity="Vehicle"/></entity>
            <entity name="Vehicle"><attribute name="plate" optional="YES" attributeType="String"/>
            <relationship name="owners" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Person" inverseName="vehicle" inverseEntity="Person"/>
            <relationship name="crew" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Person" inverseName="fleet" inverseEntity="Person"/></entity>
            """
        try Self.writeVersion("Fleet", of: bundle, person + "<entity name=\"Zeppelin\" parentEntity=\"Vehicle\"><attribute name=\"gas\" optional=\"YES\" attributeType=\"String\"/></entity>")
        try Self.writeVersion("Fleet 2", of: bundle, person, current: true)
        let store = sandbox.url("fleet.sqlite")
        let context = try privateContext(model: try ManagedObjectModel(contentsOf: bundle, version: "Fleet"), store: store, type: .sqlite)
        try context.performAndWait {
            let car = try context.insertObject(forEntityName: "Vehicle")
            let zeppelin = try context.insertObject(forEntityName: "Zeppelin")
            for (name, vehicle) in [("Ann", car), ("Bo", zeppelin)] {
                let someone = try context.insertObject(forEntityName: "Person")
                try someone.setValue(name, forKey: "name")
                try someone.setObject(vehicle, forKey: "vehicle")
                try someone.add(car, toKey: "fleet")
                try someone.add(zeppelin, toKey: "fleet")
            }
            try context.save()
        }
        try Self.migrate(store, bundle, saying: ["Zeppelin: removed, with its objects"])
        let connection = try SQLiteConnection(path: store.path, mode: .readOnly)
        #expect(try connection.rows("SELECT COUNT(*) FROM ZVEHICLE") == [[.integer(1)]])
        #expect(try connection.rows("SELECT ZNAME, ZVEHICLE IS NULL FROM ZPERSON ORDER BY ZNAME") == [[.text("Ann"), .integer(0)], [.text("Bo"), .integer(1)]])
        let links = try connection.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z\\_%' ESCAPE '\\' AND name NOT IN ('Z_PRIMARYKEY', 'Z_METADATA', 'Z_MODELCACHE')")
        let join = try #require(links.first?.first.flatMap { if case .text(let name) = $0 { name } else { nil } })
        #expect(try connection.rows("SELECT COUNT(*) FROM \(join)") == [[.integer(2)]], "only the links to the car are left")
    }

    @Test("a migration tells its progress: each table rebuilt, with its rows (lade migrate shows it on a terminal)")
    func progress() throws {
        let sandbox = try ImportSandbox()
        let model = try bundle(sandbox)
        let store = try oldStore(sandbox, bundle: model)
        let bundleURL = URL(fileURLWithPath: model)
        let migration = try LightweightMigration(
            store: URL(fileURLWithPath: store), from: try ManagedObjectModel(contentsOf: bundleURL, version: "Things"),
            to: try ManagedObjectModel(contentsOf: bundleURL, version: "Things 2"))
        final class Lines: @unchecked Sendable {
            private let lock = NSLock()
            private var lines: [String] = []
            func add(_ line: String) { lock.withLock { lines.append(line) } }
            var all: [String] { lock.withLock { lines } }
        }
        let lines = Lines()
        try migration.run { lines.add($0) }
        #expect(lines.all == ["rebuilding ZITEM (3 rows)"])
    }
}
