import Foundation
import Testing
@testable import Lade
import LadeTestSupport
import LadeTestTraits

/// `Book.pagesCount` = `pages.@count` (CoreDataPlus's SampleModel2, whose model the tests build
/// in code: `SampleModel2`), kept right by every store: by Core Data's own triggers in Apple's
/// store, by the same triggers in a SQLite store Lade makes, by the save in atomic stores.
@Suite("Derived attributes")
struct DerivedAttributeTests {
    // MARK: Helpers

    static func context(_ coordinator: PersistentStoreCoordinator) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    static func book(_ uniqueID: UUID, in context: ManagedObjectContext) throws -> ManagedObject {
        var request = FetchRequest(entityName: "Book", predicate: try FetchPredicate(format: "uniqueID == %@", arguments: [.uuid(uniqueID)]))
        request.returnsObjectsAsFaults = false
        return try #require(try context.fetch(request).first, "no book \(uniqueID)")
    }

    @discardableResult
    static func addPage(_ number: Int, to book: ManagedObject, in context: ManagedObjectContext) throws -> ManagedObject {
        let page = try context.insertObject(forEntityName: "Page")
        try page.setValue(number, forKey: "number")
        try page.setValue(Data([1, 2, 3]), forKey: "content")
        try page.setObject(book, forKey: "book")
        return page
    }

    static func pagesCount(_ object: ManagedObject) -> Int? { object["pagesCount"] as? Int }

    /// Books whose stored count is not the number of their pages, straight from the tables.
    static func wrongCounts(_ store: URL) throws -> [[SQLiteValue]] {
        try SQLiteConnection(path: store.path, mode: .readOnly).rows(
            "SELECT Z_PK, ZPAGESCOUNT, (SELECT COUNT(*) FROM ZPAGE p WHERE p.ZBOOK = ZBOOK.Z_PK) FROM ZBOOK WHERE ZPAGESCOUNT IS NOT (SELECT COUNT(*) FROM ZPAGE p WHERE p.ZBOOK = ZBOOK.Z_PK)")
    }

    /// Adds an author and two books (2 pages and 1 page) to a new store; returns the books' IDs.
    static func seed(_ coordinator: PersistentStoreCoordinator) throws -> (UUID, UUID) {
        let ids = (UUID(), UUID())
        let context = Self.context(coordinator)
        try context.performAndWait {
            let author = try context.insertObject(forEntityName: "Author")
            try author.setValue("Ada", forKey: "alias")
            try author.setValue(36, forKey: "age")
            for (uniqueID, pages) in [(ids.0, 2), (ids.1, 1)] {
                let book = try context.insertObject(forEntityName: "Book")
                try book.setValue(uniqueID, forKey: "uniqueID")
                try book.setValue("title \(pages)", forKey: "title")
                try book.setValue(Decimal(10), forKey: "price")
                try book.setValue(Data([0]), forKey: "cover")
                try book.setValue(Date(timeIntervalSinceReferenceDate: 0), forKey: "publishedAt")
                try book.setObject(author, forKey: "author")
                for number in 1...pages { try addPage(number, to: book, in: context) }
            }
            try context.save()
        }
        return ids
    }

    /// Pages added to `first` by its uniqueID, one deleted, one moved to `second`: after each
    /// save the registered book, a fresh context, and (for SQLite) the table agree with the
    /// number of pages; a later change to the book saves without an optimistic-locking conflict.
    static func exercise(_ coordinator: PersistentStoreCoordinator, first: UUID, second: UUID, sqlite: URL?) throws {
        try exercise(coordinator, first: first, second: second, checkTable: { () throws -> Void in
            if let sqlite { #expect(try wrongCounts(sqlite).isEmpty) }
        })
    }

    /// `exercise` with `checkTable` asked after each save to check the stored counts.
    static func exercise(_ coordinator: PersistentStoreCoordinator, first: UUID, second: UUID, checkTable: () throws -> Void) throws {
        func fresh(_ uniqueID: UUID) throws -> Int? {
            let context = Self.context(coordinator)
            return try context.performAndWait { pagesCount(try book(uniqueID, in: context)) }
        }
        let context = Self.context(coordinator)
        try context.performAndWait {
            let book = try Self.book(first, in: context)
            let other = try Self.book(second, in: context)
            let before = try #require(pagesCount(book))
            let otherBefore = try #require(pagesCount(other))
            #expect(book.objects(forKey: "pages").count == before, "the stored count is the number of pages to begin with")

            for number in 1...3 { try addPage(1000 + number, to: book, in: context) }
            try context.save()
            #expect(pagesCount(book) == before + 3, "the object the context holds has the count the triggers set")
            #expect(try fresh(first) == before + 3)
            try checkTable()

            // A later change to the same book: the count was set without touching its version.
            try book.setValue("title changed", forKey: "title")
            try context.save()
            #expect(try fresh(first) == before + 3)

            let pages = book.objects(forKey: "pages").sorted { ($0["number"] as? Int ?? 0) < ($1["number"] as? Int ?? 0) }
            context.delete(try #require(pages.last))
            try context.save()
            #expect(pagesCount(book) == before + 2)
            #expect(try fresh(first) == before + 2)
            try checkTable()

            try #require(pages.first).setObject(other, forKey: "book")
            try context.save()
            #expect(pagesCount(book) == before + 1)
            #expect(pagesCount(other) == otherBefore + 1)
            #expect(try fresh(first) == before + 1)
            #expect(try fresh(second) == otherBefore + 1)
            try checkTable()
        }
    }

    // MARK: Tests

    @Test("in a copy of Apple's store, pages saved for a book found by its uniqueID leave Book.pagesCount right", .needsCorpus)
    func appleStore() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try copyCorpusStore(SampleModel2.storeV1, to: temp)
        #expect(try Self.wrongCounts(url).isEmpty, "Core Data left every count right")
        // The model the store carries (its Z_MODELCACHE), with the derivation Core Data wrote.
        let carried = try ManagedObjectModel(carriedByStoreAt: url)
        #expect(carried.entity(named: "Book")?.attributes.first { $0.name == "pagesCount" }?.derivationExpression == "pages.@count")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: carried)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let ids = try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT ZUNIQUEID FROM ZBOOK WHERE Z_PK IN (5, 1) ORDER BY Z_PK DESC").map { row -> UUID in
            guard case .blob(let data) = row[0] else { return UUID() }
            return data.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
        }
        try #require(ids.count == 2)
        try Self.exercise(coordinator, first: ids[0], second: ids[1], sqlite: url)
    }

    @Test("in a store Lade makes from the model, each store type keeps Book.pagesCount right",
          arguments: [PersistentStoreCoordinator.StoreType.sqlite, .xml, .binary, .inMemory])
    func ladeStore(type: PersistentStoreCoordinator.StoreType) throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = type == .inMemory ? nil : temp.appendingPathComponent("books.\(type.rawValue)")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try SampleModel2.model())
        try coordinator.addPersistentStore(type: type, at: url)
        let (first, second) = try Self.seed(coordinator)
        let context = Self.context(coordinator)
        try context.performAndWait {
            let (one, two) = (try Self.book(first, in: context), try Self.book(second, in: context))
            #expect(Self.pagesCount(one) == 2)
            #expect(Self.pagesCount(two) == 1)
        }
        try Self.exercise(coordinator, first: first, second: second, sqlite: type == .sqlite ? url : nil)
    }

    @Test("a SQLite store Lade makes has Core Data's triggers, named and written as in Apple's store", .needsCorpus)
    func sameTriggers() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let apple = try copyCorpusStore(SampleModel2.storeV1, to: temp)
        let lade = temp.appendingPathComponent("lade.sqlite")
        try SQLiteStore.createFile(at: lade, model: try SampleModel2.model())
        let query = "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name"
        let expected = try SQLiteConnection(path: apple.path, mode: .readOnly).rows(query)
        #expect(expected.count == 5)
        #expect(try SQLiteConnection(path: lade.path, mode: .readOnly).rows(query) == expected)
    }

    @Test("a to-one whose destination has subentities keeps the destination's entity in Apple's column, Z1_BOOK")
    func destinationEntityColumn() throws {
        let schema = TableLayout(model: try SampleModel2.model())
        #expect(schema.columnName(for: .toOneEntity(entity: "Page", name: "book")) == "Z1_BOOK")
        #expect(schema.table(named: "ZPAGE")?.columns.map(\.name) == ["Z_PK", "Z_ENT", "Z_OPT", "ZISBOOKMARKED", "ZNUMBER", "ZBOOK", "Z1_BOOK", "ZCONTENT"],
                "as SampleModel2_V1.sqlite has it")
    }

    @Test("a store an earlier Lade made with the column Z1BOOK cannot be read read-only (the error names Z1_BOOK), and has it renamed Z1_BOOK when opened for writing, values kept")
    func earlierEntityColumn() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = temp.appendingPathComponent("earlier.sqlite")
        let model = try SampleModel2.v1()
        try SQLiteStore.createFile(at: url, model: model)
        let writer = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
        try writer.execute("INSERT INTO ZPAGE (Z_PK, Z_ENT, Z_OPT, ZISBOOKMARKED, ZNUMBER, ZBOOK, Z1_BOOK, ZCONTENT) VALUES (1, 5, 1, 0, 7, NULL, NULL, x'01')")
        try writer.execute("ALTER TABLE ZPAGE RENAME COLUMN Z1_BOOK TO Z1BOOK")
        // Read-only, nothing is renamed: reading its rows fails, naming the column it lacks.
        let readOnlyStore = try SQLiteStore(url: url, model: model, readOnly: true)
        let readOnly = #expect(throws: (any Error).self) { _ = try readOnlyStore.fetch(StoreFetchRequest(entityName: "Page")) }
        #expect("\(String(describing: readOnly))".contains("Z1_BOOK"), "\(String(describing: readOnly))")
        let store = try SQLiteStore(url: url, model: model, readOnly: false)
        let columns = try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT name FROM pragma_table_info('ZPAGE')")
        #expect(columns.contains([.text("Z1_BOOK")]) && !columns.contains([.text("Z1BOOK")]))
        #expect(try store.count(StoreFetchRequest(entityName: "Page")) == 1)
    }

    @Test("a SQLite store without the triggers (made before Lade kept derived attributes) gets them when opened for writing, its counts set from the rows; read-only, it is left as it is")
    func reopenedWithoutTriggers() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = temp.appendingPathComponent("books.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try SampleModel2.model())
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let (first, second) = try Self.seed(coordinator)
        coordinator.remove(try #require(coordinator.persistentStores.first))
        let connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
        for row in try connection.rows("SELECT name FROM sqlite_master WHERE type = 'trigger'") {
            if case .text(let name) = row[0] { try connection.execute("DROP TRIGGER \(name)") }
        }
        try connection.execute("UPDATE ZBOOK SET ZPAGESCOUNT = NULL")
        let triggers = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'"
        let reader = PersistentStoreCoordinator(managedObjectModel: try SampleModel2.model())
        try reader.addPersistentStore(type: .sqlite, at: url, readOnly: true)
        #expect(try connection.rows(triggers).first?.first == .integer(0))
        let reopened = PersistentStoreCoordinator(managedObjectModel: try SampleModel2.model())
        try reopened.addPersistentStore(type: .sqlite, at: url)
        #expect(try connection.rows(triggers).first?.first == .integer(5))
        #expect(try Self.wrongCounts(url).isEmpty)
        try Self.exercise(reopened, first: first, second: second, sqlite: url)
    }

    @Test("lightweight migration keeps the triggers: the new tables get them and the counts stay right")
    func migrationKeepsTriggers() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = temp.appendingPathComponent("books.sqlite")
        let source = try SampleModel2.model()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: source)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let (first, second) = try Self.seed(coordinator)
        coordinator.remove(try #require(coordinator.persistentStores.first))
        var entities = source.entities
        let index = try #require(entities.firstIndex { $0.name == "Feedback" })
        entities[index].attributes.append(AttributeDescription(name: "helpful", type: .boolean))
        let destination = try ManagedObjectModel(entities: entities)
        try LightweightMigration(store: url, from: source, to: destination).run()
        let triggers = try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'Z_DA_%'")
        #expect(triggers.first?.first == .integer(5))
        let migrated = PersistentStoreCoordinator(managedObjectModel: destination)
        try migrated.addPersistentStore(type: .sqlite, at: url)
        try Self.exercise(migrated, first: first, second: second, sqlite: url)
    }

    @Test("each form Apple documents for a derivation is told apart; text that is none is not taken for one")
    func forms() {
        #expect(DerivationForm(parsing: "pages.@count") == .count(relationship: "pages"))
        #expect(DerivationForm(parsing: " count:(pages) ") == .count(relationship: "pages"))
        #expect(DerivationForm(parsing: "pages.@sum.number") == .aggregate(function: "sum", relationship: "pages", attribute: "number"))
        #expect(DerivationForm(parsing: "sum:(pages.number)") == .aggregate(function: "sum", relationship: "pages", attribute: "number"))
        #expect(DerivationForm(parsing: "max:(pages.number)") == .aggregate(function: "max", relationship: "pages", attribute: "number"))
        #expect(DerivationForm(parsing: "title") == .keyPath(["title"]))
        #expect(DerivationForm(parsing: "author.alias") == .keyPath(["author", "alias"]))
        #expect(DerivationForm(parsing: "lowercase:(title)") == .function(name: "lowercase", keyPath: ["title"]))
        #expect(DerivationForm(parsing: "canonical:(author.alias)") == .function(name: "canonical", keyPath: ["author", "alias"]))
        #expect(DerivationForm(parsing: "now()") == .now)
        for text in ["", "pages.@", "1title", "pages.@count.x", "title; DROP TABLE ZBOOK", "a..b"] {
            #expect(DerivationForm(parsing: text) == nil, "\(text)")
        }
    }

    /// The forms an atomic store computes from the object alone; those that read other
    /// objects are refused there too. SQLite stores refuse every form but a one-to-many count.
    static let ownForms = ["now()", "lowercase:(title)", "canonical:(title)", "title"]

    @Test("derivations Lade does not keep are refused, naming the attribute and the form, by the store types that do not keep them",
          arguments: ["author.alias", "pages.@sum.number", "now()", "lowercase:(title)", "canonical:(title)", "title"])
    func refusedForms(derivation: String) throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let type: AttributeType = derivation == "now()" ? .date : derivation.contains("pages") ? .integer64 : .string
        let model = try SampleModel2.model(derivation: derivation, derivedType: type)
        let refusing: [PersistentStoreCoordinator.StoreType] = Self.ownForms.contains(derivation) ? [.sqlite] : [.sqlite, .xml, .binary, .inMemory]
        for storeType in refusing {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            let url = storeType == .inMemory ? nil : temp.appendingPathComponent("refused.\(storeType.rawValue)")
            let error = #expect(throws: (any Error).self, "\(storeType) store with pagesCount = \(derivation)") {
                _ = try coordinator.addPersistentStore(type: storeType, at: url)
            }
            #expect((error as? LadeError)?.code == "model.derivedAttribute", "\(storeType): \(String(describing: error))")
            let message = error.map { "\($0)" } ?? ""
            #expect(message.contains("'pagesCount'") && message.contains(derivation), "\(message)")
            if let url { #expect(!FileManager.default.fileExists(atPath: url.path), "nothing is left behind") }
        }
    }

    @Test("atomic stores compute the forms that read the object alone: a copy, lowercase:, canonical:, now()",
          arguments: [PersistentStoreCoordinator.StoreType.xml, .binary, .inMemory])
    func atomicOwnForms(storeType: PersistentStoreCoordinator.StoreType) throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        for derivation in Self.ownForms {
            let model = try SampleModel2.model(derivation: derivation, derivedType: derivation == "now()" ? .date : .string)
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            let url = storeType == .inMemory ? nil : temp.appendingPathComponent(UUID().uuidString + "." + storeType.name)
            try coordinator.addPersistentStore(type: storeType, at: url)
            let context = Self.context(coordinator)
            let started = Date()
            try context.performAndWait {
                let author = try context.insertObject(forEntityName: "Author")
                try author.setValue("Ann", forKey: "alias")
                try author.setValue(40, forKey: "age")
                let book = try context.insertObject(forEntityName: "Book")
                try book.setValue(UUID(), forKey: "uniqueID")
                try book.setValue("Été Über", forKey: "title")
                try book.setValue(Decimal(9), forKey: "price")
                try book.setValue(Data([1]), forKey: "cover")
                try book.setValue(Date(), forKey: "publishedAt")
                try book.setObject(author, forKey: "author")
                try Self.addPage(1, to: book, in: context)
                try context.save()
                let expected: (String) -> Any? = { title in
                    switch derivation {
                    case "lowercase:(title)": title.lowercased()
                    case "canonical:(title)": StringComparison.fold(title, [.caseInsensitive, .diacriticInsensitive])
                    case "title": title
                    default: nil
                    }
                }
                if derivation == "now()" {
                    let stamp = try #require(book["pagesCount"] as? Date, "\(storeType) \(derivation)")
                    #expect(stamp >= started.addingTimeInterval(-1) && stamp <= Date().addingTimeInterval(1))
                } else {
                    #expect(book["pagesCount"] as? String == expected("Été Über") as? String, "\(storeType) \(derivation)")
                }
                // A change to the title is followed at the next save.
                try book.setValue("Zoë", forKey: "title")
                try context.save()
                if derivation != "now()" {
                    #expect(book["pagesCount"] as? String == expected("Zoë") as? String, "\(storeType) \(derivation) after a change")
                }
            }
        }
    }
}
