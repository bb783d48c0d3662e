import Foundation
import Testing
@testable import Lade

/// Composite attributes (Xcode 15, `NSCompositeAttributeDescription`), on the one
/// Apple-written model Lade has: MomXML's (`Tests/Fixtures/MomXML`, MIT).
@Suite("Composite attributes")
struct CompositeAttributeTests {
    static let momXML = Fixtures.root.appendingPathComponent("Tests/Fixtures/MomXML/Model.xcdatamodeld")

    @Test("MomXML's Xcode 15 model loads: its entities, and the attribute of type Composite")
    func momXMLLoads() throws {
        let model = try ManagedObjectModel(contentsOf: Self.momXML)
        #expect(model.entityNames == ["Client", "Commande", "Produit"])
        let attribute = try #require(model.attribute("attribute1", of: "Produit"))
        #expect(attribute.type.rawValue == "Composite")
        #expect(model.attribute("prix", of: "Produit")?.type == .double)
    }

    @Test("a SQLite store for a model with a composite attribute is refused, naming the entity and attribute and why")
    func sqliteRefused() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(contentsOf: Self.momXML)
        let url = directory.appendingPathComponent("Model.sqlite")
        let error = #expect(throws: StoreError.self) {
            try PersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(type: .sqlite, at: url)
        }
        let text = error?.description ?? ""
        #expect(text.contains("Produit.attribute1"))
        #expect(text.contains("composite"))
        #expect(text.contains("not known from any Apple-written store"))
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("XML and binary stores refuse a model with a composite attribute, as Core Data does", arguments: [StoreType.xml, .binary])
    func atomicRefused(type: StoreType) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(contentsOf: Self.momXML)
        let url = directory.appendingPathComponent("Model.store")
        let error = #expect(throws: StoreError.self) {
            try PersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(type: type, at: url)
        }
        #expect(error?.description.contains("Produit.attribute1") == true)
        #expect(error?.description.contains("SQLite") == true)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("the rest of the model works in memory: objects of the other entities save and fetch")
    func restOfModelWorks() throws {
        let model = try ManagedObjectModel(contentsOf: Self.momXML)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory, at: nil)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let client = try context.insertObject(forEntityName: "Client")
            try client.setValue("Ada", forKey: "firstname")
            let product = try context.insertObject(forEntityName: "Produit")
            try product.setValue(2.5, forKey: "prix")
            try context.save()
            let found = try context.fetch(FetchRequest(entityName: "Produit", predicate: FetchPredicate(format: "prix > 2")))
            #expect(found.count == 1)
        }
    }

    @Test("an attribute naming a composite the model does not define is refused with file, line, entity and attribute")
    func unknownComposite() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Fixtures.writeXcodeModel("""
            <entity name="Shop">
                <attribute name="address" optional="YES" attributeType="Composite" composite="Address"/>
            </entity>
            <composite name="Place"/>
            """, in: directory)
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: url) }
        let problem = try #require(error?.problems.first)
        #expect(error?.problems.count == 1)
        #expect(problem.line == 4)
        #expect(problem.entity == "Shop")
        #expect(problem.property == "address")
        #expect(problem.file?.hasSuffix("contents") == true)
        #expect(problem.message.contains("composite 'Address'"))
        #expect(problem.message.contains("Place"))
    }

    @Test("MomXML's composite and its nested, empty composite are read as Core Data's elements")
    func momXMLComposites() throws {
        let model = try ManagedObjectModel(contentsOf: Self.momXML)
        #expect(model.composites.map(\.name) == ["Composite", "Composite1"])
        let attribute = try #require(model.attribute("attribute1", of: "Produit"))
        #expect(attribute.type == .composite)
        #expect(attribute.compositeName == "Composite")
        let elements = model.elements(of: attribute)
        #expect(elements.map(\.name) == ["one", "two", "three"])
        #expect(elements.map(\.type) == [.integer16, .string, .composite])
        #expect(elements[0].defaultValue == .integer(0))
        #expect(elements[2].compositeName == "Composite1")
        #expect(model.elements(of: elements[2]).isEmpty)
        #expect(model.composite(named: "Composite1")?.elements == [])
    }

    /// A model with a nested composite that has elements: `Shop.address` is a `Place`, whose
    /// `geo` is a `Geo`.
    static func placeModel(in directory: URL) throws -> ManagedObjectModel {
        let url = try Fixtures.writeXcodeModel("""
            <entity name="Shop">
                <attribute name="name" optional="YES" attributeType="String"/>
                <attribute name="address" optional="YES" attributeType="Composite" composite="Place"/>
            </entity>
            <composite name="Place">
                <attribute name="city" optional="YES" attributeType="String"/>
                <attribute name="geo" optional="YES" attributeType="Composite" composite="Geo"/>
            </composite>
            <composite name="Geo">
                <attribute name="lat" optional="YES" attributeType="Double"/>
            </composite>
            """, in: directory)
        return try ManagedObjectModel(contentsOf: url)
    }

    static func place(_ city: String, lat: Double?) -> AttributeValue {
        var elements: [String: AttributeValue] = ["city": .string(city)]
        if let lat { elements["geo"] = .composite(["lat": .double(lat)]) }
        return .composite(elements)
    }

    @Test("predicates on composite.element key paths, nested ones included, are evaluated in memory and fetch from an in-memory store")
    func inMemoryPredicates() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try Self.placeModel(in: directory)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory, at: nil)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            for (name, city, lat) in [("a", "Lyon", 45.7), ("b", "Oslo", 59.9), ("c", "Lima", nil)] {
                let shop = try context.insertObject(forEntityName: "Shop")
                try shop.setValue(name, forKey: "name")
                try shop.setAttributeValue(Self.place(city, lat: lat), forKey: "address")
            }
            let lyon = try #require(try context.fetch(FetchRequest(entityName: "Shop", predicate: FetchPredicate(format: "name == 'a'"))).first)
            #expect(try FetchPredicate(format: "address.city == 'Lyon'").evaluate(with: lyon))
            #expect(try FetchPredicate(format: "address.geo.lat > 40").evaluate(with: lyon))
            #expect(try !FetchPredicate(format: "address.city == 'Oslo'").evaluate(with: lyon))
            #expect((lyon.value(forKey: "address") as? [String: Any])?["city"] as? String == "Lyon")
            try context.save()
            func names(_ format: String, sort: [FetchSortDescriptor] = [FetchSortDescriptor("name")]) throws -> [String] {
                try context.fetch(FetchRequest(entityName: "Shop", predicate: FetchPredicate(format: format), sortDescriptors: sort))
                    .map { $0.value(forKey: "name") as? String ?? "?" }
            }
            #expect(try names("address.city BEGINSWITH 'L'") == ["a", "c"])
            #expect(try names("address.geo.lat > 50") == ["b"])
            #expect(try names("address.geo.lat == nil") == ["c"])
            #expect(try names("address.city != nil", sort: [FetchSortDescriptor("address.geo.lat", ascending: false)]) == ["b", "a", "c"])
        }
    }

    @Test("a predicate on a composite key path is refused by the SQLite compiler, saying why")
    func sqlRefusesCompositeKeyPath() throws {
        let model = try ManagedObjectModel(contentsOf: Self.momXML)
        var compiler = SQLPredicateCompiler(model: model, schema: TableLayout(model: model), entity: "Produit")
        let error = #expect(throws: FetchPredicateError.self) {
            _ = try compiler.compile(FetchPredicate(format: "attribute1.one == 3"), sortDescriptors: [], entityNumbers: [3])
        }
        #expect("\(error.map { "\($0)" } ?? "")".contains("composite attribute 'attribute1' of Produit in a SQLite fetch"))
        #expect("\(error.map { "\($0)" } ?? "")".contains("not known from any Apple-written store"))
    }

    @Test("the JSON model form carries composites and composite attributes, and reads back equal")
    func jsonRoundTrip() throws {
        let model = try ManagedObjectModel(contentsOf: Self.momXML)
        let data = try model.jsonData()
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"composites\""))
        #expect(text.contains("\"composite\" : \"Composite1\""))
        let again = try ManagedObjectModel(jsonData: data)
        #expect(again.composites == model.composites)
        #expect(again.attribute("attribute1", of: "Produit") == model.attribute("attribute1", of: "Produit"))
        #expect(again.versionHashes == model.versionHashes)
    }

    @Test("a composite's elements are inputs of the version hash of entities with composite attributes only")
    func versionHashes() throws {
        let model = try ManagedObjectModel(contentsOf: Self.momXML)
        var composites = model.composites
        composites[0].elements[1].type = .uri
        let changed = try ManagedObjectModel(entities: model.entities, composites: composites)
        #expect(changed.versionHash(of: "Produit") != model.versionHash(of: "Produit"))
        #expect(changed.versionHash(of: "Client") == model.versionHash(of: "Client"))
    }

    @Test("composites that nest in themselves, elements Core Data refuses, and composite= on other types are model problems")
    func compositeRules() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Fixtures.writeXcodeModel("""
            <entity name="Shop">
                <attribute name="name" optional="YES" attributeType="String" composite="A"/>
                <attribute name="a" optional="YES" attributeType="Composite"/>
            </entity>
            <composite name="A">
                <attribute name="b" optional="YES" attributeType="Composite" composite="B"/>
                <attribute name="any" optional="YES" attributeType="Undefined"/>
            </composite>
            <composite name="B">
                <attribute name="a" optional="YES" attributeType="Composite" composite="A"/>
            </composite>
            """, in: directory)
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: url) }
        let messages = error?.problems.map(\.description) ?? []
        #expect(messages.contains { $0.contains(":4: entity 'Shop', property 'name': composite=\"A\" on a String attribute") })
        #expect(messages.contains { $0.contains(":5: entity 'Shop', property 'a': a Composite attribute must name its composite") })
        #expect(messages.contains { $0.contains(":9: property 'A.any': Core Data does not take Undefined as a composite's element") })
        #expect(messages.contains { $0.contains(":7: composite 'A' holds itself (A → B → A)") })
    }

    @Test("composites chained past 64 levels are refused, in one pass however long the chain")
    func nestingBound() throws {
        func chain(_ count: Int) -> [CompositeDescription] {
            (0..<count).map { level in
                var next = AttributeDescription(name: "next", type: level == count - 1 ? .string : .composite)
                if level < count - 1 { next.compositeName = "C\(level + 1)" }
                return CompositeDescription(name: "C\(level)", elements: [next])
            }
        }
        var top = AttributeDescription(name: "top", type: .composite)
        top.compositeName = "C0"
        let entity = EntityDescription(name: "Shop", attributes: [top])
        _ = try ManagedObjectModel(entities: [entity], composites: chain(CompositeRules.maximumNesting))
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel(entities: [entity], composites: chain(CompositeRules.maximumNesting + 1)) }
        #expect(error?.description.contains("composites nest more than 64 levels deep from composite 'C0'") == true)
        let start = Date()
        #expect(throws: ModelError.self) { try ManagedObjectModel(entities: [entity], composites: chain(100_000)) }
        #expect(Date().timeIntervalSince(start) < 10)
    }

    @Test("a save checks a composite value element by element: unknown elements, wrong types, required elements, element rules")
    func elementValidation() throws {
        var address = AttributeDescription(name: "address", type: .composite)
        address.compositeName = "Place"
        var zip = AttributeDescription(name: "zip", type: .string, regularExpression: "[0-9]{5}")
        zip.isOptional = true
        let place = CompositeDescription(name: "Place", elements: [AttributeDescription(name: "city", type: .string, isOptional: false), zip])
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Shop", attributes: [address])], composites: [place])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory, at: nil)
        func saving(_ value: AttributeValue) throws -> ObjectValidationError? {
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            return try context.performAndWait {
                let shop = try context.insertObject(forEntityName: "Shop")
                try shop.setAttributeValue(value, forKey: "address")
                do { try context.save() } catch let error as ObjectValidationError { return error }
                return nil
            }
        }
        #expect(try saving(.composite(["city": .string("Lyon"), "zip": .string("69001")])) == nil)
        let unknown = try saving(.composite(["city": .string("Lyon"), "town": .string("x")]))
        #expect(unknown?.failures.first?.rule == .compositeElement)
        #expect("\(unknown.map { "\($0)" } ?? "")".contains("has element 'town', which composite 'Place' does not have (it has city, zip)"))
        let wrongType = try saving(.composite(["city": .integer(3)]))
        #expect("\(wrongType.map { "\($0)" } ?? "")".contains("element 'city' holds 3, not a String value"))
        let missing = try saving(.composite(["zip": .string("69001")]))
        #expect(missing?.failures.first?.rule == .required)
        #expect("\(missing.map { "\($0)" } ?? "")".contains("element 'city' is required"))
        let pattern = try saving(.composite(["city": .string("Lyon"), "zip": .string("6900")]))
        #expect(pattern?.failures.first?.rule == .pattern)
    }
}
