import Foundation
import Testing
@testable import Lade

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
        let schema = TableLayout(model: model)
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
        let schema = TableLayout(model: model)
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
