import Foundation
import Lade
import Testing

/// The row rules `lade run`'s two writers share (jobs/README.md, "Writers"), each where the
/// writers once parted: a key given again under `mode: insert`, and a value the store cannot
/// keep exactly, alone or under a later row for the same object, or in a row with no object to
/// update. Every test runs with each writer.
@Suite("lade run: the row rules both writers share", .eachWriter)
struct WriterRowRulesTests {
    /// A price a SQLite store cannot keep exactly: 16 significant digits, and no double reads back
    /// as it (the nearest double reads back as 900719925474099.2).
    static let unkeepable = "900719925474099.3"

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

    @Test("a row that lacks what a new object needs is for the object an earlier row of its batch makes: applied to it (upsert) or left with it (insert), not rejected",
          arguments: ["upsert", "insert"])
    func rowAfterTheRowThatMakesItsObject(mode: String) throws {
        let sandbox = try ImportSandbox()
        // The second row has no name (required, no default): it could not make a Product.
        try sandbox.write("products.ndjson", "{\"sku\":\"AA-001\",\"name\":\"One\",\"stock\":1}\n{\"sku\":\"AA-001\",\"stock\":5}\n")
        try sandbox.job("source: products.ndjson\nentity: Product\nkey: sku\nmode: \(mode)\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        let (result, report) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(report?["inserted"] as? Int == 1)
        #expect(report?["rejected"] as? Int == 0, "\(String(describing: try? sandbox.rejectedRows()))")
        #expect(report?[mode == "insert" ? "existing" : "duplicates"] as? Int == 1)
        #expect(try StoreReading.column(sandbox.store, "SELECT ZSKU || '=' || ZNAME || '/' || ZSTOCK FROM ZPRODUCT") == [.text(mode == "insert" ? "AA-001=One/1" : "AA-001=One/5")])
    }

    @Test("a row that lacks what a new object needs and names a destination to create (create: true) is applied to the object an earlier row of its batch makes")
    func rowAfterTheRowThatMakesItsObjectCreatingDestination() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.ndjson", "{\"sku\":\"AA-001\",\"name\":\"One\",\"category\":\"Tools\"}\n{\"sku\":\"AA-001\",\"category\":\"Garden\"}\n")
        try sandbox.job("source: products.ndjson\nentity: Product\nkey: sku\nrelationships:\n  category: { from: category, match: name, create: true }\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        let (result, report) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(report?["inserted"] as? Int == 1)
        #expect(report?["duplicates"] as? Int == 1)
        #expect(report?["rejected"] as? Int == 0, "\(String(describing: try? sandbox.rejectedRows()))")
        #expect(report?["createdDestinations"] as? Int == 2)
        #expect(try StoreReading.column(sandbox.store, "SELECT p.ZSKU || '=' || p.ZNAME || '/' || c.ZNAME FROM ZPRODUCT p JOIN ZCATEGORY c ON c.Z_PK = p.ZCATEGORY") == [.text("AA-001=One/Garden")])
    }

    @Test("policy abort: the error names the batch's first rejected row, also when only a lookup shows it lacks what a new object needs and a later row breaks a rule that needs none")
    func abortNamesFirstRejectedRow() throws {
        let sandbox = try ImportSandbox()
        // Line 1 makes a Product without a name (rejected once no Product is found with its
        // sku); line 2 gives the required category no key (rejected without looking).
        try sandbox.write("products.ndjson", "{\"sku\":\"AA-001\",\"stock\":1}\n{\"sku\":\"AA-002\",\"name\":\"Two\",\"category\":null}\n")
        try sandbox.job("source: products.ndjson\nentity: Product\nkey: sku\nrelationships:\n  category: { from: category, match: name, required: true }\nonError: { policy: abort }\n")
        let (result, report) = try sandbox.run()
        #expect(result.status == 1, "\(result.stderr)")
        let reason = report?["reason"] as? String ?? ""
        #expect(reason.hasPrefix("products.ndjson:1: field 'name': name is required and the record has no value for it"), "\(reason)")
        #expect(result.stderr.contains("products.ndjson:1: field 'name'"), "\(result.stderr)")
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
            #expect(reason.hasPrefix("price has 16 significant digits, and no double reads back as it; a SQLite store keeps"), "\(reason)")
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

    @Test("a row that would make a new object with a model default the store cannot keep exactly is rejected, naming the attribute; existing objects are still updated")
    func unkeepableDefault() throws {
        let sandbox = try ImportSandbox()
        try sandbox.xcodeModel("D", """
              <entity name="T">
                <attribute name="key" attributeType="String"/>
                <attribute name="qty" optional="YES" attributeType="Integer 16"/>
                <attribute name="dec" optional="YES" attributeType="Decimal" defaultValueString="1234567890123456.7"/>
                <uniquenessConstraints><uniquenessConstraint><constraint value="key"/></uniquenessConstraint></uniquenessConstraints>
              </entity>
            """)
        try sandbox.write("first.ndjson", "{\"key\":\"x\",\"dec\":\"1\"}\n")
        try sandbox.job("model: D.xcdatamodel\nstore: { path: t.sqlite }\nsource: first.ndjson\nentity: T\nkey: key\n", named: "first.yaml")
        #expect(try sandbox.run("first.yaml").result.status == 0)
        try sandbox.write("second.ndjson", "{\"key\":\"x\",\"qty\":5}\n{\"key\":\"a\",\"qty\":1}\n{\"key\":\"b\",\"dec\":\"2\"}\n")
        try sandbox.job("model: D.xcdatamodel\nstore: { path: t.sqlite }\nsource: second.ndjson\nentity: T\nkey: key\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        let (result, report) = try sandbox.run()
        #expect(result.status == 2, "\(result.stderr)")
        #expect(report?["updated"] as? Int == 1)
        #expect(report?["inserted"] as? Int == 1)
        #expect(report?["rejected"] as? Int == 1)
        let rejects = try sandbox.rejectedRows()
        #expect(rejects.map { $0["line"] as? Int } == [2])
        #expect((rejects.first?["reason"] as? String)?.hasPrefix("a new T would take dec's default (1234567890123456.7), which has 17 significant digits, and no double reads back as it; a SQLite store keeps") == true, "\(rejects)")
        #expect(try StoreReading.column(sandbox.url("t.sqlite"), "SELECT ZKEY || ':' || ifnull(ZQTY, '-') || ':' || ZDEC FROM ZT ORDER BY Z_PK") == [.text("x:5:1"), .text("b:-:2")])
    }

    @Test("a save the store refuses for an object two rows of the batch changed (another uniqueness constraint) loses no row: every row is stored and counted, or rejected",
          arguments: [["D", "C"], ["C", "D"]])
    func refusedObjectOfTwoRows(codes: [String]) throws {
        let sandbox = try ImportSandbox()
        try sandbox.xcodeModel("U", """
              <entity name="T">
                <attribute name="key" attributeType="String"/>
                <attribute name="code" optional="YES" attributeType="String"/>
                <uniquenessConstraints>
                  <uniquenessConstraint><constraint value="key"/></uniquenessConstraint>
                  <uniquenessConstraint><constraint value="code"/></uniquenessConstraint>
                </uniquenessConstraints>
              </entity>
            """)
        try sandbox.write("first.ndjson", "{\"key\":\"x\",\"code\":\"C\"}\n")
        try sandbox.job("model: U.xcdatamodel\nstore: { path: u.sqlite }\nsource: first.ndjson\nentity: T\nkey: key\n", named: "first.yaml")
        #expect(try sandbox.run("first.yaml").result.status == 0)
        // Two rows for the new object a; code C is x's.
        try sandbox.write("second.ndjson", codes.map { "{\"key\":\"a\",\"code\":\"\($0)\"}\n" }.joined())
        try sandbox.job("model: U.xcdatamodel\nstore: { path: u.sqlite }\nsource: second.ndjson\nentity: T\nkey: key\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        let (result, report) = try sandbox.run()
        let counts = ["inserted", "duplicates", "rejected"].map { report?[$0] as? Int ?? -1 }
        let stored = try StoreReading.column(sandbox.url("u.sqlite"), "SELECT count(*) FROM ZT WHERE ZKEY = 'a'")
        let rejects = try sandbox.rejectedRows()
        #expect(counts[0] + counts[1] + counts[2] == 2, "\(counts)")
        #expect(stored == [.integer(Int64(counts[0]))], "counted \(counts), stored \(stored)")
        #expect(rejects.count == counts[2], "\(rejects)")
        #expect(result.status == (counts[2] > 0 ? 2 : 0), "\(result.stderr)")
        #expect(try StoreReading.column(sandbox.url("u.sqlite"), "SELECT ZCODE FROM ZT WHERE ZKEY = 'x'") == [.text("C")])
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
