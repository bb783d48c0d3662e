import Foundation
import Lade
import LadePipeline
import Testing

@Suite("The model report behind lade inspect")
struct ModelReportTests {
    func model(_ entities: [EntityDescription], templates: [FetchRequestTemplate] = []) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: entities, fetchRequestTemplates: templates, versionIdentifiers: ["7"])
    }

    @Test("attributes show type, optionality, default, bounds, pattern and transience")
    func attributes() throws {
        let item = EntityDescription(name: "Item", attributes: [
            AttributeDescription(name: "code", type: .string, isOptional: false, minValue: .integer(2), maxValue: .integer(8), regularExpression: "[A-Z]+"),
            AttributeDescription(name: "cached", type: .integer32, isTransient: true, defaultValue: .integer(4)),
        ])
        let text = ModelReport(model: try model([item]), source: "m.json").text()
        #expect(text.contains("code    String      required, min 2, max 8, regex /[A-Z]+/"), "\(text)")
        #expect(text.contains("cached  Integer 32  optional, transient, default 4"), "\(text)")
        #expect(text.contains("Version identifiers: \"7\""))
    }

    @Test("relationships show destination, cardinality, counts, inverse and delete rule")
    func relationships() throws {
        let box = EntityDescription(name: "Box", relationships: [
            RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "box", isToMany: true, isOrdered: true, minCount: 1, maxCount: 10, deleteRule: .cascade),
        ])
        let item = EntityDescription(name: "Item", relationships: [
            RelationshipDescription(name: "box", destinationEntityName: "Box", inverseName: "items", isOptional: false, deleteRule: .deny),
        ])
        let text = ModelReport(model: try model([box, item], templates: [FetchRequestTemplate(name: "full", entityName: "Box", predicateString: "items.@count == 10", fetchLimit: 5)]), source: "m").text()
        #expect(text.contains("items  → Item  to-many ordered, optional, count 1...10, inverse box, delete Cascade"), "\(text)")
        #expect(text.contains("box  → Box  to-one, required, inverse items, delete Deny"), "\(text)")
        #expect(text.contains("full: Box where items.@count == 10, limit 5"))
    }

    @Test("the JSON report is the JSON model format, with every entity's version hash and its source")
    func json() throws {
        let built = try model([EntityDescription(name: "Item", attributes: [AttributeDescription(name: "a", type: .uuid)])])
        let json = try ModelReport(model: built, source: "m").json()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let entity = try #require((object["entities"] as? [[String: Any]])?.first)
        let hash = try #require(entity["versionHash"] as? [String: String])
        #expect(hash["source"] == "lade")
        #expect(hash["base64"] == built.versionHash(of: "Item")?.base64EncodedString())
        #expect(try ManagedObjectModel(jsonData: Data(json.utf8)) == built)
    }
}
