import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// A to-many relationship with no inverse, kept as Core Data keeps it (issue 43 §1; the guide's
/// "Creating Managed Object Relationships", "Unidirectional Relationships": allowed, with the
/// warning that the app keeps the graph consistent itself): no join table, the owner's `Z_PK`
/// in the destination's column `Z<source number><NAME>` (`ZPAGE.Z1PAGES` for entity 1 `Book`'s
/// `pages`), as measured on a store Core Data wrote for CoreDataPlus's SampleModel2 with
/// `Book.pages` and `Page.book` left without inverses.
@Suite("To-many relationships without an inverse")
struct ToManyWithoutInverseTests {
    typealias StoreType = PersistentStoreCoordinator.StoreType

    static func model() throws -> ManagedObjectModel { try SampleModel2.model(inverses: false) }

    @Test("the layout is Core Data's: ZPAGE.Z1PAGES INTEGER with ZPAGE_Z1PAGES_INDEX, no join table, no entity column")
    func layout() throws {
        let schema = TableLayout(model: try Self.model())
        let page = try #require(schema.table(named: "ZPAGE"))
        let column = try #require(page.columns.first { $0.name == "Z1PAGES" })
        #expect(column.declaredType == "INTEGER")
        #expect(column.role == .toManyOwner(entity: "Book", name: "pages"))
        #expect(!page.columns.contains { $0.name.hasPrefix("Z1_PAGES") || $0.name == "Z2PAGES" })
        // Page.book, a to-one without an inverse, keeps its key and entity columns.
        #expect(page.columns.map(\.name).contains("ZBOOK") && page.columns.map(\.name).contains("Z1_BOOK"))
        #expect(schema.joinTables.isEmpty)
        #expect(schema.createStatements.contains("CREATE INDEX ZPAGE_Z1PAGES_INDEX ON ZPAGE (Z1PAGES)"))
        #expect(!schema.createStatements.contains { $0.contains("Z_1PAGES") })
        #expect(schema.unknownLayouts.isEmpty)

        // The file Lade makes has it too.
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("books.sqlite")
        try SQLiteStore.createFile(at: url, model: try Self.model())
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        #expect(try !connection.tableNames().contains("Z_1PAGES"))
        let columns = try connection.rows("PRAGMA table_info(ZPAGE)").compactMap { row -> String? in
            if case .text(let name) = row[1] { return name } else { return nil } }
        #expect(columns.contains("Z1PAGES"))
        #expect(try connection.indexNames().contains("ZPAGE_Z1PAGES_INDEX"))
    }

    /// Adds an author and books with the pages numbered as given; each page's own `book` names
    /// its book too (the model's separate to-one, required).
    static func seed(_ context: ManagedObjectContext, _ books: [(title: String, pages: [Int])]) throws {
        try context.performAndWait {
            let author = try context.insertObject(forEntityName: "Author")
            try author.setValue("Ada", forKey: "alias")
            try author.setValue(36, forKey: "age")
            for entry in books {
                let book = try context.insertObject(forEntityName: "Book")
                try book.setValue(UUID(), forKey: "uniqueID")
                try book.setValue(entry.title, forKey: "title")
                try book.setValue(Decimal(10), forKey: "price")
                try book.setValue(Data([0]), forKey: "cover")
                try book.setValue(Date(timeIntervalSinceReferenceDate: 0), forKey: "publishedAt")
                try book.setObject(author, forKey: "author")
                for number in entry.pages {
                    let page = try context.insertObject(forEntityName: "Page")
                    try page.setValue(number, forKey: "number")
                    try page.setValue(Data([1]), forKey: "content")
                    try page.setObject(book, forKey: "book")
                    try book.add(page, toKey: "pages")
                }
            }
            try context.save()
        }
    }

    /// Each book's title with its pages' numbers and its stored `pagesCount`, read by a new stack.
    static func books(_ model: ManagedObjectModel, _ url: URL, _ type: StoreType) throws -> [String: (pages: [Int], count: Int?)] {
        let context = try privateContext(model: model, store: url, type: type)
        return try context.performAndWait {
            var found: [String: (pages: [Int], count: Int?)] = [:]
            for book in try context.fetch(FetchRequest(entityName: "Book")) {
                let numbers = book.objects(forKey: "pages").compactMap { $0["number"] as? Int }.sorted()
                found[book["title"] as! String] = (numbers, book["pagesCount"] as? Int)
            }
            return found
        }
    }

    static func titles(_ context: ManagedObjectContext, _ format: String) throws -> [String] {
        try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Book", predicate: try FetchPredicate(format: format)))
                .compactMap { $0["title"] as? String }.sorted()
        }
    }

    static func check(_ store: URL, _ type: StoreType, _ schema: PostgreSQLStoreTests.Schema?) throws {
        let model = try Self.model()
        let context = try privateContext(model: model, store: store, type: type)
        try Self.seed(context, [("A", [1, 2, 3]), ("B", [10]), ("C", [20])])
        var books = try Self.books(model, store, type)
        #expect(books["A"]?.pages == [1, 2, 3] && books["B"]?.pages == [10] && books["C"]?.pages == [20])
        // Derived `pages.@count` over the owner column, kept by the store.
        #expect(books["A"]?.count == 3 && books["B"]?.count == 1 && books["C"]?.count == 1)

        // Predicates through the relationship, in SQL.
        let reader = try privateContext(model: model, store: store, type: type)
        #expect(try Self.titles(reader, "ANY pages.number == 3") == ["A"])
        #expect(try Self.titles(reader, "ANY pages.number > 5") == ["B", "C"])
        #expect(try Self.titles(reader, "pages.@count == 1") == ["B", "C"])
        #expect(try Self.titles(reader, "pages.@count == 3") == ["A"])
        #expect(try Self.titles(reader, "SUBQUERY(pages, $p, $p.number < 3).@count == 2") == ["A"])

        // A page moved from A to C, and page 1 removed from A (it stays, owned by none).
        try context.performAndWait {
            let all = try context.fetch(FetchRequest(entityName: "Book"))
            let a = all.first { $0["title"] as? String == "A" }!, c = all.first { $0["title"] as? String == "C" }!
            let pages = a.objects(forKey: "pages")
            let two = pages.first { $0["number"] as? Int == 2 }!, one = pages.first { $0["number"] as? Int == 1 }!
            try a.remove(two, fromKey: "pages")
            try c.add(two, toKey: "pages")
            try a.remove(one, fromKey: "pages")
            try context.save()
        }
        books = try Self.books(model, store, type)
        #expect(books["A"]?.pages == [3] && books["C"]?.pages == [2, 20])
        #expect(books["A"]?.count == 1 && books["C"]?.count == 2)

        // One owner per destination, as Core Data's column keeps it: page 3 added to B alone
        // leaves A, in the store.
        try context.performAndWait {
            let all = try context.fetch(FetchRequest(entityName: "Book"))
            let b = all.first { $0["title"] as? String == "B" }!
            let three = try context.fetch(FetchRequest(entityName: "Page", predicate: try FetchPredicate(format: "number == 3"))).first!
            try b.add(three, toKey: "pages")
            try context.save()
        }
        books = try Self.books(model, store, type)
        #expect(books["A"]?.pages == [] && books["B"]?.pages == [3, 10])
        #expect(books["A"]?.count == 0 && books["B"]?.count == 2)

        // Deleting B cascades to its pages (the relationship's rule); deleting a page of C
        // clears it from C.
        try context.performAndWait {
            context.reset()
            let all = try context.fetch(FetchRequest(entityName: "Book"))
            context.delete(all.first { $0["title"] as? String == "B" }!)
            try context.save()
        }
        let remaining = try privateContext(model: model, store: store, type: type)
        let numbers = try remaining.performAndWait {
            try remaining.fetch(FetchRequest(entityName: "Page")).compactMap { $0["number"] as? Int }.sorted()
        }
        #expect(numbers == [1, 2, 20])
        books = try Self.books(model, store, type)
        #expect(books.keys.sorted() == ["A", "C"] && books["C"]?.pages == [2, 20])
    }

    @Test("a SQLite store keeps the relationship: saves, reads, predicates, @count, moves, one owner per page, cascade")
    func sqlite() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("books.sqlite")
        try Self.check(url, .sqlite, nil)
        // What Core Data would read: each page's owner in Z1PAGES.
        let rows = try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT p.ZNUMBER, b.ZTITLE FROM ZPAGE p LEFT JOIN ZBOOK b ON b.Z_PK = p.Z1PAGES ORDER BY p.ZNUMBER")
        #expect(rows.map { "\($0[0])/\($0[1])" } == [(Int64(1), SQLiteValue.null), (2, .text("C")), (20, .text("C"))].map { "\(SQLiteValue.integer($0.0))/\($0.1)" })
        let damage = try SQLiteStore(url: url, model: try Self.model(), readOnly: true).damage(thorough: true)
        #expect(damage.isEmpty, "\(damage)")
    }

    @Test("a PostgreSQL store keeps the relationship the same way")
    func postgresql() throws {
        let schema = try PostgreSQLStoreTests.Schema("no_inverse")
        try Self.check(schema.url, .postgresql, schema)
        let quoted = PostgresTestServer.quotedIdentifier(schema.name)
        #expect(try schema.server.psql("SELECT count(*) FROM pg_indexes WHERE schemaname = \(PostgresTestServer.quotedLiteral(schema.name)) AND indexname = 'ZPAGE_Z1PAGES_INDEX'") == "1")
        #expect(try schema.server.psql("SELECT string_agg(p.\"ZNUMBER\"::text || '/' || coalesce(b.\"ZTITLE\", 'none'), ' ' ORDER BY p.\"ZNUMBER\") FROM \(quoted).\"ZPAGE\" p LEFT JOIN \(quoted).\"ZBOOK\" b ON b.\"Z_PK\" = p.\"Z1PAGES\"") == "1/none 2/C 20/C")
    }

    @Test("a dangling owner key is damage lade check reports")
    func danglingOwner() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("books.sqlite")
        try Self.seed(try privateContext(model: try Self.model(), store: url, type: .sqlite), [("A", [1])])
        let connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
        try connection.execute("UPDATE ZPAGE SET Z1PAGES = 999")
        let damage = try SQLiteStore(url: url, model: try Self.model(), readOnly: true).damage(thorough: false)
        let found = try #require(damage.first { $0.place == "Book.pages" })
        #expect(found.kind == .danglingReference && found.count == 1)
        #expect(found.example.contains("Z1PAGES 999"), "\(found.example)")
    }

    /// A model with one relationship of a layout no Apple-written store shows.
    static func unknownLayoutModel(ordered: Bool) throws -> ManagedObjectModel {
        let owner = EntityDescription(
            name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: ordered ? nil : "owners", isToMany: true, isOrdered: ordered)])
        let item = EntityDescription(
            name: "Item", attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: ordered ? [] : [RelationshipDescription(name: "owners", destinationEntityName: "Owner", inverseName: nil, isToMany: true)])
        return try ManagedObjectModel(entities: [owner, item])
    }

    @Test("an ordered to-many without an inverse, and a many-to-many whose other side names no inverse: no store is made, the error names the relationship", arguments: [true, false])
    func unknownLayoutsRefused(ordered: Bool) throws {
        let model = try Self.unknownLayoutModel(ordered: ordered)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("refused.sqlite")
        let error = try #require(throws: StoreError.self) { try SQLiteStore.createFile(at: url, model: model) }
        #expect(error.kind == .unsupportedModel)
        #expect("\(error)".contains(ordered ? "Owner.items" : "Item.owners"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
        let schema = try PostgreSQLStoreTests.Schema("unknown_layout")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let pgError = try #require(throws: StoreError.self) { try coordinator.addPersistentStore(type: .postgresql, at: schema.url) }
        #expect("\(pgError)".contains(ordered ? "Owner.items" : "Item.owners"), "\(pgError)")
        // The atomic stores keep the relationship by name: they take the model.
        let xml = directory.appendingPathComponent("kept.xml")
        let context = try privateContext(model: model, store: xml, type: .xml)
        try context.performAndWait {
            let owner = try context.insertObject(forEntityName: "Owner")
            try owner.add(try context.insertObject(forEntityName: "Item"), toKey: "items")
            try context.save()
        }
    }

    @Test("a store Lade made before it kept Core Data's layout (join table Z_1PAGES) is refused naming the table and column, never read as empty")
    func earlierLayoutRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("earlier.sqlite")
        try Self.seed(try privateContext(model: try Self.model(), store: url, type: .sqlite), [("A", [1])])
        let connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
        for trigger in try connection.rows("SELECT name FROM sqlite_master WHERE type = 'trigger'") {
            if case .text(let name) = trigger[0] { try connection.execute("DROP TRIGGER \(name)") }
        }
        try connection.execute("DROP INDEX ZPAGE_Z1PAGES_INDEX")
        try connection.execute("CREATE TABLE Z_1PAGES ( Z_1BOOK INTEGER, Z_4PAGES INTEGER, PRIMARY KEY (Z_1BOOK, Z_4PAGES) )")
        try connection.execute("INSERT INTO Z_1PAGES SELECT Z1PAGES, Z_PK FROM ZPAGE")
        try connection.execute("ALTER TABLE ZPAGE DROP COLUMN Z1PAGES")
        for readOnly in [true, false] {
            let error = try #require(throws: StoreError.self) { try SQLiteStore(url: url, model: try Self.model(), readOnly: readOnly) }
            #expect("\(error)".contains("ZPAGE lacks column Z1PAGES"), "\(error)")
            #expect("\(error)".contains("Z_1PAGES"), "\(error)")
        }
    }
}

private func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("lade-no-inverse-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
