import Foundation
import Testing
@testable import Lade

@Suite("Loading models from Xcode's formats")
struct ModelLoadingTests {
    @Test("a .xcdatamodeld bundle loads its current version from .xccurrentversion")
    func bundleCurrentVersion() throws {
        let model = try ManagedObjectModel(contentsOf: Fixtures.catalog)
        #expect(model.versionName == "Catalog 2")
        #expect(model.versionIdentifiers == ["2"])
        #expect(Set(model.entityNames) == ["Category", "Image", "Media", "Product", "Supplier", "Video"])
    }

    @Test("--model-version picks another version, with or without the extension")
    func bundleOtherVersion() throws {
        let first = try ManagedObjectModel(contentsOf: Fixtures.catalog, version: "Catalog")
        #expect(first.versionName == "Catalog")
        #expect(first.entity(named: "Media") == nil)
        #expect(first.attribute("blurb", of: "Product") != nil)
        let again = try ManagedObjectModel(contentsOf: Fixtures.catalog, version: "Catalog.xcdatamodel")
        #expect(again == first)
    }

    @Test("all versions of a bundle are listed, numerically ordered, with the current one")
    func listsVersions() throws {
        let versions = try ManagedObjectModel.versions(at: Fixtures.catalog)
        #expect(versions.names == ["Catalog", "Catalog 2"])
        #expect(versions.current == "Catalog 2")
    }

    @Test("an unknown version is refused with the versions the bundle has")
    func unknownVersion() throws {
        let error = #expect(throws: ModelError.self) {
            try ManagedObjectModel(contentsOf: Fixtures.catalog, version: "Catalog 9")
        }
        #expect(error?.description.contains("no version 'Catalog 9'") == true)
        #expect(error?.description.contains("Catalog, Catalog 2") == true)
    }

    @Test("a .xcdatamodel directory and a bare contents file under any name load the same model")
    func directoryAndBareFile() throws {
        let directory = Fixtures.catalog.appendingPathComponent("Catalog 2.xcdatamodel")
        let fromDirectory = try ManagedObjectModel(contentsOf: directory)
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let bare = temp.appendingPathComponent("my-model.xml")
        try FileManager.default.copyItem(at: directory.appendingPathComponent("contents"), to: bare)
        let fromFile = try ManagedObjectModel(contentsOf: bare)
        #expect(fromFile.entities == fromDirectory.entities)
        #expect(fromFile.versionHashes == fromDirectory.versionHashes)
    }

    @Test("without a current version, the version named like the bundle is current; with none such, loading asks for one")
    func bundleWithoutCurrentVersion() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let entity = #"<entity name="A"><attribute name="x" optional="YES" attributeType="String"/></entity>"#
        let bundle = temp.appendingPathComponent("Shop.xcdatamodeld")
        _ = try Fixtures.writeXcodeModel(entity, in: bundle, name: "Shop")
        _ = try Fixtures.writeXcodeModel(entity, in: bundle, name: "Shop 2")
        try Data("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict/></plist>".utf8)
            .write(to: bundle.appendingPathComponent(".xccurrentversion"))
        #expect(try ManagedObjectModel(contentsOf: bundle).versionName == "Shop")
        try Data().write(to: bundle.appendingPathComponent(".xccurrentversion"))
        #expect(try ManagedObjectModel(contentsOf: bundle).versionName == "Shop")

        let other = temp.appendingPathComponent("Other.xcdatamodeld")
        _ = try Fixtures.writeXcodeModel(entity, in: other, name: "V1")
        _ = try Fixtures.writeXcodeModel(entity, in: other, name: "V2")
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: other) }
        #expect(error?.description.contains("--model-version") == true)
        #expect(try ManagedObjectModel(contentsOf: other, version: "V2").versionName == "V2")
    }

    @Test("a missing path, a damaged compiled .mom, an empty .momd and a non-model file are refused with what to give instead")
    func refusesNonModels() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: temp.appendingPathComponent("nope.xcdatamodeld")) }
        let mom = temp.appendingPathComponent("Model.mom")
        try Data("bplist00\u{0}\u{0}".utf8).write(to: mom)
        let momError = #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: mom) }
        #expect(momError?.description.contains("compiled") == true)
        let momd = temp.appendingPathComponent("Model.momd")
        try FileManager.default.createDirectory(at: momd, withIntermediateDirectories: true)
        for attempt in [{ _ = try ManagedObjectModel(contentsOf: momd) }, { _ = try ManagedObjectModel.versions(at: momd) }] as [() throws -> Void] {
            let error = #expect(throws: ModelError.self) { try attempt() }
            #expect(error?.description.contains("compiled model (.momd)") == true)
        }
        let text = temp.appendingPathComponent("notes.txt")
        try Data("hello".utf8).write(to: text)
        #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: text) }
    }

    @Test("a SQLite store given where a model is expected is named a store, with how Lade finds its model")
    func storeGivenAsModel() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = temp.appendingPathComponent("Catalog.sqlite")
        _ = try SQLiteStore.create(at: url, model: try ManagedObjectModel(contentsOf: Fixtures.catalog))
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: url) }
        let message = error?.description ?? ""
        #expect(message.hasPrefix(url.path + ": this is a SQLite store, not a model"), "\(message)")
        #expect(message.contains("Z_MODELCACHE") && message.contains("--model"), "\(message)")
        #expect(!message.contains("neither a Core Data model"), "\(message)")
        // Apple's XML store and Lade's binary store are named stores too.
        for (name, bytes) in [("Catalog.xml", Data("<?xml version=\"1.0\"?>\n<!DOCTYPE database SYSTEM \"file:///System/Library/DTDs/CoreData.dtd\">\n<database><databaseInfo/></database>\n".utf8)),
                              ("Catalog.binary", Data([0x89, 0x4C, 0x41, 0x44, 0x45, 0x0D, 0x0A, 0x1A, 0, 1]))] {
            let store = temp.appendingPathComponent(name)
            try bytes.write(to: store)
            let refusal = #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: store) }
            let text = refusal?.description ?? ""
            #expect(text.hasPrefix(store.path) && text.contains("store, not a model") && text.contains("--model"), "\(text)")
        }
    }

    @Test("malformed XML is reported with file, line and column")
    func malformedXML() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let file = temp.appendingPathComponent("contents")
        try Data("<?xml version=\"1.0\"?>\n<model>\n  <entity name=\"A\">\n</model>\n".utf8).write(to: file)
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: file) }
        let problem = try #require(error?.problems.first)
        #expect(problem.file == file.path)
        #expect(problem.line == 4)
        #expect(problem.message.contains("column"))
    }

    @Test("every element of the XML is read: attributes, relationships, constraints, indexes, templates, configurations, userInfo")
    func readsEverything() throws {
        let model = try ManagedObjectModel(contentsOf: Fixtures.catalog)
        let product = try #require(model.entity(named: "Product"))
        let sku = try #require(model.attribute("sku", of: "Product"))
        #expect(sku.type == .string && !sku.isOptional && sku.regularExpression == "[A-Z0-9][A-Z0-9-]{2,31}")
        let price = try #require(model.attribute("price", of: "Product"))
        #expect(price.type == .decimal && price.defaultValue == .decimal(0) && price.minValue == .decimal(0))
        #expect(model.attribute("details", of: "Product")?.renamingIdentifier == "blurb")
        #expect(model.attribute("thumbnail", of: "Product")?.allowsExternalBinaryDataStorage == true)
        #expect(model.attribute("name", of: "Category")?.maxValue == .integer(80))
        #expect(model.attribute("active", of: "Product")?.defaultValue == .bool(true))
        #expect(product.uniquenessConstraints == [["sku"]])
        #expect(product.fetchIndexes == [FetchIndexDescription(name: "byName", elements: [FetchIndexElement(propertyName: "name")])])
        #expect(product.userInfo == ["lade.importKey": "sku"])
        let media = try #require(model.relationship("media", of: "Product"))
        #expect(media.isToMany && media.isOrdered && media.deleteRule == .cascade && media.inverseName == "product")
        let category = try #require(model.relationship("category", of: "Product"))
        #expect(!category.isToMany && category.maxCount == 1 && category.destinationEntityName == "Category")
        #expect(Set(model.entities.flatMap(\.relationships).map(\.deleteRule)) == Set(DeleteRule.allCases))
        #expect(model.entity(named: "Media")?.isAbstract == true)
        #expect(model.subentities(of: "Media").map(\.name) == ["Image", "Video"])
        #expect(model.attributes(of: "Image").map(\.name) == ["caption", "url", "height", "width"])
        #expect(model.relationships(of: "Video").map(\.name) == ["product"])
        #expect(model.rootEntity(of: "Video")?.name == "Media")
        #expect(model.hierarchy(from: "Media").map(\.name) == ["Media", "Image", "Video"])
        let fetched = try #require(model.entity(named: "Category")?.fetchedProperties.first)
        #expect(fetched.name == "activeProducts" && fetched.fetchRequest.entityName == "Product")
        #expect(fetched.fetchRequest.predicateString == "category == $FETCH_SOURCE AND active == YES")
        #expect(model.fetchRequestTemplate(named: "lowStock")?.predicateString == "stock < $THRESHOLD AND active == YES")
        #expect(model.configuration(named: "Catalog")?.entityNames.count == 6)
    }

    @Test("Date defaults and bounds are read from Xcode's time-interval attributes")
    func dateIntervals() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try Fixtures.writeXcodeModel("""
            <entity name="Event">
                <attribute name="at" attributeType="Date" defaultDateTimeInterval="100.5" minDateTimeInterval="0" maxDateTimeInterval="1000"/>
            </entity>
            """, in: temp)
        let at = try #require(try ManagedObjectModel(contentsOf: url).attribute("at", of: "Event"))
        #expect(at.defaultValue == .date(Date(timeIntervalSinceReferenceDate: 100.5)))
        #expect(at.minValue == .date(Date(timeIntervalSinceReferenceDate: 0)))
        #expect(at.maxValue == .date(Date(timeIntervalSinceReferenceDate: 1000)))
    }
}
