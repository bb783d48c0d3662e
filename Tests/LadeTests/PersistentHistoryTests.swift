import Foundation
import Testing
@testable import Lade
import LadeTestSupport
import LadeTestTraits

@Suite("Persistent history: what each write records in a SQLite store that keeps it")
struct PersistentHistoryTests {
    /// Feedback is entity 3 in SampleModel2's numbering, as in Apple's store.
    static let feedback: Int64 = 3

    /// A copy of Apple's `SampleModel2_V1.sqlite` (one transaction, 5,468 changes) and a context
    /// on it with an author and a name.
    func appleStore(_ directory: URL) throws -> (URL, ManagedObjectContext) {
        let url = try copyCorpusStore(SampleModel2.v1Store, to: directory)
        let context = try privateContext(model: try SampleModel2.v1(), store: url)
        context.transactionAuthor = "tester"
        context.name = "editor"
        return (url, context)
    }

    func insertFeedback(_ context: ManagedObjectContext, _ rating: Double, comment: String? = nil) throws -> ManagedObject {
        let object = try context.insertObject(forEntityName: "Feedback")
        try object.setAttributeValue(.string("alias"), forKey: "authorAlias")
        try object.setAttributeValue(.uuid(UUID()), forKey: "bookID")
        try object.setAttributeValue(.double(rating), forKey: "rating")
        try object.setAttributeValue(comment.map { .string($0) }, forKey: "comment")
        return object
    }

    @Test("a store made with history has Core Data's tables, indexes and history entities, as in Apple's store", .needsCorpus)
    func createdAsCoreData() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("new.sqlite")
        try PersistentStoreCoordinator.createStore(at: url, type: .sqlite, model: try SampleModel2.v1(), history: true)
        let expected = try String(contentsOf: Corpus.file("expected/" + SampleModel2.v1Store + ".schema.sql"), encoding: .utf8)
            .split(separator: "\n").map { String($0.dropLast()) }
            .filter { $0.contains("ACHANGE") || $0.contains("ATRANSACTION") }
        let made = try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT sql FROM sqlite_master WHERE tbl_name IN ('ACHANGE', 'ATRANSACTION', 'ATRANSACTIONSTRING')")
            .compactMap { row -> String? in if case .text(let sql) = row[0] { return sql } else { return nil } }
        #expect(expected.count == 11)
        #expect(Set(made) == Set(expected))
        #expect(try HistoryRows.maxima(url) == [16001: 0, 16002: 0, 16003: 0])
        let names = try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT Z_NAME FROM Z_PRIMARYKEY WHERE Z_ENT > 16000 ORDER BY Z_ENT")
        #expect(names == [[.text("CHANGE")], [.text("TRANSACTION")], [.text("TRANSACTIONSTRING")]])
    }

    @Test("a store made without history never gets the tables: not when created, opened or written")
    func withoutHistoryStaysWithout() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("plain.sqlite")
        try PersistentStoreCoordinator.createStore(at: url, type: .sqlite, model: try SampleModel2.v1())
        let context = try privateContext(model: try SampleModel2.v1(), store: url)
        context.transactionAuthor = "tester"
        try context.performAndWait {
            _ = try insertFeedback(context, 3)
            try context.save()
            _ = try context.execute(BatchUpdateRequest(entityName: "Feedback", propertiesToUpdate: ["rating": .double(4)]))
        }
        let tables = try HistoryRows.tables(url)
        #expect(tables.isDisjoint(with: ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]))
        #expect(try HistoryRows.maxima(url).isEmpty)
        #expect(throws: HistoryError.self) { try PersistentStoreCoordinator.createStore(at: directory.appendingPathComponent("x.xml"), type: .xml, model: try SampleModel2.v1(), history: true) }
        #expect(throws: HistoryError.self) { try PersistentStoreCoordinator.history(ofStoreAt: url) }
    }

    @Test("context saves into Apple's store: one transaction per save, with the context's author and name, the changes and an update's ZCOLUMNS", .needsCorpus)
    func contextSaves() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (url, context) = try appleStore(directory)
        try context.performAndWait {
            let kept = try insertFeedback(context, 2)
            let dropped = try insertFeedback(context, 1)
            try context.save()
            try kept.setAttributeValue(.double(5), forKey: "rating")
            try context.save()
            context.delete(dropped)
            try context.save()
        }
        let changes = try HistoryRows.changes(url, after: 1)
        // rating is the 4th of Feedback's properties by name (authorAlias, bookID, comment, rating): bit 3, 0x10.
        #expect(Set(changes) == [
            RecordedChange(transaction: 2, type: 0, entity: Self.feedback, key: 445), RecordedChange(transaction: 2, type: 0, entity: Self.feedback, key: 446),
            RecordedChange(transaction: 3, type: 1, entity: Self.feedback, key: 445, columns: "10"),
            RecordedChange(transaction: 4, type: 2, entity: Self.feedback, key: 446),
        ] || Set(changes) == [
            RecordedChange(transaction: 2, type: 0, entity: Self.feedback, key: 445), RecordedChange(transaction: 2, type: 0, entity: Self.feedback, key: 446),
            RecordedChange(transaction: 3, type: 1, entity: Self.feedback, key: 446, columns: "10"),
            RecordedChange(transaction: 4, type: 2, entity: Self.feedback, key: 445),
        ], "\(changes)")
        let transactions = try HistoryRows.transactions(url, after: 1)
        #expect(transactions.map(\.number) == [2, 3, 4])
        for transaction in transactions {
            #expect(transaction.author == "tester" && transaction.context == "editor")
            #expect(transaction.process == ProcessInfo.processInfo.processName && transaction.bundle == PersistentHistory.bundleID)
        }
        // Keys from Z_PRIMARYKEY; new strings: tester, editor, the bundle and the process (one string when they are the same).
        let strings = Int64(2 + Set(["tester", "editor", PersistentHistory.bundleID, PersistentHistory.processID]).count)
        #expect(try HistoryRows.maxima(url) == [16001: 5468 + 4, 16002: 4, 16003: strings])
        // Apple's own transaction and changes are where they were.
        #expect(try HistoryRows.changes(url).filter { $0.transaction == 1 }.count == 5468)
    }

    @Test("batch insert, update and delete requests each record one transaction with their changes", .needsCorpus)
    func batchRequests() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (url, context) = try appleStore(directory)
        let predicate = try FetchPredicate(format: "rating < 2")
        let (updated, deleted, inserted) = try context.performAndWait {
            let rows: [[String: AttributeValue?]] = (0..<3).map { ["authorAlias": .string("a\($0)"), "bookID": .uuid(UUID()), "rating": .double(Double($0))] }
            let inserted = try context.execute(BatchInsertRequest(entityName: "Feedback", objects: rows))
            let updated = try context.execute(BatchUpdateRequest(entityName: "Feedback", predicate: predicate, propertiesToUpdate: ["comment": .string("low")]))
            let deleted = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Feedback", predicate: predicate)))
            return (updated.objectIDs.compactMap(\.primaryKey), deleted.objectIDs.compactMap(\.primaryKey), inserted)
        }
        #expect(inserted.inserted == 3)
        #expect(!updated.isEmpty && Set(updated) == Set(deleted))
        let changes = try HistoryRows.changes(url, after: 1)
        #expect(Set(changes.filter { $0.transaction == 2 }) == Set((445...447).map { RecordedChange(transaction: 2, type: 0, entity: Self.feedback, key: $0) }))
        // comment is the 3rd property by name: bit 2, 0x20.
        #expect(Set(changes.filter { $0.transaction == 3 }) == Set(updated.map { RecordedChange(transaction: 3, type: 1, entity: Self.feedback, key: $0, columns: "20") }))
        #expect(Set(changes.filter { $0.transaction == 4 }) == Set(deleted.map { RecordedChange(transaction: 4, type: 2, entity: Self.feedback, key: $0) }))
        #expect(changes.allSatisfy { (2...4).contains($0.transaction) })
        #expect(try HistoryRows.transactions(url, after: 1).allSatisfy { $0.author == "tester" && $0.context == "editor" })
    }

    @Test("a store transaction's saves are one history transaction at commit; a rollback, a refused save and a batch insert session rolled back record nothing", .needsCorpus)
    func commitsAndRollbacks() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (url, context) = try appleStore(directory)
        try context.performAndWait {
            let held = try context.beginStoreTransaction(entityName: "Feedback")
            _ = try insertFeedback(context, 1)
            try context.save()
            _ = try insertFeedback(context, 2)
            try context.save()
            try held.commit()
            let undone = try context.beginStoreTransaction(entityName: "Feedback")
            _ = try insertFeedback(context, 3)
            try context.save()
            undone.rollback()
            // A save the store refuses (Author.alias is unique).
            let first = try context.insertObject(forEntityName: "Author")
            let second = try context.insertObject(forEntityName: "Author")
            for author in [first, second] {
                try author.setAttributeValue(.string("same"), forKey: "alias")
                try author.setAttributeValue(.integer(40), forKey: "age")
            }
            #expect(throws: (any Error).self) { try context.save() }
            context.rollback()
            let session = try context.beginBatchInsert(entityName: "Feedback")
            let target = try session.target(entityName: "Feedback", attributes: ["authorAlias", "bookID", "rating"], key: [])
            _ = try session.write([.init(values: [.string("x"), .uuid(UUID()), .double(1)])], to: target)
            session.rollback()
            let committed = try context.beginBatchInsert(entityName: "Feedback")
            let again = try committed.target(entityName: "Feedback", attributes: ["authorAlias", "bookID", "rating"], key: [])
            _ = try committed.write([.init(values: [.string("y"), .uuid(UUID()), .double(1)]), .init(values: [.string("z"), .uuid(UUID()), .double(2)])], to: again)
            try committed.commit()
        }
        let changes = try HistoryRows.changes(url, after: 1)
        let transactions = Dictionary(grouping: changes, by: \.transaction)
        #expect(transactions.keys.sorted() == [2, 3], "\(changes)")
        #expect(transactions[2]?.map(\.type) == [0, 0] && transactions[2]?.allSatisfy { $0.entity == Self.feedback } == true)
        #expect(transactions[3]?.count == 2 && transactions[3]?.allSatisfy { $0.type == 0 && $0.entity == Self.feedback } == true)
        #expect(try HistoryRows.transactions(url, after: 1).map(\.number) == [2, 3])
    }

    @Test("Apple's objects re-created in a new store with history give the same set of (type, entity, key) changes as Core Data's ACHANGE", .needsCorpus)
    func recreatedLikeCoreData() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try SampleModel2.v1()
        let apple = try copyCorpusStore(SampleModel2.v1Store, to: directory)
        let copy = directory.appendingPathComponent("recreated.sqlite")
        try PersistentStoreCoordinator.createStore(at: copy, type: .sqlite, model: model, history: true)
        let source = try privateContext(model: model, store: apple)
        let target = try privateContext(model: model, store: copy)
        try source.performAndWait {
            try target.performAndWait {
                // Each object in key order per hierarchy, so the new store hands out Apple's keys.
                var made: [ManagedObjectID: ManagedObject] = [:]
                var pairs: [(ManagedObject, ManagedObject)] = []
                for root in ["Book", "Feedback", "Page", "Writer"] {
                    let objects = try source.fetch(FetchRequest(entityName: root)).sorted { $0.objectID.primaryKey! < $1.objectID.primaryKey! }
                    for object in objects {
                        let copy = try target.insertObject(forEntityName: object.entity.name)
                        for attribute in model.attributes(of: object.entity.name) {
                            // Apple's DECIMAL column holds doubles such as 3.3333333332999993,
                            // which a SQLite store Lade writes keeps as they are.
                            try copy.setAttributeValue(object.attributeValue(forKey: attribute.name), forKey: attribute.name)
                        }
                        try target.obtainPermanentIDs(for: [copy])
                        #expect(copy.objectID.primaryKey == object.objectID.primaryKey)
                        made[object.objectID] = copy
                        pairs.append((object, copy))
                    }
                }
                for (object, copy) in pairs {
                    for relationship in model.relationships(of: object.entity.name) where !relationship.isToMany {
                        try copy.setObject(object.object(forKey: relationship.name).flatMap { made[$0.objectID] }, forKey: relationship.name)
                    }
                }
                try target.save()
            }
        }
        let appleChanges = Set(try HistoryRows.changes(apple).map { RecordedChange(transaction: 0, type: $0.type, entity: $0.entity, key: $0.key) })
        let ladeChanges = Set(try HistoryRows.changes(copy).map { RecordedChange(transaction: 0, type: $0.type, entity: $0.entity, key: $0.key) })
        #expect(appleChanges.count == 5468)
        #expect(ladeChanges == appleChanges, "only Core Data's: \(appleChanges.subtracting(ladeChanges).prefix(5)); only Lade's: \(ladeChanges.subtracting(appleChanges).prefix(5))")
        #expect(try HistoryRows.transactions(copy).count == 1)
    }

    @Test("lightweight migration in place keeps the history tables, rows and Z_PRIMARYKEY entries, renumbering changed entities", .needsCorpus)
    func migrationKeepsHistory() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try copyCorpusStore(SampleModel2.v1Store, to: directory)
        let source = try SampleModel2.v1()
        // A new root entity named before the others ("Aardvark") renumbers every entity by one.
        var entities = source.entities
        entities.append(EntityDescription(name: "Aardvark", attributes: [AttributeDescription(name: "name", type: .string)]))
        let destination = try ManagedObjectModel(entities: entities)
        let before = try HistoryRows.changes(url)
        try LightweightMigration(store: url, from: source, to: destination).run()
        let after = try HistoryRows.changes(url)
        #expect(after.count == before.count)
        #expect(Set(after.map { "\($0.type) \($0.entity) \($0.key)" }) == Set(before.map { "\($0.type) \($0.entity + 1) \($0.key)" }))
        #expect(try HistoryRows.maxima(url) == [16001: 5468, 16002: 1, 16003: 2])
        // The migrated store records its writes.
        let context = try privateContext(model: destination, store: url)
        try context.performAndWait {
            _ = try insertFeedback(context, 4)
            try context.save()
        }
        #expect(try HistoryRows.changes(url, after: 1) == [RecordedChange(transaction: 2, type: 0, entity: Self.feedback + 1, key: 445)])
    }

    @Test("ZCOLUMNS spans bytes in property-name order, and deletes keep each preserved attribute in its ZTOMBSTONE column by name order")
    func columnsAndTombstones() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Ten attributes a0…a9 (bits 0…9 by name); a3 and a1 kept after deletion: a1 in ZTOMBSTONE0, a3 in ZTOMBSTONE1.
        let attributes = (0..<10).map { AttributeDescription(name: "a\($0)", type: .integer64, preservesValueInHistoryOnDeletion: $0 == 1 || $0 == 3) }
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Item", attributes: attributes.reversed())])
        let url = directory.appendingPathComponent("items.sqlite")
        try PersistentStoreCoordinator.createStore(at: url, type: .sqlite, model: model, history: true)
        let columns = try SQLiteConnection(path: url.path, mode: .readOnly).rows("PRAGMA table_info(ACHANGE)").compactMap { row -> String? in
            if case .text(let name) = row[1] { return name } else { return nil } }
        #expect(columns.suffix(3) == ["ZCOLUMNS", "ZTOMBSTONE0", "ZTOMBSTONE1"])
        let context = try privateContext(model: model, store: url)
        try context.performAndWait {
            let item = try context.insertObject(forEntityName: "Item")
            for index in 0..<10 { try item.setAttributeValue(.integer(Int64(100 + index)), forKey: "a\(index)") }
            try context.save()
            try item.setAttributeValue(.integer(1), forKey: "a0")
            try item.setAttributeValue(.integer(9), forKey: "a9")
            try context.save()
            context.delete(item)
            try context.save()
        }
        #expect(try HistoryRows.changes(url) == [
            RecordedChange(transaction: 1, type: 0, entity: 1, key: 1),
            RecordedChange(transaction: 2, type: 1, entity: 1, key: 1, columns: "8040"),
            RecordedChange(transaction: 3, type: 2, entity: 1, key: 1),
        ])
        #expect(try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT ZTOMBSTONE0, ZTOMBSTONE1 FROM ACHANGE ORDER BY Z_PK")
            == [[.null, .null], [.null, .null], [.integer(101), .integer(103)]])
    }

    @Test("Z_MAX of the history entities set back below the keys in use: the thorough check reports each as keyCounter damage naming its table, and the next save takes keys past the largest instead of failing on UNIQUE")
    func historyKeyCountersSetBack() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Item", attributes: [AttributeDescription(name: "a", type: .integer64)])])
        let url = directory.appendingPathComponent("items.sqlite")
        try PersistentStoreCoordinator.createStore(at: url, type: .sqlite, model: model, history: true)
        let context = try privateContext(model: model, store: url)
        context.transactionAuthor = "tester"
        func insert(_ value: Int64) throws {
            try context.performAndWait {
                let item = try context.insertObject(forEntityName: "Item")
                try item.setAttributeValue(.integer(value), forKey: "a")
                try context.save()
            }
        }
        try insert(1)
        try insert(2)
        try SQLiteConnection(path: url.path, mode: .readWrite(create: false)).execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 0 WHERE Z_ENT IN (16001, 16002, 16003)")
        let damage = try SQLiteStore(url: url, model: model, readOnly: true).damage(thorough: true).filter { $0.kind == .keyCounter }
        let examples = damage.map(\.example).joined(separator: "; ")
        #expect(damage.count == 3, "\(damage)")
        for table in ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"] { #expect(examples.contains("\(table) holds Z_PK"), "\(examples)") }
        try insert(3)
        #expect(try HistoryRows.changes(url).map(\.transaction) == [1, 2, 3])
        #expect(try SQLiteStore(url: url, model: model, readOnly: true).damage(thorough: true).isEmpty)
    }

    @Test("history is listed after a token or date and pruned before one, as NSPersistentHistoryChangeRequest does", .needsCorpus)
    func listAndPrune() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (url, context) = try appleStore(directory)
        try context.performAndWait {
            for rating in [1.0, 2.0, 3.0] {
                _ = try insertFeedback(context, rating)
                try context.save()
            }
        }
        let all = try PersistentStoreCoordinator.history(ofStoreAt: url)
        try #require(all.map(\.number) == [1, 2, 3, 4])
        #expect(all[0].changes.count == 5468 && all[0].bundleID == "com.apple.dt.xctest.tool" && all[0].processID == "xctest" && all[0].author == nil)
        #expect(all[1].changes.map { "\($0.type) \($0.entityName ?? "") \($0.primaryKey)" } == ["insert Feedback 445"])
        #expect(try PersistentStoreCoordinator.history(ofStoreAt: url, after: .token(2)).map(\.number) == [3, 4])
        #expect(try PersistentStoreCoordinator.history(ofStoreAt: url, after: .date(all[2].timestamp)).map(\.number) == [4])
        let pruned = try PersistentStoreCoordinator.deleteHistory(ofStoreAt: url, before: .token(3))
        #expect(pruned == PersistentHistory.Pruned(transactions: 2, changes: 5469))
        #expect(try PersistentStoreCoordinator.history(ofStoreAt: url).map(\.number) == [3, 4])
        // The strings stay, as Core Data keeps them; new keys continue past the pruned ones.
        let strings = Int64(2 + Set(["tester", "editor", PersistentHistory.bundleID, PersistentHistory.processID]).count)
        #expect(try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT COUNT(*) FROM ATRANSACTIONSTRING") == [[.integer(strings)]])
        try context.performAndWait {
            _ = try insertFeedback(context, 4)
            try context.save()
        }
        #expect(try PersistentStoreCoordinator.history(ofStoreAt: url).map(\.number) == [3, 4, 5])
    }
}
