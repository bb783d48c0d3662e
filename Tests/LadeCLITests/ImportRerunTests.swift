import Foundation
import Lade
import Testing

/// Running a job again: nothing to do on an unchanged source, nothing written with `--force`,
/// a changed source imported again.
@Suite("lade run: running a job again", .eachWriter)
struct ImportRerunTests {
    static let categories = ["Tools", "Garden", "Décor", "Bath", "Kitchen"]

    static func productsCSV(count: Int, changes: [Int: String] = [:], extra: [String] = []) -> String {
        var text = "sku,name,price,stock,active,created_at,category,supplier_code\n"
        for index in 0..<count {
            let name = changes[index] ?? "Product \(index), \"model\" \(index % 7)"
            text += ["P-\(String(format: "%04d", index))", name, "\(index).\(index % 100)", "\(index * 3)", index % 3 == 0 ? "false" : "true",
                     "2024-0\(index % 9 + 1)-1\(index % 10)T08:1\(index % 10):00.5+02:00", categories[index % categories.count],
                     index % 4 == 0 ? "" : (index % 4 == 1 ? "NORD" : "ACME")].map(SourceText.csv).joined(separator: ",") + "\n"
        }
        return text + extra.joined()
    }

    static let job = """
        source: products.csv
        entity: Product
        key: sku
        fields:
          createdAt: { from: created_at }
        relationships:
          category: { from: category, match: name, create: true }
          supplier: { from: supplier_code, match: code }
        batch: { size: 7, commitEvery: 2, resetEvery: 4 }

        """

    func prepare(_ sandbox: ImportSandbox, count: Int) throws {
        try sandbox.write("suppliers.csv", "code,name\nNORD,Nordwerk\nACME,Acme\n")
        try sandbox.job("source: suppliers.csv\nentity: Supplier\nkey: code\n", named: "suppliers.yaml")
        #expect(try sandbox.run("suppliers.yaml").result.status == 0)
        try sandbox.write("products.csv", Self.productsCSV(count: count))
        try sandbox.job(Self.job)
    }

    @Test("an upsert run twice leaves the same store: the second run is already imported, --force writes nothing")
    func runTwice() throws {
        let sandbox = try ImportSandbox()
        let count = 60
        try prepare(sandbox, count: count)

        let first = try sandbox.run()
        #expect(first.result.status == 0, "\(first.result.stderr)")
        #expect(first.report?["inserted"] as? Int == count)
        #expect(first.report?["createdDestinations"] as? Int == Self.categories.count)
        #expect(first.report?["unresolved"] as? Int == 0)
        #expect(first.report?["batches"] as? Int == 9)
        #expect(first.report?["commits"] as? Int == 5)
        let afterFirst = try StoreReading.tables(sandbox.store)
        #expect(afterFirst["ZPRODUCT"]?.count == count)

        let second = try sandbox.run()
        #expect(second.result.status == 0, "\(second.result.stderr)")
        #expect(second.report?["status"] as? String == "already-imported")
        #expect(second.result.stdout.contains("was imported into"), "\(second.result.stdout)")
        #expect(second.result.stdout.contains("nothing to do"), "\(second.result.stdout)")
        #expect(try StoreReading.tables(sandbox.store) == afterFirst, "an already imported source changes nothing, metadata included")

        let forced = try sandbox.run("job.yaml", ["--force"])
        #expect(forced.result.status == 0, "\(forced.result.stderr)")
        let report = try #require(forced.report)
        #expect(report["status"] as? String == "completed")
        #expect(report["rows"] as? Int == count)
        #expect(report["unchanged"] as? Int == count)
        #expect(report["inserted"] as? Int == 0)
        #expect(report["updated"] as? Int == 0)
        #expect(report["createdDestinations"] as? Int == 0)
        #expect(report["resumedAtLine"] == nil)
        // Every object, join and key counter as it was (Z_OPT counts writes); only the checkpoint's time moved.
        #expect(try StoreReading.tables(sandbox.store, excluding: ["Z_METADATA"]) == afterFirst.filter { $0.key != "Z_METADATA" })
        #expect(try StoreReading.integrityCheck(sandbox.store) == "t'ok'")
    }

    @Test("a store whose key counter Z_MAX is near Int64.max (damaged or hostile) is run again like any other: every row found, nothing sized by that counter")
    func hugeKeyCounter() throws {
        let sandbox = try ImportSandbox()
        let count = 60
        try prepare(sandbox, count: count)
        #expect(try sandbox.run().result.status == 0)
        let connection = try SQLiteConnection(path: sandbox.store.path, mode: .readWrite(create: false))
        try connection.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 9223372036854775000 WHERE Z_NAME = 'Product'")
        let before = try StoreReading.tables(sandbox.store, excluding: ["Z_METADATA"])
        let forced = try sandbox.run("job.yaml", ["--force"])
        #expect(forced.result.status == 0, "\(forced.result.stderr)")
        #expect(forced.report?["unchanged"] as? Int == count)
        #expect(try StoreReading.tables(sandbox.store, excluding: ["Z_METADATA"]) == before)
    }

    @Test("a changed source is imported again from its start: changed rows updated, new ones inserted, the rest unchanged")
    func changedSource() throws {
        let sandbox = try ImportSandbox()
        let count = 40
        try prepare(sandbox, count: count)
        #expect(try sandbox.run().result.status == 0)
        let before = try StoreReading.tables(sandbox.store)

        let added = "P-9999,Brand new,1.5,1,true,2024-01-01,Outdoor,NORD\n"
        try sandbox.write("products.csv", Self.productsCSV(count: count, changes: [3: "Renamed three", 31: "Renamed, thirty-one"], extra: [added]))
        let (result, report) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(report?["status"] as? String == "completed")
        #expect(report?["rows"] as? Int == count + 1)
        #expect(report?["inserted"] as? Int == 1)
        #expect(report?["updated"] as? Int == 2)
        #expect(report?["unchanged"] as? Int == count - 2)
        #expect(report?["createdDestinations"] as? Int == 1, "the new category Outdoor")

        try StoreReading.read(sandbox.store) { context in
            let products = try StoreReading.objects(context, "Product", sortedBy: "sku")
            #expect(products.count == count + 1)
            #expect(products[3].attributeValue(forKey: "name") == .string("Renamed three"))
            #expect(products[31].attributeValue(forKey: "name") == .string("Renamed, thirty-one"))
            #expect(products[4].attributeValue(forKey: "name") == .string("Product 4, \"model\" 4"))
            #expect(products.last?.attributeValue(forKey: "sku") == .string("P-9999"))
            #expect(products.last?.object(forKey: "category")?.attributeValue(forKey: "name") == .string("Outdoor"))
            #expect(products.last?.object(forKey: "supplier")?.attributeValue(forKey: "code") == .string("NORD"))
        }
        // Rows that did not change were not written: their Z_OPT (Core Data's write counter) is as it was.
        let after = try StoreReading.tables(sandbox.store)
        let unchangedBefore = try #require(before["ZPRODUCT"]).enumerated().filter { ![3, 31].contains($0.offset) }.map(\.element)
        let unchangedAfter = try #require(after["ZPRODUCT"]).prefix(count).enumerated().filter { ![3, 31].contains($0.offset) }.map(\.element)
        #expect(unchangedAfter == unchangedBefore)
    }

    @Test("a source rewritten with the same content is read again, writes nothing, and is then done")
    func touchedSource() throws {
        let sandbox = try ImportSandbox()
        try prepare(sandbox, count: 20)
        #expect(try sandbox.run().result.status == 0)
        let before = try StoreReading.tables(sandbox.store, excluding: ["Z_METADATA"])
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: sandbox.url("products.csv").path)
        let again = try sandbox.run()
        #expect(again.report?["status"] as? String == "completed")
        #expect(again.report?["unchanged"] as? Int == 20)
        #expect(try StoreReading.tables(sandbox.store, excluding: ["Z_METADATA"]) == before)
        #expect(try sandbox.run().report?["status"] as? String == "already-imported")
    }

    @Test("the shipped sample jobs run as written; a second run finds nothing to do")
    func shippedJobs() throws {
        let sandbox = try ImportSandbox()
        for folder in ["jobs", "samples"] {
            try FileManager.default.copyItem(at: LadeProcess.root.appendingPathComponent(folder), to: sandbox.url(folder))
        }
        let suppliers = try sandbox.run("jobs/suppliers.yaml")
        #expect(suppliers.result.status == 0, "\(suppliers.result.stderr)")
        let products = try sandbox.run("jobs/products.yaml")
        #expect([0, 2].contains(products.result.status), "\(products.result.stderr)")
        let rows = try #require(products.report?["rows"] as? Int)
        let sourceRows = try StoreReading.integer(sandbox.url("out/catalog.sqlite"), "SELECT COUNT(*) FROM ZPRODUCT")
        #expect(Int64(rows - (products.report?["rejected"] as? Int ?? 0)) == sourceRows)
        #expect(sourceRows > 2_000)
        let again = try sandbox.run("jobs/products.yaml")
        #expect(again.result.status == 0)
        #expect(again.report?["status"] as? String == "already-imported")
    }

    @Test("mode insert leaves existing objects alone; mode update changes only existing ones and rejects the rest")
    func insertAndUpdateModes() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("first.csv", "sku,name,stock\nAA-001,One,1\nAA-002,Two,2\n")
        try sandbox.write("second.csv", "sku,name,stock\nAA-002,Changed,20\nAA-003,Three,3\n")
        try sandbox.write("third.csv", "sku,stock\nAA-003,30\nAA-009,90\n")
        try sandbox.job("source: first.csv\nentity: Product\nkey: sku\n", named: "first.yaml")
        try sandbox.job("source: second.csv\nentity: Product\nkey: sku\nmode: insert\n", named: "insert.yaml")
        try sandbox.job("source: third.csv\nentity: Product\nkey: sku\nmode: update\nonError: { policy: skip, rejects: rejects.ndjson }\n", named: "update.yaml")
        #expect(try sandbox.run("first.yaml").result.status == 0)
        let inserted = try sandbox.run("insert.yaml")
        #expect(inserted.result.status == 0)
        #expect(inserted.report?["existing"] as? Int == 1)
        #expect(inserted.report?["inserted"] as? Int == 1)
        let updated = try sandbox.run("update.yaml")
        #expect(updated.result.status == 2)
        #expect(updated.report?["updated"] as? Int == 1)
        #expect(updated.report?["rejected"] as? Int == 1)
        #expect((try sandbox.rejectedRows().first?["reason"] as? String)?.contains("no Product has sku 'AA-009' to update (mode: update)") == true)
        let rows = try SQLiteConnection(path: sandbox.store.path, mode: .readOnly).rows("SELECT ZSKU, ZNAME, ZSTOCK FROM ZPRODUCT ORDER BY ZSKU")
        #expect(rows == [[.text("AA-001"), .text("One"), .integer(1)], [.text("AA-002"), .text("Two"), .integer(2)],
                         [.text("AA-003"), .text("Three"), .integer(30)]])
    }

    @Test("a key seen again before its commit is a duplicate, in its batch or a later one; after the commit it updates")
    func duplicatesUntilCommit() throws {
        let sandbox = try ImportSandbox()
        // Batches of 4, a commit after every second (and none by time); the object writer
        // resets its context after every batch, so it must know saved rows without them.
        let rows = [
            "AA-1,One,Tools", "AA-2,Two,Tools", "AA-1,One x,Tools", "AA-6,Six,Bath",    // batch 1
            "AA-2,Two,Tools", "AA-3,Three,Bath", "AA-1,One x,Tools", "AA-7,Seven,Bath", // batch 2, then a commit
            "AA-1,One y,Tools", "AA-3,Three,Bath", "AA-4,Four,Tools", "AA-8,Eight,Bath", // batch 3
            "AA-4,Four,Tools", "AA-5,Five,Bath", "AA-1,One y,Tools", "AA-3,Three,Bath", // batch 4
        ]
        try sandbox.write("dups.csv", "sku,name,category\n" + rows.joined(separator: "\n") + "\n")
        try sandbox.job("""
            source: dups.csv
            entity: Product
            key: sku
            relationships:
              category: { from: category, match: name, create: true }
            batch: { size: 4, commitEvery: 2, resetEvery: 1, commitSeconds: 1000 }

            """)
        let (result, report) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(report?["commits"] as? Int == 3, "after batches 2 and 4, and the final one")
        #expect(report?["inserted"] as? Int == 8)
        // Batch 1: AA-1; batch 2: AA-2, AA-1; batch 4: AA-4 (inserted in batch 3), AA-1 (updated in 3), AA-3 (unchanged in 3).
        #expect(report?["duplicates"] as? Int == 6)
        #expect(report?["updated"] as? Int == 1, "AA-1 in batch 3, after the commit")
        #expect(report?["unchanged"] as? Int == 1, "AA-3 in batch 3")
        let names = try SQLiteConnection(path: sandbox.store.path, mode: .readOnly).rows("SELECT ZSKU, ZNAME FROM ZPRODUCT WHERE ZSKU IN ('AA-1', 'AA-3') ORDER BY ZSKU")
        #expect(names == [[.text("AA-1"), .text("One y")], [.text("AA-3"), .text("Three")]])
    }

    @Test("--report writes every documented count")
    func reportFields() throws {
        let sandbox = try ImportSandbox()
        try prepare(sandbox, count: 10)
        let report = try #require(try sandbox.run().report)
        for key in ["status", "rows", "inserted", "updated", "unchanged", "duplicates", "existing", "rejected", "unresolved",
                    "createdDestinations", "batches", "commits", "resets", "seconds", "rowsPerSecond", "peakRSSBytes"] {
            #expect(report[key] != nil, "missing \(key)")
        }
        #expect((report["peakRSSBytes"] as? Int ?? 0) > 1_000_000)
        #expect(report["resets"] as? Int == 0, "2 batches, a reset every 4")
    }
}
