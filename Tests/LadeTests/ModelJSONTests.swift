import Foundation
import Testing
@testable import Lade

@Suite("Lade's JSON model format")
struct ModelJSONTests {
    @Test("saving the sample model to JSON and loading it back gives an equal model")
    func sampleRoundTrip() throws {
        for version in ["Catalog", "Catalog 2"] {
            let model = try ManagedObjectModel(contentsOf: Fixtures.catalog, version: version)
            let again = try ManagedObjectModel(jsonData: try model.jsonData())
            #expect(again == model)
            #expect(try again.jsonData() == model.jsonData())
        }
    }

    @Test("a model carrying Apple's hashes keeps them through JSON", .needsCorpus)
    func appleHashesRoundTrip() throws {
        let base = Corpus.file("alemar11/CoreDataPlus/Tests/Resources/SampleModel")
        let model = try ManagedObjectModel(
            contentsOf: base.appendingPathComponent("SampleModel.xcdatamodeld"), version: "SampleModel2",
            compiledModel: base.appendingPathComponent("Fixtures/SampleModel.momd"))
        #expect(model.hasAppleVersionHashes)
        let again = try ManagedObjectModel(jsonData: try model.jsonData())
        #expect(again == model)
        #expect(again.versionHashes == model.versionHashes)
    }

    @Test("every corpus model survives the JSON round trip unchanged", .needsCorpus)
    func corpusRoundTrip() throws {
        var checked = 0
        for directory in Corpus.modelDirectories() where ModelLoader.contentsKind(of: directory) == .contents {
            let model = try ManagedObjectModel(contentsOf: directory)
            let again = try ManagedObjectModel(jsonData: try model.jsonData(), file: directory.path)
            #expect(again == model, "\(directory.path)")
            checked += 1
        }
        #expect(checked > 0)
    }

    @Test("a hand-written model may leave out every key at its default")
    func minimalModel() throws {
        let json = """
            {"entities": [
              {"name": "Item", "attributes": [
                 {"name": "price", "type": "Decimal", "default": "0.10", "min": 0},
                 {"name": "seen", "type": "Date", "default": "2001-01-01T00:00:10Z"},
                 {"name": "count", "type": "Integer 16", "default": 3, "optional": false}],
               "relationships": [{"name": "tags", "destination": "Tag", "toMany": true, "inverse": "items"}]},
              {"name": "Tag", "relationships": [{"name": "items", "destination": "Item", "toMany": true, "inverse": "tags"}]}
            ]}
            """
        let model = try ManagedObjectModel(jsonData: Data(json.utf8))
        let price = try #require(model.attribute("price", of: "Item"))
        #expect(price.isOptional && price.defaultValue == .decimal(Decimal(string: "0.10")!) && price.minValue == .decimal(0))
        #expect(model.attribute("seen", of: "Item")?.defaultValue == .date(Date(timeIntervalSinceReferenceDate: 10)))
        #expect(model.attribute("count", of: "Item")?.isOptional == false)
        let tags = try #require(model.relationship("tags", of: "Item"))
        #expect(tags.isToMany && tags.maxCount == 0 && tags.deleteRule == .nullify && tags.isOptional)
    }

    @Test("a JSON mistake is reported with the file and its JSON path")
    func errorsNameThePath() throws {
        let json = #"{"entities": [{"name": "A", "attributes": [{"name": "x", "type": "Money"}]}]}"#
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel(jsonData: Data(json.utf8), file: "m.json") }
        let text = error?.description ?? ""
        #expect(text.hasPrefix("m.json: entities[0].attributes[0].type: unknown attribute type 'Money'"), "\(text)")
        let bad = #expect(throws: ModelError.self) { try ManagedObjectModel(jsonData: Data("{\"entities\": [".utf8), file: "m.json") }
        #expect(bad?.description.contains("not valid JSON") == true)
        let badDefault = #"{"entities": [{"name": "A", "attributes": [{"name": "n", "type": "Integer 16", "default": "lots"}]}]}"#
        let defaultError = #expect(throws: ModelError.self) { try ManagedObjectModel(jsonData: Data(badDefault.utf8), file: "m.json") }
        #expect(defaultError?.description.contains("entities[0].attributes[0].default: 'lots' is not a valid Integer 16 value") == true)
    }

    @Test("rule violations in a JSON model are reported like those of an XML one")
    func rulesApply() throws {
        let json = #"{"entities": [{"name": "A", "relationships": [{"name": "b", "destination": "B"}]}]}"#
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel(jsonData: Data(json.utf8), file: "m.json") }
        #expect(error?.description == "m.json: entity 'A', property 'b': destination entity 'B' is not in the model")
    }

    @Test("a misspelt key, a number for a String, an over-long Decimal number and an unknown hash source are refused")
    func strictness() throws {
        func problem(_ json: String) -> String {
            do {
                _ = try ManagedObjectModel(jsonData: Data(json.utf8), file: "m.json")
                return "loaded"
            } catch {
                return "\(error)"
            }
        }
        #expect(problem(#"{"entities": [{"name": "A", "attributes": [{"name": "x", "type": "String", "optinal": false}]}]}"#)
            .contains("entities[0].attributes[0].optinal: unknown key 'optinal'"))
        #expect(problem(#"{"entities": [{"name": "A", "attributes": [{"name": "x", "type": "String", "default": 12}]}]}"#)
            .contains("a String value is written as a JSON string"))
        #expect(problem(#"{"entities": [{"name": "A", "attributes": [{"name": "x", "type": "Decimal", "default": 12345678901234567.89}]}]}"#)
            .contains("write this Decimal as a string"))
        #expect(problem(#"{"entities": [{"name": "A", "attributes": [{"name": "x", "type": "Decimal", "default": 0.25}]}]}"#) == "loaded")
        #expect(problem(#"{"entities": [{"name": "A", "versionHash": {"base64": "", "source": "Apple"}}]}"#)
            .contains("versionHash source is 'apple' or 'lade'"))
        #expect(problem(#"{"entitys": []}"#).contains("unknown key 'entitys'"))
    }
}
