import Foundation
import Testing
@testable import Lade

/// Mapping models of the corpus (Xcode's `.xcmappingmodel` and a compiled `.cdm`), read and
/// fitted to their model versions. Skipped when the corpus is absent.
@Suite("Mapping models", .needsCorpus)
struct MappingModelTests {
    static let sampleModel = "alemar11/CoreDataPlus/Tests/Resources/SampleModel/"
    static let moody = "objcio/core-data/Migrations/Migrations/"
    static let unCloudNotes = "CoderDream/Core-Data-by-Tutorials/SourceCode/Core Data by Tutorials v6/06-versioning-and-migration/final/UnCloudNotes/"
    static let coreStore = "JohnEstropia/CoreStore/Demo/Sources/Demos/Advanced/EvolutionDemo/"

    static func versions(_ bundle: String, _ from: String, _ to: String) throws -> (ManagedObjectModel, ManagedObjectModel) {
        let url = Corpus.file(bundle)
        return (try ManagedObjectModel(contentsOf: url, version: from), try ManagedObjectModel(contentsOf: url, version: to))
    }

    @Test("CoreDataPlus V2toV3: Xcode's document, with its automatic expressions made, reads as the compiled .cdm")
    func documentEqualsCompiled() throws {
        let (v2, v3) = try Self.versions(Self.sampleModel + "SampleModel.xcdatamodeld", "SampleModel2", "SampleModel3")
        let document = try MappingModel(contentsOf: Corpus.file(Self.sampleModel + "MappingModels/V2toV3.xcmappingmodel"))
        let compiled = try MappingModel(contentsOf: Corpus.file(Self.sampleModel + "Fixtures/V2toV3.cdm"))
        #expect(document.sourceVersionName == "SampleModel2")
        #expect(document.destinationVersionName == "SampleModel3")
        #expect(compiled.sourceVersionName == nil)
        let fromDocument = try document.resolved(from: v2, to: v3)
        let fromCompiled = try compiled.resolved(from: v2, to: v3)
        #expect(fromDocument.entityMappings.map(\.name) == ["CarToCar", "LuxuryCarToLuxuryCar", "PersonToPerson", "SportCarToSportCar", "Maker"])
        #expect(fromCompiled.entityMappings.map(\.kind) == [.custom, .custom, .copy, .custom, .add])
        for (a, b) in zip(fromDocument.entityMappings, fromCompiled.entityMappings) {
            #expect(a == b, "\(a.name)")
        }
        let person = try #require(fromCompiled.entityMappings.first { $0.name == "PersonToPerson" })
        #expect(person.relationshipMappings.map { $0.valueExpression?.description ?? "nil" } == [
            "FUNCTION($manager, \"destinationInstancesForSourceRelationshipNamed:sourceInstances:\", \"cars\", $source.cars)",
            "FUNCTION($manager, \"destinationInstancesForSourceRelationshipNamed:sourceInstances:\", \"cars\", $source.cars)",
        ])
        #expect(person.sourceFetch?.entity == "Person")
        #expect(person.sourceFetch?.predicate == "TRUEPREDICATE")
    }

    @Test("custom code is named with the entity mappings that use it", arguments: [
        ("alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/V2toV3.cdm",
         "the migration policy class V2to3MakerPolicy (REPLACE_AT_RUNTIME.V2to3MakerPolicy), used by entity mappings CarToCar, LuxuryCarToLuxuryCar, SportCarToSportCar"),
        ("alemar11/CoreDataPlus/Tests/Resources/SampleModel/MappingModels/V2toV3.xcmappingmodel",
         "the migration policy class V2to3MakerPolicy (REPLACE_AT_RUNTIME.V2to3MakerPolicy), used by entity mappings CarToCar, LuxuryCarToLuxuryCar, SportCarToSportCar"),
        ("objcio/core-data/Migrations/Migrations/Moody 5-Moody 6.xcmappingmodel",
         "the migration policy class Country5ToCountry6Policy (Migrations.Country5ToCountry6Policy), used by entity mapping CountryToCountry"),
        ("CoderDream/Core-Data-by-Tutorials/SourceCode/Core Data by Tutorials v6/06-versioning-and-migration/final/UnCloudNotes/UnCloudNotesMappingModel_v3_to_v4.xcmappingmodel",
         "the migration policy class AttachmentToImageAttachmentMigrationPolicyV3toV4 (UnCloudNotes.AttachmentToImageAttachmentMigrationPolicyV3toV4), used by entity mapping AttachmentToImageAttachment"),
        ("JohnEstropia/CoreStore/Demo/Sources/Demos/Advanced/EvolutionDemo/Advanced.EvolutionDemo.V2.FromV1.xcmappingmodel",
         "the migration policy class Advanced_EvolutionDemo_V2_FromV1MigrationPolicy, used by entity mapping CreatureToCreature"),
    ])
    func customCode(path: String, expected: String) throws {
        let mapping = try MappingModel(contentsOf: Corpus.file(path))
        #expect(mapping.customCode == [expected])
    }

    @Test("a CAST to an app class and a FUNCTION on it are named (fruitsamples MigrationV2)")
    func castToAppClass() throws {
        let mapping = try MappingModel(contentsOf: Corpus.file("fruitsamples/MigrationV2/Models/MappingModel.xcmappingmodel"))
        let code = mapping.customCode
        #expect(code.first == "the migration policy class CuisineMigrationPolicy, used by entity mapping RecipeToCuisine")
        #expect(code.contains("CAST(\"MigrationFunctions\", \"Class\") (the app class MigrationFunctions), in entity mapping ChefToChef, property firstName"))
        #expect(code.contains("FUNCTION(…, \"getLastName:\", …) on a class of the app's, in entity mapping ChefToChef, property lastName"))
    }

    @Test("mappings that need no code: none named, and they fit their versions", arguments: [
        ("objcio/core-data/Migrations/Migrations/Moody 2-Moody 3.xcmappingmodel", "objcio/core-data/Migrations/Migrations/Moody.xcdatamodeld"),
        ("objcio/core-data/Migrations/Migrations/Moody 3-Moody 4.xcmappingmodel", "objcio/core-data/Migrations/Migrations/Moody.xcdatamodeld"),
        ("objcio/core-data/Migrations/Migrations/Moody 4-Moody 5.xcmappingmodel", "objcio/core-data/Migrations/Migrations/Moody.xcdatamodeld"),
        ("CoderDream/Core-Data-by-Tutorials/SourceCode/Core Data by Tutorials v6/06-versioning-and-migration/final/UnCloudNotes/UnCloudNotesMappingModel_v2_to_v3.xcmappingmodel",
         "CoderDream/Core-Data-by-Tutorials/SourceCode/Core Data by Tutorials v6/06-versioning-and-migration/final/UnCloudNotes/UnCloudNotesDataModel.xcdatamodeld"),
        ("JohnEstropia/CoreStore/Demo/Sources/Demos/Advanced/EvolutionDemo/Advanced.EvolutionDemo.V1.FromV2.xcmappingmodel",
         "JohnEstropia/CoreStore/Demo/Sources/Demos/Advanced/EvolutionDemo/Advanced.EvolutionDemo.V1.xcdatamodeld"),
    ])
    func runnable(path: String, bundle: String) throws {
        let mapping = try MappingModel(contentsOf: Corpus.file(path))
        #expect(mapping.customCode == [])
        let (source, destination) = try Self.versions(bundle, try #require(mapping.sourceVersionName), try #require(mapping.destinationVersionName))
        let resolved = try mapping.resolved(from: source, to: destination)
        for entity in resolved.entityMappings {
            print("\(entity.name) [\(entity.kind)] from \(entity.sourceFetch.map { "\($0.entity) where \($0.predicate)" } ?? "nothing")")
            for property in entity.attributeMappings + entity.relationshipMappings {
                print("  \(property.name) = \(property.valueExpression?.description ?? "nil")")
            }
        }
    }

    /// A SQLite store of UnCloudNotes v2 with `count` notes ("note N", dated N seconds after
    /// 2001; every third without an image), closed.
    static func notesStore(in directory: URL, model: ManagedObjectModel, count: Int) throws -> URL {
        let store = directory.appendingPathComponent("notes.sqlite")
        let context = try privateContext(model: model, store: store, type: .sqlite)
        try context.performAndWait {
            for index in 0..<count {
                let note = try context.insertObject(forEntityName: "Note")
                try note.setValue("note \(index)", forKey: "title")
                try note.setValue("body", forKey: "body")
                try note.setValue(Date(timeIntervalSinceReferenceDate: Double(index)), forKey: "dateCreated")
                try note.setAttributeValue(index % 3 == 0 ? nil : .binary(Data([UInt8(index)])), forKey: "image")
            }
            try context.save()
        }
        return store
    }

    @Test("MigrationManager in process, batches of one and of 5,000: UnCloudNotes v2 → v3 gives the same objects (each note kept, an attachment per image)", arguments: [1, 5_000])
    func migrationManagerInProcess(batchSize: Int) throws {
        let (v2, v3) = try Self.versions(Self.unCloudNotes + "UnCloudNotesDataModel.xcdatamodeld", "UnCloudNotesDataModel v2", "UnCloudNotesDataModel v3")
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Self.notesStore(in: directory, model: v2, count: 7)
        let mapping = try MappingModel(contentsOf: Corpus.file(Self.unCloudNotes + "UnCloudNotesMappingModel_v2_to_v3.xcmappingmodel"))
        var manager = try MigrationManager(store: store, from: v2, to: v3, mappings: [mapping])
        manager.batchSize = batchSize
        let counts = try manager.run()
        #expect(counts == ["Note": 7, "Attachment": 4])
        let context = try privateContext(model: v3, store: store)
        try context.performAndWait {
            for note in try context.fetch(FetchRequest(entityName: "Note")) {
                let attachments = note.objects(forKey: "attachments")
                #expect(attachments.count == (note.attributeValue(forKey: "title").map { text in ["note 0", "note 3", "note 6"].contains(text.canonicalText) } == true ? 0 : 1))
                #expect(attachments.first.map { $0.attributeValue(forKey: "dateCreated") == note.attributeValue(forKey: "dateCreated") } ?? true)
            }
        }
    }

    @Test("a compiled mapping's entity hashes single out its step when the versions carry Apple's hashes (a .momd)")
    func compiledHashes() throws {
        let bundle = Corpus.file(Self.sampleModel + "SampleModel.xcdatamodeld")
        let momd = Corpus.file(Self.sampleModel + "Fixtures/SampleModel.momd")
        let models = try ["SampleModel", "SampleModel2", "SampleModel3"].map { try ManagedObjectModel(contentsOf: bundle, version: $0, compiledModel: momd) }
        let compiled = try MappingModel(contentsOf: Corpus.file(Self.sampleModel + "Fixtures/V2toV3.cdm"))
        #expect(compiled.matchesVersionHashes(from: models[1], to: models[2]) == true)
        #expect(compiled.matchesVersionHashes(from: models[0], to: models[1]) == false)
        let withoutMomd = try ManagedObjectModel(contentsOf: bundle, version: "SampleModel2")
        #expect(compiled.matchesVersionHashes(from: withoutMomd, to: models[2]) == false, "Lade's own hashes are not Apple's")
        let document = try MappingModel(contentsOf: Corpus.file(Self.sampleModel + "MappingModels/V2toV3.xcmappingmodel"))
        #expect(document.matchesVersionHashes(from: models[1], to: models[2]) == nil)
    }

    @Test("damaged or wrong mapping files get errors naming the file, the line and what is wrong")
    func damagedFiles() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func read(_ name: String, _ data: Data) -> String {
            let url = directory.appendingPathComponent(name)
            try? data.write(to: url)
            do {
                _ = try MappingModel(contentsOf: url)
                return "read"
            } catch {
                return "\(error)"
            }
        }
        let header = "<?xml version=\"1.0\"?>\n<!DOCTYPE database SYSTEM \"file:///System/Library/DTDs/CoreData.dtd\">\n<database>\n"
        #expect(read("none.xml", Data((header + "</database>\n").utf8)).contains("it holds no mapping model (no XDDEVMAPPINGMODEL object)"))
        #expect(read("entities.xml", Data("<?xml version=\"1.0\"?>\n<!DOCTYPE x [<!ENTITY a \"b\">]>\n<database/>".utf8)).contains("declares its own entities"))
        #expect(read("other.xml", Data("<model/>".utf8)).contains("not Xcode's xcmapping.xml (its root is <model>"))
        let badExpression = header + """
            <object type="XDDEVMAPPINGMODEL" id="z1"></object>
            <object type="XDDEVATTRIBUTEMAPPING" id="z3"><attribute name="name" type="string">a</attribute>
            <attribute name="valueexpressiondata" type="binary">%%%not base64%%%</attribute></object>
            <object type="XDDEVENTITYMAPPING" id="z2"><attribute name="sourcename" type="string">A</attribute>
            <attribute name="destinationname" type="string">A</attribute>
            <relationship name="mappingmodel" type="1/1" destination="XDDEVMAPPINGMODEL" idrefs="z1"></relationship>
            <relationship name="attributemappings" type="0/0" destination="XDDEVATTRIBUTEMAPPING" idrefs="z3"></relationship></object>
            </database>
            """
        #expect(read("expression.xml", Data(badExpression.utf8)).contains("line 5: the value expression of AToA.a is not base64"))
        let duplicate = header + "<object type=\"XDDEVMAPPINGMODEL\" id=\"z1\"/><object type=\"XDDEVMAPPINGMODEL\" id=\"z1\"/></database>"
        #expect(read("duplicate.xml", Data(duplicate.utf8)).contains("two objects have the id z1"))
        let compiled = try Data(contentsOf: Corpus.file(Self.sampleModel + "Fixtures/V2toV3.cdm"))
        #expect(read("truncated.cdm", compiled.prefix(compiled.count / 2)).contains("it is not a readable keyed archive"))
        #expect(read("missing.cdm", Data()).contains("neither a compiled mapping model nor Xcode's xcmapping.xml"))
        let (v2, v3) = try Self.versions(Self.sampleModel + "SampleModel.xcdatamodeld", "SampleModel2", "SampleModel3")
        let mapping = MappingModel(entityMappings: [.init(name: "GhostToCar", kind: .transform, sourceEntityName: "Ghost", destinationEntityName: "Car",
                                                           migrationPolicyClassName: nil, sourceExpression: nil, attributeMappings: [.init(name: "wings")], relationshipMappings: [])])
        let error = #expect(throws: MappingModelError.self) { try mapping.resolved(from: v2, to: v3) }
        #expect(error?.description.contains("entity mapping GhostToCar: the source model has no entity Ghost") == true, "\(String(describing: error))")
    }

    /// A keyed archive of `objects` (references written as `["CF$UID": n]`, which reads as a UID).
    static func archive(_ objects: [PropertyListValue]) throws -> Data {
        try PropertyListValue.dictionary([
            "$archiver": .string("NSKeyedArchiver"), "$version": .integer(100000),
            "$top": .dictionary(["root": .dictionary(["CF$UID": .integer(Int64(objects.count - 1))])]),
            "$objects": .array(objects),
        ]).binaryPropertyList()
    }

    @Test("sourceInstancesForEntityMappingNamed: finds the object a new one was made from (each category made its own parent through it)")
    func sourceInstances() throws {
        let model = try ManagedObjectModel(contentsOf: Fixtures.catalog)
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("catalog.sqlite")
        do {
            let context = try privateContext(model: model, store: store, type: .sqlite)
            try context.performAndWait {
                for index in 0..<5 { try context.insertObject(forEntityName: "Category").setValue("c\(index)", forKey: "name") }
                try context.save()
            }
        }
        let manager = MappingExpression.variable("manager")
        let fetch = MappingExpression.fetch(.function(manager, selector: "fetchRequestForSourceEntityNamed:predicateString:", arguments: [.constant(.string("Category")), .constant(.string("TRUEPREDICATE"))]),
                                            context: .keyPath(manager, ["sourceContext"]), countOnly: false)
        let original = MappingExpression.function(manager, selector: "sourceInstancesForEntityMappingNamed:destinationInstances:", arguments: [.constant(.string("CategoryToCategory")), .variable("destination")])
        let mapping = MappingModel(entityMappings: [.init(
            name: "CategoryToCategory", kind: .copy, sourceEntityName: "Category", destinationEntityName: "Category", migrationPolicyClassName: nil, sourceExpression: fetch,
            attributeMappings: [.init(name: "name", valueExpression: .keyPath(.variable("source"), ["name"]))],
            relationshipMappings: [.init(name: "parent", valueExpression: .function(manager, selector: "destinationInstancesForEntityMappingNamed:sourceInstances:",
                                                                                  arguments: [.constant(.string("CategoryToCategory")), original]))])])
        var run = try MigrationManager(store: store, from: model, to: model, mappings: [mapping])
        run.batchSize = 2
        #expect(try run.run()["Category"] == 5)
        let context = try privateContext(model: model, store: store)
        try context.performAndWait {
            let categories = try context.fetch(FetchRequest(entityName: "Category"))
            #expect(categories.count == 5)
            for category in categories { #expect(category.object(forKey: "parent") === category, "\(category.attributeValue(forKey: "name")?.canonicalText ?? "?")") }
        }
    }

    @Test("hostile mapping files: a FIFO is refused without waiting on it; an archive whose shared objects expand past the bound, and an overlong key path, are refused")
    func hostileMappingFiles() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("mapping.cdm")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let refused = #expect(throws: MappingModelError.self) { try MappingModel(contentsOf: fifo) }
        #expect(refused?.description.contains("it is a device, pipe or socket, not a file") == true, "\(String(describing: refused))")
        func uid(_ n: Int) -> PropertyListValue { .dictionary(["CF$UID": .integer(Int64(n))]) }
        // 0 $null, 1-3 classes, then 40 levels of FUNCTION(add:to:) naming the next level twice.
        var objects: [PropertyListValue] = [.string("$null"), .dictionary(["$classname": .string("NSFunctionExpression")]),
                                            .dictionary(["$classname": .string("NSArray")]), .dictionary(["$classname": .string("NSConstantValueExpression")])]
        objects.append(.dictionary(["$class": uid(3), "NSConstantValue": .integer(1)]))
        for _ in 0..<40 {
            let below = objects.count - 1
            objects.append(.dictionary(["$class": uid(2), "NS.objects": .array([uid(below), uid(below)])]))
            objects.append(.dictionary(["$class": uid(1), "NSSelectorName": .string("add:to:"), "NSArguments": uid(objects.count - 1)]))
        }
        let bomb = try KeyedArchive(data: try Self.archive(objects), origin: "bomb")
        let expanded = #expect(throws: MappingModelError.self) { _ = try MappingExpression.decode(bomb.root, in: bomb) }
        #expect(expanded?.description.contains("expands into more than 200000 objects") == true, "\(String(describing: expanded))")
        let path = Array(repeating: "a", count: 300).joined(separator: ".")
        let long = try KeyedArchive(data: try Self.archive([.string("$null"), .dictionary(["$classname": .string("NSKeyPathSpecifierExpression")]),
                                                             .dictionary(["$class": uid(1), "NSKeyPath": .string(path)])]), origin: "long")
        let tooLong = #expect(throws: MappingModelError.self) { _ = try MappingExpression.decode(long.root, in: long) }
        #expect(tooLong?.description.contains("a key path has 300 components, more than 256") == true, "\(String(describing: tooLong))")
    }

    @Test("a change another connection commits while a mapping migration reads the store stops it; the store keeps the change, nothing replaced")
    func concurrentChange() throws {
        let (v2, v3) = try Self.versions(Self.unCloudNotes + "UnCloudNotesDataModel.xcdatamodeld", "UnCloudNotesDataModel v2", "UnCloudNotesDataModel v3")
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Self.notesStore(in: directory, model: v2, count: 3)
        let mapping = try MappingModel(contentsOf: Corpus.file(Self.unCloudNotes + "UnCloudNotesMappingModel_v2_to_v3.xcmappingmodel"))
        let manager = try MigrationManager(store: store, from: v2, to: v3, mappings: [mapping])
        let wrote = LockedFlag()
        let path = store.path
        let error = #expect(throws: MigrationFailure.self) {
            try manager.run { _ in
                guard wrote.setOnce() else { return }
                // Another connection (as another process would) commits a change.
                try? SQLiteConnection(path: path, mode: .readWrite(create: false)).execute("UPDATE ZNOTE SET ZTITLE = 'changed meanwhile' WHERE Z_PK = 1")
            }
        }
        let writer = try SQLiteConnection(path: store.path, mode: .readOnly)
        #expect(error?.description.contains("another process changed the store while it was migrated") == true, "\(String(describing: error))")
        #expect(error?.code == "migration.storeChanged")
        let titles = try writer.rows("SELECT ZTITLE FROM ZNOTE ORDER BY Z_PK").map { $0.first }
        #expect(titles == [.text("changed meanwhile"), .text("note 1"), .text("note 2")])
        #expect(try StoreVersionMatch(storeAt: store, bundle: Corpus.file(Self.unCloudNotes + "UnCloudNotesDataModel.xcdatamodeld")).version == "UnCloudNotesDataModel v2")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains("lade-convert") }.isEmpty)
    }
}

/// A flag set once, from any thread.
final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var set = false
    /// True the first time only.
    func setOnce() -> Bool { lock.withLock { defer { set = true }; return !set } }
}
