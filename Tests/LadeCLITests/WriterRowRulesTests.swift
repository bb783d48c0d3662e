import Foundation
import Lade
import Testing

/// The row rules `lade run`'s two writers share (jobs/README.md, "Writers"), each where the
/// writers once parted: a key given again under `mode: insert`, and a value the store cannot
/// keep exactly, alone or under a later row for the same object, or in a row with no object to
/// update. Every test runs with each writer.
@Suite("lade run: the row rules both writers share", .eachWriter)
struct WriterRowRulesTests {
    /// A price a SQLite store cannot keep exactly (16 significant digits; it keeps 15).
    static let unkeepable = "1234567890123456"

    @Test("mode insert: a key given again in the run leaves the object its first row made, in the same batch or a later one, and counts as existing",
          arguments: [("sqlite", 2), ("sqlite", 5), ("xml", 2)])
    func insertKeepsFirstRow(store: String, size: Int) throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", "sku,name,stock\nAA-001,First,1\nAA-002,Two,2\nAA-001,Second,3\nAA-003,Three,3\nAA-001,Third,4\n")
        try sandbox.job("store: { type: \(store), path: catalog.\(store) }\nsource: products.csv\nentity: Product\nkey: sku\nmode: insert\nbatch: { size: \(size) }\n")
        let (result, report) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(report?["inserted"] as? Int == 3)
        #expect(report?["existing"] as? Int == 2, "\(String(describing: report))")
        #expect(report?["duplicates"] as? Int == 0)
        let stored = try StoreReading.read(sandbox.url("catalog.\(store)")) { context in
            try StoreReading.objects(context, "Product", sortedBy: "sku").map { product in
                ["sku", "name", "stock"].map { product.attributeValue(forKey: $0)?.canonicalText ?? "-" }.joined(separator: "/")
            }
        }
        #expect(stored == ["AA-001/First/1", "AA-002/Two/2", "AA-003/Three/3"])
    }

    @Test("mode update: a row whose value the store cannot keep exactly is rejected for that value, whether or not an object has its key")
    func updateRejectsValueFirst() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("first.csv", "sku,name\nAA-001,One\n")
        try sandbox.job("source: first.csv\nentity: Product\nkey: sku\n", named: "first.yaml")
        #expect(try sandbox.run("first.yaml").result.status == 0)
        try sandbox.write("prices.csv", "sku,price\nAA-009,\(Self.unkeepable)\nAA-001,\(Self.unkeepable)\nAA-008,2\n")
        try sandbox.job("source: prices.csv\nentity: Product\nkey: sku\nmode: update\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        let (result, report) = try sandbox.run()
        #expect(result.status == 2, "\(result.stderr)")
        #expect(report?["rejected"] as? Int == 3)
        let rejects = try sandbox.rejectedRows()
        #expect(rejects.map { $0["line"] as? Int } == [2, 3, 4])
        #expect(rejects.prefix(2).map { $0["field"] as? String } == ["price", "price"])
        #expect(rejects.prefix(2).map { $0["value"] as? String } == [Self.unkeepable, Self.unkeepable])
        for reject in rejects.prefix(2) {
            let reason = reject["reason"] as? String ?? ""
            #expect(reason.hasPrefix("price has 16 significant digits; a SQLite store keeps 15"), "\(reason)")
        }
        #expect((rejects.last?["reason"] as? String)?.contains("no Product has sku 'AA-008' to update (mode: update)") == true, "\(rejects)")
    }

    @Test("upsert: a row whose value the store cannot keep exactly is rejected even when a later row of its batch gives the object another value")
    func supersededValueStillRejected() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", "sku,name,price\nAA-001,One,\(Self.unkeepable)\nAA-001,One,2\nAA-002,Two,\(Self.unkeepable)\nAA-002,Two,3\n")
        try sandbox.job("source: products.csv\nentity: Product\nkey: sku\nbatch: { size: 5 }\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        let (result, report) = try sandbox.run()
        #expect(result.status == 2, "\(result.stderr)")
        #expect(report?["inserted"] as? Int == 2)
        #expect(report?["duplicates"] as? Int == 0)
        #expect(report?["rejected"] as? Int == 2)
        let rejects = try sandbox.rejectedRows()
        #expect(rejects.map { $0["line"] as? Int } == [2, 4])
        #expect(rejects.allSatisfy { ($0["reason"] as? String)?.hasPrefix("price has 16 significant digits") == true }, "\(rejects)")
        #expect(try StoreReading.column(sandbox.store, "SELECT ZSKU || '=' || ZPRICE FROM ZPRODUCT ORDER BY Z_PK") == [.text("AA-001=2"), .text("AA-002=3")])
    }

    @Test("a constant value the store cannot keep exactly refuses the job before anything is written, naming the field")
    func unkeepableConstant() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", "sku,name\nAA-001,One\n")
        try sandbox.job("source: products.csv\nentity: Product\nkey: sku\nfields:\n  sku: sku\n  name: name\n  price: { value: \"\(Self.unkeepable)\" }\n")
        let (result, _) = try sandbox.run()
        #expect(result.status == 64 || result.status == 1, "\(result.status): \(result.stderr)")
        #expect(result.stderr.contains("fields.price.value") && result.stderr.contains("16 significant digits"), "\(result.stderr)")
        if FileManager.default.fileExists(atPath: sandbox.store.path) {
            #expect(try StoreReading.column(sandbox.store, "SELECT count(*) FROM ZPRODUCT") == [.integer(0)])
        }
    }
}
