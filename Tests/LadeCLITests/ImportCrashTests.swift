import Foundation
import Lade
import Testing

/// Crash safety shown, not argued: `lade run` is killed with SIGKILL at seeded points of a long
/// import, run again each time, and finally to the end. After every kill the store holds exactly
/// the rows its checkpoint says were committed; at the end every source row is there exactly
/// once, each rejected row is in the rejects file exactly once, and SQLite's integrity check is
/// clean. Kill points are row counts the child's `--progress` lines pass, plus a seeded delay,
/// so they land in batches, in commits and between them.
@Suite("lade run: SIGKILL at seeded points, then resume", .slow)
struct ImportCrashTests {
    static let kills = 5
    /// Rows of each generated source: enough for a few hundred batches in a debug build within
    /// seconds; `LADE_CRASH_ROWS=200000 swift test --filter ImportCrashTests` for a longer run.
    static let rows = ProcessInfo.processInfo.environment["LADE_CRASH_ROWS"].flatMap { Int($0) } ?? 30_000

    /// Runs `job` until `kills` SIGKILLs have landed, each once the child reports a seeded row count
    /// between what is committed and `total`; after each, `check(killNumber)` looks at the store.
    static func killRepeatedly(_ sandbox: ImportSandbox, job: String, seed: UInt64, total: Int,
                               committed: () throws -> Int64, check: (Int) throws -> Void) throws -> [Int64] {
        var random = SeededGenerator(seed: seed)
        var points: [Int64] = []
        for kill in 1...kills {
            let before = try committed()
            let target = Int(before) + (total - Int(before)) * (10 + random.int(50)) / 100
            let delay = useconds_t(random.int(30_000))
            let child = try LadeChild(["run", job, "--progress", "0.01"], in: sandbox.directory)
            let running = child.wait(until: { child.rowsReported >= target })
            if running { usleep(delay) }
            child.send(SIGKILL)
            child.finish()
            try #require(child.endedBySignal == SIGKILL, "seed \(seed), kill \(kill): the run ended before the kill at \(target) rows (+\(delay) µs): \(child.stderr.suffix(500))")
            let after = try committed()
            #expect(after >= before, "seed \(seed), kill \(kill): the checkpoint never goes back")
            points.append(after)
            try check(kill)
        }
        return points
    }

    /// Both writers: batch inserts (`auto`), and managed objects saved batch by batch into a
    /// transaction held open until each commit.
    @Test("keyed upsert from CSV: killed at 5 seeded points, every row once, each reject once, integrity clean",
          arguments: [(UInt64(20_261_122), "auto"), (UInt64(20_261_126), "objects")])
    func keyedUpsert(seed: UInt64, writer: String) throws {
        try ImportSandbox.$writer.withValue(writer) { try keyedUpsertRuns(seed: seed, writer: writer) }
    }

    private func keyedUpsertRuns(seed: UInt64, writer: String) throws {
        let sandbox = try ImportSandbox()
        let count = Self.rows
        let bad = Set((0..<count).filter { $0 % 1_999 == 1_998 })
        let source = try sandbox.write("products.csv", GeneratedProducts.csv(count, bad: bad))
        try sandbox.job(GeneratedProducts.job(batchSize: 200, onError: "{ policy: skip, maxErrors: 100000, rejects: rejects.ndjson }"))
        func committed() throws -> Int64 {
            guard FileManager.default.fileExists(atPath: sandbox.store.path),
                  let checkpoint = try StoreReading.checkpoint(sandbox.store, entity: "Product", source: source) else { return 0 }
            return checkpoint["rows"]?.integer ?? -1
        }
        let points = try Self.killRepeatedly(sandbox, job: "job.yaml", seed: seed, total: count, committed: committed) { kill in
            // The store holds exactly the committed prefix of the source, and the rejects file at least its rejects.
            let rows = Int(try committed())
            guard rows > 0 else { return }
            let prefixBad = Set(bad.filter { $0 < rows })
            let skus = try StoreReading.column(sandbox.store, "SELECT ZSKU FROM ZPRODUCT ORDER BY ZSKU")
            #expect(skus == (0..<rows).filter { !prefixBad.contains($0) }.map { .text(GeneratedProducts.sku($0)) },
                    "seed \(seed), kill \(kill): the store is the committed prefix (\(rows) rows)")
            let rejected = Set(try sandbox.rejectedRows().compactMap { $0["line"] as? Int })
            #expect(rejected.isSuperset(of: prefixBad.map { $0 + 2 }), "seed \(seed), kill \(kill)")
            #expect(try StoreReading.integrityCheck(sandbox.store) == "t'ok'")
        }
        #expect(Set(points).count > 1, "the kills landed at different points: \(points)")

        let (result, report) = try sandbox.run()
        #expect(result.status == 2, "finished, with rejects: \(result.stderr)")
        #expect(report?["writer"] as? String == (writer == "auto" ? "batch" : writer))
        #expect(report?["resumedAtLine"] as? Int == Int(points.last!) + 2 || points.last == 0)
        try GeneratedProducts.expectEveryRowOnce(sandbox.store, count: count, except: bad)
        let rejects = try sandbox.rejectedRows().compactMap { $0["line"] as? Int }
        #expect(rejects == bad.sorted().map { $0 + 2 }, "each rejected row once, in order")
        let checkpoint = try #require(try StoreReading.checkpoint(sandbox.store, entity: "Product", source: source))
        guard case .dictionary(let counts)? = checkpoint["counts"] else { Issue.record("no counts in the checkpoint"); return }
        #expect(counts["inserted"]?.integer == Int64(count - bad.count), "counts over all runs: no row counted twice")
        #expect(counts["rejected"]?.integer == Int64(bad.count))
        #expect(checkpoint["complete"]?.boolean == true)
    }

    static let eventModel = """
        {"format": "lade-model", "formatVersion": 1, "entities": [
          {"name": "Event", "attributes": [
            {"name": "seq", "type": "Integer 64", "optional": false},
            {"name": "label", "type": "String"}
          ], "relationships": []}
        ]}
        """

    @Test("keyless insert-only from gzipped NDJSON: killed at 5 seeded points, no row twice (duplicates would show)",
          arguments: [UInt64(7_777)])
    func keylessInsert(seed: UInt64) throws {
        let sandbox = try ImportSandbox()
        // Keyless inserts by batch insert are quick: more rows, so each kill lands before the end.
        let count = Self.rows * 5
        var ndjson = ""
        ndjson.reserveCapacity(count * 40)
        for index in 0..<count { ndjson += "{\"seq\": \(index), \"label\": \"event \\\"\(index)\\\" ✓\"}\n" }
        try sandbox.write("events.ndjson", ndjson)
        let source = try sandbox.gzip("events.ndjson")
        try sandbox.write("events-model.json", Self.eventModel)
        try sandbox.job("""
            model: events-model.json
            store: { path: events.sqlite }
            source: events.ndjson.gz
            entity: Event
            batch: { size: 200, commitEvery: 2, resetEvery: 4 }

            """)
        let store = sandbox.url("events.sqlite")
        func committed() throws -> Int64 {
            guard FileManager.default.fileExists(atPath: store.path),
                  let checkpoint = try StoreReading.checkpoint(store, entity: "Event", source: source) else { return 0 }
            return checkpoint["rows"]?.integer ?? -1
        }
        let points = try Self.killRepeatedly(sandbox, job: "job.yaml", seed: seed, total: count, committed: committed) { kill in
            let rows = try committed()
            guard rows > 0 else { return }
            let stored = try SQLiteConnection(path: store.path, mode: .readOnly).rows("SELECT COUNT(*), COUNT(DISTINCT ZSEQ), MAX(ZSEQ) FROM ZEVENT")
            #expect(stored == [[.integer(rows), .integer(rows), .integer(rows - 1)]], "seed \(seed), kill \(kill): exactly the committed rows")
        }
        #expect(Set(points).count > 1, "the kills landed at different points: \(points)")

        let (result, _) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        let stored = try SQLiteConnection(path: store.path, mode: .readOnly)
            .rows("SELECT COUNT(*), COUNT(DISTINCT ZSEQ), MIN(ZSEQ), MAX(ZSEQ), SUM(ZLABEL = 'event \"' || ZSEQ || '\" ✓') FROM ZEVENT")
        #expect(stored == [[.integer(Int64(count)), .integer(Int64(count)), .integer(0), .integer(Int64(count - 1)), .integer(Int64(count))]])
        #expect(try StoreReading.integrityCheck(store) == "t'ok'")
    }

    /// Rows of the batch-mode kill test; `LADE_BATCH_CRASH_ROWS=1000000` for the issue's
    /// million-row run (minutes with a debug build).
    static let batchRows = ProcessInfo.processInfo.environment["LADE_BATCH_CRASH_ROWS"].flatMap { Int($0) } ?? 40_000

    /// A CSV of `count` products whose keys come in a seeded random order, as feeds do.
    static func shuffledProducts(_ count: Int, seed: UInt64) -> String {
        var random = SeededGenerator(seed: seed)
        var order = Array(0..<count)
        for index in stride(from: count - 1, to: 0, by: -1) { order.swapAt(index, random.int(index + 1)) }
        var text = "sku,name,price,stock,category\n"
        text.reserveCapacity(count * 48)
        for index in order {
            text += "\(GeneratedProducts.sku(index)),\"Generated, \(index)\",\(index % 1000).\(index % 100),\(index),C\(index % 50)\n"
        }
        return text
    }

    /// Every table's rows as text, for comparing a killed-and-resumed store with an uninterrupted
    /// one. Categories' `Z_OPT` is left out: it advances once per commit that adds products to
    /// the category, and a killed run commits at other moments than one left alone.
    static func checksum(_ store: URL) throws -> [String: [String]] {
        let connection = try SQLiteConnection(path: store.path, mode: .readOnly)
        return [
            "ZPRODUCT": try connection.rows("SELECT * FROM ZPRODUCT ORDER BY Z_PK").map { $0.map(StoreReading.describe).joined(separator: "|") },
            "ZCATEGORY": try connection.rows("SELECT Z_PK, Z_ENT, ZNAME, ZSORTORDER, ZPARENT FROM ZCATEGORY ORDER BY Z_PK").map { $0.map(StoreReading.describe).joined(separator: "|") },
            "Z_PRIMARYKEY": try connection.rows("SELECT * FROM Z_PRIMARYKEY ORDER BY Z_ENT").map { $0.map(StoreReading.describe).joined(separator: "|") },
        ]
    }

    @Test("writer: batch, killed at 20 fixed points of a random-key import, then run to the end: every row once, the store equal to an uninterrupted run's")
    func batchWriterTwentyKills() throws {
        let sandbox = try ImportSandbox()
        let count = Self.batchRows
        let source = try sandbox.write("products.csv", Self.shuffledProducts(count, seed: 20_261_125))
        let job = { (store: String) in
            """
            store: { path: \(store) }
            source: products.csv
            entity: Product
            key: sku
            writer: batch
            relationships:
              category: { from: category, match: name, create: true }
            batch: { size: 500, commitSeconds: 0.05 }

            """
        }
        try sandbox.job(job("catalog.sqlite"))
        try sandbox.job(job("whole.sqlite"), named: "whole.yaml")
        let (whole, wholeReport) = try sandbox.run("whole.yaml", report: "whole.json")
        try #require(whole.status == 0, "\(whole.stderr)")
        #expect(wholeReport?["writer"] as? String == "batch")

        func committed() throws -> Int64 {
            guard FileManager.default.fileExists(atPath: sandbox.store.path),
                  let checkpoint = try StoreReading.checkpoint(sandbox.store, entity: "Product", source: source) else { return 0 }
            return checkpoint["rows"]?.integer ?? -1
        }
        var points: [Int64] = []
        for kill in 1...20 {
            let target = count * kill / 21
            let child = try LadeChild(["run", "job.yaml", "--progress", "0.01"], in: sandbox.directory)
            _ = child.wait(until: { child.rowsReported >= target })
            child.send(SIGKILL)
            child.finish()
            try #require(child.endedBySignal == SIGKILL, "kill \(kill): the run ended before the kill at \(target) rows: \(child.stderr.suffix(500))")
            let rows = try committed()
            points.append(rows)
            guard rows > 0 else { continue }
            // Exactly the committed rows, each once, and a sound file.
            let stored = try SQLiteConnection(path: sandbox.store.path, mode: .readOnly).rows("SELECT COUNT(*), COUNT(DISTINCT ZSKU) FROM ZPRODUCT")
            #expect(stored == [[.integer(rows), .integer(rows)]], "kill \(kill): the store holds the \(rows) committed rows once each")
            #expect(try StoreReading.integrityCheck(sandbox.store) == "t'ok'", "kill \(kill)")
            #expect(try !ImportIndexDeferralTests.hasNameIndex(sandbox.store), "kill \(kill): the fetch index is left out until the load's last commit")
        }
        #expect(points == points.sorted(), "the checkpoint never goes back: \(points)")
        #expect(Set(points).count > 10, "the kills landed at different points: \(points)")

        let (result, report) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(report?["writer"] as? String == "batch")
        let stored = try SQLiteConnection(path: sandbox.store.path, mode: .readOnly).rows("SELECT COUNT(*), COUNT(DISTINCT ZSKU) FROM ZPRODUCT")
        #expect(stored == [[.integer(Int64(count)), .integer(Int64(count))]])
        #expect(try Self.checksum(sandbox.store) == Self.checksum(sandbox.url("whole.sqlite")), "the same store as an uninterrupted run's")
        #expect(report?["deferredIndexes"] as? [String] == ["Z_Product_byName"])
        #expect(try ImportIndexDeferralTests.schema(sandbox.store) == ImportIndexDeferralTests.schema(sandbox.url("whole.sqlite")), "the same indexes too")
        let checkpoint = try #require(try StoreReading.checkpoint(sandbox.store, entity: "Product", source: source))
        guard case .dictionary(let counts)? = checkpoint["counts"] else { Issue.record("no counts in the checkpoint"); return }
        #expect(counts["inserted"]?.integer == Int64(count), "counts over all runs: no row counted twice")
        #expect(try StoreReading.integrityCheck(sandbox.store) == "t'ok'")
    }
}
