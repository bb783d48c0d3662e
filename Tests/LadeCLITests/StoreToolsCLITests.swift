import Crypto
import Foundation
import Lade
import Testing

/// `lade meta`, `lade fetch` and `lade export`, run as processes on real store files.
@Suite("lade meta, fetch and export, run as a process")
struct StoreToolsCLITests {
    static let model = "samples/Catalog.xcdatamodeld"

    func digest(_ path: String) throws -> String {
        SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path))).map { String(format: "%02x", $0) }.joined()
    }

    /// An empty Catalog store of `type` made by `lade init`.
    func emptyStore(_ sandbox: ImportSandbox, type: String) throws -> String {
        let store = sandbox.url("catalog.\(type)").path
        let created = try LadeProcess.run(["init", store, "--model", Self.model, "--type", type])
        try #require(created.status == 0, "\(created.stderr)")
        return store
    }

    /// A SQLite store filled by `lade run`: three products in two categories.
    func filledStore(_ sandbox: ImportSandbox) throws -> String {
        try sandbox.write("products.csv", #"""
            sku,name,price,stock,weight,created_at,category,description
            AB-001,Bolt,9.90,10,0.1,2024-01-02T03:04:05.5Z,Tools,"Zinc, 8 mm"
            AB-002,Nut,0.25,500,,2024-02-03T00:00:00Z,Tools,
            AB-003,Hammer,24.50,3,1.25,,Garden,"Says ""bang"""

            """#)
        try sandbox.job("""
            source: { path: products.csv, nulls: [""] }
            entity: Product
            key: [sku]
            fields:
              price: { from: price }
              createdAt: { from: created_at, date: iso8601 }
              details: { from: description }
            relationships:
              category: { from: category, match: name, create: true }
            """)
        let (result, _) = try sandbox.run()
        try #require(result.status == 0, "\(result.stderr)")
        return sandbox.store.path
    }

    /// Every table but Z_METADATA, row by row, as one digest.
    func tablesDigest(_ store: String) throws -> String {
        let connection = try SQLiteConnection(path: store, mode: .readOnly)
        var text = ""
        for table in try connection.tableNames().sorted() where table != "Z_METADATA" {
            text += "\(table)\n" + (try connection.rows("SELECT * FROM \(table)")).map { "\($0)" }.sorted().joined(separator: "\n")
        }
        return SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    @Test("meta set, get and delete a key of a store of every type", arguments: ["sqlite", "xml", "binary"])
    func metaRoundTrip(type: String) throws {
        let sandbox = try ImportSandbox()
        let store = try emptyStore(sandbox, type: type)
        let set = try LadeProcess.run(["meta", "set", store, "importedBy=nightly", "note=a = b"])
        #expect(set.status == 0, "\(set.stderr)")
        let typed = try LadeProcess.run(["meta", "set", store, "batch=42", "ratio=1.0", "done=true", #"tags=["a",1]"#, "--json-values"])
        #expect(typed.status == 0, "\(typed.stderr)")

        let text = try LadeProcess.run(["meta", "get", store, "importedBy", "note", "batch", "ratio", "done", "tags"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout == """
            batch = 42
            done = true
            importedBy = "nightly"
            note = "a = b"
            ratio = 1.0
            tags = ("a", 1)

            """)
        let json = try LadeProcess.run(["meta", "get", store, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["NSStoreType"] as? String == ["sqlite": "SQLite", "xml": "XML", "binary": "Binary"][type])
        #expect(object["importedBy"] as? String == "nightly")
        #expect(object["tags"] as? [Any] != nil)

        let deleted = try LadeProcess.run(["meta", "delete", store, "importedBy", "note"])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        let after = try LadeProcess.run(["meta", "get", store, "--json"])
        let remaining = try #require(try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [String: Any])
        #expect(remaining["importedBy"] == nil && remaining["batch"] as? Int == 42)

        let again = try LadeProcess.run(["meta", "delete", store, "importedBy"])
        #expect(again.status == 1)
        #expect(again.stderr.contains("the metadata has no key 'importedBy'"))
        let missing = try LadeProcess.run(["meta", "get", store, "batch", "nope", "--json"])
        #expect(missing.status == 1 && missing.stdout.isEmpty)
        #expect(missing.stderr.contains("no key 'nope'"))

        // The store still opens with its model, objects and all.
        let inspected = try LadeProcess.run(["inspect", store, "--model", Self.model])
        #expect(inspected.status == 0, "\(inspected.stderr)")
        #expect(inspected.stdout.contains("batch = 42"))
    }

    @Test("setting or deleting NSStoreType or NSStoreUUID is refused and leaves the file unchanged", arguments: ["sqlite", "xml", "binary"])
    func reservedKeys(type: String) throws {
        let sandbox = try ImportSandbox()
        let store = try emptyStore(sandbox, type: type)
        let before = try digest(store)
        for arguments in [["set", store, "NSStoreType=XML"], ["set", store, "NSStoreUUID=1234", "other=1"], ["delete", store, "NSStoreUUID"]] {
            let result = try LadeProcess.run(["meta"] + arguments)
            #expect(result.status == 1)
            #expect(result.stderr.contains("belongs to the stack and cannot be"), "\(result.stderr)")
        }
        #expect(try digest(store) == before)
    }

    @Test("meta set on a SQLite store changes Z_METADATA and no other table")
    func metaSetTouchesOnlyMetadata() throws {
        let sandbox = try ImportSandbox()
        let store = try filledStore(sandbox)
        let before = try tablesDigest(store)
        let result = try LadeProcess.run(["meta", "set", store, "reviewed=yes"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try tablesDigest(store) == before)
        #expect(try LadeProcess.run(["meta", "get", store, "reviewed"]).stdout == "reviewed = \"yes\"\n")
    }

    @Test("meta set on a store another run holds locked exits 75 and leaves it unchanged")
    func metaSetLocked() throws {
        let sandbox = try ImportSandbox()
        let store = try emptyStore(sandbox, type: "sqlite")
        let before = try digest(store)
        let descriptor = open(store + ".lade-lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        defer { close(descriptor) }
        let result = try LadeProcess.run(["meta", "set", store, "x=1"])
        #expect(result.status == 75)
        #expect(result.stderr.contains("is locked by another lade run"))
        #expect(try digest(store) == before)
    }

    @Test("fetch filters, sorts, offsets and limits, printed as a table, JSON or CSV")
    func fetch() throws {
        let sandbox = try ImportSandbox()
        let store = try filledStore(sandbox)
        let base = ["fetch", store, "--model", Self.model, "--entity", "Product"]

        let table = try LadeProcess.run(base + ["--where", "price < 20", "--sort", "price:desc"])
        #expect(table.status == 0, "\(table.stderr)")
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("_uri ") && lines[0].contains("  name  ") && lines[0].hasSuffix("category  supplier"))
        #expect(lines[1].contains("AB-001") && lines[2].contains("AB-002"))
        #expect(lines[3] == "(2 objects)")
        // Columns line up: each header name starts where its values do.
        let column = try #require(lines[0].range(of: "sku")).lowerBound.utf16Offset(in: lines[0])
        #expect(lines[1].dropFirst(column).hasPrefix("AB-001"))

        let json = try LadeProcess.run(base + ["--where", "category.name == 'Tools'", "--sort", "sku", "--format", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(objects.map { $0["sku"] as? String } == ["AB-001", "AB-002"])
        #expect(objects.first?["category"] as? String == "Tools")
        #expect(json.stdout.contains(#""price":"9.9","sku":"AB-001","stock":10"#))
        #expect(json.stdout.contains(#""createdAt":"2024-01-02T03:04:05.5Z""#))
        #expect(json.stdout.contains(#""weight":0.1,"category":"Tools""#))

        let csv = try LadeProcess.run(base + ["--sort", "sku:desc", "--offset", "1", "--limit", "1", "--format", "csv"])
        #expect(csv.status == 0, "\(csv.stderr)")
        let rows = csv.stdout.components(separatedBy: "\r\n")
        #expect(rows.count == 3 && rows[2] == "")
        #expect(rows[0] == "_uri,active,createdAt,details,id,name,price,sku,stock,thumbnail,updatedAt,weight,category,supplier")
        #expect(rows[1].hasSuffix(",true,2024-02-03T00:00:00Z,,,Nut,0.25,AB-002,500,,,,Tools,"))
    }

    @Test("a predicate that does not parse is a usage error showing its column")
    func fetchSyntaxError() throws {
        let sandbox = try ImportSandbox()
        let store = try emptyStore(sandbox, type: "xml")
        let result = try LadeProcess.run(["fetch", store, "--model", Self.model, "--entity", "Product", "--where", "name == 'Bolt' OR == 3"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--where: "))
        #expect(result.stderr.contains("at column 19"))
        #expect(result.stderr.contains("\n  name == 'Bolt' OR == 3\n                    ^\n"))
        let sqlite = try emptyStore(sandbox, type: "sqlite")
        let unknown = try LadeProcess.run(["fetch", sqlite, "--model", Self.model, "--entity", "Product", "--where", "colour == 'red'"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("'colour' is not a property of entity 'Product'"))
    }

    @Test("export writes one NDJSON file per non-abstract entity, objects in primary key order")
    func exportNDJSON() throws {
        let sandbox = try ImportSandbox()
        let store = try filledStore(sandbox)
        let out = sandbox.url("export/nested")
        let result = try LadeProcess.run(["export", store, "--model", Self.model, "--format", "ndjson", "--out", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("wrote \(out.path)/Product.ndjson   3 objects\n"))
        #expect(result.stdout.contains("wrote \(out.path)/Category.ndjson  2 objects\n"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).sorted() == ["Category.ndjson", "Image.ndjson", "Product.ndjson", "Supplier.ndjson", "Video.ndjson"])
        let uuid = try #require(try LadeProcess.run(["meta", "get", store, "NSStoreUUID", "--json"]).stdout
            .split(separator: "\"").dropFirst(3).first.map(String.init))
        let products = try String(contentsOf: out.appendingPathComponent("Product.ndjson"), encoding: .utf8)
        let first = try #require(products.split(separator: "\n").first { $0.contains("AB-001") })
        #expect(String(first) == """
            {"_uri":"x-coredata://\(uuid)/Product/p1","active":true,"createdAt":"2024-01-02T03:04:05.5Z","details":"Zinc, 8 mm",\
            "id":null,"name":"Bolt","price":"9.9","sku":"AB-001","stock":10,"thumbnail":null,"updatedAt":null,"weight":0.1,\
            "category":"Tools","media":[],"supplier":null,"suppliers":[]}
            """)
        #expect(products.split(separator: "\n").map { $0.contains("\"sku\":\"AB-00") } == [true, true, true])
        let categories = try String(contentsOf: out.appendingPathComponent("Category.ndjson"), encoding: .utf8)
        #expect(categories.contains(#""name":"Tools","sortOrder":0,"children":[],"parent":null,"products":["AB-001","AB-002"]}"#))
        #expect(try String(contentsOf: out.appendingPathComponent("Video.ndjson"), encoding: .utf8).isEmpty)

        // Again over the same directory: the same bytes, no temporary files left.
        let before = products
        #expect(try LadeProcess.run(["export", store, "--model", Self.model, "--format", "ndjson", "--out", out.path]).status == 0)
        #expect(try String(contentsOf: out.appendingPathComponent("Product.ndjson"), encoding: .utf8) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).count == 5)
    }

    @Test("export writes RFC 4180 CSV with a header, null empty and an empty string quoted")
    func exportCSV() throws {
        let sandbox = try ImportSandbox()
        let store = try filledStore(sandbox)
        let out = sandbox.url("csv")
        let result = try LadeProcess.run(["export", store, "--model", Self.model, "--format", "csv", "--out", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        let products = try String(contentsOf: out.appendingPathComponent("Product.csv"), encoding: .utf8)
        let rows = products.components(separatedBy: "\r\n")
        #expect(rows.count == 5 && rows[4] == "")
        #expect(rows[0] == "_uri,active,createdAt,details,id,name,price,sku,stock,thumbnail,updatedAt,weight,category,media,supplier,suppliers")
        #expect(rows[1].hasSuffix("/Product/p1,true,2024-01-02T03:04:05.5Z,\"Zinc, 8 mm\",,Bolt,9.9,AB-001,10,,,0.1,Tools,[],,[]"))
        #expect(rows[3].hasSuffix(",true,,\"Says \"\"bang\"\"\",,Hammer,24.5,AB-003,3,,,1.25,Garden,[],,[]"))
        let categories = try String(contentsOf: out.appendingPathComponent("Category.csv"), encoding: .utf8)
        #expect(categories.contains(",Tools,0,[],,\"[\"\"AB-001\"\",\"\"AB-002\"\"]\"\r\n"))
    }

    @Test("inspect and export read XML and binary stores too")
    func atomicStores() throws {
        let sandbox = try ImportSandbox()
        for type in ["xml", "binary"] {
            let store = try emptyStore(sandbox, type: type)
            let inspected = try LadeProcess.run(["inspect", store, "--model", Self.model])
            #expect(inspected.status == 0, "\(inspected.stderr)")
            #expect(inspected.stdout.contains("Type: \(type == "xml" ? "XML" : "Binary")"))
            #expect(inspected.stdout.contains("  total     0"))
            let exported = try LadeProcess.run(["export", store, "--model", Self.model, "--format", "csv", "--out", sandbox.url("out-\(type)").path])
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(try String(contentsOf: sandbox.url("out-\(type)/Supplier.csv"), encoding: .utf8) == "_uri,code,email,name,primaryProducts,products\r\n")
        }
    }

    @Test("exporting a store Apple wrote leaves the file and its -wal as they were", .needsCorpus)
    func exportAppleStore() throws {
        let sandbox = try ImportSandbox()
        let folder = Corpus.root.appendingPathComponent("CoderDream/Core-Data-by-Tutorials/SourceCode/Core Data by Tutorials v6/09-multiple-managed-object-contexts/final/SurfJournal/SurfJournal")
        let store = sandbox.url("SurfJournalModel.sqlite").path
        for suffix in ["", "-wal", "-shm"] {
            try copyWritable(atPath: folder.appendingPathComponent("CoreDataSeed/SurfJournalModel.sqlite").path + suffix, toPath: store + suffix)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: store + suffix)
        }
        let before = [try digest(store), try digest(store + "-wal")]
        let model = folder.appendingPathComponent("SurfJournalModel.xcdatamodeld").path
        let result = try LadeProcess.run(["export", store, "--model", model, "--format", "ndjson", "--out", sandbox.url("out").path])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try String(contentsOf: sandbox.url("out/JournalEntry.ndjson"), encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 5000)
        #expect(lines.first?.hasPrefix("{\"_uri\":\"x-coredata://") == true)
        let fetched = try LadeProcess.run(["fetch", store, "--model", model, "--entity", "JournalEntry", "--limit", "2", "--format", "json"])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect((try JSONSerialization.jsonObject(with: Data(fetched.stdout.utf8)) as? [Any])?.count == 2)
        #expect([try digest(store), try digest(store + "-wal")] == before)
    }
}
