import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// Batch insert sessions on a PostgreSQL store (against the real test server): the outcomes,
/// keys, values and `Z_OPT`s of the SQLite store's sessions (`BatchInsertSessionTests`) on the
/// same rows, savepoints, PostgreSQL's own refusals, and two writers of overlapping keys.
@Suite("PostgreSQL batch insert sessions")
struct PostgreSQLBatchInsertTests {
    typealias Part = BatchInsertSessionTests.Part
    typealias Schema = PostgreSQLStoreTests.Schema
    let sessions = BatchInsertSessionTests()

    /// A context on a new PostgreSQL store for `model` in `schema`.
    func postgreSQLContext(_ schema: Schema, model: ManagedObjectModel) throws -> ManagedObjectContext {
        try privateContext(model: model, store: schema.url, type: .postgresql)
    }

    /// Every row of `entity` as the store reads it: key, version, values, to-one keys.
    func snapshot(_ context: ManagedObjectContext, _ entity: String) throws -> [String] {
        let store = try #require(context.persistentStoreCoordinator?.persistentStores.first)
        return try store.fetch(StoreFetchRequest(entityName: entity))
            .sorted { $0.objectID.primaryKey! < $1.objectID.primaryKey! }
            .map { row in
                "\(row.objectID.primaryKey!) v\(row.version) \(row.values.map { $0.map { "\($0)" } ?? "nil" }) \(row.toOneIDs.map { $0?.primaryKey.map(String.init) ?? "nil" })"
            }
    }

    /// A model of one entity, Item: a unique `key` and one more string attribute.
    static func keyedItems(other: String) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "key", type: .string, isOptional: false), AttributeDescription(name: other, type: .string),
            ], uniquenessConstraints: [["key"]]),
        ])
    }

    /// An outcome without its store: kind, entity and key.
    static func described(_ outcome: BatchInsertSession.Outcome) -> String {
        switch outcome {
        case .inserted(let id): "inserted \(id.entityName) \(id.primaryKey!)"
        case .updated(let id): "updated \(id.entityName) \(id.primaryKey!)"
        case .unchanged(let id): "unchanged \(id.entityName) \(id.primaryKey!)"
        case .duplicate(let id): "duplicate \(id.entityName) \(id.primaryKey!)"
        case .kept(let id): "kept \(id.entityName) \(id.primaryKey!)"
        case .missing: "missing"
        case .refused(let property, let message, _): "refused \(property): \(message)"
        }
    }

    @Test("PostgreSQL stores take batch inserts, so lade run's batch writer and its periodic commits are chosen for them as for SQLite")
    func capabilities() {
        #expect(PersistentStoreCoordinator.StoreType.postgresql.bulkInserts)
        #expect(PersistentStoreCoordinator.StoreType.postgresql.holdsSaves)
    }

    @Test("two rounds of parts and bins (inserts, updates, unchanged rows, duplicates, moves between bins) give the SQLite store's outcomes, keys, values and Z_OPTs")
    func roundsMatchSQLite() throws {
        let schema = try Schema("bulk_rounds")
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try BatchInsertSessionTests.model()
        let sqlite = try privateContext(model: model, store: directory.appendingPathComponent("parts.sqlite"), type: .sqlite)
        let postgres = try postgreSQLContext(schema, model: model)
        for (round, (bins, parts)) in [(BatchInsertSessionTests.firstBins, BatchInsertSessionTests.firstRound()),
                                       (BatchInsertSessionTests.secondBins, BatchInsertSessionTests.secondRound())].enumerated() {
            let expected = try sessions.writeBatch(sqlite, bins: bins, parts: parts).map(Self.described)
            let found = try sessions.writeBatch(postgres, bins: bins, parts: parts).map(Self.described)
            #expect(found == expected, "round \(round + 1)")
            for entity in ["Part", "Bin"] {
                #expect(try snapshot(postgres, entity) == snapshot(sqlite, entity), "round \(round + 1): \(entity)")
            }
        }
        // Held to fixed values too (as BatchInsertSessionTests holds SQLite's).
        let opts = try schema.server.psql("SELECT \"ZKEY\", \"Z_OPT\" FROM \(PostgresTestServer.quotedIdentifier(schema.name)).\"ZPART\" WHERE \"ZKEY\" IN ('P1', 'P3', 'P5', 'P12') ORDER BY 1")
        #expect(opts == "P1|1\nP12|1\nP3|2\nP5|2")
        let bins = try schema.server.psql("SELECT \"ZNAME\", \"Z_OPT\" FROM \(PostgresTestServer.quotedIdentifier(schema.name)).\"ZBIN\" ORDER BY 1")
        #expect(bins == "B0|2\nB1|2\nB2|2\nB3|1")
    }

    /// The rows of `BatchInsertSessionTests.outcomes` but its decimal (which only SQLite
    /// refuses): each write's outcomes, described.
    func outcomeScenario(_ context: ManagedObjectContext) throws -> [[String]] {
        func row(_ key: String, _ code: String? = nil, text: String? = nil, mayInsert: Bool = true) -> BatchInsertSession.Row {
            .init(values: [.string(key), code.map { .string($0) }, text.map { .string($0) }], mayInsert: mayInsert)
        }
        return try context.performAndWait {
            var written: [[String]] = []
            let first = try context.beginBatchInsert(entityName: "Part")
            let upsert = try first.target(entityName: "Part", attributes: ["key", "code", "text"], key: ["key"])
            written.append(try #require(try first.write([row("a", "A", text: "x"), row("b", "B", text: "y"), row("z", "Z", text: "z")], to: upsert)).map(Self.described))
            try first.commit()

            let session = try context.beginBatchInsert(entityName: "Part")
            let target = try session.target(entityName: "Part", attributes: ["key", "code", "text"], key: ["key"])
            written.append(try #require(try session.write([
                row("a", "A", text: "x"), row("b", "B", text: "changed"), row("c", "C"), row("c", "C", text: "again"),
                row("b", "B", text: "changed"), row("d", "A"), row("a", "B"), row("e", mayInsert: false), row("f", "F"),
            ], to: target)).map(Self.described))
            let keep = try session.target(entityName: "Part", attributes: ["key", "code", "text"], key: ["key"], onConflict: .keep)
            written.append(try #require(try session.write([row("z", "Z", text: "kept?"), row("c", "C", text: "third?"), row("g", "G")], to: keep)).map(Self.described))
            let onlyExisting = try session.target(entityName: "Part", attributes: ["key", "code", "text"], key: ["key"], insertsMissing: false)
            written.append(try #require(try session.write([row("h"), row("z", "Z", text: "z"), row("f", "F", text: "set")], to: onlyExisting)).map(Self.described))
            try session.commit()
            return written
        }
    }

    @Test("each row's outcome (inserted, updated, unchanged, duplicate, kept, missing, refused by another uniqueness constraint) and the rows written equal the SQLite store's")
    func outcomesMatchSQLite() throws {
        let schema = try Schema("bulk_outcomes")
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try BatchInsertSessionTests.model()
        let sqlite = try privateContext(model: model, store: directory.appendingPathComponent("parts.sqlite"), type: .sqlite)
        let postgres = try postgreSQLContext(schema, model: model)
        let expected = try outcomeScenario(sqlite)
        let found = try outcomeScenario(postgres)
        #expect(found == expected)
        #expect(expected[1][5].hasPrefix("refused code: another Part already has the same code"), "\(expected[1][5])")
        #expect(try snapshot(postgres, "Part") == snapshot(sqlite, "Part"))
    }

    @Test("a value PostgreSQL cannot keep (NUL in text) is refused per row, and mayRefuse says so; a Decimal of 17 digits, which SQLite refuses, is kept exactly")
    func postgreSQLRefusals() throws {
        let schema = try Schema("bulk_refusals")
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "key", type: .string, isOptional: false), AttributeDescription(name: "name", type: .string),
                AttributeDescription(name: "amount", type: .decimal),
            ], uniquenessConstraints: [["key"]]),
        ])
        let context = try postgreSQLContext(schema, model: model)
        let long = Decimal(string: "1234567890.1234567")!
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Item")
            let target = try session.target(entityName: "Item", attributes: ["key", "name", "amount"], key: ["key"])
            let fine = BatchInsertSession.Row(values: [.string("a"), .string("fine"), .decimal(long)])
            let nul = BatchInsertSession.Row(values: [.string("b"), .string("bad\u{0}name"), .decimal(1)])
            #expect(!session.mayRefuse([fine, fine], to: target, moreThan: 0))
            #expect(session.mayRefuse([fine, nul], to: target, moreThan: 0))
            let outcomes = try #require(try session.write([fine, nul], to: target))
            #expect(Self.described(outcomes[0]) == "inserted Item 1")
            guard case .refused("name", let message, _) = outcomes[1] else { Issue.record("\(outcomes[1])"); return }
            #expect(message.contains("NUL"), "\(message)")
            try session.commit()
        }
        let store = try #require(context.persistentStoreCoordinator?.persistentStores.first)
        let rows = try store.fetch(StoreFetchRequest(entityName: "Item"))
        #expect(rows.map(\.values) == [[.string("a"), .string("fine"), .decimal(long)]])
    }

    @Test("a batch refused by accept, or a batch block returning nil, is undone alone (keys given back); rollback leaves the store as it was; saves wait for the session")
    func savepoints() throws {
        let schema = try Schema("bulk_savepoints")
        let context = try postgreSQLContext(schema, model: try BatchInsertSessionTests.model())
        try sessions.writeBatch(context, bins: BatchInsertSessionTests.firstBins, parts: BatchInsertSessionTests.firstRound())
        func row(_ key: String, text: String, bin: ManagedObjectID?) -> BatchInsertSession.Row {
            .init(values: [.string(key), .string(text)], destinations: [bin])
        }
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Part")
            let target = try session.target(entityName: "Part", attributes: ["key", "text"], relationships: ["bin"], key: ["key"])
            let bins = try session.objectIDs(entityName: "Bin", attribute: "name", values: [.string("B0"), .string("B1"), .string("B2")])
            let b0 = bins[.string("B0")]!, b1 = bins[.string("B1")]!, b2 = bins[.string("B2")]!
            #expect(try session.write([row("N1", text: "kept", bin: b0)], to: target)?.count == 1)
            #expect(try session.write([row("N2", text: "gone", bin: b1), row("P0", text: "gone", bin: b2)], to: target, accept: { _ in false }) == nil)
            let nested: Int? = try session.batch {
                _ = try session.write([row("N3", text: "gone", bin: b1)], to: target)
                _ = try session.write([row("P1", text: "gone", bin: b2)], to: target)
                return nil
            }
            #expect(nested == nil)
            // A save would commit the session's transaction: it is refused until the session ends.
            let bin = try context.insertObject(forEntityName: "Bin")
            try bin.setValue("B9", forKey: "name")
            #expect(throws: (any Error).self) { try context.save() }
            context.rollback()
            #expect(try session.write([row("N4", text: "kept", bin: nil)], to: target)?.count == 1)
            try session.commit()
        }
        let table = PostgresTestServer.quotedIdentifier(schema.name)
        #expect(try schema.server.psql("SELECT \"ZKEY\", \"Z_PK\" FROM \(table).\"ZPART\" WHERE \"ZTEXT\" = 'kept' ORDER BY 2") == "N1|13\nN4|14")
        #expect(try schema.server.psql("SELECT count(*) FROM \(table).\"ZPART\" WHERE \"ZTEXT\" = 'gone' OR \"ZKEY\" IN ('N2', 'N3')") == "0")
        #expect(try schema.server.psql("SELECT \"ZNAME\", \"Z_OPT\" FROM \(table).\"ZBIN\" ORDER BY \"Z_PK\"") == "B0|2\nB1|1\nB2|1")
        #expect(try schema.server.psql("SELECT \"Z_OPT\" FROM \(table).\"ZPART\" WHERE \"ZKEY\" IN ('P0', 'P1')") == "1\n1")

        let committed = try snapshot(context, "Part")
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Part")
            let target = try session.target(entityName: "Part", attributes: ["key", "text"], relationships: ["bin"], key: ["key"])
            let b1 = try #require(try session.objectIDs(entityName: "Bin", attribute: "name", values: [.string("B1")]).values.first)
            _ = try session.write([row("R1", text: "rolled back", bin: b1), row("P2", text: "rolled back", bin: b1)], to: target)
            session.rollback()
            try sessions.saveGoesThrough(context)
        }
        #expect(try snapshot(context, "Part") == committed)
    }

    @Test("a batch written with undoable: false writes its rows (a later row of a key updating the earlier); refused, it rolls the whole session back and ends it")
    func notUndoable() throws {
        let schema = try Schema("bulk_not_undoable")
        let model = try Self.keyedItems(other: "name")
        let context = try postgreSQLContext(schema, model: model)
        func item(_ key: String, _ name: String) -> BatchInsertSession.Row { .init(values: [.string(key), .string(name)]) }
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Item")
            let target = try session.target(entityName: "Item", attributes: ["key", "name"], key: ["key"])
            let rows = [item("a", "1"), item("b", "2"), item("a", "3")]
            #expect(!session.mayRefuse(rows, to: target, moreThan: 0))
            #expect(try session.write(rows, to: target, undoable: false)?.map(Self.described) == ["inserted Item 1", "inserted Item 2", "duplicate Item 1"])
            try session.commit()
        }
        let committed = try snapshot(context, "Item")
        #expect(try schema.server.psql("SELECT \"ZKEY\", \"ZNAME\", \"Z_OPT\" FROM \(PostgresTestServer.quotedIdentifier(schema.name)).\"ZITEM\" ORDER BY \"Z_PK\"") == "a|3|1\nb|2|1")
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Item")
            let target = try session.target(entityName: "Item", attributes: ["key", "name"], key: ["key"])
            #expect(try session.write([item("e", "5")], to: target, undoable: false)?.count == 1)
            let refused = [item("f", "6"), item("g", "bad\u{0}")]
            #expect(session.mayRefuse(refused, to: target, moreThan: 0))
            #expect(throws: BatchInsertSession.Unsupported.self) {
                try session.write(refused, to: target, undoable: false) { outcomes in !outcomes.contains { if case .refused = $0 { true } else { false } } }
            }
            #expect(throws: BatchInsertSession.Unsupported.self) { try session.commit() }
            // The store is free again: a new session begins.
            let again = try context.beginBatchInsert(entityName: "Item")
            again.rollback()
        }
        #expect(try snapshot(context, "Item") == committed)
    }

    @Test("a first batch streamed in many COPY chunks that meets a stored key, or a key twice, near its end is written again the usual way: every row once, the outcomes and values right")
    func streamedBatchWrittenAgain() throws {
        let schema = try Schema("bulk_streamed")
        let model = try Self.keyedItems(other: "name")
        let context = try postgreSQLContext(schema, model: model)
        // Long names with a tab and a backslash: far more than one chunk (streamChunk) a batch.
        let filler = String(repeating: "x", count: 200) + "\t\\"
        func item(_ key: Int, _ name: String = "") -> BatchInsertSession.Row { .init(values: [.string("k\(key)"), .string("\(key) \(name)\(filler)")]) }
        let count = 2_000
        #expect(count * 200 > 4 * PostgreSQLBatchInsertTransaction.streamChunk)
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Item")
            let target = try session.target(entityName: "Item", attributes: ["key", "name"], key: ["key"])
            #expect(try session.write([item(count - 2, "stored")], to: target)?.map(Self.described) == ["inserted Item 1"])
            try session.commit()
        }
        try context.performAndWait {
            // A new session's first batch inserts first: row count - 2 finds the stored row.
            let session = try context.beginBatchInsert(entityName: "Item")
            let target = try session.target(entityName: "Item", attributes: ["key", "name"], key: ["key"])
            let outcomes = try #require(try session.write((0..<count).map { item($0) }, to: target)).map(Self.described)
            #expect(outcomes.count == count)
            #expect(outcomes[count - 2] == "updated Item 1")
            #expect(outcomes.filter { $0.hasPrefix("inserted") }.count == count - 1)
            // The next batch inserts first too (the last was mostly new): its key twice at the end.
            let again = try #require(try session.write((count..<(2 * count)).map { item($0) } + [item(2 * count - 1, "twice")], to: target)).map(Self.described)
            #expect(again.filter { $0.hasPrefix("inserted") }.count == count)
            #expect(again.last?.hasPrefix("duplicate Item") == true)
            try session.commit()
        }
        let quoted = PostgresTestServer.quotedIdentifier(schema.name)
        #expect(try schema.server.psql("SELECT count(*), count(DISTINCT \"ZKEY\"), count(DISTINCT \"Z_PK\"), sum(\"Z_OPT\") FROM \(quoted).\"ZITEM\"") == "\(2 * count)|\(2 * count)|\(2 * count)|\(2 * count + 1)")
        #expect(try schema.server.psql("SELECT \"ZNAME\" FROM \(quoted).\"ZITEM\" WHERE \"ZKEY\" IN ('k\(count - 2)', 'k\(2 * count - 1)') ORDER BY \"ZKEY\"")
                == "\(count - 2) \(filler)\n\(2 * count - 1) twice\(filler)")
    }

    @Test("COPY's text writes an integer as its decimal digits, as String does, to Int64's limits")
    func copyTextIntegers() {
        var generator = SystemRandomNumberGenerator()
        let values: [Int64] = [0, 7, -7, 10, -10, 99, 100, Int64.max, Int64.min, Int64.min + 1, 1_000_000_007]
            + (0..<1_000).map { _ in Int64.random(in: .min ... .max, using: &generator) >> Int64.random(in: 0...63, using: &generator) }
        for value in values {
            var buffer: [UInt8] = [UInt8(ascii: "|")]
            PostgreSQLCopyText.append(.integer(value), to: &buffer)
            #expect(String(decoding: buffer, as: UTF8.self) == "|\(value)")
        }
    }

    @Test("work given to write as whileStoreFinishes runs once while the server finishes a batch inserted first (and one that met a stored key), before write returns; not for a batch looked up first; never on SQLite")
    func workWhileStoreFinishes() throws {
        let schema = try Schema("bulk_while")
        let model = try Self.keyedItems(other: "name")
        func items(_ keys: Range<Int>, _ name: String) -> [BatchInsertSession.Row] { keys.map { .init(values: [.string("k\($0)"), .string(name)]) } }
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (context, isPostgreSQL) in [(try postgreSQLContext(schema, model: model), true),
                                        (try privateContext(model: model, store: directory.appendingPathComponent("items.sqlite"), type: .sqlite), false)] {
            try context.performAndWait { () throws -> Void in
                let session = try context.beginBatchInsert(entityName: "Item")
                let target = try session.target(entityName: "Item", attributes: ["key", "name"], key: ["key"])
                var calls = 0
                var returned = false
                let work = { #expect(!returned); calls += 1 }
                // New rows: inserted first, by one COPY.
                let first = try #require(try session.write(items(0..<300, "a"), to: target, whileStoreFinishes: work))
                returned = true
                #expect(first.count == 300 && first.allSatisfy { if case .inserted = $0 { true } else { false } })
                #expect(calls == (isPostgreSQL ? 1 : 0))
                // Inserted first again (the last batch was new), the COPY meets stored keys: the
                // batch is written again the usual way, and the work ran once, at the COPY's end.
                returned = false
                let second = try #require(try session.write(items(100..<400, "b"), to: target, whileStoreFinishes: work))
                returned = true
                // (Rows of keys this session wrote before are duplicates.)
                #expect(second.filter { if case .duplicate = $0 { true } else { false } }.count == 200)
                #expect(calls == (isPostgreSQL ? 2 : 0))
                // The last batch found most of its rows: the next is looked up first, with no COPY
                // into the table to wait for.
                returned = false
                let third = try #require(try session.write(items(0..<400, "c"), to: target, whileStoreFinishes: work))
                returned = true
                #expect(third.allSatisfy { if case .duplicate = $0 { true } else { false } })
                #expect(calls == (isPostgreSQL ? 2 : 0))
                try session.commit()
            }
        }
    }

    @Test("text that is canonically equivalent but not the same bytes (NFC and NFD é, Å and A + ring) is a different key, and a changed value, as on SQLite, on both write paths",
          arguments: [BatchInsertSession.ConflictPolicy.update, .keep])
    func equivalentTextStaysApart(_ policy: BatchInsertSession.ConflictPolicy) throws {
        let schema = try Schema(policy == .keep ? "bulk_nfd_keep" : "bulk_nfd")
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try Self.keyedItems(other: "note")
        // Sessions of batches of (key, note).
        let sessions: [[[(String, String)]]] = [
            [
                [("caf\u{E9}", "nfc")],
                // Under .update the first batch is inserted first, and this one meets a stored
                // key: both are then written the usual way, which looks keys up.
                [("cafe\u{301}", "nfd"), ("caf\u{E9}", "nfc again"), ("\u{C5}", "\u{E9}"), ("A\u{30A}", "a and ring")],
            ],
            // The note of Å only changes its form: NFC é to NFD é.
            [[("\u{C5}", "e\u{301}")]],
        ]
        func written(_ context: ManagedObjectContext) throws -> (outcomes: [[String]], rows: [String]) {
            let outcomes = try context.performAndWait {
                try sessions.flatMap { batches in
                    let session = try context.beginBatchInsert(entityName: "Item")
                    let target = try session.target(entityName: "Item", attributes: ["key", "note"], key: ["key"], onConflict: policy)
                    let outcomes = try batches.map { batch in
                        try (session.write(batch.map { .init(values: [.string($0.0), .string($0.1)]) }, to: target) ?? []).map(Self.described)
                    }
                    try session.commit()
                    return outcomes
                }
            }
            let store = try #require(context.persistentStoreCoordinator?.persistentStores.first)
            let rows = try store.fetch(StoreFetchRequest(entityName: "Item")).map { row in
                row.values.map { value -> String in
                    guard case .string(let text)? = value else { return "\(String(describing: value))" }
                    return text.utf8.map { String($0, radix: 16) }.joined(separator: " ")
                }.joined(separator: " | ")
            }
            return (outcomes, rows.sorted())
        }
        let sqlite = try written(privateContext(model: model, store: directory.appendingPathComponent("items.sqlite"), type: .sqlite))
        let postgres = try written(postgreSQLContext(schema, model: model))
        // The stores number objects differently (PostgreSQL takes keys in blocks): outcomes are
        // compared with each object named by the order it first appears in.
        func shape(_ outcomes: [[String]]) -> [String] {
            var names: [Substring: Int] = [:]
            return outcomes.joined().map { outcome in
                let words = outcome.split(separator: " ")
                let name = names[words.last!] ?? names.count
                names[words.last!] = name
                return "\(words[0]) #\(name)"
            }
        }
        // The second row's object was inserted earlier in the session: .update counts it a duplicate.
        #expect(shape(sqlite.outcomes) == ["inserted #0", "inserted #1", "\(policy == .keep ? "kept" : "duplicate") #0", "inserted #2", "inserted #3",
                                           "\(policy == .keep ? "kept" : "updated") #2"], "\(sqlite.outcomes)")
        #expect(sqlite.rows.count == 4, "\(sqlite.rows)")
        #expect(sqlite.rows.contains("c3 85 | " + (policy == .keep ? "c3 a9" : "65 cc 81")), "\(sqlite.rows)")
        #expect(shape(postgres.outcomes) == shape(sqlite.outcomes), "\(postgres.outcomes)")
        #expect(postgres.rows == sqlite.rows)
    }

    @Test("the same batches written again are all unchanged, and no Z_OPT moves")
    func rerunIsUnchanged() throws {
        let schema = try Schema("bulk_rerun")
        let context = try postgreSQLContext(schema, model: try BatchInsertSessionTests.model())
        try sessions.writeBatch(context, bins: BatchInsertSessionTests.firstBins, parts: BatchInsertSessionTests.firstRound())
        let before = try snapshot(context, "Part") + snapshot(context, "Bin")
        let again = try sessions.writeBatch(context, bins: BatchInsertSessionTests.firstBins, parts: BatchInsertSessionTests.firstRound())
        #expect(again.allSatisfy { if case .unchanged = $0 { true } else { false } }, "\(again)")
        #expect(try snapshot(context, "Part") + snapshot(context, "Bin") == before)
    }

    @Test("two sessions on two store instances writing overlapping keys at once: every key once, the later commit's values, Z_OPT advanced", .timeLimit(.minutes(2)))
    func concurrentWriters() throws {
        let schema = try Schema("bulk_workers")
        let model = try Self.keyedItems(other: "worker")
        let contexts = [try postgreSQLContext(schema, model: model), try postgreSQLContext(schema, model: model)]
        let ranges = [0..<1_500, 750..<2_250]
        final class Tally: @unchecked Sendable {
            let lock = NSLock()
            var commits: [Int] = []
            var counts: [String: Int] = [:]
            var failures: [String] = []
        }
        let tally = Tally()
        let lock = tally.lock
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            let context = contexts[worker]
            do {
                try context.performAndWait {
                    let session = try context.beginBatchInsert(entityName: "Item")
                    let target = try session.target(entityName: "Item", attributes: ["key", "worker"], key: ["key"])
                    for start in stride(from: ranges[worker].lowerBound, to: ranges[worker].upperBound, by: 250) {
                        let rows = (start..<start + 250).map { BatchInsertSession.Row(values: [.string(String(format: "K%05d", $0)), .string("w\(worker)")]) }
                        for outcome in try session.write(rows, to: target) ?? [] {
                            let kind = String(Self.described(outcome).prefix { $0 != " " })
                            lock.withLock { tally.counts[kind, default: 0] += 1 }
                        }
                    }
                    try session.commit()
                    lock.withLock { tally.commits.append(worker) }
                }
            } catch {
                lock.withLock { tally.failures.append("worker \(worker): \(error)") }
            }
        }
        #expect(tally.failures.isEmpty, "\(tally.failures)")
        let last = try #require(tally.commits.last)
        let table = "\(PostgresTestServer.quotedIdentifier(schema.name)).\"ZITEM\""
        #expect(try schema.server.psql("SELECT count(*), count(DISTINCT \"ZKEY\") FROM \(table)") == "2250|2250")
        #expect(tally.counts == ["inserted": 2_250, "updated": 750], "\(tally.counts)")
        #expect(try schema.server.psql("SELECT \"ZWORKER\", \"Z_OPT\", count(*) FROM \(table) WHERE \"ZKEY\" BETWEEN 'K00750' AND 'K01499' GROUP BY 1, 2") == "w\(last)|2|750")
        #expect(try schema.server.psql("SELECT \"ZWORKER\", \"Z_OPT\", count(*) FROM \(table) WHERE \"ZKEY\" < 'K00750' OR \"ZKEY\" > 'K01499' GROUP BY 1, 2 ORDER BY 1") == "w0|1|750\nw1|1|750")
        #expect(try schema.server.psql("SELECT count(DISTINCT \"Z_PK\") FROM \(table)") == "2250")
    }

    @Test("a key another session inserted after this one looked for it: the INSERT waits for its commit; under .update the row is updated and counted as updated with the other's key (Z_OPT advanced), under .keep it is kept as the other left it, and no row lock is held to the commit", .timeLimit(.minutes(1)),
          arguments: [BatchInsertSession.ConflictPolicy.update, .keep])
    func insertMeetsAnotherWritersRow(_ policy: BatchInsertSession.ConflictPolicy) throws {
        let schema = try Schema(policy == .keep ? "bulk_conflict_keep" : "bulk_conflict")
        let model = try Self.keyedItems(other: "worker")
        let first = try postgreSQLContext(schema, model: model), second = try postgreSQLContext(schema, model: model)
        // The second store's key block starts after the first's, so the two keys differ.
        _ = try first.performAndWait { try first.persistentStoreCoordinator!.persistentStores[0].newObjectIDs(for: "Item", count: 1) }
        let firstSession = try first.performAndWait { try first.beginBatchInsert(entityName: "Item") }
        try first.performAndWait {
            let target = try firstSession.target(entityName: "Item", attributes: ["key", "worker"], key: ["key"], onConflict: policy)
            let outcomes = try firstSession.write([.init(values: [.string("K"), .string("first")])], to: target)
            #expect(outcomes.map { $0.map(Self.described) } == ["inserted Item 2"])
        }
        let table = "\(PostgresTestServer.quotedIdentifier(schema.name)).\"ZITEM\"", server = schema.server
        final class Box: @unchecked Sendable { var outcomes: [String] = []; var lockedRow = ""; var error: (any Error)? }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        Thread {
            do {
                try second.performAndWait {
                    let session = try second.beginBatchInsert(entityName: "Item")
                    let target = try session.target(entityName: "Item", attributes: ["key", "worker"], key: ["key"], onConflict: policy)
                    // Not visible yet: inserted, and the INSERT waits for the first session.
                    box.outcomes = (try session.write([.init(values: [.string("K"), .string("second")]), .init(values: [.string("K"), .string("second again")])], to: target) ?? []).map(Self.described)
                    if policy == .keep {
                        // Before this session commits, another can lock the row at once.
                        box.lockedRow = try server.psql("SELECT \"Z_PK\" FROM \(table) WHERE \"ZKEY\" = 'K' FOR UPDATE NOWAIT")
                    }
                    try session.commit()
                }
            } catch { box.error = error }
            done.signal()
        }.start()
        Thread.sleep(forTimeInterval: 0.5)
        try first.performAndWait { try firstSession.commit() }
        done.wait()
        #expect(box.error == nil, "\(String(describing: box.error))")
        switch policy {
        case .update:
            #expect(box.outcomes == ["updated Item 2", "duplicate Item 2"])
            #expect(try server.psql("SELECT \"Z_PK\", \"ZWORKER\", \"Z_OPT\" FROM \(table)") == "2|second again|2")
        case .keep:
            #expect(box.outcomes == ["kept Item 2", "kept Item 2"])
            #expect(box.lockedRow == "2")
            #expect(try server.psql("SELECT \"Z_PK\", \"ZWORKER\", \"Z_OPT\" FROM \(table)") == "2|first|1")
        }
    }

    /// Measures a session of 200,000 rows with a unique text key (in random order, batches of
    /// 5,000, one commit) into PostgreSQL and SQLite: a first load, then the same rows again.
    /// Run with LADE_BULK_BENCH=1; prints the seconds.
    @Test("bulk insert timings, PostgreSQL beside SQLite", .enabled(if: ProcessInfo.processInfo.environment["LADE_BULK_BENCH"] != nil))
    func timings() throws {
        let count = Int(ProcessInfo.processInfo.environment["LADE_BULK_BENCH_ROWS"] ?? "") ?? 200_000
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "key", type: .string, isOptional: false), AttributeDescription(name: "name", type: .string),
                AttributeDescription(name: "qty", type: .integer64), AttributeDescription(name: "price", type: .double),
            ], uniquenessConstraints: [["key"]]),
        ])
        var generator = SystemRandomNumberGenerator()
        let keys = (0..<count).map { String(format: "SKU-%08d", $0) }.shuffled(using: &generator)
        let rows = keys.enumerated().map { index, key in
            BatchInsertSession.Row(values: [.string(key), .string("item \(key) of the catalog"), .integer(Int64(index % 977)), .double(Double(index) / 8)])
        }
        func load(_ context: ManagedObjectContext) throws -> Double {
            let start = Date()
            try context.performAndWait {
                let session = try context.beginBatchInsert(entityName: "Item")
                let target = try session.target(entityName: "Item", attributes: ["key", "name", "qty", "price"], key: ["key"])
                for batch in stride(from: 0, to: rows.count, by: 5_000) {
                    _ = try session.write(Array(rows[batch..<min(rows.count, batch + 5_000)]), to: target)
                }
                try session.commit()
            }
            return Date().timeIntervalSince(start)
        }
        let schema = try Schema("bulk_bench")
        let postgres = try postgreSQLContext(schema, model: model)
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try privateContext(model: model, store: directory.appendingPathComponent("bench.sqlite"), type: .sqlite)
        let pgFirst = try load(postgres), pgAgain = try load(postgres)
        let sqliteFirst = try load(sqlite), sqliteAgain = try load(sqlite)
        print("bulk insert of \(count) rows: PostgreSQL first \(String(format: "%.2f", pgFirst)) s, again \(String(format: "%.2f", pgAgain)) s; SQLite first \(String(format: "%.2f", sqliteFirst)) s, again \(String(format: "%.2f", sqliteAgain)) s")
        #expect(try schema.server.psql("SELECT count(*), max(\"Z_OPT\") FROM \(PostgresTestServer.quotedIdentifier(schema.name)).\"ZITEM\"") == "\(count)|1")
    }
}
