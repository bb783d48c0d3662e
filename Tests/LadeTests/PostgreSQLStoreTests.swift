import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// The PostgreSQL store against the real test server (`scripts/pg-test-cluster`, started by
/// `make test`): each test in a schema of its own, dropped at the end.
@Suite("PostgreSQL store")
struct PostgreSQLStoreTests {
    typealias StoreType = PersistentStoreCoordinator.StoreType

    /// A new schema's store URL, and a way to drop the schema.
    final class Schema {
        let server: PostgresTestServer
        let name: String
        init(_ label: String) throws {
            server = try PostgresTestServer.fromEnvironment()
            name = server.newSchemaName(label)
        }
        var url: URL { URL(string: server.storeURL(schema: name))! }
        var location: PostgreSQLLocation { try! PostgreSQLLocation(server.storeURL(schema: name)) }
        deinit { try? server.dropSchema(name) }
    }

    @Test("every object, value and relationship of every type arrives through SQLite → PostgreSQL → SQLite, and a new stack reads the PostgreSQL store alone", .slow)
    func conversionRoundTrip() throws {
        let schema = try Schema("roundtrip")
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try EveryType.model()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let source = try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("source.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try EveryType.populate(context, items: 40)
        let before = try EveryType.snapshot(coordinator)

        let onServer = try coordinator.migratePersistentStore(source, to: schema.url, options: .init(batchSize: 7), type: .postgresql)
        #expect(onServer.type == "PostgreSQL")
        #expect(onServer.identifier == source.identifier)
        #expect(try EveryType.snapshot(coordinator) == before)

        let reopened = PersistentStoreCoordinator(managedObjectModel: model)
        try reopened.addPersistentStore(type: nil, at: schema.url)
        let read = try EveryType.snapshot(reopened)
        #expect(read == before, "\(read.differences(from: before).prefix(3).joined(separator: "\n"))")

        let back = try coordinator.migratePersistentStore(onServer, to: directory.appendingPathComponent("back.sqlite"), options: .init(batchSize: 5), type: .sqlite)
        #expect(back.identifier == source.identifier)
        let again = try EveryType.snapshot(coordinator)
        #expect(again == before, "\(again.differences(from: before).prefix(3).joined(separator: "\n"))")
    }

    @Test("saves, faults, optimistic locking and uniqueness work as on SQLite; new keys never collide with the copied ones")
    func savesAndConflicts() throws {
        let schema = try Schema("saves")
        let model = try EveryType.model()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .postgresql, at: schema.url)
        let first = ManagedObjectContext(concurrencyType: .privateQueue)
        first.persistentStoreCoordinator = coordinator
        try EveryType.populate(first, items: 10)
        let second = ManagedObjectContext(concurrencyType: .privateQueue)
        second.persistentStoreCoordinator = coordinator
        // Both contexts read the same owner; the first saves a change, the second's is a conflict.
        let ownerName = "owner 1"
        var request = FetchRequest(entityName: "Owner")
        request.predicate = try FetchPredicate(format: "name == %@", arguments: [.string(ownerName)])
        let one = try first.performAndWait { try first.fetch(request).first! }
        let two = try second.performAndWait { try second.fetch(request).first! }
        try first.performAndWait {
            try one.setValue("owner one", forKey: "name")
            try first.save()
        }
        #expect(throws: (any Error).self) {
            try second.performAndWait {
                try two.setValue("owner uno", forKey: "name")
                try second.save()
            }
        }
        // A second Tag named as an existing one breaks the uniqueness constraint.
        let third = ManagedObjectContext(concurrencyType: .privateQueue)
        third.persistentStoreCoordinator = coordinator
        third.mergePolicy = .error
        #expect(throws: (any Error).self) {
            try third.performAndWait {
                let tag = try third.insertObject(forEntityName: "Tag")
                try tag.setValue("tag 0", forKey: "name")
                try third.save()
            }
        }
        let tags = try schema.server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema.name)).\"ZTAG\"")
        #expect(tags.trimmingCharacters(in: .whitespacesAndNewlines) == "4", "the refused save wrote nothing")
        let stored = try schema.server.psql("SELECT \"Z_OPT\" FROM \(PostgresTestServer.quotedIdentifier(schema.name)).\"ZOWNER\" WHERE \"ZNAME\" = 'owner one'")
        #expect(stored.trimmingCharacters(in: .whitespacesAndNewlines) == "2", "Z_OPT advanced once by the one save")
    }

    @Test("two stores on one schema take keys in disjoint blocks, so concurrent writers never collide")
    func keyBlocks() throws {
        let schema = try Schema("keys")
        let model = try EveryType.model()
        let a = try PostgreSQLStore.create(at: schema.location, model: model)
        let b = try PostgreSQLStore(location: schema.location, model: model)
        let fromA = try a.newObjectIDs(for: "Owner", count: 3).compactMap(\.primaryKey)
        let fromB = try b.newObjectIDs(for: "Owner", count: 3).compactMap(\.primaryKey)
        let moreA = try a.newObjectIDs(for: "Owner", count: 2).compactMap(\.primaryKey)
        #expect(Set(fromA + moreA).isDisjoint(with: fromB))
        #expect(moreA == [fromA.last! + 1, fromA.last! + 2], "keys come from the block the store holds")
    }

    @Test("a to-one key's index leaves out NULL keys, the other indexes keep every row, and reading a to-many relationship uses the key's index")
    func toOneKeyIndexes() throws {
        let schema = try Schema("keyindex")
        let model = try ManagedObjectModel(contentsOf: Fixtures.root.appendingPathComponent("samples/Catalog.xcdatamodeld"))
        let store = try PostgreSQLStore.create(at: schema.location, model: model)
        let connection = try PostgreSQLConnection(schema.location)
        let indexes = try connection.execute("SELECT indexname, indexdef FROM pg_catalog.pg_indexes WHERE schemaname = $1", [.text(schema.name)])
        let definitions = Dictionary(uniqueKeysWithValues: (0..<indexes.count).map { (indexes.text($0, 0)!, indexes.text($0, 1)!) })
        for index in store.schema.indexes {
            let definition = try #require(definitions[PostgreSQLStore.indexName(index)], "\(index.name) was not made")
            let partial = index.columns.map { "(\(postgreSQLQuoted($0)) IS NOT NULL)" }.joined(separator: " AND ")
            #expect(definition.hasSuffix(" WHERE " + partial) == (index.kind == .toOne), "\(definition)")
        }
        #expect(store.schema.indexes.contains { $0.name == "ZPRODUCT_ZSUPPLIER_INDEX" && $0.kind == .toOne })
        // The statement the store reads a to-many relationship with, planned with sequential
        // scans priced out: PostgreSQL takes the partial index only where the query implies
        // its condition.
        for (relationship, entity, index) in [("primaryProducts", "Supplier", "ZPRODUCT_ZSUPPLIER_INDEX"), ("products", "Category", "ZPRODUCT_ZCATEGORY_INDEX")] {
            let read = try #require(store.schema.toManyRead(relationship, from: entity, in: model, quote: postgreSQLQuoted, prefix: store.prefix,
                                                             owners: "= ANY($1::bigint[])", selectingOwner: true))
            _ = try connection.execute("SET enable_seqscan = off")
            let plan = try connection.execute("EXPLAIN " + read, [.text("{1,2,3}")])
            let lines = (0..<plan.count).compactMap { plan.text($0, 0) }.joined(separator: "\n")
            #expect(lines.contains(index), "\(read)\n\(lines)")
        }
    }

    @Test("metadata is read and written without a stack, and the store's own model opens it")
    func metadataAlone() throws {
        let schema = try Schema("meta")
        let model = try EveryType.model()
        try PostgreSQLStore.createStore(at: schema.location, model: model)
        var metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: schema.url)
        #expect(metadata[StoreMetadata.Key.storeType]?.stringValue == "PostgreSQL")
        metadata["seeded"] = .bool(true)
        try PersistentStoreCoordinator.setMetadata(metadata, at: schema.url)
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: schema.url)["seeded"] == .bool(true))
        let cache = try #require(try PostgreSQLStore.modelCache(at: schema.location))
        let carried = try ManagedObjectModel(modelCache: cache, origin: schema.name)
        #expect(Set(carried.entities.map(\.name)) == Set(model.entities.map(\.name)))
    }

    @Test("a schema name with a quote and a statement in it is a name, never SQL: the store is made in it and nothing else changes")
    func hostileSchemaName() throws {
        let server = try PostgresTestServer.fromEnvironment()
        let hostile = "x\"; DROP SCHEMA public CASCADE; --" + String(server.newSchemaName("h").suffix(8))
        defer { try? server.dropSchema(hostile) }
        let url = server.storeURL(schema: hostile)
        let model = try EveryType.model()
        let store = try PostgreSQLStore.create(at: try PostgreSQLLocation(url), model: model)
        #expect(store.location.schema == hostile)
        let schemas = try server.psql("SELECT nspname FROM pg_namespace WHERE nspname IN ('public', \(PostgresTestServer.quotedLiteral(hostile))) ORDER BY nspname")
        #expect(schemas.split(separator: "\n").count == 2, "public is still there and the hostile name is one schema: \(schemas)")
    }

    @Test("an error without SQLSTATE is libpq's own and says so, never '(SQLSTATE )'")
    func errorWithoutSQLState() throws {
        let location = try PostgreSQLLocation("postgresql://app@db/catalog?schema=feed")
        let error = PostgreSQLError(sqlState: "", message: "another command is already in progress", location: location)
        for text in [error.description, error.storeError("reading").description] {
            #expect(text.contains("libpq said: another command is already in progress") && !text.contains("SQLSTATE"), "\(text)")
        }
        #expect(PostgreSQLError(sqlState: "42P01", message: "relation does not exist", location: location).description.hasSuffix("the server said: relation does not exist (SQLSTATE 42P01)"))
    }

    @Test("locations: a schema is required, a password is never shown, names PostgreSQL would cut or refuse are refused")
    func locations() throws {
        let withPassword = try PostgreSQLLocation("postgresql://app:s3cr%27et@db.example:5433/catalog?schema=feed&sslmode=require")
        #expect(withPassword.hasPassword)
        #expect(withPassword.schema == "feed")
        #expect(!withPassword.redacted.contains("s3cr"))
        #expect(withPassword.redacted == "postgresql://app:***@db.example:5433/catalog?schema=feed&sslmode=require")
        #expect(!withPassword.connectionURL.contains("schema="))
        let inQuery = try PostgreSQLLocation("postgres://app@db/catalog?password=hunter22&schema=s")
        #expect(inQuery.hasPassword && !inQuery.description.contains("hunter22"))
        for (text, fragment) in [
            ("postgresql://app@db/catalog", "names no schema"),
            ("postgresql://app@db/catalog?schema=", "empty schema"),
            ("postgresql://app@db/catalog?schema=pg_catalog", "pg_"),
            ("postgresql://app@db/catalog?schema=" + String(repeating: "a", count: 64), "63"),
            ("postgresql://app@db/catalog?schema=a&schema=b", "twice"),
            ("postgresql://app:pw@db/catalog?schema=a&bogus=1", "libpq"),
            ("postgresql://app:pw@db/catalog?schema=a#x", "fragment"),
        ] {
            do {
                _ = try PostgreSQLLocation(text)
                Issue.record("\(text) was accepted")
            } catch let error as StoreError {
                #expect(error.code == "store.invalidLocation")
                #expect(error.description.contains(fragment), "\(error)")
                #expect(!error.description.contains(":pw@"), "a password shown: \(error)")
            }
        }
    }

    /// Passwords with every character a URL gives a meaning to, written raw (unencoded) as a
    /// hand would write them; the first is issue 43's.
    static let rawPasswords = ["p@ss:w/rd%?&x#y", "Zq/Kv?Wm#Jx@Hy", "Fo&schema=x;Gb", "Qx Wz'Vb\\Nu=Ty", "@@//??##%%"]

    /// The URLs, query strings and connection strings a raw `password` can be written in.
    static func spellings(of password: String) -> [String] {
        [
            "postgresql://app:\(password)@db.example:5433/catalog?schema=feed",
            "postgresql://app:\(password)@db.example/catalog?schema=feed&sslmode=require",
            "postgres://app:\(password)@db.example",
            "postgresql://app:\(password)@/catalog?host=/run/postgresql&schema=feed",
            "postgresql://me@corp:\(password)@db.example/catalog?schema=feed",
            "postgresql://app@db.example/catalog?schema=feed&password=\(password)",
            "postgresql://app@db.example/catalog?password=\(password)&schema=feed",
            "postgresql://app@db.example/catalog?PassWord=\(password)&schema=feed",
            "postgresql://app@db.example/catalog?pass%77ord=\(password)&schema=feed",
            "host=db.example password=\(password) dbname=catalog",
            "host=db.example password = '\(password.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'"))' dbname=catalog",
        ]
    }

    /// The first piece of `secret` (three characters or longer, not all URL delimiters) that
    /// `shown` holds and `context` (the text around the secret, and what is shown for the same
    /// URL with a plain password: Lade's own words) does not.
    static func leaks(_ secret: String, in shown: String, context: String) -> String? {
        let characters = Array(secret)
        for length in stride(from: characters.count, through: 3, by: -1) {
            for start in 0...(characters.count - length) {
                let piece = String(characters[start..<start + length])
                if shown.contains(piece) && !context.contains(piece) && !piece.allSatisfy({ "@/?#%".contains($0) }) { return piece }
            }
        }
        return nil
    }

    /// What is shown of `url`: its redacted form, and the location's description or error.
    static func shown(_ url: String) -> [String] {
        var shown = [PostgreSQLLocation.redact(url)]
        do {
            let location = try PostgreSQLLocation(url)
            shown += [location.redacted, location.description]
        } catch {
            shown.append("\(error)")
        }
        return shown
    }

    @Test("a password written raw (@ : / % ? & # unencoded) shows in no part in the redacted URL, the location's errors or the store's name, however the URL is written")
    func rawPasswordRedacted() throws {
        let plain = Self.spellings(of: "Plain123")
        for password in Self.rawPasswords {
            for (index, url) in Self.spellings(of: password).enumerated() {
                let context = url.replacingOccurrences(of: password, with: "\u{0}") + Self.shown(plain[index]).joined(separator: "\n")
                for text in Self.shown(url) {
                    let leaked = Self.leaks(password, in: text, context: context)
                    #expect(leaked == nil, "\(url) shown as \(text): leaks '\(leaked ?? "")'")
                }
                #expect(PostgreSQLLocation.redact(url) != url, "\(url): nothing redacted")
            }
        }
    }

    @Test("an empty password (user:@host, password=) carries no password; a non-empty one does")
    func emptyPassword() throws {
        for url in ["postgresql://app:@db.example/catalog?schema=feed", "postgresql://app@db.example/catalog?password=&schema=feed",
                    "postgresql://app@db.example/catalog?schema=feed&password="] {
            let location = try PostgreSQLLocation(url)
            #expect(!location.hasPassword, "\(url)")
            #expect(location.redacted == url, "\(url) shown as \(location.redacted)")
            #expect(PostgreSQLLocation.redact(url) == url, "\(url) redacted as \(PostgreSQLLocation.redact(url))")
        }
        for url in ["postgresql://app:x@db.example/catalog?schema=feed", "postgresql://app@db.example/catalog?password=x&schema=feed"] {
            #expect(try PostgreSQLLocation(url).hasPassword, "\(url)")
            #expect(PostgreSQLLocation.redact(url) != url, "\(url)")
        }
    }

    @Test("schema= is percent-decoded only, as libpq reads a query (RFC 3986): + stays +")
    func schemaPlus() throws {
        #expect(try PostgreSQLLocation("postgresql://app@db/catalog?schema=c++").schema == "c++")
        #expect(try PostgreSQLLocation("postgresql://app@db/catalog?schema=a+b%2Bc").schema == "a+b+c")
        #expect(try PostgreSQLLocation("postgresql://app@db/catalog?schema=a%20b").schema == "a b")
    }

    @Test("a server that is down, or refuses the login, is a clear connection error naming the store without its password")
    func connectionFailures() throws {
        let server = try PostgresTestServer.fromEnvironment()
        // A port nothing listens on.
        let down = try PostgreSQLLocation("postgresql://lade:topsecret@127.0.0.1:1/lade?schema=s&connect_timeout=5")
        do {
            _ = try PostgreSQLConnection(down)
            Issue.record("connected to a closed port")
        } catch let error as StoreError {
            #expect(error.code == "store.connection")
            #expect(!error.description.contains("topsecret"))
            #expect(error.description.contains("cannot connect"))
        }
        let refused = try PostgreSQLLocation(server.tcpURL(schema: "s", user: server.passwordUser, password: "wrong-password"))
        do {
            _ = try PostgreSQLConnection(refused)
            Issue.record("logged in with a wrong password")
        } catch let error as StoreError {
            #expect(error.code == "store.connection")
            #expect(error.description.contains("password authentication failed"), "\(error)")
            #expect(!error.description.contains("wrong-password"))
        }
    }

    @Test("a value PostgreSQL cannot keep (NUL in text) is refused before anything is written")
    func nulRefused() throws {
        let schema = try Schema("nul")
        let model = try EveryType.model()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .postgresql, at: schema.url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        #expect(StoreType.postgresql.refusal(of: .string("a\u{0}b")) != nil)
        #expect(StoreType.postgresql.refusal(of: .decimal(Decimal(string: "12345678901234567890.123")!)) == nil)
        #expect(throws: (any Error).self) {
            try context.performAndWait {
                let owner = try context.insertObject(forEntityName: "Owner")
                try owner.setValue("a\u{0}b", forKey: "name")
                try context.save()
            }
        }
        #expect(try schema.server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema.name)).\"ZOWNER\"").trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    @Test("writers on one store keep each other's metadata: each lade.… key in its own row, other keys merged, nothing undone")
    func concurrentMetadata() throws {
        let schema = try Schema("metarows")
        let model = try EveryType.model()
        let a = try PostgreSQLStore.create(at: schema.location, model: model)
        let b = try PostgreSQLStore(location: schema.location, model: model)
        var fromA = a.metadata
        fromA["lade.import:Item:/data/a.csv"] = .dictionary(["line": .integer(10)])
        fromA["owner"] = .string("a")
        var fromB = b.metadata
        fromB["lade.import:Item:/data/b.csv"] = .dictionary(["line": .integer(20)])
        fromB["reviewed"] = .bool(true)
        let generation = try a.beginHeldSaves(undoable: false)
        try a.commitHeldSaves(generation, metadata: fromA)
        var request = StoreSaveRequest()
        request.metadata = fromB
        try b.save(request)
        let stored = try PostgreSQLStore.readMetadata(at: schema.location)
        #expect(stored["lade.import:Item:/data/a.csv"] == .dictionary(["line": .integer(10)]))
        #expect(stored["lade.import:Item:/data/b.csv"] == .dictionary(["line": .integer(20)]))
        #expect(stored["owner"] == .string("a") && stored["reviewed"] == .bool(true))
        let rows = try schema.server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema.name)).\"Z_LADECHECKPOINT\"")
        #expect(rows.trimmingCharacters(in: .whitespacesAndNewlines) == "2")
        // A key removed by one writer goes; the other's stays.
        var less = fromA
        less["lade.import:Item:/data/a.csv"] = nil
        var again = StoreSaveRequest()
        again.metadata = less
        try a.save(again)
        let after = try PostgreSQLStore.readMetadata(at: schema.location)
        #expect(after["lade.import:Item:/data/a.csv"] == nil && after["lade.import:Item:/data/b.csv"] != nil)
    }

    @Test("one run per scope: an advisory lock on the server, another scope free, released when its holder goes")
    func advisoryLocks() throws {
        let schema = try Schema("locks")
        let first = try PostgreSQLAdvisoryLock(location: schema.location, scope: "lade.import:Item:/a.csv")
        #expect(throws: PostgreSQLAdvisoryLock.Busy.self) { try PostgreSQLAdvisoryLock(location: schema.location, scope: "lade.import:Item:/a.csv") }
        let other = try PostgreSQLAdvisoryLock(location: schema.location, scope: "lade.import:Item:/b.csv")
        do {
            _ = try PostgreSQLAdvisoryLock(location: schema.location, scope: "lade.import:Item:/a.csv")
        } catch let busy as PostgreSQLAdvisoryLock.Busy {
            #expect(busy.holder?.contains("server process") == true, "\(String(describing: busy.holder))")
        }
        first.release()
        let again = try PostgreSQLAdvisoryLock(location: schema.location, scope: "lade.import:Item:/a.csv")
        again.release()
        other.release()
    }

    @Test("the server dropping the connection in the middle of held saves: a clear connection error, nothing of them kept, the store usable again")
    func connectionDroppedMidTransaction() throws {
        let schema = try Schema("dropped")
        let model = try EveryType.model()
        let store = try PostgreSQLStore.create(at: schema.location, model: model)
        let generation = try store.beginHeldSaves(undoable: true)
        var request = StoreSaveRequest()
        let ids = try store.newObjectIDs(for: "Owner", count: 3)
        for (index, id) in ids.enumerated() {
            request.inserted.append(.init(objectID: id, attributes: ["name": .string("owner \(index)")], toOne: [:]))
        }
        try store.save(request)
        // Another session ends this one's server process, as an administrator or a failover would.
        // Only this store's own server process: other tests run beside this one.
        let pid = store.lock.withLock { store.connection.backendPID }
        let ended = try schema.server.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid = \(pid) AND backend_xid IS NOT NULL")
        #expect(ended.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "its transaction was open: \(ended)")
        let error = #expect(throws: StoreError.self) { try store.commitHeldSaves(generation, metadata: nil) }
        #expect(error?.code == "store.connection", "\(String(describing: error))")
        #expect(error?.description.contains("nothing of the unfinished transaction was kept") == true, "\(String(describing: error))")
        #expect(try schema.server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema.name)).\"ZOWNER\"").trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        // The next write connects again.
        var again = StoreSaveRequest()
        again.inserted.append(.init(objectID: try store.newObjectIDs(for: "Owner", count: 1)[0], attributes: ["name": .string("after")], toOne: [:]))
        try store.save(again)
        #expect(try schema.server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema.name)).\"ZOWNER\"").trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    }

    /// EveryType with a new root entity named first (every entity renumbered), an attribute added
    /// to Item with a default, and Owner's `name` renamed `title`.
    static func nextVersion(of model: ManagedObjectModel, uniqueFlag: Bool = false) throws -> ManagedObjectModel {
        var entities = model.entities.map { entity -> EntityDescription in
            var entity = entity
            if entity.name == "Item" {
                entity.attributes.append(AttributeDescription(name: "rating", type: .integer32, defaultValue: .integer(5)))
                if uniqueFlag { entity.uniquenessConstraints.append(["flag"]) }
            }
            return entity
        }
        entities.append(EntityDescription(name: "Aardvark", attributes: [AttributeDescription(name: "name", type: .string)]))
        return try ManagedObjectModel(entities: entities)
    }

    @Test("lightweight migration in place on PostgreSQL, in one transaction: objects carried with new numbers and defaults; a refused one changes nothing")
    func lightweightMigration() throws {
        let schema = try Schema("migrate")
        let v1 = try EveryType.model()
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: v1)
            try coordinator.addPersistentStore(type: .postgresql, at: schema.url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try EveryType.populate(context, items: 20)
        }
        let before = try { () throws -> EveryType.Snapshot in
            let coordinator = PersistentStoreCoordinator(managedObjectModel: v1)
            try coordinator.addPersistentStore(type: .postgresql, at: schema.url, readOnly: true)
            return try EveryType.snapshot(coordinator)
        }()
        let tables = { try schema.server.psql("SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = \(PostgresTestServer.quotedLiteral(schema.name))") }

        // A uniqueness constraint the objects break: refused, and the store is as it was.
        let refusedVersion = try Self.nextVersion(of: v1, uniqueFlag: true)
        let tablesBefore = try tables()
        #expect(throws: MigrationRefusal.self) { try LightweightMigration(store: schema.url, from: v1, to: refusedVersion).run() }
        #expect(try tables() == tablesBefore)
        #expect(try PostgreSQLStore(location: schema.location, model: v1, readOnly: true).count(StoreFetchRequest(entityName: "Item")) == 20)

        let v2 = try Self.nextVersion(of: v1)
        try LightweightMigration(store: schema.url, from: v1, to: v2).run()
        #expect(throws: StoreError.self) { try PostgreSQLStore(location: schema.location, model: v1) }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: v2)
        try coordinator.addPersistentStore(type: .postgresql, at: schema.url)
        let after = try EveryType.snapshot(coordinator)
        #expect(Set(after.objects.keys) == Set(before.objects.keys))
        for (key, object) in before.objects {
            var expected = object
            if key.hasPrefix("Item/") || key.hasPrefix("SpecialItem/") { expected.attributes["rating"] = .integer(5) }
            #expect(after.objects[key] == expected, "\(key)")
        }
        // New objects get keys past the carried ones; the carried model is the new version.
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let item = try context.insertObject(forEntityName: "Item")
            try item.setValue("new item", forKey: "name")
            try context.save()
        }
        let cache = try #require(try PostgreSQLStore.modelCache(at: schema.location))
        #expect(try ManagedObjectModel(modelCache: cache, origin: "migrated").entity(named: "Aardvark") != nil)
    }
}
