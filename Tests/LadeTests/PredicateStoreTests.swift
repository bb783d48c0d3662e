import Foundation
import Testing
@testable import Lade

@Suite("Predicates and sort descriptors on the SQLite store")
struct PredicateStoreTests {
    private func compile(_ format: String, _ arguments: PredicateValue..., sort: [FetchSortDescriptor] = []) throws -> SQLPredicateCompiler.Query {
        let model = try PredicateTestStack.makeModel()
        var compiler = SQLPredicateCompiler(model: model, schema: TableLayout(model: model), entity: "Item")
        return try compiler.compile(FetchPredicate(format: format, arguments: arguments), sortDescriptors: sort, entityNumbers: [1, 2])
    }

    @Test("values are bound as numbered parameters, never written into the SQL")
    func parameters() throws {
        let query = try compile("str == %@ OR note BEGINSWITH[c] 'x\\'); DROP TABLE ZITEM; --' OR i32 BETWEEN {-7, 7} OR dec == 2.5", "O'Brien")
        #expect(!query.whereClause.contains("O'Brien") && !query.whereClause.contains("DROP") && !query.whereClause.contains("7"))
        #expect(query.arguments == [.text("O'Brien"), .text("x'); DROP TABLE ZITEM; --"), .integer(-7), .integer(7), .real(2.5)])
        #expect(query.whereClause.contains("?1") && query.whereClause.contains("?5"))
    }

    @Test("to-one key paths join, to-many ones are EXISTS subqueries, collection operators scalar subqueries")
    func shapes() throws {
        let toOne = try compile("owner.manager.name == 'a' AND owner.score > 1")
        #expect(toOne.from == "ZITEM t0 LEFT JOIN ZOWNER t1 ON t1.Z_PK = t0.ZOWNER LEFT JOIN ZOWNER t2 ON t2.Z_PK = t1.ZMANAGER", "one join per relationship, shared")
        let any = try compile("ANY tags.label == 'a'")
        #expect(any.whereClause.contains("EXISTS (SELECT 1 FROM Z_1TAGS t1_j JOIN ZTAG t1 ON t1.Z_PK = t1_j.Z_4TAGS WHERE t1_j.Z_1ITEMS = t0.Z_PK"))
        let all = try compile("ALL owner.items.i32 > 0")
        #expect(all.whereClause.contains("NOT EXISTS (SELECT 1 FROM ZITEM t2 WHERE (t2.ZOWNER = t1.Z_PK AND t2.Z_ENT IN (1, 2)) AND NOT COALESCE("))
        let count = try compile("tags.@count > 1 AND tags.@sum.weight < 3")
        #expect(count.whereClause.contains("(SELECT COUNT(*) FROM Z_1TAGS") && count.whereClause.contains("(SELECT COALESCE(SUM(t2.ZWEIGHT), 0) FROM"))
        let folded = try compile("str ==[cd] 'a' AND str LIKE 'a*'")
        #expect(folded.whereClause.contains("lade_fold(t0.ZSTR, 3) IS lade_fold(?1, 3)") && folded.whereClause.contains("lade_text_test('LIKE', t0.ZSTR, ?2, 0)"))
        let sorted = try compile("TRUEPREDICATE", sort: [FetchSortDescriptor("str", comparator: .localizedStandardCompare), FetchSortDescriptor("owner.name", ascending: false, comparator: .caseInsensitiveCompare)])
        #expect(sorted.orderBy == "t0.ZSTR COLLATE LADE_LOCALIZEDSTANDARD ASC, t1.ZNAME COLLATE LADE_CASEINSENSITIVE DESC, t0.Z_PK")
    }

    @Test("every connection has Lade's SQL functions and collations, running the evaluator's code")
    func functions() throws {
        let connection = try SQLiteConnection(path: ":memory:", mode: .readWrite(create: true))
        let row = try #require(try connection.rows(
            "SELECT lade_fold('Straße', 1), lade_text_test('LIKE', 'café', 'CAF?', 3), lade_text_test('MATCHES', 'abc', 'a|abc', 0), 'file10' < 'file2' COLLATE LADE_LOCALIZEDSTANDARD, 'A' = 'a' COLLATE LADE_CASEINSENSITIVE").first)
        #expect(row == [.text("strasse"), .integer(1), .integer(1), .integer(0), .integer(1)])
        #expect(throws: SQLiteError.self) { try connection.rows("SELECT lade_text_test('MATCHES', 'a', '(', 0)") }
    }

    @Test("a regular expression that does not compile fails the fetch as it fails the evaluator")
    func badPattern() throws {
        let stack = try PredicateTestStack()
        try stack.populate(seed: 1, items: 3, gadgets: 0, owners: 1, tags: 1)
        let context = stack.context()
        _ = context.performAndWait {
            #expect {
                try context.fetch(FetchRequest(entityName: "Item", predicate: try FetchPredicate(format: "str MATCHES 'a('")))
            } throws: { error in
                if case FetchPredicateError.invalidRegularExpression(pattern: "a(", reason: _)? = error as? FetchPredicateError { true } else { false }
            }
        }
    }

    @Test("unsaved objects are judged in memory with the meaning SQL gives saved ones")
    func pendingChanges() throws {
        let stack = try PredicateTestStack()
        let context = stack.context()
        try context.performAndWait {
            for (index, text) in ["Straße", "cafe\u{301}", "file10", "file2", "ZEBRA"].enumerated() {
                let item = try context.insertObject(forEntityName: "Item")
                try item.setValue(text, forKey: "str")
                try item.setValue(index, forKey: "i32")
            }
            func strings(_ format: String, _ sort: [FetchSortDescriptor] = [FetchSortDescriptor("i32")]) throws -> [String] {
                try context.fetch(FetchRequest(entityName: "Item", predicate: FetchPredicate(format: format), sortDescriptors: sort)).compactMap { $0["str"] as? String }
            }
            let formats = ["str ==[c] 'STRASSE'", "str BEGINSWITH[cd] 'CAFÉ'", "str LIKE 'file?*'", "str MATCHES '[A-Z]+'", "str < 'a'"]
            let unsaved = try formats.map { try strings($0) }
            let sortedUnsaved = try strings("TRUEPREDICATE", [FetchSortDescriptor("str", comparator: .localizedStandardCompare)])
            #expect(unsaved == [["Straße"], ["cafe\u{301}"], ["file10", "file2"], ["ZEBRA"], ["Straße", "ZEBRA"]])
            #expect(sortedUnsaved == ["cafe\u{301}", "file2", "file10", "Straße", "ZEBRA"])
            try context.save()
            #expect(try formats.map { try strings($0) } == unsaved, "the same answers from SQL once saved")
            #expect(try strings("TRUEPREDICATE", [FetchSortDescriptor("str", comparator: .localizedStandardCompare)]) == sortedUnsaved)
        }
    }

    @Test("nil sorts first ascending and last descending; case-insensitive ties fall to the next descriptor, in SQL and in memory alike")
    func sortOrder() throws {
        let stack = try PredicateTestStack()
        let context = stack.context()
        try context.performAndWait {
            for (text, number) in [("b", 1), (nil, 2), ("B", 3), ("a", 4), (nil, 5)] as [(String?, Int)] {
                let item = try context.insertObject(forEntityName: "Item")
                try item.setValue(text, forKey: "str")
                try item.setValue(number, forKey: "i32")
            }
            func order(_ sort: [FetchSortDescriptor]) throws -> [Int] {
                try context.fetch(FetchRequest(entityName: "Item", sortDescriptors: sort)).compactMap { $0["i32"] as? Int }
            }
            let cases: [([FetchSortDescriptor], [Int])] = [
                ([FetchSortDescriptor("str")], [2, 5, 3, 4, 1]),
                ([FetchSortDescriptor("str", ascending: false)], [1, 4, 3, 2, 5]),
                ([FetchSortDescriptor("str", comparator: .caseInsensitiveCompare), FetchSortDescriptor("i32", ascending: false)], [5, 2, 4, 3, 1]),
                ([FetchSortDescriptor("str", comparator: .localizedStandardCompare)], [2, 5, 4, 3, 1]),
            ]
            for (sort, expected) in cases {
                let actual = try order(sort)
                #expect(actual == expected, "unsaved, in memory: \(sort)")
            }
            try context.save()
            for (sort, expected) in cases {
                #expect(try order(sort) == expected, "saved, in SQL: \(sort)")
            }
            #expect(throws: FetchPredicateError.self) { try order([FetchSortDescriptor("tags.label")]) }
            #expect(throws: FetchPredicateError.self) { try order([FetchSortDescriptor("owner")]) }
        }
    }
}
