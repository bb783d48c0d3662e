import Foundation
import Lade
@testable import LadePipeline
import Testing

@Suite("Job files")
struct JobFileTests {
    @Test("the documented products job reads as written")
    func documentedExample() throws {
        let url = PipelineFixtures.root.appendingPathComponent("jobs/products.yaml")
        let job = try Job(contentsOf: url)
        #expect(job.kind == .import)
        #expect(job.model.url.path == PipelineFixtures.catalog.path)
        #expect(job.store == StoreReference(kind: .sqlite, url: PipelineFixtures.root.appendingPathComponent("out/catalog.sqlite")))
        let step = try #require(job.steps.first)
        #expect(step.entity == "Product")
        #expect(step.key == ["sku"])
        #expect(step.mode == .upsert)
        #expect(step.source.nulls == ["", "NA"])
        #expect(step.source.format == .csv(CSVDialect()))
        #expect(step.fields.map(\.attribute) == ["sku", "price", "createdAt", "details"])
        #expect(step.fields[2].dateFormat == .iso8601)
        #expect(step.fields[3].empty == .null)
        #expect(step.relationships.map(\.relationship) == ["category", "supplier"])
        #expect(step.relationships[0].create && !step.relationships[0].required)
        #expect(job.batch == BatchSettings(size: 5000, resetEvery: 1))
        #expect(job.onError.policy == .skip && job.onError.maxErrors == 1000)
        #expect(job.onError.rejects?.lastPathComponent == "products.rejects.ndjson")
    }

    @Test("every example job in jobs/ reads")
    func examples() throws {
        let folder = PipelineFixtures.root.appendingPathComponent("jobs")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".json") }
        #expect(files.count >= 4)
        for file in files {
            _ = try Job(contentsOf: folder.appendingPathComponent(file))
        }
    }

    @Test("a JSON job file reads like its YAML twin")
    func jsonJob() throws {
        let job = try PipelineFixtures.job("""
            {"kind": "import", "model": "../samples/Catalog.xcdatamodeld",
             "store": {"type": "sqlite", "path": "../out/x.sqlite"},
             "source": {"path": "../samples/products.ndjson"}, "entity": "Product", "key": ["sku"],
             "batch": {"size": 100, "commitEvery": 2, "resetEvery": 4}}
            """)
        #expect(job.steps[0].source.format == .ndjson)
        #expect(job.batch == BatchSettings(size: 100, commitEvery: 2, resetEvery: 4))
    }

    @Test("errors name file, line, column and field", arguments: [
        ("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: a.csv\nentity: E\nbatch: { size: many }\n", "test.yaml:6:16: batch.size: expected a whole number above 0, found 'many'"),
        ("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: a.csv\nentity: E\nfeilds: {}\n", "test.yaml:6:9: feilds: unknown field (did you mean 'fields'?)"),
        ("kind: export\n", "test.yaml:1:7: kind: expected import or seed, found 'export'"),
        ("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: a.txt\nentity: E\n", "test.yaml:4:9: source: cannot tell the format from 'a.txt'"),
        ("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: a.csv\nentity: E\nmode: update\n", "test.yaml:6:7: mode: mode update finds objects by a key"),
        ("kind: import\nmodel: m\nstore: { path: x }\nsource: a.csv\nentity: E\n", "store: say the store's type"),
        ("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: a.csv\n", "the job has no 'entity'"),
        ("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: a.csv\nentity: E\nbatch: { commitEvery: 3, resetEvery: 0 }\n", "test.yaml:6:38: batch.resetEvery: expected a whole number above 0, found '0'"),
        ("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: { path: a.ndjson, delimiter: ';' }\nentity: E\n", "delimiter: only applies to CSV sources"),
        ("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: a.csv\nentity: E\nonError: { policy: abort, maxErrors: 3 }\n", "only used with 'policy: skip'"),
        ("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: a.csv\nentity: E\nfields: { d: { from: x, date: 12 } }\n", "expected iso8601, unix, unix-ms or a date pattern"),
        ("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: a.csv\nentity: E\nfields: { d: { from: x, timeZone: Mars/Olympus } }\n", "unknown time zone 'Mars/Olympus'"),
        ("kind: import\nmodel: m\n  store: x\n", "test.yaml:3:8: not valid YAML or JSON"),
        ("kind: seed\nmodel: m\nstore: { path: x.sqlite }\nflag: f\nsteps: []\n", "a seed needs at least one step"),
        ("kind: seed\nmodel: m\nstore: { path: x.sqlite }\nsteps:\n  - { source: a.csv, entity: E }\n", "the job has no 'flag'"),
        ("kind: import\nmodel: m\nstore: { path: x.xml, history: true }\nsource: a.csv\nentity: E\n", "test.yaml:3:32: store.history: persistent history is kept by SQLite and PostgreSQL stores only"),
        ("kind: import\nmodel: m\nstore: { path: x.sqlite, history: maybe }\nsource: a.csv\nentity: E\n", "store.history"),
        ("kind: import\nmodel: m\nstore: { path: x.sqlite }\ntransactionAuthor: ''\nsource: a.csv\nentity: E\n", "transactionAuthor"),
    ])
    func shapeErrors(yaml: String, expected: String) throws {
        let error = try #require(throws: JobError.self) { try PipelineFixtures.job(yaml) }
        #expect(error.description.contains(expected), "\(error.description)")
    }

    @Test("transactionAuthor and store.history are read, for imports and seeds")
    func historyFields() throws {
        let job = try PipelineFixtures.job("kind: import\nmodel: m\nstore: { path: x.sqlite, history: true }\ntransactionAuthor: nightly\nsource: a.csv\nentity: E\n")
        #expect(job.transactionAuthor == "nightly" && job.store.history)
        let seed = try PipelineFixtures.job("kind: seed\nmodel: m\nstore: { path: x.sqlite }\nflag: f\ntransactionAuthor: seeder\nsteps:\n  - { source: a.csv, entity: E }\n")
        #expect(seed.transactionAuthor == "seeder" && !seed.store.history)
    }

    @Test("paths are taken from the job file's folder; absolute ones stay")
    func paths() throws {
        let job = try PipelineFixtures.job(
            "kind: import\nmodel: /abs/Model.xcdatamodeld\nstore: { path: ../out/x.sqlite }\nsource: { path: '-', format: ndjson }\nentity: E\n",
            directory: URL(fileURLWithPath: "/data/jobs"))
        #expect(job.model.url.path == "/abs/Model.xcdatamodeld")
        #expect(job.store.url.path == "/data/out/x.sqlite")
        #expect(job.steps[0].source.url == nil)
        #expect(job.steps[0].source.format == .ndjson)
    }

    @Test("a seed job has a flag and steps in order")
    func seed() throws {
        // jobs/seed-catalog.yaml is the example, word for word (SeedCLITests checks that).
        let job = try Job(contentsOf: PipelineFixtures.root.appendingPathComponent("jobs/seed-catalog.yaml"), displayPath: "jobs/seed-catalog.yaml")
        #expect(job.kind == .seed)
        #expect(job.flag == "com.example.catalog.seed.v1")
        #expect(job.steps.map(\.entity) == ["Category", "Product"])
        #expect(job.steps[1].relationships[0].required)
    }
}
