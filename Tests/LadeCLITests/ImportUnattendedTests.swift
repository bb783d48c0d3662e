import Foundation
import Lade
import Testing

/// Running under cron: one writer per store, and SIGTERM ending a run after a committed batch
/// so the next run resumes.
@Suite("lade run: the store's lock and SIGTERM", .eachWriter)
struct ImportUnattendedTests {
    @Test("a store whose lock another process holds: lade run exits at once with 75, naming the holder; afterwards it runs")
    func lockHeld() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", "sku,name\nAA-001,One\n")
        try sandbox.job("source: products.csv\nentity: Product\nkey: sku\n")

        let lockPath = sandbox.store.path + ".lade-lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0)
        try #require(flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        let note = "pid 4242 since 2026-01-01T02:30:00Z\n"
        _ = note.withCString { write(descriptor, $0, strlen($0)) }

        let started = Date()
        let locked = try sandbox.lade(["run", "job.yaml"])
        let seconds = Date().timeIntervalSince(started)
        #expect(locked.status == 75, "\(locked.stderr)")
        #expect(seconds < 5, "exits at once, does not wait for the lock (\(seconds) s)")
        #expect(locked.stderr.contains("the store \(sandbox.store.path) is locked by another lade run (pid 4242 since 2026-01-01T02:30:00Z)"), "\(locked.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.store.path), "nothing written while locked")

        flock(descriptor, LOCK_UN)
        close(descriptor)
        #expect(try sandbox.lade(["run", "job.yaml"]).status == 0)
    }

    @Test("SIGTERM mid-run: exit 143 after a committed batch; a second run meanwhile gets 75; the next run resumes and completes, every row once", .slow)
    func sigtermThenResume() throws {
        let sandbox = try ImportSandbox()
        let count = 10_000
        try sandbox.write("products.csv", GeneratedProducts.csv(count))
        try sandbox.job(GeneratedProducts.job())

        let child = try LadeChild(["run", "job.yaml", "--progress", "0.02", "--report", "first.json"], in: sandbox.directory)
        let running = child.wait(until: { child.rowsReported >= 2_000 })
        try #require(running, "the run should still be going at 2,000 rows: \(child.stderr)")

        // The store is held: a second run is turned away at once, told who holds it. (The first is
        // paused meanwhile, so that it is still mid-run when the signal comes, however fast it is.)
        child.send(SIGSTOP)
        let second = try sandbox.lade(["run", "job.yaml"])
        #expect(second.status == 75, "\(second.stderr)")
        #expect(second.stderr.contains("locked by another lade run (pid \(child.process.processIdentifier) since"), "\(second.stderr)")
        child.send(SIGCONT)

        child.send(SIGTERM)
        let status = child.finish()
        #expect(status == 143, "\(child.stderr)")
        #expect(child.endedBySignal == nil, "lade handles SIGTERM itself and exits")
        #expect(child.stderr.contains("terminated: finishing the current batch and committing"), "\(child.stderr)")
        let first = try #require(try sandbox.report("first.json"))
        #expect(first["status"] as? String == "interrupted")
        #expect(first["signal"] as? Int == 15)

        let checkpoint = try #require(try StoreReading.checkpoint(sandbox.store, entity: "Product", source: sandbox.url("products.csv")))
        let committed = try #require(checkpoint["rows"]?.integer)
        #expect(checkpoint["complete"]?.boolean == false)
        #expect(committed > 0 && committed < Int64(count), "stopped mid-run: \(committed)")
        #expect(committed % 250 == 0, "after a whole batch")
        #expect(first["rows"] as? Int == Int(committed))
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT") == committed, "the checkpoint and the rows in one transaction")

        let (rerun, report) = try sandbox.run()
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(report?["resumedAtLine"] as? Int == Int(committed) + 2)
        #expect(rerun.stdout.contains("resumed at line \(committed + 2)"), "\(rerun.stdout)")
        #expect(report?["rows"] as? Int == count - Int(committed))
        #expect(report?["inserted"] as? Int == count - Int(committed))
        #expect(report?["unchanged"] as? Int == 0)
        try GeneratedProducts.expectEveryRowOnce(sandbox.store, count: count)
    }

    @Test("SIGINT mid-run on a gzipped JSON array: exit 130 after a commit; the next run resumes inside the array, every row once", .slow)
    func sigintInGzippedJSONArray() throws {
        let sandbox = try ImportSandbox()
        let count = 8_000
        try sandbox.write("products.json", GeneratedProducts.jsonArray(count))
        let source = try sandbox.gzip("products.json")
        try sandbox.job(GeneratedProducts.job(source: "products.json.gz"))

        let child = try LadeChild(["run", "job.yaml", "--progress", "0.02"], in: sandbox.directory)
        try #require(child.wait(until: { child.rowsReported >= 1_500 }), "the run should still be going at 1,500 rows: \(child.stderr)")
        child.send(SIGINT)
        #expect(child.finish() == 130, "\(child.stderr)")
        #expect(child.stderr.contains("interrupted: finishing the current batch and committing"), "\(child.stderr)")
        #expect(child.stdout.contains("stopped by a signal after a committed batch; run the job again to resume"), "\(child.stdout)")

        let checkpoint = try #require(try StoreReading.checkpoint(sandbox.store, entity: "Product", source: source))
        let committed = try #require(checkpoint["rows"]?.integer)
        #expect(committed > 0 && committed < Int64(count) && committed % 250 == 0, "\(committed)")
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT") == committed)

        let (rerun, report) = try sandbox.run()
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let line = try #require(report?["resumedAtLine"] as? Int)
        #expect(Int64(line) == checkpoint["line"]?.integer)
        #expect((Int(committed) + 1...Int(committed) + 2).contains(line), "record \(committed) is on line \(committed + 2): \(line)")
        #expect(report?["inserted"] as? Int == count - Int(committed))
        try GeneratedProducts.expectEveryRowOnce(sandbox.store, count: count)
    }

    @Test("a second SIGTERM stops the run at once; the store is as of a commit and the next run completes, every row once", .slow)
    func secondSignal() throws {
        let sandbox = try ImportSandbox()
        let count = 8_000
        try sandbox.write("products.csv", GeneratedProducts.csv(count))
        // Long batches, so the second signal comes while the first one's batch is still being written.
        try sandbox.job(GeneratedProducts.job(batchSize: 1000))

        let child = try LadeChild(["run", "job.yaml", "--progress", "0.02"], in: sandbox.directory)
        try #require(child.wait(until: { child.rowsReported >= 3_000 }), "the run should still be going at 3,000 rows: \(child.stderr)")
        child.send(SIGTERM)
        _ = child.wait(until: { child.stderr.contains("terminated: finishing the current batch") }, timeout: 10)
        child.send(SIGTERM)
        #expect(child.finish() == 143, "\(child.stderr)")
        // Stopped at once: no summary. (Should the first batch have ended first, the run stopped normally, summary and all.)
        let atOnce = child.stderr.contains("lade: stopping now (second signal)")
        #expect(atOnce != child.stdout.contains("stopped by a signal after a committed batch"), "\(child.stderr)\n\(child.stdout)")

        // The first commit (after 2,000 rows) is in; the one the first signal asked for may be too.
        let checkpoint = try #require(try StoreReading.checkpoint(sandbox.store, entity: "Product", source: sandbox.url("products.csv")))
        let committed = try #require(checkpoint["rows"]?.integer)
        #expect(committed >= 2_000)
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT") == committed)
        #expect(try StoreReading.integrityCheck(sandbox.store) == "t'ok'")
        let (rerun, _) = try sandbox.run()
        #expect(rerun.status == 0, "\(rerun.stderr)")
        try GeneratedProducts.expectEveryRowOnce(sandbox.store, count: count)
    }
}
