import Foundation
import Lade
@testable import LadePipeline
import Testing

/// A model with every attribute type and every kind of relationship an export writes: to-one
/// and to-many by unique key (Tag has a single-attribute uniqueness constraint), by URI
/// (Owner and Part have none), and an ordered to-many.
enum ExportFixture {
    static func model() throws -> ManagedObjectModel {
        let item = EntityDescription(
            name: "Item",
            attributes: [
                AttributeDescription(name: "i16", type: .integer16),
                AttributeDescription(name: "i32", type: .integer32),
                AttributeDescription(name: "i64", type: .integer64),
                AttributeDescription(name: "dec", type: .decimal),
                AttributeDescription(name: "dbl", type: .double),
                AttributeDescription(name: "flt", type: .float),
                AttributeDescription(name: "str", type: .string),
                AttributeDescription(name: "flag", type: .boolean),
                AttributeDescription(name: "when", type: .date),
                AttributeDescription(name: "blob", type: .binary),
                AttributeDescription(name: "uid", type: .uuid),
                AttributeDescription(name: "link", type: .uri),
                AttributeDescription(name: "xform", type: .transformable),
                AttributeDescription(name: "scratch", type: .string, isTransient: true),
            ],
            relationships: [
                RelationshipDescription(name: "tag", destinationEntityName: "Tag", inverseName: "tagged"),
                RelationshipDescription(name: "tags", destinationEntityName: "Tag", inverseName: "items", isToMany: true),
                RelationshipDescription(name: "owner", destinationEntityName: "Owner", inverseName: "items"),
                RelationshipDescription(name: "parts", destinationEntityName: "Part", inverseName: "item", isToMany: true, isOrdered: true),
            ])
        let tag = EntityDescription(
            name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [
                RelationshipDescription(name: "tagged", destinationEntityName: "Item", inverseName: "tag", isToMany: true),
                RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "tags", isToMany: true),
            ],
            uniquenessConstraints: [["name"]])
        let owner = EntityDescription(
            name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "owner", isToMany: true)])
        let part = EntityDescription(
            name: "Part", attributes: [AttributeDescription(name: "label", type: .string)],
            relationships: [RelationshipDescription(name: "item", destinationEntityName: "Item", inverseName: "parts")])
        return try ManagedObjectModel(entities: [item, owner, part, tag])
    }

    static let when = Date(timeIntervalSince1970: 1_704_164_645.123456)   // 2024-01-02T03:04:05.123456Z

    /// Fills a new store of `type` at `url`: tags a, b, c; one owner; parts inserted in the
    /// order first, second, third, and attached to the item as third, first, second; one item
    /// with every value set, one with none.
    static func fill(_ type: PersistentStoreCoordinator.StoreType, at url: URL) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try model())
        try coordinator.addPersistentStore(type: type, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            var tags: [ManagedObject] = []
            for name in ["a", "b", "c"] {
                let tag = try context.insertObject(forEntityName: "Tag")
                try tag.setAttributeValue(.string(name), forKey: "name")
                tags.append(tag)
            }
            let owner = try context.insertObject(forEntityName: "Owner")
            try owner.setAttributeValue(.string("Ann"), forKey: "name")
            var parts: [ManagedObject] = []
            for label in ["first", "second", "third"] {
                let part = try context.insertObject(forEntityName: "Part")
                try part.setAttributeValue(.string(label), forKey: "label")
                parts.append(part)
            }
            let full = try context.insertObject(forEntityName: "Item")
            let values: [String: AttributeValue] = [
                "i16": .integer(-7), "i32": .integer(70_000), "i64": .integer(9_007_199_254_740_993),
                "dec": .decimal(Decimal(string: "12345.678")!), "dbl": .double(0.1), "flt": .float(0.1),
                "str": .string("say \"hi\",\nbye"), "flag": .bool(true), "when": .date(when),
                "blob": .binary(Data([0, 1, 2, 255])), "uid": .uuid(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!),
                "link": .uri(URL(string: "https://example.com/a?b=c")!), "xform": .binary(Data("xf".utf8)),
                "scratch": .string("never stored"),
            ]
            for (key, value) in values { try full.setAttributeValue(value, forKey: key) }
            try full.setObject(tags[1], forKey: "tag")
            try full.add(tags[2], toKey: "tags")
            try full.add(tags[0], toKey: "tags")
            try full.setObject(owner, forKey: "owner")
            for index in [2, 0, 1] { try full.add(parts[index], toKey: "parts") }
            let empty = try context.insertObject(forEntityName: "Item")
            try empty.setAttributeValue(.string(""), forKey: "str")
            try context.save()
        }
    }

    /// One entity's export as text.
    static func export(_ store: PersistentStore, entity: String, format: StoreExporter.Format, batchSize: Int = 1000) throws -> String {
        var text = ""
        try StoreExporter(store: store, batchSize: batchSize).export(entity: entity, format: format) { text += $0 }
        return text
    }
}

@Suite("export values and records")
struct StoreExportTests {
    @Test("doubles and floats are written in their shortest exact text")
    func numbers() {
        #expect(ExportText.json(.double(0.1)) == "0.1")
        #expect(ExportText.json(.double(1.0)) == "1.0")
        #expect(ExportText.json(.double(1e20)) == "1e+20")
        #expect(ExportText.json(.double(-2.5e-7)) == "-2.5e-07")
        #expect(ExportText.json(.float(0.1)) == "0.1")
        #expect(ExportText.json(.double(.nan)) == "\"NaN\"")
        #expect(ExportText.json(.double(-.infinity)) == "\"-Infinity\"")
        #expect(ExportText.json(.integer(Int64.min)) == "-9223372036854775808")
        #expect(Double(ExportText.text(.double(0.1 + 0.2))) == 0.1 + 0.2)
    }

    @Test("decimals are JSON strings of their exact text")
    func decimals() {
        #expect(ExportText.json(.decimal(Decimal(string: "922.160")!)) == "\"922.16\"")
        #expect(ExportText.json(.decimal(Decimal(string: "-0.000001")!)) == "\"-0.000001\"")
        #expect(ExportText.json(.decimal(Decimal(string: "12345678901234567890.5")!)) == "\"12345678901234567890.5\"")
    }

    @Test("dates are ISO 8601 UTC, exact to the microsecond, without needless digits")
    func dates() {
        #expect(ISO8601Date.format(Date(timeIntervalSince1970: 0), fractionalSeconds: true) == "1970-01-01T00:00:00Z")
        #expect(ISO8601Date.format(ExportFixture.when, fractionalSeconds: true) == "2024-01-02T03:04:05.123456Z")
        #expect(ISO8601Date.format(Date(timeIntervalSince1970: 1_704_164_645.5), fractionalSeconds: true) == "2024-01-02T03:04:05.5Z")
        #expect(ISO8601Date.format(Date(timeIntervalSince1970: -0.25), fractionalSeconds: true) == "1969-12-31T23:59:59.75Z")
        #expect(ISO8601Date.format(Date(timeIntervalSinceReferenceDate: 0), fractionalSeconds: true) == "2001-01-01T00:00:00Z")
        #expect(ISO8601Date.format(Date(timeIntervalSince1970: 951_782_400), fractionalSeconds: true) == "2000-02-29T00:00:00Z")
        #expect(ISO8601Date.format(Date(timeIntervalSince1970: -62_135_596_800), fractionalSeconds: true) == "0001-01-01T00:00:00Z")
        #expect(ISO8601Date.format(Date(timeIntervalSince1970: 253_402_300_799.5), fractionalSeconds: true) == "9999-12-31T23:59:59.5Z")
        #expect(ISO8601Date.format(Date(timeIntervalSinceReferenceDate: 0.000001), fractionalSeconds: true) == "2001-01-01T00:00:00.000001Z")
    }

    @Test("JSON strings escape quotes, backslashes and control characters only")
    func jsonStrings() {
        #expect(ExportText.jsonString("a\"b\\c\n\t\u{01}é/") == "\"a\\\"b\\\\c\\n\\t\\u0001é/\"")
    }

    @Test("CSV fields are quoted when RFC 4180 needs it, and an empty string differs from null")
    func csvFields() {
        #expect(RecordCell.value(.string("plain")).csv == "plain")
        #expect(RecordCell.value(.string("a,b")).csv == "\"a,b\"")
        #expect(RecordCell.value(.string("say \"hi\"")).csv == "\"say \"\"hi\"\"\"")
        #expect(RecordCell.value(.string("")).csv == "\"\"")
        #expect(RecordCell.null.csv == "")
        #expect(RecordCell.list([.value(.string("a")), .null]).csv == "\"[\"\"a\"\",null]\"")
    }

    @Test("a relationship is written by the destination's single-attribute unique key, else by URI")
    func uniqueKeys() throws {
        let model = try ExportFixture.model()
        let columns = try RecordColumns(model: model, entity: "Item")
        #expect(columns.names == ["_uri", "i16", "i32", "i64", "dec", "dbl", "flt", "str", "flag", "when", "blob", "uid", "link", "xform", "tag", "tags", "owner", "parts"])
        #expect(columns.columns.contains(.relationship("tag", isToMany: false, isOrdered: false, key: "name")))
        #expect(columns.columns.contains(.relationship("owner", isToMany: false, isOrdered: false, key: nil)))
        #expect(columns.columns.contains(.relationship("parts", isToMany: true, isOrdered: true, key: nil)))
    }

    @Test("every value, key and URI of a record is written exactly", arguments: [PersistentStoreCoordinator.StoreType.sqlite, .xml, .binary])
    func records(type: PersistentStoreCoordinator.StoreType) throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("items.store")
        try ExportFixture.fill(type, at: url)
        let store = try ReadOnlyStore.open(url, model: try ExportFixture.model())
        let uuid = store.identifier
        func uri(_ entity: String, _ key: Int64) throws -> String {
            try #require(try store.fetch(StoreFetchRequest(entityName: entity)).first { $0.objectID.primaryKey == key }).objectID.uriRepresentation().absoluteString
        }
        let parts = try store.fetch(StoreFetchRequest(entityName: "Part", sortDescriptors: [FetchSortDescriptor("label")]))
        let partURI = Dictionary(uniqueKeysWithValues: parts.map { ($0.attributes["label"]!.canonicalText, $0.objectID.uriRepresentation().absoluteString) })
        let owner = try #require(try store.fetch(StoreFetchRequest(entityName: "Owner")).first).objectID
        let items = try store.fetch(StoreFetchRequest(entityName: "Item")).sorted { $0.objectID.primaryKey! < $1.objectID.primaryKey! }
        #expect(items.count == 2)
        let fullURI = items[0].objectID.uriRepresentation().absoluteString
        #expect(fullURI.hasPrefix("x-coredata://\(uuid)/Item/p"))
        _ = try uri("Item", items[0].objectID.primaryKey!)

        let ndjson = try ExportFixture.export(store, entity: "Item", format: .ndjson)
        let lines = ndjson.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3 && lines.last == "")
        #expect(String(lines[0]) == """
            {"_uri":"\(fullURI)","i16":-7,"i32":70000,"i64":9007199254740993,"dec":"12345.678","dbl":0.1,"flt":0.1,\
            "str":"say \\"hi\\",\\nbye","flag":true,"when":"2024-01-02T03:04:05.123456Z","blob":"AAEC/w==",\
            "uid":"6F9619FF-8B86-D011-B42D-00C04FC964FF","link":"https://example.com/a?b=c","xform":"eGY=",\
            "tag":"b","tags":["a","c"],"owner":"\(owner.uriRepresentation().absoluteString)",\
            "parts":["\(partURI["third"]!)","\(partURI["first"]!)","\(partURI["second"]!)"]}
            """)
        let emptyURI = items[1].objectID.uriRepresentation().absoluteString
        #expect(String(lines[1]) == """
            {"_uri":"\(emptyURI)","i16":null,"i32":null,"i64":null,"dec":null,"dbl":null,"flt":null,"str":"","flag":null,\
            "when":null,"blob":null,"uid":null,"link":null,"xform":null,"tag":null,"tags":[],"owner":null,"parts":[]}
            """)

        let csv = try ExportFixture.export(store, entity: "Item", format: .csv)
        #expect(csv == """
            _uri,i16,i32,i64,dec,dbl,flt,str,flag,when,blob,uid,link,xform,tag,tags,owner,parts\r
            \(fullURI),-7,70000,9007199254740993,12345.678,0.1,0.1,"say ""hi"",
            bye",true,2024-01-02T03:04:05.123456Z,AAEC/w==,6F9619FF-8B86-D011-B42D-00C04FC964FF,https://example.com/a?b=c,eGY=,\
            b,"[""a"",""c""]",\(owner.uriRepresentation().absoluteString),"[""\(partURI["third"]!)"",""\(partURI["first"]!)"",""\(partURI["second"]!)""]"\r
            \(emptyURI),,,,,,,"",,,,,,,,[],,[]\r

            """)

        let tags = try ExportFixture.export(store, entity: "Tag", format: .ndjson)
        #expect(tags.split(separator: "\n").map { $0.contains("\"tagged\":[]") } == [true, false, true])
        #expect(tags.contains("\"name\":\"a\",\"tagged\":[],\"items\":[\"\(fullURI)\"]"))
    }

    /// Stores number their objects their own way (SQLite per entity, atomic stores across
    /// entities), so across types only the primary keys in URIs may differ.
    @Test("the same store exports byte for byte the same, whatever the batch size; across store types only primary keys differ")
    func deterministic() throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var exports: [String] = []
        for type in [PersistentStoreCoordinator.StoreType.sqlite, .xml, .binary] {
            let url = directory.appendingPathComponent("items-\(type.rawValue)")
            try ExportFixture.fill(type, at: url)
            let store = try ReadOnlyStore.open(url, model: try ExportFixture.model())
            let out = directory.appendingPathComponent("out-\(type.rawValue)")
            let files = try StoreExporter(store: store).export(format: .ndjson, to: out)
            #expect(files.map(\.entity) == ["Item", "Owner", "Part", "Tag"])
            #expect(files.map(\.count) == [2, 1, 3, 3])
            let first = try files.map { try String(contentsOf: $0.url, encoding: .utf8) }.joined()
            // Again, one object per batch, over the same files.
            let again = try StoreExporter(store: store, batchSize: 1).export(format: .ndjson, to: out)
            #expect(try again.map { try String(contentsOf: $0.url, encoding: .utf8) }.joined() == first)
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).sorted() == ["Item.ndjson", "Owner.ndjson", "Part.ndjson", "Tag.ndjson"])
            // Destinations looked up a few at a time (a group per row) give the same records.
            for entity in ["Item", "Owner", "Part", "Tag"] {
                let columns = try RecordColumns(model: store.model, entity: entity)
                var rows: [StoreRow] = []
                try store.forEachBatch(ofEntity: entity, batchSize: 100) { rows += $0 }
                var grouped = StoreRecordReader(store: store)
                grouped.destinationsPerGroup = 1
                #expect(try grouped.records(of: rows, columns: columns) == StoreRecordReader(store: store).records(of: rows, columns: columns), "\(entity)")
            }
            exports.append(first.replacingOccurrences(of: "x-coredata://\(store.identifier)/([A-Za-z]+)/p[0-9]+", with: "$1", options: .regularExpression))
        }
        #expect(exports[0].contains("\"owner\":\"Owner\",\"parts\":[\"Part\",\"Part\",\"Part\"]"))
        #expect(exports[1] == exports[0])
        #expect(exports[2] == exports[0])
    }

    @Test("a fetch filters, sorts, offsets and limits in the store, in every store type", arguments: [PersistentStoreCoordinator.StoreType.sqlite, .xml, .binary])
    func fetch(type: PersistentStoreCoordinator.StoreType) throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("items.store")
        try ExportFixture.fill(type, at: url)
        let store = try ReadOnlyStore.open(url, model: try ExportFixture.model())
        var query = StoreQuery(entity: "Tag")
        query.predicate = try StoreQuery.predicate("name != 'b'")
        query.sortDescriptors = [try StoreQuery.sortDescriptor("name:desc")]
        let result = try query.run(on: store)
        #expect(result.columns == ["_uri", "name"])
        #expect(result.records.map { $0[1] } == [.value(.string("c")), .value(.string("a"))])
        query.predicate = nil
        query.offset = 1
        query.limit = 1
        #expect(try query.run(on: store).records.map { $0[1] } == [.value(.string("b"))])

        var items = StoreQuery(entity: "Item")
        items.predicate = try StoreQuery.predicate("tag.name == 'b'")
        let found = try items.run(on: store)
        #expect(found.columns == ["_uri", "i16", "i32", "i64", "dec", "dbl", "flt", "str", "flag", "when", "blob", "uid", "link", "xform", "tag", "owner"])
        #expect(found.records.count == 1)
        #expect(found.json().hasPrefix("[\n{\"_uri\":\"x-coredata://\(store.identifier)/Item/p"))
        #expect(found.json().hasSuffix(",\"tag\":\"b\",\"owner\":\"\(found.records[0][15].text)\"}\n]\n"))
        #expect(found.csv().hasPrefix("_uri,i16,i32,i64,dec,dbl,flt,str,flag,when,blob,uid,link,xform,tag,owner\r\n"))
    }

    @Test("a fetch table aligns its columns under a header and counts the objects")
    func table() {
        let result = StoreQueryResult(columns: ["_uri", "name", "n"], records: [
            [.value(.string("x-coredata://U/Tag/p1")), .value(.string("a\tb")), .null],
            [.value(.string("x-coredata://U/Tag/p10")), .value(.string("long name")), .value(.integer(3))],
        ])
        #expect(result.table() == """
            _uri                    name       n
            x-coredata://U/Tag/p1   a\\tb
            x-coredata://U/Tag/p10  long name  3
            (2 objects)

            """)
        #expect(StoreQueryResult(columns: ["_uri"], records: []).json() == "[]\n")
    }

    @Test("a predicate syntax error gives its column; a bad sort is refused")
    func syntaxErrors() {
        #expect(throws: PredicateSyntaxError.self) { try StoreQuery.predicate("name == 'Bolt' OR == 3") }
        do {
            _ = try StoreQuery.predicate("name == 'Bolt' OR == 3")
        } catch {
            #expect(error.column == 19)
        }
        #expect(throws: StoreQuery.SortSyntaxError.self) { try StoreQuery.sortDescriptor("name:sideways") }
        #expect(throws: StoreQuery.SortSyntaxError.self) { try StoreQuery.sortDescriptor(":desc") }
    }

    @Test("inspect counts every entity through the store, whatever its type", arguments: [PersistentStoreCoordinator.StoreType.sqlite, .xml, .binary])
    func inspect(type: PersistentStoreCoordinator.StoreType) throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("items.store")
        try ExportFixture.fill(type, at: url)
        let before = try Data(contentsOf: url)
        let report = try StoreReport(storeAt: url, model: try ExportFixture.model())
        #expect(report.storeType == type.rawValue)
        #expect(Dictionary(uniqueKeysWithValues: report.entities.map { ($0.name, $0.count) }) == ["Item": 2, "Owner": 1, "Part": 3, "Tag": 3])
        #expect(try Data(contentsOf: url) == before)
    }

    @Test("inspect's counts line up under names of any length, and the total is spelled out when every name is shorter than 'total'")
    func inspectTotalLine() throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("short.sqlite")
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "A", attributes: [AttributeDescription(name: "x", type: .string)]),
            EntityDescription(name: "Bc", attributes: [AttributeDescription(name: "x", type: .string)]),
        ])
        try SQLiteStore.create(at: url, model: model)
        let lines = try StoreReport(storeAt: url, model: model).text().split(separator: "\n").map(String.init)
        let counts = Array(lines.drop { !$0.hasPrefix("Objects") }.dropFirst())
        #expect(counts == ["  A      0", "  Bc     0", "  total  0"], "\(lines)")
    }

    @Test("export's summary names each file under the directory given, counts aligned, one object singular")
    func exportSummary() throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("items.sqlite")
        try ExportFixture.fill(.sqlite, at: url)
        let files = try StoreExporter(store: try ReadOnlyStore.open(url, model: try ExportFixture.model()))
            .export(format: .csv, to: directory.appendingPathComponent("out"))
        #expect(StoreExporter.text(files, directory: "x/out") == """
            wrote x/out/Item.csv   2 objects
            wrote x/out/Owner.csv  1 object
            wrote x/out/Part.csv   3 objects
            wrote x/out/Tag.csv    3 objects

            """, "\(files.map(\.entity))")
    }

    @Test("meta set --json-values reads integers, reals, booleans, strings, arrays and objects")
    func jsonValues() throws {
        #expect(try StoreMetadataEditor.assignment("n=1", json: true) == ("n", .integer(1)))
        #expect(try StoreMetadataEditor.assignment("n=1.0", json: true) == ("n", .real(1.0)))
        #expect(try StoreMetadataEditor.assignment("n=-2e3", json: true) == ("n", .real(-2000)))
        #expect(try StoreMetadataEditor.assignment("b=true", json: true) == ("b", .bool(true)))
        #expect(try StoreMetadataEditor.assignment("s=\"a=b \\u00e9\"", json: true) == ("s", .string("a=b é")))
        #expect(try StoreMetadataEditor.assignment("a=[1, {\"k\": false}]", json: true) == ("a", .array([.integer(1), .dictionary(["k": .bool(false)])])))
        #expect(try StoreMetadataEditor.assignment("s=1.0", json: false) == ("s", .string("1.0")))
        #expect(throws: StoreMetadataEditor.AssignmentError.self) { try StoreMetadataEditor.assignment("n=null", json: true) }
        #expect(throws: StoreMetadataEditor.AssignmentError.self) { try StoreMetadataEditor.assignment("n=tru", json: true) }
        #expect(throws: StoreMetadataEditor.AssignmentError.self) { try StoreMetadataEditor.assignment("=1", json: false) }
    }
}
