import Foundation
import Testing
@testable import Lade

/// Files that declare more than they hold, or expand far beyond their size, are refused before
/// the memory is spent: binary stores, models with DTDs, XML stores with entity declarations.
@Suite("Hostile files are refused within bounds")
struct HostileFileTests {
    /// Writes a binary store whose header and metadata are genuine and whose body `write` makes.
    static func binaryStore(at url: URL, _ write: (BodyWriter) throws -> Void) throws {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let output = FileOutput(descriptor: descriptor, path: url.path)
        try BinaryStoreFile.writeHeader(["NSStoreType": .string("Binary"), "NSStoreUUID": .string(UUID().uuidString)], to: output)
        let body = try BodyWriter(output: output)
        body.uvarint(1)                        // next key
        body.uvarint(1)                        // one entity table: Product, with its thumbnail
        body.string("Product")
        body.uvarint(1)
        body.string("thumbnail")
        body.uvarint(0)
        try write(body)
        try body.finish()
        try output.flush()
    }

    static func catalog() throws -> ManagedObjectModel { try ManagedObjectModel(contentsOf: Fixtures.catalog) }

    @Test("a binary store declaring a 300 MiB value is refused before reading it")
    func declaredValue() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let hostile = directory.appendingPathComponent("declared.binary")
        try Self.binaryStore(at: hostile) { body in
            body.uvarint(1); body.uvarint(0); body.uvarint(1); body.uvarint(1)
            body.uvarint(1); body.uvarint(0)
            body.rawForTesting([BinaryStoreFile.ValueTag.binary.rawValue])
            body.uvarint(300 << 20)
            body.rawForTesting([1, 2, 3])
        }
        #expect {
            try BinaryStoreFile.read(at: hostile, model: Self.catalog())
        } throws: { error in
            "\(error)".contains("a value holds at most 256 MiB")
        }
    }

    @Test("a binary store whose small body inflates past 100 times the file is refused")
    func inflationBomb() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("zeros.binary")
        let objects = 300
        try Self.binaryStore(at: url) { body in
            body.uvarint(UInt64(objects))
            for key in 1...objects {
                body.uvarint(0); body.uvarint(UInt64(key)); body.uvarint(1)
                body.uvarint(1); body.uvarint(0)
                body.value(.binary(Data(count: 1 << 20)))   // 1 MiB of zeros: ~1 KiB compressed
                body.uvarint(0)
                try body.flushIfFull()
            }
        }
        let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
        #expect(size < 2 << 20, "the file is small: \(size) bytes")
        #expect {
            try BinaryStoreFile.read(at: url, model: Self.catalog())
        } throws: { error in
            "\(error)".contains("inflates to more than 256 MiB")
        }
    }

    /// Found by `make fuzz` (target binary-store): an object key beyond 63 bits trapped on conversion.
    @Test("a binary store with a key beyond 63 bits is refused, not a crash")
    func hugeKey() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("key.binary")
        try Self.binaryStore(at: url) { body in
            body.uvarint(1); body.uvarint(0); body.uvarint(UInt64.max); body.uvarint(1)
            body.uvarint(0); body.uvarint(0)
        }
        #expect {
            try BinaryStoreFile.read(at: url, model: Self.catalog())
        } throws: { error in
            "\(error)".contains("beyond 63 bits")
        }
    }

    @Test("a binary store's metadata length beyond the file is refused")
    func metadataLength() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("header.binary")
        try Self.binaryStore(at: url) { body in body.uvarint(0) }
        var bytes = try Data(contentsOf: url)
        for index in 16..<24 { bytes[index] = 0xFF }
        try bytes.write(to: url)
        #expect {
            try BinaryStoreFile.readMetadata(at: url)
        } throws: { error in
            "\(error)".contains("more than the file holds")
        }
    }

    @Test("a model with a DTD is refused, naming the line")
    func modelDTD() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("contents")
        try Data("""
            <?xml version="1.0"?>
            <!DOCTYPE model [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
            <model><entity name="Thing"><attribute name="x" optional="YES" attributeType="String" defaultValueString="&b;&b;&b;"/></entity></model>
            """.utf8).write(to: url)
        #expect {
            try ManagedObjectModel(contentsOf: url)
        } throws: { error in
            "\(error)".contains("contents:2") && "\(error)".contains("document type declaration")
        }
    }

    @Test("an XML store whose DTD declares entities is refused; Apple's external DTD line is fine")
    func storeDTD() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("laughs.xml")
        try Data("""
            <?xml version="1.0" standalone="yes"?>
            <!DOCTYPE database [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
            <database><databaseInfo><version>134481920</version></databaseInfo></database>
            """.utf8).write(to: url)
        #expect {
            _ = try XMLStreamReader(path: url.path)
        } throws: { error in
            "\(error)".contains("declares its own entities")
        }
        try Data("""
            <?xml version="1.0" standalone="yes"?>
            <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">
            <database></database>
            """.utf8).write(to: url)
        _ = try XMLStreamReader(path: url.path)
    }
}

@Suite("Models too deep to load in proportion are refused")
struct ModelSizeTests {
    /// `count` entities, each the parent of the next, each with an attribute of its own.
    static func chain(_ count: Int) -> String {
        (0..<count).map { index in
            "<entity name=\"C\(index)\"\(index > 0 ? " parentEntity=\"C\(index - 1)\"" : "")><attribute name=\"a\(index)\" optional=\"YES\" attributeType=\"String\"/></entity>"
        }.joined(separator: "\n")
    }

    @Test("an inheritance chain 2,000 deep is refused, naming the limit, without walking it for every entity")
    func deepChain() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Fixtures.writeXcodeModel(Self.chain(2_000), in: directory)
        let started = Date()
        #expect {
            try ManagedObjectModel(contentsOf: url)
        } throws: { error in
            "\(error)".contains("more than 100 ancestors")
        }
        // Quadratic work took 20 s (release) before; what remains is linear.
        #expect(Date().timeIntervalSince(started) < 10)
    }

    @Test("a chain 100 deep loads, every subentity holding its ancestors' attributes")
    func allowedChain() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(contentsOf: try Fixtures.writeXcodeModel(Self.chain(101), in: directory))
        #expect(model.attributes(of: "C100").count == 101)
    }
}

/// Models Apple's tools write and compile, that Lade must open as Core Data does.
@Suite("Apple's models Lade opens")
struct AppleModelShapeTests {
    @Test("an Integer 64 default of NO (a model Xcode compiles) loads as 0, with a warning naming it", arguments: [
        ("NO", Int64(0)), ("YES", 0), (" 12 ", 12), ("1.5", 1), ("-7x", -7), ("abc", 0),
    ])
    func integerDefault(_ text: String, _ expected: Int64) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Fixtures.writeXcodeModel("""
            <entity name="Thing"><attribute name="count" attributeType="Integer 64" defaultValueString="\(text)" usesScalarValueType="YES"/></entity>
            """, in: directory)
        let model = try ManagedObjectModel(contentsOf: url)
        #expect(model.attribute("count", of: "Thing")?.defaultValue == .integer(expected))
        let strict = (try? AttributeValue(parsing: text, as: .integer64)) != nil
        #expect(model.warnings.count == (strict ? 0 : 1), "\(model.warnings)")
        if !strict {
            #expect(model.warnings.first?.message.contains("Core Data reads it as \(expected)") == true)
            #expect(model.warnings.first?.line == 3)
        }
    }

    @Test("an Integer 16 default beyond its range is still a problem")
    func outOfRange() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Fixtures.writeXcodeModel("""
            <entity name="Thing"><attribute name="count" attributeType="Integer 16" defaultValueString="99999x"/></entity>
            """, in: directory)
        #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: url) }
    }

    @Test("a reflexive many-to-many gets Apple's join table: Z_2BLOCKING (Z_2BLOCKEDBY, Z_2BLOCKING) for TodoItem.blockedBy ↔ blocking")
    func reflexiveJoinTable() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Fixtures.writeXcodeModel("""
            <entity name="Project"><attribute name="title" optional="YES" attributeType="String"/></entity>
            <entity name="TodoItem">
                <relationship name="blockedBy" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="TodoItem" inverseName="blocking" inverseEntity="TodoItem"/>
                <relationship name="blocking" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="TodoItem" inverseName="blockedBy" inverseEntity="TodoItem"/>
            </entity>
            """, in: directory)
        let model = try ManagedObjectModel(contentsOf: url)
        let schema = SQLiteSchema(model: model)
        #expect(schema.entity(named: "TodoItem")?.number == 2)
        let joins = schema.joinTables.map { "\($0.name) (\($0.sourceColumn), \($0.destinationColumn))" }
        #expect(joins == ["Z_2BLOCKING (Z_2BLOCKEDBY, Z_2BLOCKING)"])

        // A store of that layout, as Apple's Core Data writes it, opens and links both ways.
        let store = directory.appendingPathComponent("todo.sqlite")
        let context = try privateContext(model: model, store: store, type: .sqlite)
        try context.performAndWait {
            let first = try context.insertObject(forEntityName: "TodoItem")
            let second = try context.insertObject(forEntityName: "TodoItem")
            try first.setValue([second], forKey: "blocking")
            try context.save()
        }
        let rows = try SQLiteConnection(path: store.path, mode: .readOnly).rows("SELECT Z_2BLOCKEDBY, Z_2BLOCKING FROM Z_2BLOCKING")
        // The source column (named by the inverse) holds the object whose `blocking` it is.
        let keys = try SQLiteConnection(path: store.path, mode: .readOnly).rows("SELECT Z_PK FROM ZTODOITEM ORDER BY Z_PK")
        #expect(rows == [[keys[0][0], keys[1][0]]])
    }

    @Test("join-table column names are unique across the model: the second Z_2PARENTGROUPS gets a 1, as Apple's Contacts store has Z_19PARENTGROUPS1")
    func joinColumnsUniqueAcrossModel() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Contacts' shape: contacts in groups, and groups in groups (a reflexive many-to-many).
        let url = try Fixtures.writeXcodeModel("""
            <entity name="Contact">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="parentGroups" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Group" inverseName="contacts" inverseEntity="Group"/>
            </entity>
            <entity name="Group">
                <relationship name="childGroups" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Group" inverseName="parentGroups" inverseEntity="Group"/>
                <relationship name="contacts" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Contact" inverseName="parentGroups" inverseEntity="Contact"/>
                <relationship name="parentGroups" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Group" inverseName="childGroups" inverseEntity="Group"/>
            </entity>
            """, in: directory)
        let model = try ManagedObjectModel(contentsOf: url)
        let schema = SQLiteSchema(model: model)
        let joins = schema.joinTables.map { "\($0.name) (\($0.sourceColumn), \($0.destinationColumn))" }
        #expect(joins == ["Z_1PARENTGROUPS (Z_1CONTACTS, Z_2PARENTGROUPS)", "Z_2PARENTGROUPS (Z_2CHILDGROUPS, Z_2PARENTGROUPS1)"])

        // The store of that layout takes links on both tables and reads them back.
        let store = directory.appendingPathComponent("contacts.sqlite")
        let context = try privateContext(model: model, store: store, type: .sqlite)
        try context.performAndWait {
            let contact = try context.insertObject(forEntityName: "Contact")
            let family = try context.insertObject(forEntityName: "Group")
            let cousins = try context.insertObject(forEntityName: "Group")
            try contact.add(cousins, toKey: "parentGroups")
            try cousins.add(family, toKey: "parentGroups")
            try context.save()
        }
        let connection = try SQLiteConnection(path: store.path, mode: .readOnly)
        #expect(try connection.rows("SELECT COUNT(*) FROM Z_1PARENTGROUPS") == [[.integer(1)]])
        #expect(try connection.rows("SELECT COUNT(*) FROM Z_2PARENTGROUPS WHERE Z_2PARENTGROUPS1 IS NOT NULL") == [[.integer(1)]])
        let fresh = ManagedObjectContext(concurrencyType: .privateQueue)
        fresh.persistentStoreCoordinator = context.persistentStoreCoordinator
        let parents = try fresh.performAndWait {
            try fresh.fetch(FetchRequest(entityName: "Group")).map { $0.objects(forKey: "parentGroups").count }.sorted()
        }
        #expect(parents == [0, 1])
    }
}
