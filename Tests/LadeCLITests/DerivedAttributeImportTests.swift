import Foundation
import Lade
import LadeTestSupport
import LadeTestTraits
import Testing

/// `lade run` importing `Page` rows wired to their `Book` by its `uniqueID`, with both writers,
/// into stores whose `Book.pagesCount` is derived (`pages.@count`, CoreDataPlus's SampleModel2,
/// the model given as a Lade JSON model written from `SampleModel2`): the counts the store
/// keeps equal each book's pages afterwards.
@Suite("lade run: derived attributes", .eachWriter)
struct DerivedAttributeImportTests {
    /// Books whose stored count is not the number of their pages.
    static func wrongCounts(_ store: URL) throws -> Int64 {
        try StoreReading.integer(store, "SELECT COUNT(*) FROM ZBOOK WHERE ZPAGESCOUNT IS NOT (SELECT COUNT(*) FROM ZPAGE p WHERE p.ZBOOK = ZBOOK.Z_PK)")
    }

    static func uuid(_ value: SQLiteValue) -> UUID? {
        guard case .blob(let data) = value, data.count == 16 else { return nil }
        return data.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
    }

    /// Imports 5 pages for the book with key `first` and 2 for `second`; checks the counts.
    /// With `carriedModel`, the job names no model: the store's own (Z_MODELCACHE) is used.
    static func importPages(_ sandbox: ImportSandbox, store: String, first: (pk: Int64, id: UUID), second: (pk: Int64, id: UUID),
                            carriedModel: Bool = false) throws {
        try sandbox.write("SampleModel2.json", try SampleModel2.model().jsonData())
        let storeURL = sandbox.url(store)
        let count = { (pk: Int64) in try StoreReading.integer(storeURL, "SELECT ZPAGESCOUNT FROM ZBOOK WHERE Z_PK = \(pk)") }
        let before = (try count(first.pk), try count(second.pk))
        var csv = "number,content,book_id\n"
        for number in 1...5 { csv += "\(9000 + number),AQID,\(first.id.uuidString)\n" }
        for number in 1...2 { csv += "\(9100 + number),AQID,\(second.id.uuidString)\n" }
        try sandbox.write("pages.csv", csv)
        try sandbox.write("job.yaml", "kind: import\n" + (carriedModel ? "" : "model: SampleModel2.json\n") + """
            store: { path: \(store) }
            source: pages.csv
            entity: Page
            relationships:
              book: { from: book_id, match: uniqueID }

            """ + (ImportSandbox.writer.map { "writer: \($0)\n" } ?? ""))
        let (result, report) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(report?["inserted"] as? Int == 7)
        #expect(try count(first.pk) == before.0 + 5)
        #expect(try count(second.pk) == before.1 + 2)
        #expect(try wrongCounts(storeURL) == 0)
        // Read back through a context: the value fetched is the new one.
        let model = sandbox.url("SampleModel2.json")
        let fetched = try StoreReading.read(storeURL, model: model) { context in
            try StoreReading.objects(context, "Book", sortedBy: "title").first { ($0["uniqueID"] as? UUID) == first.id }?["pagesCount"] as? Int
        }
        #expect(fetched.map(Int64.init) == before.0 + 5)
    }

    @Test("into a copy of Apple's store: Core Data's triggers run and keep Book.pagesCount right", .needsCorpus)
    func appleStore() throws {
        let sandbox = try ImportSandbox()
        let source = Corpus.file(SampleModel2.storeV1)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: source.path + suffix) {
            try FileManager.default.copyItem(atPath: source.path + suffix, toPath: sandbox.url("apple.sqlite" + suffix).path)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: sandbox.url("apple.sqlite" + suffix).path)
        }
        let rows = try SQLiteConnection(path: sandbox.url("apple.sqlite").path, mode: .readOnly).rows("SELECT Z_PK, ZUNIQUEID FROM ZBOOK WHERE Z_PK IN (5, 1) ORDER BY Z_PK DESC")
        let books = rows.compactMap { row -> (Int64, UUID)? in
            guard case .integer(let pk) = row[0], let id = Self.uuid(row[1]) else { return nil }
            return (pk, id)
        }
        try #require(books.count == 2)
        try Self.importPages(sandbox, store: "apple.sqlite", first: books[0], second: books[1], carriedModel: true)
    }

    @Test("into a store Lade made from the model: its triggers keep Book.pagesCount right")
    func ladeStore() throws {
        let sandbox = try ImportSandbox()
        let ids = try Self.twoBooks(sandbox.url("lade.sqlite"), type: .sqlite)
        let keys = try SQLiteConnection(path: sandbox.url("lade.sqlite").path, mode: .readOnly).rows("SELECT Z_PK FROM ZBOOK ORDER BY ZTITLE").compactMap { row -> Int64? in
            if case .integer(let pk) = row[0] { pk } else { nil }
        }
        try #require(keys.count == 2)
        try Self.importPages(sandbox, store: "lade.sqlite", first: (keys[0], ids.0), second: (keys[1], ids.1))
    }
}

extension DerivedAttributeImportTests {
    /// A store Lade made from SampleModel2 at `url` with two books, "title A" and "title B"
    /// (one page each); their uniqueIDs, in that order.
    @discardableResult
    static func twoBooks(_ url: URL, type: PersistentStoreCoordinator.StoreType) throws -> (UUID, UUID) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try SampleModel2.model())
        try coordinator.addPersistentStore(type: type, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let ids = (UUID(), UUID())
        try context.performAndWait {
            let author = try context.insertObject(forEntityName: "Author")
            try author.setValue("Ada", forKey: "alias")
            try author.setValue(36, forKey: "age")
            for (uniqueID, title) in [(ids.0, "title A"), (ids.1, "title B")] {
                let book = try context.insertObject(forEntityName: "Book")
                try book.setValue(uniqueID, forKey: "uniqueID")
                try book.setValue(title, forKey: "title")
                try book.setValue(Decimal(10), forKey: "price")
                try book.setValue(Data([0]), forKey: "cover")
                try book.setValue(Date(timeIntervalSinceReferenceDate: 0), forKey: "publishedAt")
                try book.setObject(author, forKey: "author")
                let page = try context.insertObject(forEntityName: "Page")
                try page.setValue(1, forKey: "number")
                try page.setValue(Data([1]), forKey: "content")
                try page.setObject(book, forKey: "book")
            }
            try context.save()
        }
        for store in coordinator.persistentStores { coordinator.remove(store) }
        return ids
    }

    @Test("a job that maps a derived attribute is refused (validate and run), naming it; an export imported again leaves the derived values the store computes")
    func derivedNeverFromSource() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("SampleModel2.json", try SampleModel2.model().jsonData())
        try Self.twoBooks(sandbox.url("books.sqlite"), type: .sqlite)
        try sandbox.write("books.csv", "title,pages_count\ntitle A,9999\n")
        try sandbox.write("job.yaml", """
            kind: import
            model: SampleModel2.json
            store: { path: books.sqlite }
            source: books.csv
            entity: Book
            key: title
            mode: update
            fields:
              pagesCount: pages_count

            """ + (ImportSandbox.writer.map { "writer: \($0)\n" } ?? ""))
        for command in [["validate", "job.yaml"], ["run", "job.yaml"]] {
            let result = try sandbox.lade(command)
            #expect(result.status != 0, "\(command[0])")
            #expect(result.stderr.contains("pagesCount") && result.stderr.contains("derived"), "\(command[0]): \(result.stderr)")
        }
        #expect(try Self.wrongCounts(sandbox.url("books.sqlite")) == 0)
        // An export's records carry pagesCount; imported again (autoMatch), it is not written.
        let exported = try sandbox.lade(["export", "books.sqlite", "--model", "SampleModel2.json", "--format", "csv", "--out", "export"])
        #expect(exported.status == 0, "\(exported.stderr)")
        let csv = try String(contentsOf: sandbox.url("export/Book.csv"), encoding: .utf8)
        #expect(csv.contains("pagesCount"), "\(csv)")
        try sandbox.write("books.csv", "title,pagesCount\ntitle A,9999\n")
        try sandbox.write("job.yaml", """
            kind: import
            model: SampleModel2.json
            store: { path: books.sqlite }
            source: books.csv
            entity: Book
            key: title
            mode: update

            """ + (ImportSandbox.writer.map { "writer: \($0)\n" } ?? ""))
        let (run, _) = try sandbox.run()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try Self.wrongCounts(sandbox.url("books.sqlite")) == 0)
        #expect(try StoreReading.integer(sandbox.url("books.sqlite"), "SELECT MAX(ZPAGESCOUNT) FROM ZBOOK") == 1)
    }

    @Test("lade check compares stored derived counts with what they count (SQLite and PostgreSQL)")
    func checkFindsWrongCounts() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("SampleModel2.json", try SampleModel2.model().jsonData())
        let server = try PostgresTestServer.fromEnvironment()
        let schema = server.newSchemaName("derived_check")
        defer { try? server.dropSchema(schema) }
        let sqlite = sandbox.url("books.sqlite")
        try Self.twoBooks(sqlite, type: .sqlite)
        try Self.twoBooks(URL(string: server.storeURL(schema: schema))!, type: .postgresql)
        for store in [sqlite.path, server.storeURL(schema: schema)] {
            let clean = try sandbox.lade(["check", store, "--model", "SampleModel2.json"])
            #expect(clean.status == 0, "\(clean.stdout)\(clean.stderr)")
        }
        try SQLiteConnection(path: sqlite.path, mode: .readWrite(create: false)).execute("UPDATE ZBOOK SET ZPAGESCOUNT = 9999 WHERE ZTITLE = 'title A'")
        _ = try server.psql("UPDATE \(PostgresTestServer.quotedIdentifier(schema)).\"ZBOOK\" SET \"ZPAGESCOUNT\" = 9999 WHERE \"ZTITLE\" = 'title A'")
        for store in [sqlite.path, server.storeURL(schema: schema)] {
            let checked = try sandbox.lade(["check", store, "--model", "SampleModel2.json"])
            #expect(checked.status != 0, "\(store)")
            #expect(checked.stdout.contains("derivedValue: Book.pagesCount") && checked.stdout.contains("holds 9999 where pages.@count is 1"), "\(checked.stdout)\(checked.stderr)")
        }
    }
}
