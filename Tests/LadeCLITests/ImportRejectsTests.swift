import Foundation
import Lade
import Testing

/// Bad rows: the rejects file (content and line numbers), `maxErrors`, `policy: abort`, and the
/// exit codes that tell a cron job what happened.
@Suite("lade run: rejected rows, policy abort, exit codes", .eachWriter)
struct ImportRejectsTests {
    /// Records over several lines, and bad rows of every kind, each at a known line.
    static let source = """
        sku,name,price,stock,details
        AA-001,One,1.00,1,plain
        AA-002,"Two
        lines",2.00,2,x
        AA-003,Three,abc,3,bad price
        AA-004,"Four, ""quoted""
        and more",4.00,-1,negative stock
        AA-005,Five,5.00
        bad sku!,Six,6.00,6,x
        AA-007,,7.00,7,x
        AA-008,"Eight
        multi
        line",8.00,8,ok
        AA-009,Nine,9.999.9,9,"bad
        price, multi"
        AA-010,Ten,10.00,10,last

        """

    @Test("policy skip: each bad row in the rejects file once, with its first line, column, field, value, reason and record; exit 2")
    func rejectsFile() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", Self.source)
        try sandbox.job("""
            source: products.csv
            entity: Product
            key: sku
            batch: { size: 3, commitEvery: 1, resetEvery: 1 }
            onError: { policy: skip, maxErrors: 1000, rejects: rejects.ndjson }

            """)
        let (result, report) = try sandbox.run()
        #expect(result.status == 2, "finished with rejected rows: \(result.stderr)")
        #expect(report?["status"] as? String == "completed-with-rejects")
        #expect(report?["rows"] as? Int == 10)
        #expect(report?["inserted"] as? Int == 4)
        #expect(report?["rejected"] as? Int == 6)
        #expect(report?["rejectsFile"] as? String == sandbox.rejects.path)
        #expect(result.stdout.contains("rejected rows: \(sandbox.rejects.path)"), "\(result.stdout)")
        #expect(try StoreReading.column(sandbox.store, "SELECT ZSKU FROM ZPRODUCT ORDER BY ZSKU") == ["AA-001", "AA-002", "AA-008", "AA-010"].map { .text($0) })

        let rejects = try sandbox.rejectedRows()
        #expect(rejects.map { $0["line"] as? Int } == [5, 6, 8, 9, 10, 14])
        #expect(rejects.allSatisfy { $0["file"] as? String == "products.csv" })
        #expect(rejects.map { $0["record"] as? String } == [
            "AA-003,Three,abc,3,bad price",
            "AA-004,\"Four, \"\"quoted\"\"\nand more\",4.00,-1,negative stock",
            "AA-005,Five,5.00",
            "bad sku!,Six,6.00,6,x",
            "AA-007,,7.00,7,x",
            "AA-009,Nine,9.999.9,9,\"bad\nprice, multi\"",
        ])
        #expect(rejects.map { $0["column"] as? Int } == [3, 4, nil, 1, 2, 3])
        #expect(rejects.map { $0["field"] as? String } == ["price", "stock", nil, "sku", "name", "price"])
        #expect(rejects.map { $0["value"] as? String } == ["abc", "-1", nil, "bad sku!", "", "9.999.9"])
        let reasons = rejects.map { $0["reason"] as? String ?? "" }
        #expect(reasons[0].contains("'abc' is not a valid Decimal value"), "\(reasons[0])")
        #expect(reasons[1].contains("stock") && reasons[1].contains("0"), "\(reasons[1])")
        #expect(reasons[2].contains("field"), "a record with too few fields: \(reasons[2])")
        #expect(reasons[3].contains("sku") && reasons[3].contains("[A-Z0-9][A-Z0-9-]{2,31}"), "\(reasons[3])")
        #expect(reasons[4].contains("name"), "\(reasons[4])")
        #expect(reasons[5].contains("'9.999.9' is not a valid Decimal value"), "\(reasons[5])")

        // A fresh run (forced) replaces the file rather than adding to it.
        let again = try sandbox.run("job.yaml", ["--force"])
        #expect(again.result.status == 2)
        #expect(try sandbox.rejectedRows().map { $0["line"] as? Int } == [5, 6, 8, 9, 10, 14])
    }

    @Test("JSON rejects: the line each record starts on, the field, no column number, and what is wrong with a line that is not an object")
    func jsonRejects() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("feed.ndjson", """
            {"sku": "AA-001", "name": "One", "price": 1}

            {"sku": "AA-002", "name": "Two", "price": "abc"}
            not json
            {"sku": "AA-003", "name": "Three", "stock": -1}
            [1, 2]
            {"sku": "AA-005", "name": "Five"}

            """)
        try sandbox.write("feed.json", """
            [
              {
                "sku": "AA-011",
                "name": "One"
              },
              {
                "sku": "AA-012",
                "price": "x",
                "name": "Two"
              },
              {"sku": "AA-013", "name": "Three", "stock": [1]},
              {"sku": "AA-014", "name": "Four"}
            ]

            """)
        for (name, lines) in [("feed.ndjson", [3, 4, 5, 6]), ("feed.json", [6, 11])] {
            try sandbox.job("source: \(name)\nentity: Product\nkey: sku\nbatch: { size: 2 }\nonError: { policy: skip, rejects: rejects.ndjson }\n")
            let (result, _) = try sandbox.run()
            #expect(result.status == 2, "\(result.stderr)")
            let rejects = try sandbox.rejectedRows()
            #expect(rejects.map { $0["line"] as? Int } == lines, "\(name)")
            #expect(rejects.allSatisfy { $0["column"] == nil }, "column numbers are a CSV header's: \(rejects)")
            #expect(rejects.allSatisfy { $0["file"] as? String == name })
        }
        #expect(try StoreReading.column(sandbox.store, "SELECT ZSKU FROM ZPRODUCT ORDER BY ZSKU") == ["AA-001", "AA-005", "AA-011", "AA-014"].map { .text($0) })
        try sandbox.job("source: feed.ndjson\nentity: Product\nkey: sku\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        _ = try sandbox.run("job.yaml", ["--force"])
        let ndjsonReasons = try sandbox.rejectedRows().map { $0["reason"] as? String ?? "" }
        #expect(ndjsonReasons.count == 4)
        #expect(ndjsonReasons.first?.contains("'abc' is not a valid Decimal value") == true)
        #expect(ndjsonReasons.dropFirst().first?.contains("feed.ndjson:4:2: unexpected 'o' (expected 'null')") == true, "not json is not JSON null: \(ndjsonReasons)")
        #expect(ndjsonReasons.last?.contains("a JSON array where a record should be") == true)
    }

    @Test("more rejects than maxErrors: the run stops with exit 1; batches before the one that crossed the limit stay")
    func maxErrorsExceeded() throws {
        let sandbox = try ImportSandbox()
        var csv = "sku,name,price\n"
        let bad: Set<Int> = [3, 8, 14, 17]
        for index in 0..<20 {
            csv += "AA-\(String(format: "%03d", index)),Name \(index),\(bad.contains(index) ? "oops" : "\(index).5")\n"
        }
        try sandbox.write("products.csv", csv)
        try sandbox.job("""
            source: products.csv
            entity: Product
            key: sku
            batch: { size: 5, commitEvery: 1, resetEvery: 1 }
            onError: { policy: skip, maxErrors: 2, rejects: rejects.ndjson }

            """)
        let (result, report) = try sandbox.run()
        #expect(result.status == 1, "\(result.stderr)")
        #expect(report?["status"] as? String == "aborted")
        #expect(result.stderr.contains("more than 2 rows rejected (maxErrors)"), "\(result.stderr)")
        #expect(result.stderr.contains("products.csv:16:3: field 'price'"), "the row that crossed the limit: \(result.stderr)")
        // Batches 1 and 2 (4 good rows each) are kept; batch 3, where the third reject is, is not.
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT") == 8)
        #expect(try sandbox.rejectedRows().map { $0["line"] as? Int } == [5, 10])
        let checkpoint = try #require(try StoreReading.checkpoint(sandbox.store, entity: "Product", source: sandbox.url("products.csv")))
        #expect(checkpoint["rows"]?.integer == 10)
        #expect(checkpoint["complete"]?.boolean == false)
    }

    /// 120 rows; row `bad` (0-based) has a price that is not a number.
    static func numbered(_ count: Int, bad: Int?) -> String {
        var csv = "sku,name,price\n"
        for index in 0..<count {
            csv += "AA-\(String(format: "%03d", index)),Name \(index),\(index == bad ? "abc" : "\(index).25")\n"
        }
        return csv
    }

    @Test("policy abort: every batch before the bad row's batch is kept, nothing of its batch; exit 1 naming file, line, column, field, value, reason")
    func abortKeepsEarlierBatches() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", Self.numbered(120, bad: 95))
        try sandbox.job("""
            source: products.csv
            entity: Product
            key: sku
            batch: { size: 10, commitEvery: 4, resetEvery: 4 }

            """)
        let (result, report) = try sandbox.run()
        #expect(result.status == 1)
        #expect(report?["status"] as? String == "aborted")
        #expect(result.stderr.contains("products.csv:97:3: field 'price': 'abc' is not a valid Decimal value"), "\(result.stderr)")
        // Batches 1–9 (rows 0–89): 8 committed on the way, the 9th with the stop; nothing of rows 90–99.
        #expect(try StoreReading.column(sandbox.store, "SELECT ZSKU FROM ZPRODUCT ORDER BY ZSKU") == (0..<90).map { .text("AA-\(String(format: "%03d", $0))") })
        let checkpoint = try #require(try StoreReading.checkpoint(sandbox.store, entity: "Product", source: sandbox.url("products.csv")))
        #expect(checkpoint["rows"]?.integer == 90)
        #expect(checkpoint["line"]?.integer == 92)

        // Run again unchanged: it resumes at the bad batch and stops there again, keeping the rest.
        let again = try sandbox.run()
        #expect(again.result.status == 1)
        #expect(again.report?["resumedAtLine"] as? Int == 92)
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT") == 90)

        // Fixed: a changed source is imported from its start and completes.
        try sandbox.write("products.csv", Self.numbered(120, bad: nil))
        let fixed = try sandbox.run()
        #expect(fixed.result.status == 0, "\(fixed.result.stderr)")
        #expect(fixed.report?["inserted"] as? Int == 30)
        #expect(fixed.report?["unchanged"] as? Int == 90)
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT") == 120)
    }

    @Test("policy abort on a row only the store can refuse (a required relationship): the earlier batches stay")
    func abortOnStoreRefusal() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("suppliers.csv", "code\nNORD\n")
        try sandbox.job("source: suppliers.csv\nentity: Supplier\nkey: code\n", named: "suppliers.yaml")
        #expect(try sandbox.run("suppliers.yaml").result.status == 0)
        var csv = "sku,name,supplier\n"
        for index in 0..<30 { csv += "AA-\(String(format: "%03d", index)),Name \(index),\(index == 23 ? "GHOST" : "NORD")\n" }
        try sandbox.write("products.csv", csv)
        try sandbox.job("""
            source: products.csv
            entity: Product
            key: sku
            relationships:
              supplier: { match: code, required: true }
            batch: { size: 5, commitEvery: 2, resetEvery: 2 }
            onError: { policy: abort }

            """)
        let (result, _) = try sandbox.run()
        #expect(result.status == 1)
        #expect(result.stderr.contains("products.csv:25: field 'supplier': no Supplier has code 'GHOST'"), "\(result.stderr)")
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT") == 20)
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT WHERE ZSUPPLIER IS NULL") == 0)
    }

    /// Keyless rows 1–6 (lines 2–7); line 7 repeats line 2's sku, which Product's uniqueness
    /// constraint refuses only when the store saves.
    static let duplicateSKU = "sku,name\nAA-001,One\nAA-002,Two\nAA-003,Three\nAA-004,Four\nAA-005,Five\nAA-001,Again\nAA-007,Seven\n"

    @Test("policy abort on a row the store's uniqueness constraint refuses: earlier batches stay, the message names the line")
    func abortOnUniquenessConflict() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", Self.duplicateSKU)
        try sandbox.job("source: products.csv\nentity: Product\nbatch: { size: 2, commitEvery: 4, resetEvery: 4 }\n")
        let (result, _) = try sandbox.run()
        #expect(result.status == 1)
        let kept = try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT")
        #expect(result.stderr.contains("products.csv:7"), "\(result.stderr)")
        #expect(kept == 4)
    }

    @Test("policy skip and a row the store's uniqueness constraint refuses: the row is rejected, the rest imported")
    func skipUniquenessConflict() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", Self.duplicateSKU)
        try sandbox.job("source: products.csv\nentity: Product\nbatch: { size: 2 }\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        let (result, _) = try sandbox.run()
        let rejected = try sandbox.rejectedRows().map { $0["line"] as? Int }
        let kept = try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZPRODUCT")
        #expect(result.status == 2, "\(result.stderr)")
        #expect(rejected == [7])
        #expect(kept == 6)
    }

    @Test("exit codes: 0 done, 2 done with rejects, 1 failed, 64 usage")
    func exitCodes() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("good.csv", "sku,name\nAA-001,One\n")
        // Two copies: a checkpoint belongs to an entity and a source, and the skip job completes its source.
        try sandbox.write("bad.csv", "sku,name\nAA-001,One\nAA-002,\n")
        try sandbox.write("bad-again.csv", "sku,name\nAA-001,One\nAA-002,\n")
        try sandbox.job("source: good.csv\nentity: Product\nkey: sku\n", named: "good.yaml")
        try sandbox.job("source: bad.csv\nentity: Product\nkey: sku\nonError: { policy: skip }\n", named: "skip.yaml")
        try sandbox.job("source: bad-again.csv\nentity: Product\nkey: sku\n", named: "abort.yaml")
        try sandbox.job("source: missing.csv\nentity: Product\nkey: sku\n", named: "missing.yaml")

        #expect(try sandbox.lade(["run", "good.yaml"]).status == 0)
        let skipped = try sandbox.lade(["run", "skip.yaml"])
        #expect(skipped.status == 2)
        #expect(FileManager.default.fileExists(atPath: sandbox.url("catalog.rejects.ndjson").path), "rejects beside the store by default")
        let aborted = try sandbox.lade(["run", "abort.yaml"])
        #expect(aborted.status == 1)
        #expect(aborted.stderr.hasPrefix("lade: error: bad-again.csv:3:2: field 'name': name"), "\(aborted.stderr)")
        let missing = try sandbox.lade(["run", "missing.yaml"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("missing.csv"), "\(missing.stderr)")
        #expect(try sandbox.lade(["run"]).status == 64)
        #expect(try sandbox.lade(["run", "good.yaml", "--progress", "0"]).status == 64)
        #expect(try sandbox.lade(["run", "no-such-job.yaml"]).status == 1)
    }

    @Test("a value ICU gives up matching against the pattern is imported with a warning naming line, attribute and pattern, never rejected as a mismatch")
    func undecidedPattern() throws {
        let sandbox = try ImportSandbox()
        // Lookahead takes the pattern to ICU, where `(a+)+c` backtracks exponentially on a long
        // run of a's before `a+b` is tried.
        try sandbox.xcodeModel("P", """
              <entity name="T">
                <attribute name="key" attributeType="String"/>
                <attribute name="code" optional="YES" attributeType="String" regularExpressionString="(?=a)((a+)+c|a+b)"/>
                <uniquenessConstraints><uniquenessConstraint><constraint value="key"/></uniquenessConstraint></uniquenessConstraints>
              </entity>
            """)
        let long = String(repeating: "a", count: 30)
        try sandbox.write("src.csv", "key,code\nk1,ab\nk2,\(long)b\nk3,b\nk4,\(long)c\nk5,aaab\n")
        try sandbox.job("model: P.xcdatamodel\nstore: { path: p.sqlite }\nsource: src.csv\nentity: T\nkey: key\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        let (result, _) = try sandbox.run()
        #expect(result.status == 2, "\(result.stderr)")
        #expect(try StoreReading.column(sandbox.url("p.sqlite"), "SELECT ZKEY FROM ZT ORDER BY ZKEY") == [.text("k1"), .text("k2"), .text("k4"), .text("k5")])
        let rejects = try sandbox.rejectedRows()
        #expect(rejects.map { $0["line"] as? Int } == [4])
        let reasons = rejects.map { $0["reason"] as? String ?? "" }
        #expect(reasons.first?.hasPrefix("code does not match the pattern /(?=a)((a+)+c|a+b)/") == true, "\(reasons)")
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("warning") && $0.contains("could not be decided") }
        #expect(warnings.count == 1, "\(result.stderr)")
        #expect(warnings.first.map { $0.contains("src.csv:3") && $0.contains("code") && $0.contains("/(?=a)((a+)+c|a+b)/") && $0.contains("accepted") } == true, "\(warnings)")
    }
}
