import Foundation
import Testing
@testable import Lade
import LadeTestSupport
import LadeTestTraits

/// Every difference between `model` and what its Xcode `contents` (`xcodeModelContents()`)
/// reads back as, through `XcodeModelReader`, the reader of every `.xcdatamodel` Lade loads.
///
/// Three comparisons, each independent of the writer's own check: the canonical JSON model
/// (`jsonData()`, every field Lade models) of both, with entities, templates and
/// configurations in name order and version hashes aside; the field-by-field
/// `modelDifferences` (Apple's hashes aside: the XML has no place for them); and Lade's own
/// version hashes, computed from each. Writing the model read back gives the same bytes.
func xcodeRoundTripDifferences(_ model: ManagedObjectModel) throws -> [String] {
    let contents = try model.xcodeModelContents()
    let back = try XcodeModelReader.read(contents, file: "<contents>", versionName: model.versionName)
    var differences: [String] = []
    if try canonicalJSON(back) != canonicalJSON(model) { differences.append("the canonical JSON models differ") }
    differences += modelDifferences(compiled: back, source: model).filter { !$0.contains(": appleVersionHash: ") }
    if back.ladeVersionHashes(scheme: .current) != model.ladeVersionHashes(scheme: .current) {
        differences.append("Lade's version hashes differ")
    }
    if back.entities.contains(where: { $0.appleVersionHash != nil }) { differences.append("Apple's hashes read back from XML") }
    if try back.xcodeModelContents() != contents { differences.append("written again, the contents differ") }
    return differences
}

/// A model's JSON (`jsonData()`) with entities, fetch requests and configurations sorted by
/// name and each entity's version hash left out, re-encoded with sorted keys.
func canonicalJSON(_ model: ManagedObjectModel) throws -> Data {
    var document = try #require(try JSONSerialization.jsonObject(with: model.jsonData()) as? [String: Any])
    func sortedByName(_ key: String, _ transform: ([String: Any]) -> [String: Any] = { $0 }) {
        guard let items = document[key] as? [[String: Any]] else { return }
        document[key] = items.map(transform).sorted { ($0["name"] as? String ?? "").utf8.lexicographicallyPrecedes(($1["name"] as? String ?? "").utf8) }
    }
    sortedByName("entities") { entity in
        var entity = entity
        entity["versionHash"] = nil
        return entity
    }
    sortedByName("fetchRequests")
    sortedByName("configurations")
    return try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
}

@Suite("Writing a model as Xcode's contents (lade inspect --write-model)")
struct XcodeModelWriterTests {
    @Test("the sample models (Xcode, JSON, Xcode 15 composites) read back equal from the contents written")
    func samples() throws {
        let catalog = Fixtures.catalog
        for version in try ManagedObjectModel.versions(at: catalog).names {
            let model = try ManagedObjectModel(contentsOf: catalog, version: version)
            #expect(try xcodeRoundTripDifferences(model) == [], "Catalog \(version)")
        }
        for path in ["samples/Catalog.json", "Tests/Fixtures/MomXML/Model.xcdatamodeld"] {
            let model = try ManagedObjectModel(contentsOf: Fixtures.root.appendingPathComponent(path))
            #expect(try xcodeRoundTripDifferences(model) == [], "\(path)")
        }
    }

    @Test("the contents has Xcode's root, entities in name order and Xcode's spellings")
    func format() throws {
        let model = try ManagedObjectModel(
            entities: [
                EntityDescription(name: "Zebra", attributes: [AttributeDescription(name: "born", type: .date, isOptional: false, defaultValue: .date(Date(timeIntervalSinceReferenceDate: 12.5)))]),
                EntityDescription(name: "Ant", representedClassName: "Ant", attributes: [AttributeDescription(name: "legs", type: .integer16, defaultValue: .integer(6))],
                                  relationships: [RelationshipDescription(name: "zebra", destinationEntityName: "Zebra")]),
            ],
            versionIdentifiers: ["7"])
        let text = String(decoding: try model.xcodeModelContents(), as: UTF8.self)
        #expect(text == """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="7">
                <entity name="Ant" representedClassName="Ant">
                    <attribute name="legs" optional="YES" attributeType="Integer 16" defaultValueString="6"/>
                    <relationship name="zebra" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Zebra"/>
                </entity>
                <entity name="Zebra">
                    <attribute name="born" attributeType="Date" defaultDateTimeInterval="12.5"/>
                </entity>
            </model>

            """)
    }

    @Test("everything Lade models reads back: derived attributes, composites, indexes, templates, configurations, userInfo, bounds")
    func everything() throws {
        var address = CompositeDescription(name: "Address", elements: [
            AttributeDescription(name: "street", type: .string, isOptional: false, defaultValue: .string("  main st. "), regularExpression: "[A-Z].*"),
            AttributeDescription(name: "zip", type: .integer32, minValue: .integer(0), maxValue: .integer(99_999)),
        ])
        address.elements.append({ var geo = AttributeDescription(name: "geo", type: .composite); geo.compositeName = "Geo"; return geo }())
        let geo = CompositeDescription(name: "Geo", elements: [AttributeDescription(name: "lat", type: .double), AttributeDescription(name: "lon", type: .double)])
        var home = AttributeDescription(name: "home", type: .composite)
        home.compositeName = "Address"
        var item = EntityDescription(
            name: "Item", isAbstract: true, representedClassName: "ItemMO", renamingIdentifier: "OldItem", versionHashModifier: "v2",
            attributes: [
                AttributeDescription(name: "title", type: .string, isOptional: false, defaultValue: .string("untitled"),
                                     minValue: .integer(1), maxValue: .integer(80), regularExpression: "^[^\\t]+$",
                                     renamingIdentifier: "name", versionHashModifier: "m", userInfo: ["key": "value", "a": "b"]),
                AttributeDescription(name: "price", type: .decimal, defaultValue: .decimal(Decimal(string: "19.990")!),
                                     minValue: .decimal(0), maxValue: .decimal(Decimal(string: "1000000.01")!)),
                AttributeDescription(name: "ratio", type: .float, defaultValue: .float(0.1), minValue: .float(-1.5), maxValue: .float(1e30)),
                AttributeDescription(name: "weight", type: .double, defaultValue: .double(1e-300), maxValue: .double(1.7976931348623157e308)),
                AttributeDescription(name: "made", type: .date, defaultValue: .date(Date(timeIntervalSinceReferenceDate: -978_307_200.125)),
                                     minValue: .date(Date(timeIntervalSinceReferenceDate: -1e9)), maxValue: .date(Date(timeIntervalSinceReferenceDate: 1e9))),
                AttributeDescription(name: "active", type: .boolean, isOptional: false, defaultValue: .bool(true)),
                AttributeDescription(name: "key", type: .uuid, defaultValue: .uuid(UUID(uuidString: "7F3C1C2E-9A4B-4B8E-9A0D-2F6E1B9D4C11")!), isIndexed: true),
                AttributeDescription(name: "link", type: .uri, defaultValue: .uri(URL(string: "https://example.com/a?b=c&d=%22e%22")!)),
                AttributeDescription(name: "blob", type: .binary, defaultValue: .binary(Data([0, 1, 2, 255])), minValue: .integer(0), maxValue: .integer(1 << 20),
                                     allowsExternalBinaryDataStorage: true, preservesValueInHistoryOnDeletion: true),
                AttributeDescription(name: "colour", type: .transformable, valueTransformerName: "NSSecureUnarchiveFromData", customClassName: "UIColor"),
                AttributeDescription(name: "scratch", type: .undefined, isTransient: true),
                AttributeDescription(name: "sixteen", type: .integer16, defaultValue: .integer(-32768), minValue: .integer(-32768), maxValue: .integer(32767)),
                AttributeDescription(name: "sixtyFour", type: .integer64, defaultValue: .integer(.min), maxValue: .integer(.max)),
                AttributeDescription(name: "titleLower", type: .string, derivationExpression: "lowercase:(title)"),
                AttributeDescription(name: "partCount", type: .integer64, derivationExpression: "parts.@count"),
                home,
            ],
            relationships: [
                RelationshipDescription(name: "parts", destinationEntityName: "Part", inverseName: "item", isToMany: true, isOrdered: true,
                                        minCount: 1, maxCount: 12, deleteRule: .cascade, userInfo: ["note": "line one\nline two\ttab\r"]),
                RelationshipDescription(name: "related", destinationEntityName: "Item", isToMany: true, deleteRule: .noAction, isIndexed: true,
                                        renamingIdentifier: "similar", versionHashModifier: "r"),
            ],
            fetchedProperties: [FetchedPropertyDescription(
                name: "cheaperParts", isOptional: true,
                fetchRequest: FetchRequestTemplate(name: "fetchedPropertyFetchRequest", entityName: "Part", predicateString: "cost < $FETCH_SOURCE.price AND name != \"<none>\""),
                userInfo: ["why": "a & b"])],
            uniquenessConstraints: [["title"], ["title", "key"]],
            fetchIndexes: [
                FetchIndexDescription(name: "byTitle", elements: [FetchIndexElement(propertyName: "title"), FetchIndexElement(propertyName: "made", isAscending: false)]),
                FetchIndexDescription(name: "byExpression", elements: [FetchIndexElement(propertyName: nil, expression: "title.length", kind: "Binary")]),
            ],
            compoundIndexes: [["title", "made"]],
            userInfo: ["owner": "catalogue team"])
        item.userInfo["quotes"] = "\"'<>&"
        let part = EntityDescription(
            name: "Part", parentName: nil,
            attributes: [AttributeDescription(name: "cost", type: .double), AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "item", destinationEntityName: "Item", inverseName: "parts", isOptional: false, deleteRule: .deny)])
        let book = EntityDescription(name: "Book", parentName: "Item", attributes: [AttributeDescription(name: "isbn", type: .string)])
        let model = try ManagedObjectModel(
            entities: [item, part, book],
            fetchRequestTemplates: [
                FetchRequestTemplate(name: "recent", entityName: "Item", predicateString: "made > $SINCE", fetchLimit: 10, fetchBatchSize: 20,
                                     resultType: "NSDictionaryResultType", includesSubentities: false, includesPendingChanges: true,
                                     returnsObjectsAsFaults: false, returnsDistinctResults: true),
                FetchRequestTemplate(name: "all", entityName: "Part"),
            ],
            configurations: [ModelConfiguration(name: "Cloud", entityNames: ["Part", "Item"], isUsedWithCloudKit: true),
                             ModelConfiguration(name: "Empty", entityNames: [])],
            versionName: "Shop 2", versionIdentifiers: ["2.0 <beta>"], composites: [address, geo])
        #expect(try xcodeRoundTripDifferences(model) == [])
    }

    @Test("hostile names and values are escaped, and read back as they were")
    func hostileNames() throws {
        let hostile = "Evil\"/><entity name=\"Injected\"><!-- &amp; ]]> \u{1F600} é"
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "E", representedClassName: hostile, versionHashModifier: "\n\t\r ",
                              attributes: [AttributeDescription(name: "a", type: .string, defaultValue: .string(hostile), regularExpression: "<[^>]*>&\"'")],
                              userInfo: [hostile: hostile, "": "", " spaced ": "  "]),
        ], fetchRequestTemplates: [FetchRequestTemplate(name: hostile, entityName: "E", predicateString: "a == \"</model>\"")],
            versionIdentifiers: ["'\"<&>"])
        let contents = try model.xcodeModelContents()
        let back = try XcodeModelReader.read(contents, file: "<contents>", versionName: nil)
        #expect(back.entityNames == ["E"])
        #expect(back.entity(named: "E")?.representedClassName == hostile)
        #expect(back.entity(named: "E")?.versionHashModifier == "\n\t\r ")
        #expect(back.fetchRequestTemplates.map(\.name) == [hostile])
        #expect(try xcodeRoundTripDifferences(model) == [])
    }

    @Test("a character XML 1.0 cannot hold is refused, naming where it is; nothing is dropped")
    func controlCharacters() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "E", attributes: [AttributeDescription(name: "a", type: .string, defaultValue: .string("bell\u{7}"))]),
        ])
        let error = try #require(throws: ModelError.self) { try model.xcodeModelContents() }
        #expect(error.problems.count == 1)
        #expect(error.problems.first?.entity == "E")
        #expect(error.problems.first?.property == "a")
        #expect(error.description.contains("defaultValueString"))
    }

    @Test("two version identifiers are refused: Xcode's model keeps one")
    func versionIdentifiers() throws {
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "E")], versionIdentifiers: ["1", "2"])
        #expect(throws: ModelError.self) { try model.xcodeModelContents() }
    }

    @Test("Apple's version hashes are left out; the rest of a compiled model reads back", .needsCorpus)
    func appleHashes() throws {
        let mom = Corpus.file("alemar11/CoreDataPlus/Tests/Resources/SampleModel3/Fixtures/SampleModel3.momd/SampleModel3_v2.mom")
        let model = try ManagedObjectModel(contentsOf: mom)
        #expect(model.hasAppleVersionHashes)
        let back = try XcodeModelReader.read(try model.xcodeModelContents(), file: "<contents>", versionName: model.versionName)
        #expect(!back.entities.contains { $0.appleVersionHash != nil })
        #expect(back.versionHashes == back.ladeVersionHashes(scheme: .current))
    }
}

@Suite("Every corpus model and store cache reads back from the Xcode contents written", .needsCorpus)
struct XcodeModelWriterCorpusTests {
    /// Every file or folder under the corpus whose name ends in `.extension`, sorted by path.
    static func corpusItems(_ pathExtension: String) -> [URL] {
        guard let walker = FileManager.default.enumerator(at: Corpus.root, includingPropertiesForKeys: nil) else { return [] }
        var found: [URL] = []
        for case let url as URL in walker where url.pathExtension == pathExtension && !url.path.contains("/expected/") {
            found.append(url)
        }
        return found.sorted { $0.path < $1.path }
    }

    static func name(_ url: URL) -> String { url.path.replacingOccurrences(of: Corpus.root.path + "/", with: "") }

    /// Round-trips each model `load` gives for `items`; returns how many did, and those Lade does not read.
    static func roundTrip(_ items: [URL], _ what: String, load: (URL) throws -> ManagedObjectModel?) -> (Int, [String]) {
        var roundTripped = 0, notRead: [String] = []
        for item in items {
            let model: ManagedObjectModel
            do {
                guard let loaded = try load(item) else { notRead.append("\(name(item)): no model"); continue }
                model = loaded
            } catch {
                notRead.append("\(name(item)): \(error)")
                continue
            }
            do {
                let differences = try xcodeRoundTripDifferences(model)
                #expect(differences == [], "\(what) \(name(item))")
                if differences.isEmpty { roundTripped += 1 }
            } catch {
                Issue.record("\(what) \(name(item)): \(error)")
            }
        }
        print("xcode contents round trip: \(roundTripped) of \(items.count) corpus \(what) round-tripped; \(notRead.count) not read by Lade")
        for line in notRead { print("  not read: \(line)") }
        return (roundTripped, notRead)
    }

    @Test("every .xcdatamodel version Lade reads")
    func modelVersions() {
        let (count, notRead) = Self.roundTrip(Corpus.modelDirectories(), ".xcdatamodel versions") { try ManagedObjectModel(contentsOf: $0) }
        #expect(count > 40)
        // Legacy Xcode 3 models (a binary 'elements' file) are the only ones Lade does not read.
        #expect(notRead.allSatisfy { $0.contains("legacy Xcode 3") }, "\(notRead)")
    }

    @Test("every .xcdatamodeld bundle's current version")
    func bundles() {
        let (count, notRead) = Self.roundTrip(Self.corpusItems("xcdatamodeld"), ".xcdatamodeld bundles") { try ManagedObjectModel(contentsOf: $0) }
        #expect(count > 20)
        #expect(notRead.allSatisfy { $0.contains("legacy Xcode 3") }, "\(notRead)")
    }

    @Test("every compiled .mom and .momd, with Apple's hashes from VersionInfo.plist")
    func compiled() {
        let moms = Self.corpusItems("mom"), momds = Self.corpusItems("momd")
        let (count, notRead) = Self.roundTrip(moms + momds, "compiled models (.mom, .momd)") { try ManagedObjectModel(contentsOf: $0) }
        #expect(count == moms.count + momds.count, "\(notRead)")
        #expect(count >= 8)
    }

    @Test("every SQLite store's model cache (Z_MODELCACHE)")
    func storeCaches() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = Self.corpusItems("sqlite")
        let (count, notRead) = Self.roundTrip(stores, "SQLite store caches") { store in
            let place = directory.appendingPathComponent(UUID().uuidString, isDirectory: true)
            try FileManager.default.createDirectory(at: place, withIntermediateDirectories: true)
            let copy = try copyCorpusStore(Self.name(store), to: place)
            return try ManagedObjectModel.modelCache(ofStoreAt: copy)
        }
        // Stores from before iOS 11 and macOS 10.13 (the Recipes samples) have no cache.
        #expect(count >= 6, "\(notRead)")
        #expect(notRead.allSatisfy { $0.hasSuffix(": no model") }, "\(notRead)")
    }
}

@Suite("Writing an Xcode model folder")
struct XcodeModelFolderTests {
    static let model = try! ManagedObjectModel(entities: [EntityDescription(name: "E", attributes: [AttributeDescription(name: "a", type: .string)])])

    @Test("a new folder holds one contents file; nothing temporary is left beside it")
    func newFolder() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let folder = directory.appendingPathComponent("M.xcdatamodel")
        let file = try XcodeModelFolder.write(Self.model, to: folder, overwrite: false, role: "--write-model", reads: [])
        #expect(file.lastPathComponent == "contents")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["contents"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["M.xcdatamodel"])
        #expect(try ManagedObjectModel(contentsOf: folder).entityNames == ["E"])
    }

    @Test("a model that cannot be written leaves no folder and nothing temporary")
    func refusedModel() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "E", userInfo: ["k": "\u{0}"])])
        #expect(throws: ModelError.self) {
            try XcodeModelFolder.write(model, to: directory.appendingPathComponent("M.xcdatamodel"), overwrite: false, role: "--write-model", reads: [])
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
    }

    @Test("a path already there is refused unless overwrite, which replaces the contents file alone")
    func existingFolder() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let folder = directory.appendingPathComponent("M.xcdatamodel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        try Data("keep".utf8).write(to: folder.appendingPathComponent("other"))
        let error = try #require(throws: StoreError.self) {
            try XcodeModelFolder.write(Self.model, to: folder, overwrite: false, role: "--write-model", reads: [])
        }
        #expect(error.kind == .alreadyExists)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("contents").path))
        try XcodeModelFolder.write(Self.model, to: folder, overwrite: true, role: "--write-model", reads: [])
        #expect(try Data(contentsOf: folder.appendingPathComponent("contents")) == Self.model.xcodeModelContents())
        #expect(try Data(contentsOf: folder.appendingPathComponent("other")) == Data("keep".utf8))
        // Never over a file the run reads, even with overwrite.
        #expect(throws: StoreError.self) {
            try XcodeModelFolder.write(Self.model, to: folder, overwrite: true, role: "--write-model",
                                       reads: [OutputFile.Read(folder.appendingPathComponent("contents"), "the model")])
        }
    }

    @Test("random names and values of any Unicode either read back as they were or are refused by name (seeded)")
    func randomText() throws {
        var random = SeededGenerator(seed: 0x5EED_0043)
        let pieces: [String] = ["a", "&", "<", ">", "\"", "'", "]]>", "<!--", "\t", "\n", "\r", "\r\n", " ", "é", "e\u{301}",
                                "\u{1F600}", "\u{7F}", "\u{85}", "\u{2028}", "\u{FFFD}", "&amp;", "&#10;", "%", "$X"]
        // Characters XML 1.0 has no place for, one piece in 100.
        let unwritable: [String] = ["\u{0}", "\u{1}", "\u{B}", "\u{C}", "\u{1F}", "\u{FFFE}", "\u{FFFF}"]
        func text() -> String { (0..<random.int(1...6)).map { _ in random.chance(1) ? random.pick(unwritable) : random.pick(pieces) }.joined() }
        var readBack = 0, refused = 0
        for round in 0..<300 {
            var attribute = AttributeDescription(name: "a", type: .string, defaultValue: .string(text()), regularExpression: random.chance(30) ? text() : nil)
            attribute.userInfo = [text(): text()]
            let model = try ManagedObjectModel(
                entities: [EntityDescription(name: "E", representedClassName: text(), versionHashModifier: random.chance(50) ? text() : nil,
                                             attributes: [attribute], userInfo: [text(): text()])],
                fetchRequestTemplates: [FetchRequestTemplate(name: text(), entityName: "E", predicateString: text())],
                versionIdentifiers: [text()])
            do {
                #expect(try xcodeRoundTripDifferences(model) == [], "round \(round)")
                readBack += 1
            } catch let error as ModelError {
                #expect(error.problems.allSatisfy { $0.message.contains("XML 1.0 cannot hold") }, "round \(round): \(error)")
                refused += 1
            }
        }
        print("random text: \(readBack) models read back, \(refused) refused")
        #expect(readBack > 100 && refused > 10, "\(readBack) read back, \(refused) refused")
    }
}
