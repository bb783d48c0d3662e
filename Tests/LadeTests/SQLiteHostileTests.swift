import Foundation
import Testing
@testable import Lade

@Suite("SQL stays SQL: names and text from hostile models and values")
struct SQLiteHostileTests {
    func problems(_ body: String) throws -> [ModelProblem] {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        do {
            _ = try ManagedObjectModel(contentsOf: try Fixtures.writeXcodeModel(body, in: temp))
            return []
        } catch let error as ModelError {
            return error.problems
        }
    }

    @Test("an entity name carrying SQL breaks Xcode's naming rule and names the character")
    func entityNameWithSQL() throws {
        let found = try problems("""
            <entity name="X; ATTACH DATABASE 'pwned.db' AS p; CREATE TABLE p.t(x)"><attribute name="a" optional="YES" attributeType="String"/></entity>
            """)
        #expect(found.count == 1)
        #expect(found.first?.message.contains("breaks Xcode's rule for entity names") == true)
        #expect(found.first?.message.contains("not ';'") == true, "\(found)")
    }

    @Test("a model made in code is held to the same name rules, so no name reaches SQL unchecked")
    func codeModelNames() throws {
        #expect(throws: ModelError.self) {
            try ManagedObjectModel(entities: [EntityDescription(name: "X\"; DROP TABLE Z_METADATA; --", attributes: [AttributeDescription(name: "a", type: .string)])])
        }
        #expect(throws: ModelError.self) {
            try ManagedObjectModel(entities: [EntityDescription(name: "Thing", attributes: [AttributeDescription(name: "a = 1; --", type: .string)])])
        }
        // What passes the rules is letters, digits and underscores behind Core Data's Z prefix.
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Order", attributes: [AttributeDescription(name: "group", type: .string)])])
        let names = TableLayout(model: model).tables.flatMap { [$0.name] + $0.columns.map(\.name) }
        #expect(names.allSatisfy { $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") } })
    }

    @Test("entity and property names follow Xcode's rules", arguments: [
        ("<entity name=\"product\"><attribute name=\"a\" optional=\"YES\" attributeType=\"String\"/></entity>", "start with an uppercase letter"),
        ("<entity name=\"Product\"><attribute name=\"Name\" optional=\"YES\" attributeType=\"String\"/></entity>", "start with a lowercase letter"),
        ("<entity name=\"Product\"><attribute name=\"na me\" optional=\"YES\" attributeType=\"String\"/></entity>", "not ' '"),
        ("<entity name=\"Prödukt\"><attribute name=\"a\" optional=\"YES\" attributeType=\"String\"/></entity>", "not 'ö'"),
        ("<entity name=\"Product\"><attribute name=\"a\" optional=\"YES\" attributeType=\"String\"/><relationship name=\"x&quot;y\" optional=\"YES\" maxCount=\"1\" destinationEntity=\"Product\"/></entity>", "not '\"'"),
    ])
    func nameRules(_ body: String, _ rule: String) throws {
        let found = try problems(body)
        #expect(found.contains { $0.message.contains(rule) }, "\(found)")
    }

    @Test("a name that slipped past the rules is quoted, its quotes doubled; plain names stay as Core Data writes them")
    func quoting() {
        #expect(TableLayout.quoted("ZPRODUCT") == "ZPRODUCT")
        #expect(TableLayout.quoted("Z_2BLOCKING") == "Z_2BLOCKING")
        #expect(TableLayout.quoted("ZX\"; DROP TABLE ZPRODUCT; --") == "\"ZX\"\"; DROP TABLE ZPRODUCT; --\"")
        #expect(TableLayout.quoted("SELECT") == "\"SELECT\"")
    }

    @Test("a connection runs one statement per call: SQL after the first is refused and nothing of it runs")
    func oneStatement() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let connection = try SQLiteConnection(path: temp.appendingPathComponent("a.sqlite").path, mode: .readWrite(create: true))
        #expect(throws: SQLiteError.self) { try connection.execute("CREATE TABLE a (x); CREATE TABLE b (y)") }
        #expect(try connection.tableNames().isEmpty)
        try connection.execute("CREATE TABLE a (x);  \n")
        #expect(try connection.tableNames() == ["a"])
    }

    @Test("text with NUL bytes is stored and read whole, and keys that differ after a NUL stay apart")
    func nulBytes() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            try TestStack.category("A\u{0}B", in: context)
            try TestStack.category("A\u{0}C", in: context)
            try context.save()
        }
        #expect(try stack.sql("SELECT length(CAST(ZNAME AS BLOB)), hex(ZNAME) FROM ZCATEGORY ORDER BY ZNAME")
                == [[.integer(3), .text("410042")], [.integer(3), .text("410043")]])
        let fresh = stack.context()
        let names = try fresh.performAndWait {
            try fresh.fetch(FetchRequest(entityName: "Category", sortDescriptors: [FetchSortDescriptor("name")])).map {
                $0.value(forKey: "name") as? String
            }
        }
        #expect(names == ["A\u{0}B", "A\u{0}C"])
        let matched = try fresh.performAndWait {
            try fresh.count(for: FetchRequest(entityName: "Category", predicate: try FetchPredicate(format: "name == %@", "A\u{0}C")))
        }
        #expect(matched == 1)
    }

    @Test("ORs and ANDs of thousands of terms run on SQLite (a balanced tree, not SQLite's depth limit) and agree with the evaluator", .slow)
    func wideCompounds() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            for index in 0..<30 { try TestStack.category("C\(index)", in: context) }
            try context.save()
        }
        let wideOr = (0..<5_000).map { "name == 'C\($0)'" }.joined(separator: " OR ")
        let wideAnd = (0..<5_000).map { "name != 'X\($0)'" }.joined(separator: " AND ")
        let nested = "NOT (" + (0..<3_000).map { "name == 'C\($0 % 7)'" }.joined(separator: " OR ") + ")"
        for (format, expected) in [(wideOr, 30), (wideAnd, 30), (nested, 23)] {
            let predicate = try FetchPredicate(format: format)
            let counted = try context.performAndWait { try context.count(for: FetchRequest(entityName: "Category", predicate: predicate)) }
            #expect(counted == expected)
            let evaluated = try context.performAndWait {
                try context.fetch(FetchRequest(entityName: "Category")).filter { try predicate.evaluate(with: $0) }.count
            }
            #expect(evaluated == expected)
        }
    }

    @Test("a store that does not match the model says which tables and columns differ")
    func mismatchNamesColumns() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func model(_ attributes: [String]) throws -> ManagedObjectModel {
            try ManagedObjectModel(entities: [EntityDescription(name: "Thing", attributes: attributes.map { AttributeDescription(name: $0, type: .string) })])
        }
        let url = directory.appendingPathComponent("things.sqlite")
        _ = try SQLiteStore.create(at: url, model: try model(["a", "b"]))
        #expect {
            _ = try SQLiteStore(url: url, model: try model(["a", "c"]), readOnly: true)
        } throws: { error in
            let text = "\(error)"
            return text.contains("ZTHING lacks column ZC") && text.contains("ZTHING has column ZB the model does not")
        }
    }
}

