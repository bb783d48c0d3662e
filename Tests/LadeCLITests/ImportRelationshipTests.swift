import Foundation
import Lade
import Testing

/// Relationships wired by the destination's key: created, matched, unresolved, required,
/// to-many from a list, and keys that rows earlier in the same run made.
@Suite("lade run: relationships wired by key", .eachWriter)
struct ImportRelationshipTests {
    func sandboxWithSuppliers() throws -> ImportSandbox {
        let sandbox = try ImportSandbox()
        try sandbox.write("suppliers.csv", "code,name\nNORD,Nordwerk\nACME,Acme\nKOBE,Kobe 神戸\n")
        try sandbox.write("categories.csv", "name\nTools\n")
        try sandbox.job("source: suppliers.csv\nentity: Supplier\nkey: code\n", named: "suppliers.yaml")
        try sandbox.job("source: categories.csv\nentity: Category\nkey: name\n", named: "categories.yaml")
        #expect(try sandbox.run("suppliers.yaml").result.status == 0)
        #expect(try sandbox.run("categories.yaml").result.status == 0)
        return sandbox
    }

    /// sku → (category name, supplier code, supplier codes) as the store has them.
    func wiring(_ sandbox: ImportSandbox) throws -> [String: (category: String?, supplier: String?, suppliers: Set<String>)] {
        try StoreReading.read(sandbox.store) { context in
            var result: [String: (String?, String?, Set<String>)] = [:]
            for product in try StoreReading.objects(context, "Product", sortedBy: "sku") {
                guard case .string(let sku)? = product.attributeValue(forKey: "sku") else { continue }
                func text(_ object: ManagedObject?, _ key: String) -> String? {
                    if case .string(let text)? = object?.attributeValue(forKey: key) { text } else { nil }
                }
                result[sku] = (text(product.object(forKey: "category"), "name"), text(product.object(forKey: "supplier"), "code"),
                               Set(product.objects(forKey: "suppliers").compactMap { text($0, "code") }))
            }
            return result
        }
    }

    @Test("to-one: created when missing (once), matched when there, unresolved left empty and counted")
    func createdMatchedUnresolved() throws {
        let sandbox = try sandboxWithSuppliers()
        try sandbox.write("products.csv", """
            sku,name,category,supplier_code
            AA-001,One,Tools,NORD
            AA-002,Two,Garden,GHOST
            AA-003,Three,Garden,ACME
            AA-004,Four,Décor,
            AA-005,Five,Tools,GHOST
            AA-006,Six,,KOBE
            AA-007,Seven,Décor,NOPE

            """)
        try sandbox.job("""
            source: products.csv
            entity: Product
            key: sku
            relationships:
              category: { from: category, match: name, create: true }
              supplier: { from: supplier_code, match: code, required: false }
            batch: { size: 3, commitEvery: 1, resetEvery: 2 }

            """)
        let (result, report) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(report?["inserted"] as? Int == 7)
        #expect(report?["unresolved"] as? Int == 3, "AA-002, AA-005, AA-007 name suppliers no one has")
        #expect(report?["createdDestinations"] as? Int == 2, "Garden and Décor, once each; Tools existed")
        let wired = try wiring(sandbox)
        #expect(wired.mapValues(\.category) == ["AA-001": "Tools", "AA-002": "Garden", "AA-003": "Garden", "AA-004": "Décor",
                                                 "AA-005": "Tools", "AA-006": nil, "AA-007": "Décor"])
        #expect(wired.mapValues(\.supplier) == ["AA-001": "NORD", "AA-002": nil, "AA-003": "ACME", "AA-004": nil,
                                                 "AA-005": nil, "AA-006": "KOBE", "AA-007": nil])
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZCATEGORY") == 3)
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZSUPPLIER") == 3, "unresolved keys create nothing")

        // An empty key clears a relationship the object had.
        try sandbox.write("products.csv", "sku,name,category,supplier_code\nAA-001,One,,\n")
        #expect(try sandbox.run().result.status == 0)
        let cleared = try #require(try wiring(sandbox)["AA-001"])
        #expect(cleared.category == nil && cleared.supplier == nil)
    }

    @Test("required: a row whose destination is missing (or not given) is rejected, naming the key")
    func required() throws {
        let sandbox = try sandboxWithSuppliers()
        try sandbox.write("products.csv", """
            sku,name,supplier_code
            AA-001,One,NORD
            AA-002,Two,GHOST
            AA-003,Three,ACME
            AA-004,Four,

            """)
        try sandbox.job("""
            source: products.csv
            entity: Product
            key: sku
            relationships:
              supplier: { from: supplier_code, match: code, required: true }
            onError: { policy: skip, rejects: rejects.ndjson }

            """)
        let (result, report) = try sandbox.run()
        #expect(result.status == 2, "finished with rejects: \(result.stderr)")
        #expect(report?["inserted"] as? Int == 2)
        #expect(report?["rejected"] as? Int == 2)
        #expect(report?["unresolved"] as? Int == 0)
        #expect(Set(try wiring(sandbox).keys) == ["AA-001", "AA-003"])
        let rejects = try sandbox.rejectedRows()
        #expect(rejects.map { $0["line"] as? Int } == [3, 5])
        #expect(rejects.map { $0["field"] as? String } == ["supplier_code", "supplier_code"])
        #expect(rejects.first?["value"] as? String == "GHOST")
        #expect((rejects.first?["reason"] as? String)?.contains("no Supplier has code 'GHOST'") == true, "\(rejects)")
        #expect(rejects.first?["record"] as? String == "AA-002,Two,GHOST")
        #expect((rejects.last?["reason"] as? String)?.contains("required") == true, "\(rejects)")
    }

    @Test("to-many from a list of keys: a separator in CSV text, a JSON array; the row's keys replace the old ones")
    func toMany() throws {
        let sandbox = try sandboxWithSuppliers()
        try sandbox.write("products.csv", """
            sku,name,supplier_codes
            AA-001,One,NORD|ACME
            AA-002,Two,ACME
            AA-003,Three,
            AA-004,Four, KOBE | NORD |GHOST

            """)
        try sandbox.job("""
            source: products.csv
            entity: Product
            key: sku
            relationships:
              suppliers: { from: supplier_codes, match: code, separator: "|" }
            batch: { size: 2 }

            """)
        let (csv, csvReport) = try sandbox.run()
        #expect(csv.status == 0, "\(csv.stderr)")
        #expect(csvReport?["unresolved"] as? Int == 1)
        #expect(try wiring(sandbox).mapValues(\.suppliers) == ["AA-001": ["NORD", "ACME"], "AA-002": ["ACME"], "AA-003": [], "AA-004": ["KOBE", "NORD"]])

        try sandbox.write("products.ndjson", """
            {"sku": "AA-001", "name": "One", "supplier_codes": ["KOBE"]}
            {"sku": "AA-002", "name": "Two", "supplier_codes": []}
            {"sku": "AA-003", "name": "Three", "supplier_codes": ["NORD", "ACME", "KOBE"]}
            {"sku": "AA-004", "name": "Four"}
            {"sku": "AA-005", "name": "Five", "supplier_codes": null}

            """)
        try sandbox.job("""
            source: products.ndjson
            entity: Product
            key: sku
            relationships:
              suppliers: { from: supplier_codes, match: code }

            """, named: "feed.yaml")
        let (ndjson, _) = try sandbox.run("feed.yaml")
        #expect(ndjson.status == 0, "\(ndjson.stderr)")
        #expect(try wiring(sandbox).mapValues(\.suppliers) == [
            "AA-001": ["KOBE"], "AA-002": [], "AA-003": ["NORD", "ACME", "KOBE"],
            "AA-004": ["KOBE", "NORD"],  // no field: left as it was
            "AA-005": [],
        ])
        // The inverse side agrees.
        let products = try StoreReading.read(sandbox.store) { context in
            try StoreReading.objects(context, "Supplier", sortedBy: "code").map { supplier in
                Set(supplier.objects(forKey: "products").compactMap { $0.attributeValue(forKey: "sku")?.canonicalText })
            }
        }
        #expect(products == [["AA-003"], ["AA-001", "AA-003", "AA-004"], ["AA-003", "AA-004"]])
    }

    @Test("a key made by an earlier row of the same run is found: same batch, an uncommitted batch, a committed one")
    func keysOfEarlierRows() throws {
        let sandbox = try ImportSandbox()
        // Batches of 2, a commit every 2 batches: Tools finds Root in its own batch, Power tools finds
        // Tools in the batch before (not committed yet), Drills finds Power tools and Saws finds
        // Root after a commit.
        try sandbox.write("categories.csv", """
            name,parent
            Root,
            Tools,Root
            Power tools,Tools
            Garden,Root
            Drills,Power tools
            Hoses,Garden
            Saws,Root

            """)
        try sandbox.job("""
            source: categories.csv
            entity: Category
            key: name
            relationships:
              parent: { from: parent, match: name }
            batch: { size: 2, commitEvery: 2, resetEvery: 2 }

            """)
        let (result, report) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        let parents = try StoreReading.read(sandbox.store) { context in
            Dictionary(uniqueKeysWithValues: try StoreReading.objects(context, "Category", sortedBy: "name").map {
                ($0.attributeValue(forKey: "name")!.canonicalText, $0.object(forKey: "parent")?.attributeValue(forKey: "name")?.canonicalText)
            })
        }
        #expect(report?["unresolved"] as? Int == 0)
        #expect(parents == ["Root": nil, "Tools": "Root", "Power tools": "Tools", "Garden": "Root", "Drills": "Power tools",
                            "Hoses": "Garden", "Saws": "Root"])
        #expect(parents.count == 7)
    }

    @Test("create: true on a key of the entity being imported does not make a second object with that key")
    func createdKeyOfTheSameEntity() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("categories.csv", "name,parent\nRoot,\nTools,Root\nGarden,Root\n")
        try sandbox.job("""
            source: categories.csv
            entity: Category
            key: name
            relationships:
              parent: { from: parent, match: name, create: true }

            """)
        let (result, _) = try sandbox.run()
        let categories = try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZCATEGORY")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(categories == 3)
    }
}
