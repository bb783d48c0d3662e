import Foundation
import Testing
@testable import Lade
import LadeTestSupport
import LadeTestTraits

/// `Book.pagesCount` = `pages.@count` (SampleModel2) in a PostgreSQL store, on the real test
/// server: kept by the store's triggers through saves, multi-row statements of any writer,
/// concurrent writers, migration and reopening, as a SQLite store keeps it by Core Data's.
@Suite("PostgreSQL: derived attributes")
struct PostgreSQLDerivedAttributeTests {
    typealias Schema = PostgreSQLStoreTests.Schema
    typealias Books = DerivedAttributeTests

    /// Books whose stored count is not the number of their pages, as "key:stored/actual".
    static func wrongCounts(_ schema: Schema) throws -> String {
        let s = PostgresTestServer.quotedIdentifier(schema.name)
        return try schema.server.psql("""
            SELECT coalesce(string_agg(b."Z_PK" || ':' || coalesce(b."ZPAGESCOUNT"::text, 'NULL') || '/' || (SELECT count(*) FROM \(s)."ZPAGE" p WHERE p."ZBOOK" = b."Z_PK"), ' '), '')
            FROM \(s)."ZBOOK" b WHERE b."ZPAGESCOUNT" IS DISTINCT FROM (SELECT count(*) FROM \(s)."ZPAGE" p WHERE p."ZBOOK" = b."Z_PK")
            """)
    }

    static func triggerCount(_ schema: Schema) throws -> String {
        try schema.server.psql("SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = \(PostgresTestServer.quotedLiteral(PostgresTestServer.quotedIdentifier(schema.name)))::regnamespace AND NOT t.tgisinternal AND t.tgname LIKE 'Z\\_DA\\_%'")
    }

    @Test("saves keep Book.pagesCount right: pages added, deleted and moved; the context holds the counts the triggers set; a later change saves without a version conflict")
    func saves() throws {
        let schema = try Schema("derived_saves")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try SampleModel2.model())
        try coordinator.addPersistentStore(type: .postgresql, at: schema.url)
        #expect(try Self.triggerCount(schema) == "4")
        let (first, second) = try Books.seed(coordinator)
        let context = Books.context(coordinator)
        try context.performAndWait {
            let (one, two) = (try Books.book(first, in: context), try Books.book(second, in: context))
            #expect(Books.pagesCount(one) == 2)
            #expect(Books.pagesCount(two) == 1)
        }
        try Books.exercise(coordinator, first: first, second: second, checkTable: { () throws -> Void in
            #expect(try Self.wrongCounts(schema) == "")
        })
    }

    @Test("multi-row statements of any writer (psql: INSERT of many pages, UPDATE moving some both ways and leaving others, DELETE) keep every count right")
    func statements() throws {
        let schema = try Schema("derived_statements")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try SampleModel2.model())
        try coordinator.addPersistentStore(type: .postgresql, at: schema.url)
        _ = try Books.seed(coordinator)
        let s = PostgresTestServer.quotedIdentifier(schema.name)
        let books = try schema.server.psql("SELECT string_agg(\"Z_PK\"::text, ',' ORDER BY \"Z_PK\") FROM \(s).\"ZBOOK\"").split(separator: ",")
        try #require(books.count == 2)
        let (one, two) = (books[0], books[1])
        let page = try schema.server.psql("SELECT \"Z_ENT\" FROM \(s).\"Z_PRIMARYKEY\" WHERE \"Z_NAME\" = 'Page'")
        // 300 pages: a third to each book, a third to none.
        _ = try schema.server.psql("""
            INSERT INTO \(s)."ZPAGE" ("Z_PK", "Z_ENT", "Z_OPT", "ZNUMBER", "ZBOOK")
            SELECT 1000 + g, \(page), 1, g, CASE g % 3 WHEN 0 THEN \(one) WHEN 1 THEN \(two) END FROM generate_series(1, 300) g
            """)
        #expect(try Self.wrongCounts(schema) == "")
        #expect(try schema.server.psql("SELECT sum(\"ZPAGESCOUNT\") FROM \(s).\"ZBOOK\"") == "203")
        // Moves one way and the other, to and from none, and rows whose book stays.
        _ = try schema.server.psql("""
            UPDATE \(s)."ZPAGE" SET "ZBOOK" = CASE WHEN "ZNUMBER" % 2 = 0 THEN \(one) ELSE \(two) END, "ZNUMBER" = "ZNUMBER" + 1 WHERE "Z_PK" > 1000 AND "ZNUMBER" <= 150
            """)
        #expect(try Self.wrongCounts(schema) == "")
        _ = try schema.server.psql("DELETE FROM \(s).\"ZPAGE\" WHERE \"Z_PK\" > 1000 AND \"ZNUMBER\" % 5 = 0")
        #expect(try Self.wrongCounts(schema) == "")
        // A new book counts the pages that name it already.
        _ = try schema.server.psql("UPDATE \(s).\"ZPAGE\" SET \"ZBOOK\" = 999 WHERE \"Z_PK\" BETWEEN 1001 AND 1010")
        let book = try schema.server.psql("SELECT \"Z_ENT\" FROM \(s).\"Z_PRIMARYKEY\" WHERE \"Z_NAME\" = 'Book'")
        _ = try schema.server.psql("INSERT INTO \(s).\"ZBOOK\" (\"Z_PK\", \"Z_ENT\", \"Z_OPT\", \"ZTITLE\") VALUES (999, \(book), 1, 'late')")
        let named = try schema.server.psql("SELECT count(*) FROM \(s).\"ZPAGE\" WHERE \"ZBOOK\" = 999")
        #expect(named == "8", "pages 1001…1010 less the two deleted")
        #expect(try schema.server.psql("SELECT \"ZPAGESCOUNT\" FROM \(s).\"ZBOOK\" WHERE \"Z_PK\" = 999") == named)
        #expect(try Self.wrongCounts(schema) == "")
    }

    @Test("batch insert sessions (COPY, INSERT … ON CONFLICT, UPDATE … FROM) keep the counts right, with pages wired to books by key")
    func batchInserts() throws {
        let schema = try Schema("derived_batch")
        // Pages found by their number, so a second round updates them.
        var entities = try SampleModel2.model().entities
        let page = try #require(entities.firstIndex { $0.name == "Page" })
        entities[page].uniquenessConstraints = [["number"]]
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(entities: entities))
        try coordinator.addPersistentStore(type: .postgresql, at: schema.url)
        let context = Books.context(coordinator)
        try context.performAndWait {
            // Two books of one page each, numbered apart from the pages written below.
            let author = try context.insertObject(forEntityName: "Author")
            try author.setValue("Ada", forKey: "alias")
            try author.setValue(36, forKey: "age")
            var books: [ManagedObject] = []
            for number in [10_001, 10_002] {
                let book = try context.insertObject(forEntityName: "Book")
                for (key, value) in [("uniqueID", UUID() as Any), ("title", "t"), ("price", Decimal(1)), ("cover", Data([0])), ("publishedAt", Date())] {
                    try book.setValue(value, forKey: key)
                }
                try book.setObject(author, forKey: "author")
                try Books.addPage(number, to: book, in: context)
                books.append(book)
            }
            try context.save()
            let (one, two) = (books[0].objectID, books[1].objectID)
            for round in 0..<2 {
                let session = try context.beginBatchInsert(entityName: "Page")
                let target = try session.target(entityName: "Page", attributes: ["number", "content"], relationships: ["book"], key: ["number"])
                // Round 2 moves every page to the other book and adds as many.
                let rows = (1...400).map { number -> BatchInsertSession.Row in
                    let book = (number % 2 == 0) != (round == 1) ? one : two
                    return .init(values: [.integer(Int64(number + (round == 1 && number > 200 ? 1000 : 0))), .binary(Data([1]))], destinations: [book])
                }
                _ = try #require(try session.write(rows, to: target))
                try session.commit()
                #expect(try Self.wrongCounts(schema) == "", "round \(round + 1)")
            }
        }
    }

    @Test("two writers adding pages to the same books at once (each book's version conflicts resolved by mergeByPropertyObjectTrump): every count right")
    func concurrentWriters() async throws {
        let schema = try Schema("derived_concurrent")
        let model = try SampleModel2.model()
        let seeding = PersistentStoreCoordinator(managedObjectModel: model)
        try seeding.addPersistentStore(type: .postgresql, at: schema.url)
        let (first, second) = try Books.seed(seeding)
        let url = schema.url
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<2 {
                group.addTask {
                    let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
                    try coordinator.addPersistentStore(type: .postgresql, at: url)
                    let context = Books.context(coordinator)
                    // A page added to a book changes the book (its to-many), as in Core Data.
                    context.mergePolicy = .mergeByPropertyObjectTrump
                    try context.performAndWait {
                        let books = [try Books.book(first, in: context), try Books.book(second, in: context)]
                        for round in 0..<10 {
                            for number in 0..<5 { try Books.addPage(writer * 1000 + round * 10 + number, to: books[(round + writer) % 2], in: context) }
                            try context.save()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try Self.wrongCounts(schema) == "")
        let s = PostgresTestServer.quotedIdentifier(schema.name)
        #expect(try schema.server.psql("SELECT sum(\"ZPAGESCOUNT\") FROM \(s).\"ZBOOK\"") == "103")
    }

    @Test("a store whose triggers are gone gets them when opened for writing, its counts set from the rows; read-only, it is left as it is")
    func reopenedWithoutTriggers() throws {
        let schema = try Schema("derived_reopen")
        let model = try SampleModel2.model()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .postgresql, at: schema.url)
        let (first, second) = try Books.seed(coordinator)
        let s = PostgresTestServer.quotedIdentifier(schema.name)
        _ = try schema.server.psql("DROP FUNCTION \(s).\"Z_DA_ZPAGE_Book_pagesCount_PARAMETER_INSERT\"() CASCADE; UPDATE \(s).\"ZBOOK\" SET \"ZPAGESCOUNT\" = 7")
        #expect(try Self.triggerCount(schema) == "3")
        let readOnly = PersistentStoreCoordinator(managedObjectModel: model)
        try readOnly.addPersistentStore(type: .postgresql, at: schema.url, readOnly: true)
        #expect(try Self.triggerCount(schema) == "3")
        #expect(try Self.wrongCounts(schema) != "")
        let reopened = PersistentStoreCoordinator(managedObjectModel: model)
        try reopened.addPersistentStore(type: .postgresql, at: schema.url)
        #expect(try Self.triggerCount(schema) == "4")
        #expect(try Self.wrongCounts(schema) == "")
        try Books.exercise(reopened, first: first, second: second, checkTable: { () throws -> Void in #expect(try Self.wrongCounts(schema) == "") })
    }

    @Test("lightweight migration keeps the triggers: the new tables get them and the counts stay right (in a store without history, and with)",
          arguments: [false, true])
    func migrationKeepsTriggers(history: Bool) throws {
        let schema = try Schema("derived_migrate")
        let source = try SampleModel2.model()
        try PersistentStoreCoordinator.createStore(at: schema.url, type: .postgresql, model: source, history: history)
        let (first, second) = try {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: source)
            try coordinator.addPersistentStore(type: .postgresql, at: schema.url)
            return try Books.seed(coordinator)
        }()
        var entities = source.entities
        let index = try #require(entities.firstIndex { $0.name == "Feedback" })
        entities[index].attributes.append(AttributeDescription(name: "helpful", type: .boolean))
        let destination = try ManagedObjectModel(entities: entities)
        try LightweightMigration(store: schema.url, from: source, to: destination).run()
        #expect(try Self.triggerCount(schema) == "4")
        let s = PostgresTestServer.quotedLiteral(PostgresTestServer.quotedIdentifier(schema.name))
        let historyFunctions = try schema.server.psql("SELECT count(*) FROM pg_proc WHERE pronamespace = \(s)::regnamespace AND proname LIKE 'lade\\_history%'")
        #expect(try schema.server.psql("SELECT count(*) FROM pg_proc WHERE pronamespace = \(s)::regnamespace AND proname LIKE 'Z\\_DA\\_%'") == "4", "no function is left behind")
        #expect((historyFunctions == "0") != history, "history's functions: \(historyFunctions)")
        do {
            let migrated = PersistentStoreCoordinator(managedObjectModel: destination)
            try migrated.addPersistentStore(type: .postgresql, at: schema.url)
            try Books.exercise(migrated, first: first, second: second, checkTable: { () throws -> Void in #expect(try Self.wrongCounts(schema) == "") })
        }
        // A version where pagesCount is a plain attribute: its triggers and functions go.
        var plain = destination.entities
        let book = try #require(plain.firstIndex { $0.name == "Book" })
        let count = try #require(plain[book].attributes.firstIndex { $0.name == "pagesCount" })
        plain[book].attributes[count].derivationExpression = nil
        try LightweightMigration(store: schema.url, from: destination, to: try ManagedObjectModel(entities: plain)).run()
        #expect(try Self.triggerCount(schema) == "0")
        #expect(try schema.server.psql("SELECT count(*) FROM pg_proc WHERE pronamespace = \(s)::regnamespace AND proname LIKE 'Z\\_DA\\_%'") == "0")
        if history {
            // Every save and migration above is in the history; the last transaction is the
            // exercise's last save, not a migration (which records nothing).
            #expect(try PersistentStoreCoordinator.history(ofStoreAt: schema.url).count >= 5)
        }
    }

    @Test("derivations a PostgreSQL store does not keep are refused, naming the attribute and the form; nothing is made",
          arguments: ["author.alias", "pages.@sum.number", "now()", "lowercase:(title)", "canonical:(title)", "title"])
    func refusedForms(derivation: String) throws {
        let schema = try Schema("derived_refused")
        let type: AttributeType = derivation == "now()" ? .date : derivation.contains("pages") ? .integer64 : .string
        let model = try SampleModel2.model(derivation: derivation, derivedType: type)
        let error = #expect(throws: DerivedAttributeError.self) {
            _ = try PersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(type: .postgresql, at: schema.url)
        }
        #expect(error?.code == "model.derivedAttribute")
        #expect(error.map { "\($0)" }?.contains("'pagesCount'") == true && error.map { "\($0)" }?.contains(derivation) == true, "\(String(describing: error))")
        #expect(try schema.server.psql("SELECT count(*) FROM pg_namespace WHERE nspname = \(PostgresTestServer.quotedLiteral(schema.name))") == "0")
    }
}
