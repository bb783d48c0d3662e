import Foundation
import Lade
import LadeTestSupport
import LadeTestTraits
import Testing

/// The store of issue 43 §1: CoreDataPlus's SampleModel2 with `Book.pages` (entity 1, which has
/// a subentity) and `Page.book` left without inverses, laid out as Core Data lays it out: no
/// join table, `ZPAGE.Z1PAGES` holding each page's `Book`, indexed as `ZPAGE_Z1PAGES_INDEX`,
/// Core Data's `pages.@count` triggers over that column. Made from the corpus store Core Data
/// wrote for SampleModel2 (every page's `ZBOOK` also its `Z1PAGES`; its model cache removed, as
/// it describes the model with inverses), then read by `lade` as a process: inspect, check,
/// export, conversions both ways through XML and PostgreSQL, and an import adding pages by key.
@Suite("lade on a store with a to-many relationship without an inverse (Core Data's owner column)")
struct ToManyWithoutInverseCLITests {
    /// The store and its model (Lade's JSON model) in `sandbox`.
    static func appleLayoutStore(_ sandbox: ImportSandbox) throws -> (store: URL, model: String) {
        let store = sandbox.url("books.sqlite")
        try copyWritable(at: Corpus.file(SampleModel2.storeV1), to: store)
        let connection = try SQLiteConnection(path: store.path, mode: .readWrite(create: false))
        try connection.execute("DELETE FROM Z_MODELCACHE")
        try connection.execute("ALTER TABLE ZPAGE ADD COLUMN Z1PAGES INTEGER")
        try connection.execute("UPDATE ZPAGE SET Z1PAGES = ZBOOK")
        try connection.execute("CREATE INDEX ZPAGE_Z1PAGES_INDEX ON ZPAGE (Z1PAGES)")
        // `SampleModel2`'s transcription names a fetch index the corpus file lacks (lade check
        // reports it for the untouched file given that model too): made here, as Core Data would.
        try connection.execute("CREATE INDEX Z_Author_authorIndex ON ZWRITER (ZALIAS COLLATE BINARY ASC)")
        // Core Data's triggers for `pagesCount`, over the owner column instead of the inverse's key.
        for row in try connection.rows("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'Z_DA_%pagesCount%'") {
            guard case .text(let name) = row[0], case .text(var sql) = row[1] else { continue }
            for (from, to) in [("NEW.ZBOOK", "NEW.Z1PAGES"), ("OLD.ZBOOK", "OLD.Z1PAGES"), ("UPDATE OF ZBOOK ON", "UPDATE OF Z1PAGES ON"),
                               ("COUNT(ZBOOK)", "COUNT(Z1PAGES)"), ("WHERE ZBOOK = NEW.Z_PK", "WHERE Z1PAGES = NEW.Z_PK")] {
                sql = sql.replacingOccurrences(of: from, with: to)
            }
            #expect(!sql.contains("ZBOOK (") && !sql.contains(".ZBOOK"), "\(sql)")
            try connection.execute("DROP TRIGGER \(name)")
            try connection.execute(sql)
        }
        try sandbox.write("SampleModel2.json", try SampleModel2.model(inverses: false).jsonData())
        return (store, "SampleModel2.json")
    }

    /// Each book's uniqueID (as stored) with the numbers of the pages `lade export` lists for it.
    static func pagesByBook(_ export: URL) throws -> [String: [Int]] {
        let text = { (name: String) in try String(contentsOf: export.appendingPathComponent(name), encoding: .utf8) }
        var numberOf: [String: Int] = [:]
        for line in try text("Page.ndjson").split(separator: "\n") {
            let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            numberOf[try #require(record["_uri"] as? String)] = try #require(record["number"] as? Int)
        }
        var found: [String: [Int]] = [:]
        for file in ["Book.ndjson", "GraphicNovel.ndjson"] where FileManager.default.fileExists(atPath: export.appendingPathComponent(file).path) {
            for line in try text(file).split(separator: "\n") {
                let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let pages = (record["pages"] as? [String] ?? []).compactMap { numberOf[$0] }.sorted()
                found["\(record["uniqueID"] ?? "?")"] = pages
            }
        }
        return found
    }

    @Test("inspect, check and export read it; every page is listed under its book, as Z1PAGES says", .needsCorpus)
    func reads() throws {
        let sandbox = try ImportSandbox()
        let (store, model) = try Self.appleLayoutStore(sandbox)
        let inspected = try sandbox.lade(["inspect", store.path, "--model", model])
        #expect(inspected.status == 0, "\(inspected.stderr)")
        let checked = try sandbox.lade(["check", store.path, "--model", model])
        #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")
        let exported = try sandbox.lade(["export", store.path, "--model", model, "--format", "ndjson", "--out", "export"])
        #expect(exported.status == 0, "\(exported.stderr)")
        let pages = try Self.pagesByBook(sandbox.url("export"))
        let stored = try StoreReading.integer(store, "SELECT COUNT(*) FROM ZPAGE WHERE Z1PAGES IS NOT NULL")
        #expect(stored > 0)
        #expect(pages.values.map(\.count).reduce(0, +) == Int(stored))
        #expect(pages.count == Int(try StoreReading.integer(store, "SELECT COUNT(*) FROM ZBOOK")))
        let fetched = try sandbox.lade(["fetch", store.path, "--model", model, "--entity", "Book", "--where", "pages.@count > 0", "--format", "json"])
        #expect(fetched.status == 0, "\(fetched.stderr)")
    }

    @Test("SQLite → XML → SQLite and SQLite → PostgreSQL → SQLite end with identical objects, the copy in Core Data's layout", .needsCorpus)
    func conversions() throws {
        let sandbox = try ImportSandbox()
        let (store, model) = try Self.appleLayoutStore(sandbox)
        let server = try PostgresTestServer.fromEnvironment()
        let schema = server.newSchemaName("no_inverse_cli")
        defer { try? server.dropSchema(schema) }
        let original = try sandbox.lade(["export", store.path, "--model", model, "--format", "ndjson", "--out", "export-original"])
        #expect(original.status == 0, "\(original.stderr)")
        let expected = try ConvertRoundTripTests.canonical(sandbox.url("export-original"))
        for (middle, final) in [(sandbox.url("step.xml").path, "back-xml.sqlite"), (server.storeURL(schema: schema), "back-pg.sqlite")] {
            for (from, to) in [(store.path, middle), (middle, sandbox.url(final).path)] {
                let converted = try sandbox.lade(["convert", from, to, "--model", model])
                #expect(converted.status == 0, "\(from) → \(to): \(converted.stderr)")
            }
            let out = "export-" + final
            let exported = try sandbox.lade(["export", sandbox.url(final).path, "--model", model, "--format", "ndjson", "--out", out])
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(try ConvertRoundTripTests.canonical(sandbox.url(out)) == expected, "\(final)")
            let connection = try SQLiteConnection(path: sandbox.url(final).path, mode: .readOnly)
            #expect(try !connection.tableNames().contains("Z_1PAGES"))
            #expect(try connection.indexNames().contains("ZPAGE_Z1PAGES_INDEX"))
            let checked = try sandbox.lade(["check", sandbox.url(final).path, "--model", model])
            #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")
        }
    }

    @Test("an import adds pages to a book by their keys: Z1PAGES and Core Data's pagesCount follow, lade check passes", .needsCorpus)
    func importAddsPages() throws {
        let sandbox = try ImportSandbox()
        let (store, model) = try Self.appleLayoutStore(sandbox)
        let book = try StoreReading.integer(store, "SELECT MIN(Z_PK) FROM ZBOOK WHERE Z_ENT = 1")
        let uuid = try #require(try SQLiteConnection(path: store.path, mode: .readOnly).rows("SELECT ZUNIQUEID FROM ZBOOK WHERE Z_PK = \(book)").first?.first)
        guard case .blob(let bytes) = uuid, bytes.count == 16 else { Issue.record("no uniqueID"); return }
        let bookID = bytes.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
        // New pages of their own numbers (each page names its book through Page.book too).
        try sandbox.write("pages.csv", "number,content,book_id\n9001,AQID,\(bookID.uuidString)\n9002,AQID,\(bookID.uuidString)\n")
        try sandbox.write("pages.yaml", """
            kind: import
            model: \(model)
            store: { path: books.sqlite }
            source: pages.csv
            entity: Page
            key: number
            relationships:
              book: { from: book_id, match: uniqueID }

            """)
        let pages = try sandbox.run("pages.yaml")
        #expect(pages.result.status == 0, "\(pages.result.stderr)")
        // Book.pages set by key: the book's pages become these two.
        try sandbox.write("books.csv", "uniqueID,pages\n\(bookID.uuidString),9001|9002\n")
        try sandbox.write("books.yaml", """
            kind: import
            model: \(model)
            store: { path: books.sqlite }
            source: books.csv
            entity: Book
            key: uniqueID
            mode: update
            relationships:
              pages: { from: pages, match: number }

            """)
        let books = try sandbox.run("books.yaml")
        #expect(books.result.status == 0, "\(books.result.stderr)")
        #expect(books.report?["updated"] as? Int == 1)
        #expect(try StoreReading.integer(store, "SELECT COUNT(*) FROM ZPAGE WHERE Z1PAGES = \(book)") == 2)
        #expect(try StoreReading.integer(store, "SELECT COUNT(*) FROM ZPAGE WHERE Z1PAGES = \(book) AND ZNUMBER IN (9001, 9002)") == 2)
        #expect(try StoreReading.integer(store, "SELECT ZPAGESCOUNT FROM ZBOOK WHERE Z_PK = \(book)") == 2)
        #expect(try StoreReading.integer(store, "SELECT COUNT(*) FROM ZBOOK WHERE ZPAGESCOUNT IS NOT (SELECT COUNT(*) FROM ZPAGE p WHERE p.Z1PAGES = ZBOOK.Z_PK)") == 0)
        let checked = try sandbox.lade(["check", store.path, "--model", model])
        #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")
    }
}
