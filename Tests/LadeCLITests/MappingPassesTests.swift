import Foundation
import Lade
import Testing

/// Several mapping models for one step: passes, run in order into one new store.
@Suite("lade migrate with a step in several passes")
struct MappingPassesTests {
    @Test("two passes (authors, then books) make one store; a relationship into another pass is refused naming the mapping, the store unchanged")
    func passes() throws {
        let sandbox = try ImportSandbox()
        let bundle = sandbox.url("Library.xcdatamodeld")
        let body = """
            <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/>
            <relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="author" inverseEntity="Book"/></entity>
            <entity name="Book"><attribute name="title" optional="YES" attributeType="String"/>%@
            <relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/></entity>
            """
        try MigrateCLITests.writeVersion("Library", of: bundle, body.replacingOccurrences(of: "%@", with: ""))
        try MigrateCLITests.writeVersion("Library 2", of: bundle, body.replacingOccurrences(of: "%@", with: "<attribute name=\"pages\" optional=\"YES\" attributeType=\"Integer 32\" defaultValueString=\"100\"/>"), current: true)
        let store = sandbox.url("library.sqlite")
        let context = try privateContext(model: try ManagedObjectModel(contentsOf: bundle, version: "Library"), store: store, type: .sqlite)
        try context.performAndWait {
            for index in 0..<4 {
                let author = try context.insertObject(forEntityName: "Author")
                try author.setValue("author \(index)", forKey: "name")
                let book = try context.insertObject(forEntityName: "Book")
                try book.setValue("book \(index)", forKey: "title")
                try book.setObject(author, forKey: "author")
            }
            try context.save()
        }
        _ = try SQLiteConnection(path: store.path, mode: .readWrite(create: false)).rows("PRAGMA wal_checkpoint(TRUNCATE)")
        try copyWritable(at: store, to: sandbox.url("original.sqlite"))
        func pass(_ name: String, _ entity: MappingDocument.Entity) throws -> String {
            try MappingDocument(bundleName: "Library", from: "Library", to: "Library 2", entities: [entity]).write(to: sandbox.url(name))
            return sandbox.url(name).path
        }
        // Without relationships across them, the passes make every object.
        let authors = try pass("Authors.xcmappingmodel", .init(source: "Author", destination: "Author", attributes: ["name"]))
        let books = try pass("Books.xcmappingmodel", .init(source: "Book", destination: "Book", attributes: ["title"]))
        let run = try LadeProcess.run(["migrate", store.path, "--model", bundle.path, "--mapping", authors, "--mapping", books])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("(mapping models, 2 passes, the store rebuilt beside it)"), "\(run.stdout)")
        #expect(run.stdout.contains("pass 2 (Books.xcmappingmodel): BookToBook (copy): Book → Book; sets title"), "\(run.stdout)")
        #expect(run.stdout.contains("Author: 4") && run.stdout.contains("Book: 4"), "\(run.stdout)")
        // An automatic expression into another pass has no mapping to name: the plan says the
        // relationship is left empty.
        let unlinked = try pass("Unlinked.xcmappingmodel", .init(source: "Book", destination: "Book", attributes: ["title"], relationships: ["author"]))
        let dry = try LadeProcess.run(["migrate", sandbox.url("original.sqlite").path, "--model", bundle.path, "--mapping", authors, "--mapping", unlinked, "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("note: entity mapping BookToBook: author is left empty; no entity mapping of this mapping model makes its objects"), "\(dry.stdout)")
        // An expression naming a mapping of the other pass would find nothing there: refused
        // while the migration is planned, the store as it was.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
        try copyWritable(at: sandbox.url("original.sqlite"), to: store)
        let before = try Data(contentsOf: store)
        let linked = try pass("Linked.xcmappingmodel", .init(source: "Book", destination: "Book", attributes: ["title"], relationships: ["author"],
                                                             sources: ["author": ("AuthorToAuthor", "$source.author")]))
        let failed = try LadeProcess.run(["migrate", store.path, "--model", bundle.path, "--mapping", authors, "--mapping", linked])
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("entity mapping BookToBook, property author"), "\(failed.stderr)")
        #expect(failed.stderr.contains("names the entity mapping AuthorToAuthor, which this mapping model does not have (it has BookToBook; each mapping model runs as a pass of its own"), "\(failed.stderr)")
        #expect(try Data(contentsOf: store) == before)
    }
}
