import Foundation
import Testing

/// `lade validate JOB`: a job checked against its model, its source's header and its store,
/// writing nothing; every complaint names the job file, line (and column) and field.
@Suite("lade validate")
struct ImportValidateTests {
    static let source = "sku,name,price,created_at\nAA-001,One,1.50,2024-03-01\n"

    /// The job's first lines: kind, model, store, source, entity (lines 1–5), then `body` from line 6.
    static func job(_ body: String) -> String {
        "kind: import\nmodel: \(ImportSandbox.catalogModel.path)\nstore: { path: catalog.sqlite }\nsource: products.csv\nentity: Product\n" + body
    }

    @Test("a good job: exit 0, what goes where, and nothing written")
    func goodJob() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", Self.source)
        try sandbox.write("job.yaml", Self.job("key: sku\nfields:\n  createdAt: { from: created_at, date: iso8601 }\nrelationships:\n  category: { from: sku, match: name, create: true }\n"))
        let result = try sandbox.lade(["validate", "job.yaml"])
        #expect(result.status == 0, "\(result.stderr)")
        for line in ["products.csv → Product, mode upsert, key sku", "  createdAt ← created_at", "  price ← price (matched by name)",
                     "  category → Category by name ← sku, created when missing", "will be created with the model",
                     "writer: batch (batch inserts: the job needs nothing only managed objects do)",
                     "SQLite page cache 16 MiB (the batch writer's default; batch.cacheMiB sets it)", "batches of 5000, commit every 2 s;", "ok"] {
            #expect(result.stdout.contains(line), "missing \(line): \(result.stdout)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).sorted() == ["job.yaml", "products.csv"],
                "no store, lock or rejects file")
    }

    @Test("the plan names the page cache: the writer's default, or the job's batch.cacheMiB")
    func pageCache() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", Self.source)
        for (body, expected) in [
            ("writer: objects\n", ["SQLite page cache 12 MiB (the objects writer's default; batch.cacheMiB sets it)",
                                   "commit every 2 s, each batch saved into the open transaction, reset every 1"]),
            ("writer: objects\nbatch: { cacheMiB: 32 }\n", ["SQLite page cache 32 MiB\n"]),
            ("batch: { cacheMiB: 1 }\n", ["writer: batch", "SQLite page cache 1 MiB\n"]),
        ] {
            try sandbox.write("job.yaml", Self.job("key: sku\n" + body))
            let result = try sandbox.lade(["validate", "job.yaml"])
            #expect(result.status == 0, "\(result.stderr)")
            for line in expected { #expect(result.stdout.contains(line), "missing \(line): \(result.stdout)") }
        }
    }

    @Test("the shipped jobs validate", arguments: ["suppliers.yaml", "products.yaml", "products-feed.yaml", "products-json.yaml"])
    func shippedJobs(_ name: String) throws {
        let result = try LadeProcess.run(["validate", "jobs/\(name)"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasSuffix("ok\n"))
    }

    @Test("a bad job: exit 1, the message names file, line, column and field", arguments: [
        ("key: sku\nbatch: { size: many }\n", "job.yaml:7:16: batch.size: expected a whole number above 0, found 'many'"),
        ("key: sku\nbatch: { cacheMiB: 20000 }\n", "job.yaml:7:20: batch.cacheMiB: cacheMiB 20000 is more than 16384 (16 GiB)"),
        ("key: sku\nbatch: { cacheMiB: 0 }\n", "job.yaml:7:20: batch.cacheMiB: expected a whole number above 0, found '0'"),
        ("key: sku\nentitty: Product\n", "job.yaml:7:10: entitty: unknown field (did you mean 'entity'?)"),
        ("key: sku\nfields: { sku: [\n", "job.yaml:8:1: not valid YAML or JSON"),
        ("key: sku\nfields:\n  colour: colour\n", "job.yaml:8: fields.colour: Product has no attribute 'colour'"),
        ("key: sku\nfields:\n  price: { from: cost }\n", "job.yaml: fields.price: column 'cost' is not in products.csv's header; its columns are sku, name, price, created_at"),
        ("key: sku\nfields:\n  createdAt: { from: created_at, date: \"yyyy-MM-dd\", timeZone: Mars/Base }\n",
         "job.yaml:8:64: fields.createdAt.timeZone: unknown time zone 'Mars/Base'"),
        ("key: sku\nfields:\n  stock: { value: lots }\n", "job.yaml:8: fields.stock.value: 'lots' is not a valid Integer 32 value"),
        ("key: sku\nrelationships:\n  category: { from: name, match: title }\n", "job.yaml:8: relationships.category.match: Category has no attribute 'title'"),
        ("key: sku\nrelationships:\n  supplier: { from: supplier_code, match: code }\n",
         "job.yaml: relationships.supplier.from: column 'supplier_code' is not in products.csv's header"),
        ("key: code\n", "job.yaml: key: Product has no attribute 'code'"),
        ("key: name\nwriter: batch\n", "job.yaml: writer: batch cannot write this job: the key name is not a uniqueness constraint of Product; use writer: auto or writer: objects"),
    ])
    func badJob(_ body: String, _ message: String) throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", Self.source)
        try sandbox.write("job.yaml", Self.job(body))
        let result = try sandbox.lade(["validate", "job.yaml"])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("lade: error: \(message)"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.store.path))
    }

    @Test("a store made with another version of the model is refused, and left as it was")
    func storeOfAnotherModel() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", Self.source)
        try sandbox.write("job.yaml", Self.job("key: sku\n"))
        let created = try sandbox.lade(["init", sandbox.store.path, "--model", ImportSandbox.catalogModel.path, "--model-version", "Catalog"])
        try #require(created.status == 0, "\(created.stderr)")
        let before = try Data(contentsOf: sandbox.store)
        let result = try sandbox.lade(["validate", "job.yaml"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("does not match the model"), "\(result.stderr)")
        #expect(try Data(contentsOf: sandbox.store) == before)
    }
}
