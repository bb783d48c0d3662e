import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
@testable import Lade

/// An XML store file as an independent parser (Foundation's `XMLDocument`, a DOM, not the
/// stream reader the store uses) sees it.
struct RawXMLStore {
    struct Object: Equatable {
        var type: String
        var attributes: [String: (type: String, text: String)]
        var relationships: [String: (type: String, destination: String, ids: [String])]

        static func == (a: Object, b: Object) -> Bool {
            a.type == b.type
                && a.attributes.mapValues { [$0.type, $0.text] } == b.attributes.mapValues { [$0.type, $0.text] }
                && a.relationships.mapValues { [$0.type, $0.destination] + $0.ids } == b.relationships.mapValues { [$0.type, $0.destination] + $0.ids }
        }
    }

    var uuid: String
    var nextObjectID: Int64
    var plist: [String: PropertyListValue]
    var objects: [String: Object] = [:]
    var order: [String] = []

    init(_ url: URL) throws {
        let document = try XMLDocument(contentsOf: url, options: [])
        let root = try #require(document.rootElement())
        #expect(root.name == "database")
        let info = try #require(root.elements(forName: "databaseInfo").first)
        uuid = info.elements(forName: "UUID").first?.stringValue ?? ""
        nextObjectID = Int64(info.elements(forName: "nextObjectID").first?.stringValue ?? "") ?? 0
        #expect(info.elements(forName: "version").first?.stringValue == "134481920")
        if let element = info.elements(forName: "metadata").first?.elements(forName: "plist").first {
            plist = try #require(try PropertyListValue.decode(Data(element.xmlString.utf8)).dictionaryValue)
        } else {
            plist = [:]
        }
        for element in root.elements(forName: "object") {
            let id = try #require(element.attribute(forName: "id")?.stringValue)
            var object = Object(type: element.attribute(forName: "type")?.stringValue ?? "", attributes: [:], relationships: [:])
            for attribute in element.elements(forName: "attribute") {
                object.attributes[attribute.attribute(forName: "name")!.stringValue!.lowercased()] =
                    (attribute.attribute(forName: "type")?.stringValue ?? "", attribute.stringValue ?? "")
            }
            for relationship in element.elements(forName: "relationship") {
                object.relationships[relationship.attribute(forName: "name")!.stringValue!.lowercased()] = (
                    relationship.attribute(forName: "type")?.stringValue ?? "",
                    relationship.attribute(forName: "destination")?.stringValue ?? "",
                    (relationship.attribute(forName: "idrefs")?.stringValue ?? "").split(separator: " ").map(String.init))
            }
            objects[id] = object
            order.append(id)
        }
    }

    static let attributeTypes: [String: AttributeType] = [
        "int16": .integer16, "int32": .integer32, "int64": .integer64, "decimal": .decimal, "double": .double,
        "float": .float, "string": .string, "bool": .boolean, "date": .date, "binary": .binary,
        "transformable": .transformable, "uuid": .uuid, "uri": .uri,
    ]

    /// A model that fits the file: an entity per object type (named as the metadata's version
    /// hashes name it, with those hashes), an attribute per attribute seen, a relationship per
    /// relationship seen (to-many unless its type is `n/1`). The real model of these files is
    /// not in the corpus (Xcode's own mapping-model schema; an app's document schema).
    func inferredModel() throws -> ManagedObjectModel {
        let hashes = StoreMetadata.versionHashes(in: plist)
        var names: [String: String] = [:]
        for name in hashes.keys { names[name.uppercased()] = name }
        for object in objects.values {
            if names[object.type] == nil { names[object.type] = object.type }
            for relationship in object.relationships.values where names[relationship.destination] == nil {
                names[relationship.destination] = relationship.destination
            }
        }
        var entities: [String: EntityDescription] = [:]
        for (_, name) in names { entities[name] = EntityDescription(name: name, appleVersionHash: hashes[name]) }
        for object in objects.values {
            let name = names[object.type]!
            for (attribute, value) in object.attributes where !entities[name]!.attributes.contains(where: { $0.name == attribute }) {
                entities[name]!.attributes.append(AttributeDescription(name: attribute, type: try #require(Self.attributeTypes[value.type])))
            }
            for (relationship, value) in object.relationships where !entities[name]!.relationships.contains(where: { $0.name == relationship }) {
                let bounds = value.type.split(separator: "/").compactMap { Int($0) }
                let toMany = bounds.count != 2 || bounds[1] != 1
                entities[name]!.relationships.append(RelationshipDescription(
                    name: relationship, destinationEntityName: names[value.destination]!, isToMany: toMany,
                    isOptional: (bounds.first ?? 0) == 0, minCount: toMany ? (bounds.first ?? 0) : 0))
            }
        }
        return try ManagedObjectModel(entities: entities.values.sorted { $0.name < $1.name })
    }

    /// Whether two attribute texts of `type` stand for the same value.
    static func sameValue(_ a: String, _ b: String, type: String) -> Bool {
        let (x, y) = (a.trimmingCharacters(in: .whitespacesAndNewlines), b.trimmingCharacters(in: .whitespacesAndNewlines))
        switch type {
        case "string": return a == b
        case "int16", "int32", "int64": return Int64(x) != nil && Int64(x) == Int64(y)
        case "float": return Float(x) != nil && Float(x) == Float(y)
        case "double", "date": return Double(x) != nil && Double(x) == Double(y)
        case "decimal": return Decimal(string: x) == Decimal(string: y)
        case "bool": return x == y
        case "binary", "transformable":
            return Data(base64Encoded: x, options: .ignoreUnknownCharacters) == Data(base64Encoded: y, options: .ignoreUnknownCharacters)
        default: return x == y
        }
    }
}

@Suite("The XML stores Apple wrote", .needsCorpus)
struct XMLStoreCorpusTests {
    /// Every Core Data XML store in the corpus: each `xcmapping.xml` (Xcode's mapping-model
    /// documents) and atomlib's `template.mslice`, from MANIFEST.jsonl.
    static let files: [String] = {
        guard let manifest = try? String(contentsOf: Corpus.file("MANIFEST.jsonl"), encoding: .utf8) else { return [] }
        return manifest.split(separator: "\n").compactMap { line -> String? in
            guard let entry = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let repo = entry["repo"] as? String, let path = entry["path"] as? String,
                  path.hasSuffix("xcmapping.xml") || entry["kind"] as? String == "xmlstores"
            else { return nil }
            return "\(repo)/\(path)"
        }.sorted()
    }()

    @Test("the corpus lists eleven XML stores")
    func corpusHasTheStores() {
        #expect(Self.files.count == 11)
    }

    @Test("each opens with all its objects and metadata, and written back keeps every object, value and relationship", arguments: files)
    func opensAndRoundTrips(file: String) throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = temp.appendingPathComponent("store.xml")
        try copyWritable(at: Corpus.file(file), to: url)
        let raw = try RawXMLStore(url)
        let model = try raw.inferredModel()

        // Opened through a coordinator, type detected: every object, every entity's count, the metadata.
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try #require(try coordinator.addPersistentStore(at: url, readOnly: true) as? XMLStore)
        #expect(store.type == "XML")
        #expect(store.objectCount == raw.objects.count)
        for entity in model.entities {
            let expected = raw.objects.values.filter { $0.type == entity.name.uppercased() }.count
            #expect(try store.count(StoreFetchRequest(entityName: entity.name, includesSubentities: false)) == expected, "\(entity.name)")
        }
        var metadata = store.metadata
        #expect(metadata.removeValue(forKey: "NSStoreUUID") == .string(raw.uuid))
        #expect(metadata.removeValue(forKey: "NSStoreType") == .string("XML"))
        #expect(metadata == raw.plist)
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: url) == store.metadata)

        // Every object's values, through a context: as many non-nil values as the file has.
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let (fetched, values, links) = try context.performAndWait {
            var fetched = 0, values = 0, links = 0
            for entity in model.entities {
                var request = FetchRequest(entityName: entity.name)
                request.includesSubentities = false
                for object in try context.fetch(request) {
                    fetched += 1
                    values += model.attributes(of: entity.name).filter { object.attributeValue(forKey: $0.name) != nil }.count
                    links += model.relationships(of: entity.name).map { $0.isToMany ? object.objects(forKey: $0.name).count : (object.object(forKey: $0.name) == nil ? 0 : 1) }.reduce(0, +)
                }
            }
            return (fetched, values, links)
        }
        #expect(fetched == raw.objects.count)
        #expect(values == raw.objects.values.map(\.attributes.count).reduce(0, +))
        #expect(links == raw.objects.values.flatMap(\.relationships.values).map(\.ids.count).reduce(0, +))

        // Written back (a save rewrites the whole file) and parsed again independently.
        let writable = try XMLStore(url: url, model: model)
        var rewrite = StoreSaveRequest()
        rewrite.metadata = writable.metadata
        try writable.save(rewrite)
        let again = try RawXMLStore(url)
        #expect(again.uuid == raw.uuid && again.plist == raw.plist)
        // Objects with IDs other than z<N> (hand-written ones) keep them, and take numbers after nextObjectID.
        let named = raw.objects.keys.filter { XMLStoreFile.zKey($0) == nil }.count
        #expect(again.nextObjectID == raw.nextObjectID + Int64(named))
        #expect(Set(again.objects.keys) == Set(raw.objects.keys))
        for (id, original) in raw.objects {
            let written = try #require(again.objects[id])
            #expect(written.type == original.type, "\(id)")
            #expect(Set(written.attributes.keys) == Set(original.attributes.keys), "\(id)")
            for (name, value) in original.attributes {
                #expect(RawXMLStore.sameValue(written.attributes[name]?.text ?? "", value.text, type: value.type), "\(id).\(name)")
            }
            #expect(written.relationships.mapValues(\.ids) == original.relationships.mapValues(\.ids), "\(id)")
            #expect(written.relationships.mapValues(\.destination) == original.relationships.mapValues(\.destination), "\(id)")
        }
        #expect(try XMLStore(url: url, model: model, readOnly: true).objectCount == raw.objects.count)
        print("XML store \(file): \(raw.objects.count) objects, \(values) attribute values, \(links) relationship links, \(raw.plist.count) metadata keys; opened and written back intact")
    }
}
