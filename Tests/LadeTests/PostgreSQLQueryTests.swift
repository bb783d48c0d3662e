import Foundation
import Testing
@testable import Lade

/// Predicates and sorts compiled to PostgreSQL's SQL (the real server): what PostgreSQL decides
/// as the evaluator does is said in SQL, the rest is narrowed soundly and left to the evaluator.
@Suite("PostgreSQL queries: predicates and sorts compiled to SQL")
struct PostgreSQLQueryTests {
    private func query(_ stack: PredicateTestStack, _ format: String, _ arguments: [PredicateValue] = [], sort: [FetchSortDescriptor] = []) throws -> PostgreSQLQuery {
        let store = try #require(stack.coordinator.persistentStores.first as? PostgreSQLStore)
        let request = StoreFetchRequest(entityName: "Item", predicate: try FetchPredicate(format: format, arguments: arguments), sortDescriptors: sort)
        return try PostgreSQLQuery(request, store: store)
    }

    @Test("plain comparisons, key paths through to-one and to-many relationships, collection operators and sorts compile exactly; [c], MATCHES, LIKE and folding sorts do not")
    func exactness() throws {
        let stack = try PredicateTestStack(type: .postgresql)
        let ids = try stack.populate(seed: 7)
        let tag = try #require(ids["Tag"]?.first), owner = try #require(ids["Owner"]?.first)
        let uuid = PredicateValue.attribute(.uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!))
        let date = PredicateValue.attribute(.date(Date(timeIntervalSinceReferenceDate: 86_400.5)))
        let exact: [(String, [PredicateValue])] = [
            ("i32 > 3", []), ("str == 'abc'", []), ("owner.name == 'x'", []), ("ANY tags.label == 'y'", []),
            ("dbl BETWEEN {1, 2}", []), ("uuid == %@", [uuid]), ("date < %@", [date]), ("flag == YES", []),
            ("NOT (i64 IN {1, 2})", []), ("tags.@count > 1", []), ("i64 > 9007199254740992.5", []), ("str < 'b' OR note >= 'é'", []),
            ("owner == %@", [.object(owner)]), ("tags CONTAINS %@", [.object(tag)]), ("str BEGINSWITH 'ca' AND note ENDSWITH 'e' AND NOT (str CONTAINS 'ß')", []),
            ("SUBQUERY(tags, $t, $t.weight > 1).@count > 0", []), ("owner.items.@sum.i32 > 3", []), ("ALL tags.label != 'a'", []),
            ("str != nil AND bin > %@", [.attribute(.binary(Data([0])))]), ("i16 == 1.5 OR i32 <= -0.5", []),
        ]
        for (format, arguments) in exact {
            let compiled = try query(stack, format, arguments)
            #expect(compiled.predicateIsExact, "\(format)")
        }
        for format in ["str ==[c] 'a'", "str MATCHES 'a.*'", "str LIKE 'a*'", "ANY tags.label BEGINSWITH[cd] 'e'", "dec > 1", "tags.@sum.weight > 1",
                       "i32 > 3 AND NOT (str ==[d] 'e')", "SUBQUERY(tags, $t, $t.label ==[c] 'a').@count > 0"] {
            #expect(try !query(stack, format).predicateIsExact, "\(format)")
        }
        let sorted = try query(stack, "i32 > 3", sort: [FetchSortDescriptor("str"), FetchSortDescriptor("owner.score", ascending: false), FetchSortDescriptor("date")])
        #expect(sorted.isExact)
        #expect(sorted.select("t0.\"Z_PK\"", prefix: "").contains("COLLATE \"C\" ASC NULLS FIRST"))
        #expect(try !query(stack, "i32 > 3", sort: [FetchSortDescriptor("str", comparator: .caseInsensitiveCompare)]).orderIsExact)
        #expect(try !query(stack, "i32 > 3", sort: [FetchSortDescriptor("dec")]).orderIsExact)
        // What SQL cannot say still narrows: the plain half of an AND is in the WHERE clause.
        let narrowed = try query(stack, "i32 > 3 AND str ==[c] 'a'")
        #expect(narrowed.select("1", prefix: "").contains("\"ZI32\" >"))
        // A comparison with options is false where the key is nil, and true where the bytes are equal.
        #expect(try query(stack, "str ==[c] 'a'").select("1", prefix: "").contains("t0.\"ZSTR\" IS NOT NULL"))
        #expect(try query(stack, "NOT (ANY tags.label ==[cd] 'a')").select("1", prefix: "").contains("NOT (EXISTS"))
    }

    @Test("a predicate the evaluator finishes reads the to-one destinations it follows for all rows at once: one statement per step, not one per object")
    func toOnePrefetch() throws {
        let stack = try PredicateTestStack(type: .postgresql)
        let context = stack.context()
        try context.performAndWait {
            for number in 0..<100 {
                let manager = try context.insertObject(forEntityName: "Owner")
                try manager.setAttributeValue(.string("M\(number % 7)"), forKey: "name")
                let owner = try context.insertObject(forEntityName: "Owner")
                try owner.setAttributeValue(.string("o\(number)"), forKey: "name")
                try owner.setObject(manager, forKey: "manager")
                let item = try context.insertObject(forEntityName: "Item")
                try item.setAttributeValue(.integer(Int64(number)), forKey: "i32")
                try item.setObject(owner, forKey: "owner")
            }
            try context.save()
        }
        let store = try #require(stack.coordinator.persistentStores.first as? PostgreSQLStore)
        let request = StoreFetchRequest(entityName: "Item", predicate: try FetchPredicate(format: "owner.manager.name ==[c] 'm3' AND owner.name BEGINSWITH[c] 'O'"),
                                        sortDescriptors: [FetchSortDescriptor("owner.name", comparator: .caseInsensitiveCompare)])
        let before = store.connection.statementsSent
        let rows = try store.fetch(request)
        let sent = store.connection.statementsSent - before
        #expect(rows.count == 14)
        let numbers: [Int] = (0..<100).filter { $0 % 7 == 3 }.sorted { "o\($0)" < "o\($1)" }
        let expected: [AttributeValue] = numbers.map { .integer(Int64($0)) }
        let found: [AttributeValue] = rows.compactMap { $0.attributes["i32"] ?? nil }
        #expect(found == expected)
        #expect(sent <= 3, "\(sent) statements: the items, their owners, the owners' managers")

        // Through a to-many relationship (a join table): the tags of every item in one read.
        try context.performAndWait {
            let items = try context.fetch(FetchRequest(entityName: "Item"))
            for (index, item) in items.enumerated() {
                for label in ["e\(index % 5)", "x\(index)"] {
                    let tag = try context.insertObject(forEntityName: "Tag")
                    try tag.setAttributeValue(.string(label), forKey: "label")
                    try item.add(tag, toKey: "tags")
                }
            }
            try context.save()
        }
        let tagged = StoreFetchRequest(entityName: "Item", predicate: try FetchPredicate(format: "ANY tags.label BEGINSWITH[cd] 'É2'"))
        let start = store.connection.statementsSent
        #expect(try store.fetch(tagged).count == 20)
        let tagReads = store.connection.statementsSent - start
        #expect(tagReads <= 3, "\(tagReads) statements: the items, their tags' keys, the tags")
    }

    @Test("NaN, integers past 2^53 against doubles, NUL in a constant: SQL answers as the evaluator")
    func edgeValues() throws {
        let stack = try PredicateTestStack(type: .postgresql)
        let context = stack.context()
        let values: [(Double?, Int64?)] = [(.nan, 9_007_199_254_740_993), (1, 9_007_199_254_740_992), (nil, nil), (-.infinity, Int64.max), (.infinity, Int64.min)]
        try context.performAndWait {
            for (double, integer) in values {
                let item = try context.insertObject(forEntityName: "Item")
                try item.setAttributeValue(double.map { .double($0) }, forKey: "dbl")
                try item.setAttributeValue(integer.map { .integer($0) }, forKey: "i64")
                try item.setAttributeValue(.string("a"), forKey: "str")
            }
            try context.save()
        }
        let formats: [(String, [PredicateValue])] = [
            ("dbl > 0", []), ("dbl < 2", []), ("dbl == %@", [.attribute(.double(.nan))]), ("dbl != %@", [.attribute(.double(.nan))]), ("dbl != 1", []),
            ("NOT (dbl <= 1)", []), ("dbl IN {1, 2}", []), ("dbl == nil", []), ("dbl >= -1", []), ("NOT (dbl >= -1)", []),
            ("i64 > %@", [.attribute(.double(9_007_199_254_740_992))]), ("i64 == %@", [.attribute(.double(9_007_199_254_740_992))]),
            ("i64 >= %@", [.attribute(.double(9.3e18))]), ("i64 < %@", [.attribute(.double(-9.3e18))]), ("i64 <= %@", [.attribute(.double(9_007_199_254_740_993))]),
            ("dbl < %@", [.attribute(.integer(9_007_199_254_740_993))]), ("str == %@", [.attribute(.string("a\u{0}b"))]), ("NOT (str BEGINSWITH %@)", [.attribute(.string("a\u{0}"))]),
        ]
        try context.performAndWait {
            var all = FetchRequest(entityName: "Item")
            all.returnsObjectsAsFaults = false
            let objects = try context.fetch(all)
            for (format, arguments) in formats {
                let predicate = try FetchPredicate(format: format, arguments: arguments)
                let fetched = Set(try context.fetch(FetchRequest(entityName: "Item", predicate: predicate)).map(\.objectID))
                let evaluated = Set(try objects.filter { try predicate.evaluate(with: $0) }.map(\.objectID))
                #expect(fetched == evaluated, "\(format): store \(fetched.count), evaluator \(evaluated.count)")
                #expect(try context.count(for: FetchRequest(entityName: "Item", predicate: predicate)) == evaluated.count, "\(format)")
            }
        }
    }
}
