import Foundation
import Lade
import Testing

/// Crash safety shown, not argued: `lade run` is killed with SIGKILL at seeded points of a long
/// import, run again each time, and finally to the end. After every kill the store holds exactly
/// the rows its checkpoint says were committed; at the end every source row is there exactly
/// once, each rejected row is in the rejects file exactly once, and SQLite's integrity check is
/// clean. Kill points are row counts the child's `--progress` lines pass, plus a seeded delay,
/// so they land in batches, in commits and between them.
@Suite("lade run: SIGKILL at seeded points, then resume")
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

    @Test("keyed upsert from CSV: killed at 5 seeded points, every row once, each reject once, integrity clean",
          arguments: [UInt64(20_261_122)])
    func keyedUpsert(seed: UInt64) throws {
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
        let count = Self.rows
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
}
