import Foundation
import Lade
import Testing

/// `lade run` into an empty table leaves the entity's fetch indexes out while it loads and
/// builds them at the commit that ends the run, whatever ends it; a killed run's successor
/// builds them. Either way the store ends with the schema a new store has.
@Suite("lade run: fetch indexes built after loading an empty table", .eachWriter)
struct ImportIndexDeferralTests {
    static let job = """
        source: products.csv
        entity: Product
        key: sku
        relationships:
          category: { from: category, match: name, create: true }
        batch: { size: 500, commitSeconds: 0.05 }

        """

    /// Every schema object but SQLite's own, as `sqlite_master` has it.
    static func schema(_ store: URL) throws -> [String] {
        try SQLiteConnection(path: store.path, mode: .readOnly)
            .rows("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
            .map { $0.map(StoreReading.describe).joined(separator: " | ") }
    }

    /// The schema of a new, empty store for the sample model (`lade init`).
    static func newStoreSchema(_ sandbox: ImportSandbox) throws -> [String] {
        let url = sandbox.url("new.sqlite")
        if !FileManager.default.fileExists(atPath: url.path) {
            let made = try sandbox.lade(["init", url.path, "--model", ImportSandbox.catalogModel.path])
            try #require(made.status == 0, "\(made.stderr)")
        }
        return try schema(url)
    }

    static func hasNameIndex(_ store: URL) throws -> Bool {
        try schema(store).contains { $0.contains("Z_Product_byName") }
    }

    @Test("a first run defers Z_Product_byName and ends with a new store's schema; a run into the filled table defers nothing", .slow)
    func firstRunAndLater() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", GeneratedProducts.csv(3_000))
        try sandbox.job(Self.job)
        let (first, report) = try sandbox.run()
        #expect(first.status == 0, "\(first.stderr)")
        #expect(report?["deferredIndexes"] as? [String] == ["Z_Product_byName"])
        #expect(first.stdout.contains("fetch indexes built after loading: Z_Product_byName"), "\(first.stdout)")
        #expect(try Self.schema(sandbox.store) == Self.newStoreSchema(sandbox))
        #expect(try StoreReading.integrityCheck(sandbox.store) == "t'ok'")
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT INDEXED BY Z_Product_byName WHERE ZNAME >= ''") == 3_000)

        let (forced, again) = try sandbox.run("job.yaml", ["--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(again?["deferredIndexes"] as? [String] == [])
        #expect(!forced.stdout.contains("indexes built"))

        try sandbox.write("more.csv", "sku,name,price,stock,category\nM-1,More,1.5,1,C1\n")
        try sandbox.job(Self.job.replacingOccurrences(of: "products.csv", with: "more.csv"), named: "more.yaml")
        let (more, moreReport) = try sandbox.run("more.yaml")
        #expect(more.status == 0, "\(more.stderr)")
        #expect(moreReport?["deferredIndexes"] as? [String] == [])
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT INDEXED BY Z_Product_byName WHERE ZNAME >= ''") == 3_001)
        #expect(try Self.schema(sandbox.store) == Self.newStoreSchema(sandbox))
    }

    @Test("a run stopped by a bad row (policy abort) builds them in the commit that keeps the batches before it")
    func abortBuilds() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", GeneratedProducts.csv(3_000, bad: [2_600]))
        try sandbox.job(Self.job)
        let (result, report) = try sandbox.run()
        #expect(result.status == 1, "\(result.stderr)")
        #expect(report?["status"] as? String == "aborted")
        #expect(report?["deferredIndexes"] as? [String] == ["Z_Product_byName"])
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT") == 2_500)
        #expect(try Self.schema(sandbox.store) == Self.newStoreSchema(sandbox))
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT INDEXED BY Z_Product_byName WHERE ZNAME >= ''") == 2_500)
    }

    @Test("SIGINT builds them with the last batch's commit; SIGKILL leaves them out, and the run that resumes builds them", .slow)
    func signals() throws {
        let sandbox = try ImportSandbox()
        let count = 20_000
        let source = try sandbox.write("products.csv", GeneratedProducts.csv(count))
        try sandbox.job(Self.job)
        func committed() throws -> Int64 {
            guard FileManager.default.fileExists(atPath: sandbox.store.path),
                  let checkpoint = try StoreReading.checkpoint(sandbox.store, entity: "Product", source: source) else { return 0 }
            return checkpoint["rows"]?.integer ?? -1
        }

        let interrupted = try LadeChild(["run", "job.yaml", "--progress", "0.01"], in: sandbox.directory)
        _ = interrupted.wait(until: { interrupted.rowsReported >= 1_000 })
        interrupted.send(SIGINT)
        let status = interrupted.finish()
        try #require(status == 130, "the run ended before SIGINT (status \(status)): \(interrupted.stderr.suffix(500))")
        let afterInterrupt = try committed()
        #expect(afterInterrupt > 0 && afterInterrupt < count)
        #expect(try Self.schema(sandbox.store) == Self.newStoreSchema(sandbox), "built at the interrupted run's last commit")

        // The table has rows now: the resumed run defers nothing. Empty it for the kill.
        try FileManager.default.removeItem(at: sandbox.store)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sandbox.store.path + suffix) }
        let killed = try LadeChild(["run", "job.yaml", "--progress", "0.01"], in: sandbox.directory)
        _ = killed.wait(until: { ((try? committed()) ?? 0) > 0 })
        killed.send(SIGKILL)
        killed.finish()
        try #require(killed.endedBySignal == SIGKILL, "the run ended before the kill: \(killed.stderr.suffix(500))")
        let rows = try committed()
        try #require(rows > 0 && rows < count, "killed after its first commit and before its last (\(rows) rows)")
        #expect(try !Self.hasNameIndex(sandbox.store), "left out by the killed run")
        #expect(try StoreReading.integrityCheck(sandbox.store) == "t'ok'")
        let check = try sandbox.lade(["check", "catalog.sqlite", "--model", ImportSandbox.catalogModel.path])
        #expect(check.status == 1)
        #expect(check.stdout.contains("missingIndex: ZPRODUCT") && check.stdout.contains("running the import again builds them"), "\(check.stdout)")

        let (resumed, report) = try sandbox.run()
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(report?["resumedAtLine"] != nil)
        #expect(report?["deferredIndexes"] as? [String] == ["Z_Product_byName"], "found missing, built at the end")
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(DISTINCT ZSKU) FROM ZPRODUCT") == Int64(count))
        #expect(try Self.schema(sandbox.store) == Self.newStoreSchema(sandbox))
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT INDEXED BY Z_Product_byName WHERE ZNAME >= ''") == Int64(count))
        let healed = try sandbox.lade(["check", "catalog.sqlite", "--model", ImportSandbox.catalogModel.path])
        #expect(healed.status == 0, "\(healed.stdout)")
    }
}
