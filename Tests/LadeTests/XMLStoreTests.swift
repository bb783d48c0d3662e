import Foundation
import Testing
@testable import Lade

@Suite("XML store: Core Data's file format")
struct XMLStoreTests {
    /// Order (number) ←→> LineItem (unitPrice, createdAt, isGift, photo; order required).
    static func orderModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Order", attributes: [AttributeDescription(name: "number", type: .integer32)], relationships: [
                RelationshipDescription(name: "lineItems", destinationEntityName: "LineItem", inverseName: "order", isToMany: true),
            ]),
            EntityDescription(name: "LineItem", attributes: [
                AttributeDescription(name: "unitPrice", type: .decimal), AttributeDescription(name: "createdAt", type: .date),
                AttributeDescription(name: "isGift", type: .boolean), AttributeDescription(name: "photo", type: .binary),
            ], relationships: [
                RelationshipDescription(name: "order", destinationEntityName: "Order", inverseName: "lineItems", isOptional: false),
            ]),
        ])
    }

    @Test("a saved store is laid out as Core Data writes it: prolog, DOCTYPE, databaseInfo, upper-cased types, lower-cased names, z-numbered IDs")
    func layout() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("orders.xml")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.orderModel())
        let store = try coordinator.addPersistentStore(type: .xml, at: url)
        let photo = Data((0..<100).map { UInt8($0) })
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let order = try context.insertObject(forEntityName: "Order")
            try order.setValue(7, forKey: "number")
            let item = try context.insertObject(forEntityName: "LineItem")
            try item.setValue(Decimal(string: "12.50")!, forKey: "unitPrice")
            try item.setValue(Date(timeIntervalSinceReferenceDate: 336_046_917.001_641_988_754_272_460_937_5), forKey: "createdAt")
            try item.setValue(true, forKey: "isGift")
            try item.setValue(photo, forKey: "photo")
            try item.setValue(order, forKey: "order")
            try context.save()
        }
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.hasPrefix("""
            <?xml version="1.0" standalone="yes"?>
            <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">

            <database>
                <databaseInfo>
                    <version>134481920</version>
                    <UUID>\(store.identifier)</UUID>
                    <nextObjectID>103</nextObjectID>
                    <metadata>
                        <plist version="1.0">
                            <dict>
                                <key>NSPersistenceFrameworkVersion</key>
                                <integer>0</integer>
            """))
        let base64 = photo.base64EncodedString()
        #expect(text.hasSuffix("""
                </databaseInfo>
                <object type="LINEITEM" id="z102">
                    <attribute name="unitprice" type="decimal">12.5</attribute>
                    <attribute name="createdat" type="date">336046917.00164198875427246094</attribute>
                    <attribute name="isgift" type="bool">1</attribute>
                    <attribute name="photo" type="binary">\(base64.prefix(76))
            \(base64.dropFirst(76))
            </attribute>
                    <relationship name="order" type="1/1" destination="ORDER" idrefs="z103"></relationship>
                </object>
                <object type="ORDER" id="z103">
                    <attribute name="number" type="int32">7</attribute>
                    <relationship name="lineitems" type="0/0" destination="LINEITEM" idrefs="z102"></relationship>
                </object>
            </database>
            """))
        // The stack's own keys stay out of the plist: the type is implied, the UUID is <UUID>.
        #expect(!text.contains("<key>NSStoreType</key>") && !text.contains("<key>NSStoreUUID</key>"))
        #expect(text.contains("<key>NSStoreModelVersionHashes</key>"))
    }

    static let employees = """
        <?xml version="1.0"?>
        <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">

        <database>
            <databaseInfo>
                <version>134481920</version>
                <UUID>7DFA6DAB-A071-4B34-8DFB-BAC65DD66FDE</UUID>
                <nextObjectID>104</nextObjectID>
                <metadata></metadata>
            </databaseInfo>
            <object type="DEPARTMENT" id="z104">
                <attribute name="name" type="string">Engineering</attribute>
                <relationship name="employees" type="0/0" destination="EMPLOYEE" idrefs="z102 boss"></relationship>
            </object>
            <object type="EMPLOYEE" id="z102">
                <attribute name="name" type="string">Alice</attribute>
                <attribute name="salary" type="int32">100</attribute>
                <attribute name="hiredate" type="date">445103622.25000000000000000000</attribute>
                <relationship name="department" type="1/1" destination="DEPARTMENT" idrefs="z104"></relationship>
            </object>
            <object type="EMPLOYEE" id="z103">
                <attribute name="name" type="string">Bob</attribute>
                <relationship name="department" type="1/1" destination="DEPARTMENT"></relationship>
            </object>
            <object type="EMPLOYEE" id="boss">
                <attribute name="name" type="string">Carol</attribute>
                <relationship name="department" type="1/1" destination="DEPARTMENT" idrefs="z104"></relationship>
            </object>
        </database>
        """

    static func employeeModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Department", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "employees", destinationEntityName: "Employee", inverseName: "department", isToMany: true),
            ]),
            EntityDescription(name: "Employee", attributes: [
                AttributeDescription(name: "name", type: .string), AttributeDescription(name: "salary", type: .integer32),
                AttributeDescription(name: "hireDate", type: .date),
            ], relationships: [
                RelationshipDescription(name: "department", destinationEntityName: "Department", inverseName: "employees"),
            ]),
        ])
    }

    @Test("a file in Core Data's form opens: names without regard to case, empty metadata, unset relationships, hand-written IDs kept")
    func readsCoreDataForm() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("staff.xml")
        try Data(Self.employees.utf8).write(to: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.employeeModel())
        let store = try coordinator.addPersistentStore(at: url)
        #expect(store.identifier == "7DFA6DAB-A071-4B34-8DFB-BAC65DD66FDE")
        #expect(store.metadata == ["NSStoreType": .string("XML"), "NSStoreUUID": .string(store.identifier)])
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let people = try context.fetch(FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")]))
            #expect(people.map { $0["name"] as? String } == ["Alice", "Bob", "Carol"])
            #expect(people[0]["hireDate"] as? Date == Date(timeIntervalSinceReferenceDate: 445_103_622.25))
            #expect(people[0]["salary"] as? Int == 100)
            #expect(people[1]["department"] == nil)
            let department = try #require(people[2].object(forKey: "department"))
            #expect(department.objects(forKey: "employees").map { $0["name"] as? String } == ["Alice", "Carol"])
            let dave = try context.insertObject(forEntityName: "Employee")
            try dave.setValue("Dave", forKey: "name")
            try dave.setValue(department, forKey: "department")
            try context.save()
        }
        let text = try String(contentsOf: url, encoding: .utf8)
        // "boss" took number 105, so Dave is z106 and the counter says 106; "boss" stays "boss".
        #expect(text.contains("<nextObjectID>106</nextObjectID>"))
        #expect(text.contains(#"<object type="EMPLOYEE" id="boss">"#) && text.contains(#"<object type="EMPLOYEE" id="z106">"#))
        #expect(text.contains(#"<relationship name="employees" type="0/0" destination="EMPLOYEE" idrefs="z102 boss z106"></relationship>"#))
        #expect(text.contains(#"<attribute name="hiredate" type="date">445103622.25000000000000000000</attribute>"#))
    }

    @Test("a damaged or foreign file is refused with the file, the line and what is wrong", arguments: [
        ("</database>", "", "the XML is malformed"),
        (#"type="DEPARTMENT" id="z104""#, #"type="WIDGET" id="z104""#, "line 11: object z104 is of type WIDGET, which the model has no entity for"),
        (#"name="salary" type="int32">100"#, #"name="salary" type="int32">many"#, "line 17: object z102, attribute salary: 'many' (written as int32) is not a valid Integer 32 value"),
        (#"<attribute name="name" type="string">Bob</attribute>"#, #"<attribute name="nickname" type="string">Bob</attribute>"#, "line 22: object z103 has an attribute 'nickname' that entity Employee does not have"),
        (#"idrefs="z102 boss""#, #"idrefs="z102 z999""#, "line 13: object z104, relationship employees names 'z999', which is not an object in this file"),
        ("<version>134481920</version>", "<version>1</version>", "gives version 1, not 134481920: the file was written by an incompatible version of Core Data"),
        (#"id="boss""#, #"id="z102""#, "a second object with id 'z102'"),
        (#"<relationship name="department" type="1/1" destination="DEPARTMENT"></relationship>"#, #"<relationship name="department" type="1/1" destination="DEPARTMENT" idrefs="z104 z104"></relationship>"#, "to-one relationship department names 2 objects"),
        ("<database>", "<catalog>", "the root element is <catalog>, not <database>"),
    ])
    func refusesDamage(find: String, replace: String, expected: String) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("staff.xml")
        var text = Self.employees
        let range = try #require(text.range(of: find))
        text.replaceSubrange(range, with: replace)
        if find == "<database>" { text = text.replacingOccurrences(of: "</database>", with: "</catalog>") }
        try Data(text.utf8).write(to: url)
        let error = #expect(throws: StoreError.self) { try XMLStore(url: url, model: Self.employeeModel()) }
        #expect(error?.description.hasPrefix(url.path + ": ") == true)
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "no error")")
    }

    @Test("entities defined in the file are never expanded: a file cannot pull in other files")
    func noEntityExpansion() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("secret.txt")
        try Data("TOP SECRET".utf8).write(to: secret)
        let url = directory.appendingPathComponent("staff.xml")
        let text = Self.employees
            .replacingOccurrences(of: #"<!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">"#,
                                  with: #"<!DOCTYPE database [<!ENTITY secret SYSTEM "\#(secret.absoluteString)">]>"#)
            .replacingOccurrences(of: ">Alice<", with: ">&secret;<")
        try Data(text.utf8).write(to: url)
        let error = #expect(throws: StoreError.self) { try XMLStore(url: url, model: Self.employeeModel()) }
        #expect(error?.message.contains("TOP SECRET") == false)
    }

    @Test("a model whose names differ only in case cannot be kept in an XML store, and says why")
    func caseCollision() throws {
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Thing", attributes: [
            // "nAME": Xcode's rules want property names to start in lower case, so the clash is inside the name.
            AttributeDescription(name: "name", type: .string), AttributeDescription(name: "nAME", type: .string),
        ])])
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("things.xml")
        let error = #expect(throws: StoreError.self) { try XMLStore.create(at: url, model: model) }
        #expect(error?.message.contains("Thing.nAME and Thing.name differ only in case") == true || error?.message.contains("Thing.name and Thing.nAME differ only in case") == true)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("text XML cannot hold is refused at save; the file and the objects in memory stay as they were")
    func unrepresentableText() throws {
        let stack = try AtomicTestStack(.xml)
        try EveryType.populate(stack.context(), items: 3)
        let before = try Data(contentsOf: stack.url)
        let snapshot = try EveryType.snapshot(stack.coordinator)
        let context = stack.context()
        try context.performAndWait {
            let item = try #require(try context.fetch(FetchRequest(entityName: "Item")).first)
            try item.setValue("bell \u{7}", forKey: "text")
            let error = #expect(throws: StoreError.self) { try context.save() }
            #expect(error?.message.contains("U+7, which XML cannot hold") == true, "\(String(describing: error))")
        }
        #expect(try Data(contentsOf: stack.url) == before)
        #expect(try EveryType.snapshot(stack.coordinator) == snapshot)
        #expect(try FileManager.default.contentsOfDirectory(atPath: stack.directory.path) == ["store.xml"])
    }

    @Test("create refuses an existing file; a missing file opened read-only is refused; a read-only store refuses saves")
    func fileRules() throws {
        let stack = try AtomicTestStack(.xml)
        let model = stack.model
        #expect(throws: StoreError.self) { try XMLStore.create(at: stack.url, model: model) }
        let missing = stack.directory.appendingPathComponent("missing.xml")
        let error = #expect(throws: StoreError.self) { try PersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(type: .xml, at: missing, readOnly: true) }
        #expect(error?.kind == .notFound)
        let readOnly = try XMLStore(url: stack.url, model: model, readOnly: true)
        var request = StoreSaveRequest()
        request.metadata = readOnly.metadata
        #expect(throws: StoreError.self) { try readOnly.save(request) }
        #expect(throws: StoreError.self) { try readOnly.newObjectIDs(for: "Item", count: 1) }
        let nowhere = stack.directory.appendingPathComponent("no/such/dir/store.xml")
        let noDirectory = #expect(throws: StoreError.self) { try XMLStore.create(at: nowhere, model: model) }
        #expect(noDirectory?.message.hasPrefix("the directory \(nowhere.deletingLastPathComponent().path) does not exist") == true)
    }

    @Test("a save keeps the file's permissions")
    func keepsPermissions() throws {
        let stack = try AtomicTestStack(.xml)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: stack.url.path)
        try EveryType.populate(stack.context(), items: 1)
        #expect(try FileManager.default.attributesOfItem(atPath: stack.url.path)[.posixPermissions] as? Int == 0o640)
    }
}
