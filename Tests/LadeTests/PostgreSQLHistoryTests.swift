import Foundation
import Testing
@testable import Lade
import LadeTestSupport
import LadeTestTraits

/// Persistent history in a PostgreSQL store, against the real test server: the same three
/// tables as a SQLite store's, the same rows for the same saves, carried through conversions,
/// and in commit order under concurrent writers.
@Suite("PostgreSQL store: persistent history")
struct PostgreSQLHistoryTests {
    typealias Schema = PostgreSQLStoreTests.Schema

    static let tables = ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"]

    /// Every row of the three history tables and the history entities' `Z_PRIMARYKEY` rows, by
    /// table, each row its values in column order; `timestamps: false` leaves `ZTIMESTAMP` out.
    static func rows(sqlite url: URL, timestamps: Bool = true) throws -> [String: [[SQLiteValue]]] {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        var result: [String: [[SQLiteValue]]] = [:]
        for table in tables {
            result[table] = try connection.rows("SELECT \(try columns(table, timestamps: timestamps).joined(separator: ", ")) FROM \(table) ORDER BY Z_PK")
        }
        result["Z_PRIMARYKEY"] = try connection.rows("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT > 16000 ORDER BY Z_ENT")
        return result
    }

    static func rows(postgreSQL location: PostgreSQLLocation, timestamps: Bool = true) throws -> [String: [[SQLiteValue]]] {
        let connection = try PostgreSQLConnection(location)
        let prefix = postgreSQLQuoted(location.schema) + "."
        func read(_ sql: String) throws -> [[SQLiteValue]] {
            let result = try connection.execute(sql)
            return (0..<result.count).map { row in (0..<result.columnCount).map { PostgreSQLValueCoding.sqliteValue(result.value(row, $0)) } }
        }
        var result: [String: [[SQLiteValue]]] = [:]
        for table in tables {
            result[table] = try read("SELECT \(try columns(table, timestamps: timestamps).map(postgreSQLQuoted).joined(separator: ", ")) FROM \(prefix)\(postgreSQLQuoted(table)) ORDER BY \"Z_PK\"")
        }
        result["Z_PRIMARYKEY"] = try read("SELECT \"Z_ENT\", \"Z_NAME\", \"Z_SUPER\", \"Z_MAX\" FROM \(prefix)\"Z_PRIMARYKEY\" WHERE \"Z_ENT\" > 16000 ORDER BY \"Z_ENT\"")
        return result
    }

    static func columns(_ table: String, timestamps: Bool) throws -> [String] {
        switch table {
        case "ATRANSACTION":
            ["Z_PK", "Z_ENT", "Z_OPT", "ZAUTHORTS", "ZBUNDLEIDTS", "ZCONTEXTNAMETS", "ZPROCESSIDTS"] + (timestamps ? ["ZTIMESTAMP"] : [])
                + ["ZAUTHOR", "ZBUNDLEID", "ZCONTEXTNAME", "ZPROCESSID", "ZQUERYGEN"]
        case "ACHANGE": ["Z_PK", "Z_ENT", "Z_OPT", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZTRANSACTIONID", "ZCOLUMNS"]
        default: ["Z_PK", "Z_ENT", "Z_OPT", "ZNAME"]
        }
    }

    /// The same writes, through a context on `url`: saves, a store transaction, batch insert,
    /// update and delete requests, a batch insert session, a cascading delete.
    static func write(_ context: ManagedObjectContext) throws {
        context.transactionAuthor = "tester"
        context.name = "editor"
        try context.performAndWait {
            func feedback(_ rating: Double) throws -> ManagedObject {
                let object = try context.insertObject(forEntityName: "Feedback")
                try object.setAttributeValue(.string("alias"), forKey: "authorAlias")
                try object.setAttributeValue(.uuid(UUID(uuidString: "00000000-0000-0000-0000-00000000000\(Int(rating))")!), forKey: "bookID")
                try object.setAttributeValue(.double(rating), forKey: "rating")
                return object
            }
            let kept = try feedback(2)
            let dropped = try feedback(1)
            try context.save()
            try kept.setAttributeValue(.double(5), forKey: "rating")
            try context.save()
            context.delete(dropped)
            try context.save()
            let held = try context.beginStoreTransaction(entityName: "Feedback")
            _ = try feedback(3)
            try context.save()
            _ = try feedback(4)
            try context.save()
            try held.commit()
            let rows: [[String: AttributeValue?]] = (0..<3).map { ["authorAlias": .string("a\($0)"), "bookID": .uuid(UUID(uuidString: "00000000-0000-0000-0000-0000000001\($0)0")!), "rating": .double(Double($0))] }
            _ = try context.execute(BatchInsertRequest(entityName: "Feedback", objects: rows))
            let low = try FetchPredicate(format: "rating < 2")
            _ = try context.execute(BatchUpdateRequest(entityName: "Feedback", predicate: low, propertiesToUpdate: ["comment": .string("low")]))
            _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Feedback", predicate: low)))
            let session = try context.beginBatchInsert(entityName: "Feedback")
            let target = try session.target(entityName: "Feedback", attributes: ["authorAlias", "bookID", "rating"], key: [])
            _ = try session.write([.init(values: [.string("y"), .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000200")!), .double(1)]),
                                   .init(values: [.string("alias"), .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000201")!), .double(2)])], to: target)
            try session.commit()
            // An author with a book of two pages, then the author deleted: the cascade's deletes.
            let author = try context.insertObject(forEntityName: "Author")
            try author.setAttributeValue(.string("writer"), forKey: "alias")
            try author.setAttributeValue(.integer(40), forKey: "age")
            let book = try context.insertObject(forEntityName: "Book")
            try book.setAttributeValue(.uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000300")!), forKey: "uniqueID")
            try book.setAttributeValue(.string("Title"), forKey: "title")
            try book.setAttributeValue(.decimal(Decimal(string: "9.5")!), forKey: "price")
            try book.setAttributeValue(.binary(Data([1, 2])), forKey: "cover")
            try book.setAttributeValue(.date(Date(timeIntervalSinceReferenceDate: 1000)), forKey: "publishedAt")
            try book.setObject(author, forKey: "author")
            for number in 1...2 {
                let page = try context.insertObject(forEntityName: "Page")
                try page.setAttributeValue(.integer(Int64(number)), forKey: "number")
                try page.setAttributeValue(.binary(Data([UInt8(number)])), forKey: "content")
                try page.setObject(book, forKey: "book")
            }
            try context.save()
            context.delete(author)
            try context.save()
        }
    }

    /// A new Feedback (every attribute it needs set), not saved.
    @discardableResult
    static func feedback(in context: ManagedObjectContext) throws -> ManagedObject {
        let object = try context.insertObject(forEntityName: "Feedback")
        try object.setAttributeValue(.string("a"), forKey: "authorAlias")
        try object.setAttributeValue(.uuid(UUID()), forKey: "bookID")
        try object.setAttributeValue(.double(1), forKey: "rating")
        return object
    }

    @Test("a PostgreSQL store made with history records the same transactions, changes, strings and keys as a SQLite store for the same writes (Book.pagesCount plain, and derived: counted by each store's triggers)",
          arguments: [false, true])
    func sameAsSQLite(derived: Bool) throws {
        let schema = try Schema("history_same")
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try derived ? SampleModel2.model() : SampleModel2.v1()
        let file = directory.appendingPathComponent("history.sqlite")
        try PersistentStoreCoordinator.createStore(at: file, type: .sqlite, model: model, history: true)
        try PersistentStoreCoordinator.createStore(at: schema.url, type: .postgresql, model: model, history: true)
        try Self.write(try privateContext(model: model, store: file))
        try Self.write(try privateContext(model: model, store: schema.url))
        let sqlite = try Self.rows(sqlite: file, timestamps: false)
        let postgreSQL = try Self.rows(postgreSQL: schema.location, timestamps: false)
        #expect((sqlite["ATRANSACTION"]?.count ?? 0) >= 9)
        for table in Self.tables + ["Z_PRIMARYKEY"] {
            #expect(postgreSQL[table] == sqlite[table], "\(table): PostgreSQL \(postgreSQL[table] ?? []) vs SQLite \(sqlite[table] ?? [])")
        }
        // The library's reader gives the same transactions from either store.
        let fromSQLite = try PersistentStoreCoordinator.history(ofStoreAt: file, after: .token(2))
        let fromPostgreSQL = try PersistentStoreCoordinator.history(ofStoreAt: schema.url, after: .token(2))
        #expect(fromPostgreSQL.map(\.changes) == fromSQLite.map(\.changes))
        #expect(fromPostgreSQL.map(\.author) == fromSQLite.map(\.author) && fromPostgreSQL.first?.number == 3)
        let pruned = try PersistentStoreCoordinator.deleteHistory(ofStoreAt: schema.url, before: .token(4))
        #expect(pruned == (try PersistentStoreCoordinator.deleteHistory(ofStoreAt: file, before: .token(4))))
        #expect(try PersistentStoreCoordinator.history(ofStoreAt: schema.url).first?.number == 4)
    }

    @Test("Z_MAX of the history entities set back below the keys in use: the thorough check reports each as keyCounter damage, and the next save takes keys past the largest instead of failing on the primary key")
    func historyKeyCountersSetBack() throws {
        let schema = try Schema("history_counter")
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Item", attributes: [AttributeDescription(name: "a", type: .integer64)])])
        try PersistentStoreCoordinator.createStore(at: schema.url, type: .postgresql, model: model, history: true)
        let context = try privateContext(model: model, store: schema.url)
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
        try schema.server.psql("UPDATE \(PostgresTestServer.quotedIdentifier(schema.name)).\"Z_PRIMARYKEY\" SET \"Z_MAX\" = 0 WHERE \"Z_ENT\" IN (16001, 16002, 16003)")
        let damage = try PostgreSQLStore(location: schema.location, model: model, readOnly: true).damage(thorough: true).filter { $0.kind == .keyCounter }
        let examples = damage.map(\.example).joined(separator: "; ")
        #expect(damage.count == 3, "\(damage)")
        for table in ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"] { #expect(examples.contains("\(table) holds Z_PK"), "\(examples)") }
        try insert(3)
        #expect(try PersistentStoreCoordinator.history(ofStoreAt: schema.url).count == 3)
        #expect(try PostgreSQLStore(location: schema.location, model: model, readOnly: true).damage(thorough: true).isEmpty)
    }

    @Test("a store made without history records none, and its history is refused as not tracked")
    func withoutHistory() throws {
        let schema = try Schema("history_none")
        let model = try SampleModel2.v1()
        try PersistentStoreCoordinator.createStore(at: schema.url, type: .postgresql, model: model)
        let context = try privateContext(model: model, store: schema.url)
        try context.performAndWait {
            try Self.feedback(in: context)
            try context.save()
        }
        #expect(performing: { try PersistentStoreCoordinator.history(ofStoreAt: schema.url) },
                throws: { ($0 as? HistoryError)?.kind == .notTracked })
    }

    @Test("Apple's store with history converted to PostgreSQL keeps Apple's history rows exactly (read with pagesCount plain, and with the model it carries, pagesCount derived)",
          .needsCorpus, arguments: [false, true])
    func appleHistoryCarried(carried: Bool) throws {
        let schema = try Schema("history_apple")
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try copyCorpusStore(SampleModel2.v1Store, to: directory)
        let model = try carried ? ManagedObjectModel(carriedByStoreAt: url) : SampleModel2.v1()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let source = try coordinator.addPersistentStore(type: .sqlite, at: url, readOnly: true)
        let apple = try Self.rows(sqlite: url)
        #expect(apple["ACHANGE"]?.count == 5468)
        _ = try coordinator.migratePersistentStore(source, to: schema.url, options: .init(batchSize: 500), type: .postgresql)
        let carried = try Self.rows(postgreSQL: schema.location)
        for table in Self.tables + ["Z_PRIMARYKEY"] {
            #expect(carried[table] == apple[table], "\(table): \(carried[table]?.count ?? 0) rows vs \(apple[table]?.count ?? 0)")
        }
        // The converted store goes on recording, after Apple's transaction.
        let context = try privateContext(model: model, store: schema.url)
        try context.performAndWait {
            try Self.feedback(in: context)
            try context.save()
        }
        let after = try PersistentStoreCoordinator.history(ofStoreAt: schema.url, after: .token(1))
        #expect(after.map(\.number) == [2] && after.first?.changes.map(\.primaryKey) == [445])
    }

    @Test("SQLite with history → PostgreSQL → SQLite keeps the history tables identical")
    func roundTrip() throws {
        let schema = try Schema("history_round")
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try SampleModel2.v1()
        let file = directory.appendingPathComponent("source.sqlite")
        try PersistentStoreCoordinator.createStore(at: file, type: .sqlite, model: model, history: true)
        try Self.write(try privateContext(model: model, store: file))
        let before = try Self.rows(sqlite: file)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let source = try coordinator.addPersistentStore(type: .sqlite, at: file, readOnly: true)
        let onServer = try coordinator.migratePersistentStore(source, to: schema.url, options: .init(batchSize: 3), type: .postgresql)
        let middle = try Self.rows(postgreSQL: schema.location)
        let back = directory.appendingPathComponent("back.sqlite")
        _ = try coordinator.migratePersistentStore(onServer, to: back, options: .init(batchSize: 3), type: .sqlite)
        let after = try Self.rows(sqlite: back)
        for table in Self.tables + ["Z_PRIMARYKEY"] {
            #expect(middle[table] == before[table], "PostgreSQL \(table): \(middle[table] ?? []) vs \(before[table] ?? [])")
            #expect(after[table] == before[table], "SQLite again \(table): \(after[table] ?? []) vs \(before[table] ?? [])")
        }
        #expect((before["ACHANGE"]?.count ?? 0) > 10)
    }

    @Test("tombstones of every attribute type keep their value and SQLite's storage class through SQLite → PostgreSQL → SQLite, and a PostgreSQL store's own tombstones convert to what SQLite records")
    func tombstonesRoundTrip() throws {
        let schema = try Schema("history_tombstone_types"), native = try Schema("history_tombstone_native")
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let types: [(String, AttributeType)] = [("b", .boolean), ("d", .double), ("i", .integer64), ("n", .decimal), ("s", .string), ("t", .date), ("u", .uuid), ("x", .binary)]
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Item", attributes: types.map {
            AttributeDescription(name: $0.0, type: $0.1, preservesValueInHistoryOnDeletion: true)
        })])
        let items: [[String: AttributeValue]] = [
            ["b": .bool(true), "d": .double(0.1), "i": .integer(-42), "n": .decimal(Decimal(string: "12.5")!), "s": .string("\\x41 back\\slash\ttab é"),
             "t": .date(Date(timeIntervalSinceReferenceDate: 123.456)), "u": .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!), "x": .binary(Data([0, 1, 0x5C, 0xFF]))],
            ["d": .double(-1e300), "i": .integer(Int64.max), "s": .string("")],
        ]
        func write(_ url: URL, type: PersistentStoreCoordinator.StoreType) throws {
            try PersistentStoreCoordinator.createStore(at: url, type: type, model: model, history: true)
            let context = try privateContext(model: model, store: url, type: type)
            try context.performAndWait {
                let objects = try items.map { values in
                    let object = try context.insertObject(forEntityName: "Item")
                    for (key, value) in values { try object.setAttributeValue(value, forKey: key) }
                    return object
                }
                try context.save()
                for object in objects { context.delete(object) }
                try context.save()
            }
        }
        func tombstones(sqlite url: URL) throws -> [[SQLiteValue]] {
            try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT \((0..<8).map { "ZTOMBSTONE\($0)" }.joined(separator: ", ")) FROM ACHANGE WHERE ZCHANGETYPE = 2 ORDER BY ZENTITYPK")
        }
        let file = directory.appendingPathComponent("source.sqlite")
        try write(file, type: .sqlite)
        let before = try tombstones(sqlite: file)
        #expect(before.count == 2 && before[0][4] == .text("\\x41 back\\slash\ttab é") && before[1][2] == .integer(Int64.max), "\(before)")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let source = try coordinator.addPersistentStore(type: .sqlite, at: file, readOnly: true)
        let onServer = try coordinator.migratePersistentStore(source, to: schema.url, options: .init(batchSize: 3), type: .postgresql)
        let back = directory.appendingPathComponent("back.sqlite")
        _ = try coordinator.migratePersistentStore(onServer, to: back, options: .init(batchSize: 3), type: .sqlite)
        #expect(try tombstones(sqlite: back) == before)
        // The same writes on a PostgreSQL store (its triggers keep the tombstones), converted.
        try write(native.url, type: .postgresql)
        let nativeCoordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let nativeStore = try nativeCoordinator.addPersistentStore(type: .postgresql, at: native.url, readOnly: true)
        let converted = directory.appendingPathComponent("native.sqlite")
        _ = try nativeCoordinator.migratePersistentStore(nativeStore, to: converted, options: .init(batchSize: 3), type: .sqlite)
        let nativeRows = try tombstones(sqlite: converted)
        #expect(nativeRows == before, "\(nativeRows) vs \(before)")
    }

    @Test("three writers at once: history keys never collide, and a reader asking for changes after its last token misses no transaction", .slow)
    func concurrentWriters() throws {
        let schema = try Schema("history_concurrent")
        let model = try SampleModel2.v1()
        try PersistentStoreCoordinator.createStore(at: schema.url, type: .postgresql, model: model, history: true)
        let saves = 60
        let writers = 3
        let url = schema.url
        let done = Locked(0)
        let seen = Locked<[Int64]>([])
        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        for writer in 0..<writers {
            DispatchQueue.global().async(group: group) {
                defer { done.withLock { $0 += 1 } }
                do {
                    let context = try privateContext(model: model, store: url)
                    context.transactionAuthor = "writer \(writer)"
                    try context.performAndWait {
                        for index in 0..<saves {
                            for _ in 0..<(1 + index % 3) {
                                let object = try context.insertObject(forEntityName: "Feedback")
                                try object.setAttributeValue(.string("w\(writer)"), forKey: "authorAlias")
                                try object.setAttributeValue(.uuid(UUID()), forKey: "bookID")
                                try object.setAttributeValue(.double(Double(index)), forKey: "rating")
                            }
                            try context.save()
                        }
                    }
                } catch {
                    failures.withLock { $0.append("writer \(writer): \(error)") }
                }
            }
        }
        // A reader polls for the transactions after the last one it saw, as an app does.
        var last: Int64 = 0
        while true {
            let finished = done.withLock { $0 } == writers
            let fetched = try PersistentStoreCoordinator.history(ofStoreAt: url, after: .token(last))
            seen.withLock { $0 += fetched.map(\.number) }
            last = fetched.last?.number ?? last
            if finished { break }
        }
        group.wait()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let all = try PersistentStoreCoordinator.history(ofStoreAt: url)
        #expect(all.map(\.number) == Array(1...Int64(writers * saves)), "transaction keys one after another, none twice")
        #expect(seen.withLock { $0 } == all.map(\.number), "the reader saw every transaction once, in order")
        let changes = all.flatMap(\.changes)
        #expect(Set(changes.map(\.number)).count == changes.count && changes.count == writers * (0..<saves).reduce(0) { $0 + 1 + $1 % 3 })
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp }, "timestamps in commit order")
        #expect(Set(changes.map(\.primaryKey)).count == changes.count)
    }
}

extension PostgreSQLHistoryTests {
    @Test("a writer whose commit comes while another holds the history keys waits for it, and takes the next token")
    func waitsForTheCommitBefore() throws {
        let schema = try Schema("history_wait")
        let model = try SampleModel2.v1()
        try PersistentStoreCoordinator.createStore(at: schema.url, type: .postgresql, model: model, history: true)
        let prefix = postgreSQLQuoted(schema.name) + "."
        // Another writer, in the middle of its commit: it holds the history keys' rows.
        let other = try PostgreSQLConnection(schema.location)
        try other.execute("BEGIN")
        _ = try other.execute("SELECT \"Z_MAX\" FROM \(prefix)\"Z_PRIMARYKEY\" WHERE \"Z_ENT\" IN (16001, 16002, 16003) ORDER BY \"Z_ENT\" FOR UPDATE")
        let url = schema.url
        let failure = Locked<String?>(nil)
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            do {
                let context = try privateContext(model: model, store: url)
                try context.performAndWait {
                    try Self.feedback(in: context)
                    try context.save()
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        #expect(group.wait(timeout: .now() + 1) == .timedOut, "the save waits for the other commit")
        try other.execute("INSERT INTO \(prefix)\"ATRANSACTION\" (\"Z_PK\", \"Z_ENT\", \"ZTIMESTAMP\") VALUES (1, 16002, 0)")
        try other.execute("UPDATE \(prefix)\"Z_PRIMARYKEY\" SET \"Z_MAX\" = 1 WHERE \"Z_ENT\" = 16002")
        try other.execute("COMMIT")
        group.wait()
        #expect(failure.withLock { $0 } == nil, "\(failure.withLock { $0 } ?? "")")
        let history = try PersistentStoreCoordinator.history(ofStoreAt: url)
        #expect(history.map(\.number) == [1, 2] && history.last?.changes.map(\.primaryKey) == [1])
    }
}

extension PostgreSQLHistoryTests {
    @Test("a lightweight migration keeps the history, its changes naming their entities by the new numbers, records nothing itself, and the new tables record history")
    func lightweightMigration() throws {
        let schema = try Schema("history_migrate")
        let v1 = try EveryType.model()
        try PersistentStoreCoordinator.createStore(at: schema.url, type: .postgresql, model: v1, history: true)
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: v1)
            try coordinator.addPersistentStore(type: .postgresql, at: schema.url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try EveryType.populate(context, items: 5)
        }
        func named(_ transactions: [PersistentHistory.Transaction]) -> [String] {
            transactions.flatMap { transaction in transaction.changes.map { "\(transaction.number) \($0.type) \($0.entityName ?? "?")/\($0.primaryKey)" } }
        }
        let before = try PersistentStoreCoordinator.history(ofStoreAt: schema.url)
        #expect(!before.isEmpty)
        let v2 = try PostgreSQLStoreTests.nextVersion(of: v1)
        try LightweightMigration(store: schema.url, from: v1, to: v2).run()
        let after = try PersistentStoreCoordinator.history(ofStoreAt: schema.url)
        #expect(named(after) == named(before))
        #expect(after.flatMap(\.changes).map(\.entityNumber) != before.flatMap(\.changes).map(\.entityNumber), "the entities were numbered anew")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: v2)
        try coordinator.addPersistentStore(type: .postgresql, at: schema.url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let item = try context.insertObject(forEntityName: "Item")
            try item.setValue("new item", forKey: "name")
            let aardvark = try context.insertObject(forEntityName: "Aardvark")
            try aardvark.setValue("new", forKey: "name")
            try context.save()
        }
        let last = try #require(try PersistentStoreCoordinator.history(ofStoreAt: schema.url).last)
        #expect(last.number == (before.last?.number ?? 0) + 1)
        #expect(Set(last.changes.map { "\($0.type) \($0.entityName ?? "?")" }) == ["insert Item", "insert Aardvark"])
    }
}

extension PostgreSQLHistoryTests {
    @Test("ZCOLUMNS as on SQLite, and deletes keep each preserved attribute in its ZTOMBSTONE column (bytea: a number as its text)")
    func columnsAndTombstones() throws {
        let schema = try Schema("history_tombstones")
        // Ten attributes a0…a9 (bits 0…9 by name); a3 and a1 kept after deletion: a1 in ZTOMBSTONE0, a3 in ZTOMBSTONE1.
        let attributes = (0..<10).map { AttributeDescription(name: "a\($0)", type: .integer64, preservesValueInHistoryOnDeletion: $0 == 1 || $0 == 3) }
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Item", attributes: attributes.reversed())])
        try PersistentStoreCoordinator.createStore(at: schema.url, type: .postgresql, model: model, history: true)
        let context = try privateContext(model: model, store: schema.url)
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
        let connection = try PostgreSQLConnection(schema.location)
        let result = try connection.execute("SELECT \"ZCHANGETYPE\", \"ZCOLUMNS\", \"ZTOMBSTONE0\", \"ZTOMBSTONE1\" FROM \(postgreSQLQuoted(schema.name)).\"ACHANGE\" ORDER BY \"Z_PK\"")
        let rows = (0..<result.count).map { row in (0..<4).map { PostgreSQLValueCoding.sqliteValue(result.value(row, $0)) } }
        #expect(rows == [
            [.integer(0), .null, .null, .null],
            [.integer(1), .blob(Data([0x80, 0x40])), .null, .null],
            [.integer(2), .null, .blob(Data("101".utf8)), .blob(Data("103".utf8))],
        ])
    }
}

extension PostgreSQLHistoryTests {
    @Test("a hostile schema name ('\"; DROP …', a quote, a dollar quote) keeps history like any other")
    func hostileSchemaName() throws {
        let server = try PostgresTestServer.fromEnvironment()
        let name = String(server.newSchemaName("h").prefix(40)) + "\"; DROP '$lade$"
        defer { try? server.dropSchema(name) }
        let url = URL(string: server.storeURL(schema: name))!
        let model = try SampleModel2.v1()
        try PersistentStoreCoordinator.createStore(at: url, type: .postgresql, model: model, history: true)
        let context = try privateContext(model: model, store: url)
        try context.performAndWait {
            let object = try Self.feedback(in: context)
            try context.save()
            context.delete(object)
            try context.save()
        }
        let history = try PersistentStoreCoordinator.history(ofStoreAt: url)
        #expect(history.map { $0.changes.map(\.type) } == [[.insert], [.delete]])
        #expect(try PersistentStoreCoordinator.deleteHistory(ofStoreAt: url, before: .token(2)) == .init(transactions: 1, changes: 1))
    }
}

/// A value shared between threads of a test.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&value) } }
}
