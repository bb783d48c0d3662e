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
}
