import Foundation
import Lade
import LadeTestSupport
import Testing
@testable import LadePipeline

/// `lade run`'s import pipeline into a PostgreSQL store (the real test server), in process: the
/// batch writer chosen as on SQLite, every row once, a re-run unchanged.
@Suite("Imports into a PostgreSQL store")
struct PostgreSQLImportTests {
    @Test("an import into a PostgreSQL store takes the batch writer (writer: auto): every row and category once, the checkpoint committed, a forced re-run all unchanged")
    func batchWriter() throws {
        let server = try PostgresTestServer.fromEnvironment()
        let schema = server.newSchemaName("import_batch")
        defer { try? server.dropSchema(schema) }
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try PipelineFixtures.writeProductsCSV(rows: 3000, in: directory)
        var job = try PipelineFixtures.job("""
            kind: import
            model: \(PipelineFixtures.catalog.path)
            store: { path: catalog.sqlite }
            source: products.csv
            entity: Product
            key: [sku]
            batch: { size: 500 }
            relationships:
              category: { from: category, match: name, create: true }
            """, directory: directory)
        job.store = StoreReference(kind: .postgresql, url: URL(string: server.storeURL(schema: schema))!)
        let first = try ImportRunner(job: job, options: ImportOptions(handlesSignals: false)).run()
        #expect(first.writer == .batch)
        #expect(first.counts.inserted == 3_000, "\(first.counts)")
        // The reader maps a batch of 500 rows far sooner than the store writes one: the writer
        // found the next batch ready, and prepared it while the server finished a COPY.
        #expect(first.batches == 6 && first.batchesPreparedAhead >= 1, "\(first.batchesPreparedAhead) of \(first.batches) batches prepared ahead")
        let again = try ImportRunner(job: job, options: ImportOptions(force: true, handlesSignals: false)).run()
        #expect(again.counts.inserted == 0 && again.counts.unchanged == 3_000, "\(again.counts)")
        let table = PostgresTestServer.quotedIdentifier(schema)
        #expect(try server.psql("SELECT count(*), count(DISTINCT \"ZSKU\"), max(\"Z_OPT\") FROM \(table).\"ZPRODUCT\"") == "3000|3000|1")
        #expect(try server.psql("SELECT count(*) FROM \(table).\"ZCATEGORY\"") == "13")
        #expect(try server.psql("SELECT count(*) FROM \(table).\"Z_LADECHECKPOINT\"") != "0")
    }
}
