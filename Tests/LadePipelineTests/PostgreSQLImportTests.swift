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
        var job = try PipelineFixtures.productsJob(rows: 3000, in: directory, options: "batch: { size: 500 }")
        job.store = StoreReference(kind: .postgresql, url: URL(string: server.storeURL(schema: schema))!)
        let first = try ImportRunner(job: job, options: ImportOptions(handlesSignals: false)).run()
        #expect(first.writer == .batch)
        #expect(first.counts.inserted == 3_000, "\(first.counts)")
        let again = try ImportRunner(job: job, options: ImportOptions(force: true, handlesSignals: false)).run()
        #expect(again.counts.inserted == 0 && again.counts.unchanged == 3_000, "\(again.counts)")
        let table = PostgresTestServer.quotedIdentifier(schema)
        #expect(try server.psql("SELECT count(*), count(DISTINCT \"ZSKU\"), max(\"Z_OPT\") FROM \(table).\"ZPRODUCT\"") == "3000|3000|1")
        #expect(try server.psql("SELECT count(*) FROM \(table).\"ZCATEGORY\"") == "13")
        #expect(try server.psql("SELECT count(*) FROM \(table).\"Z_LADECHECKPOINT\"") != "0")
    }

    @Test("the batch writer prepares the reader's next batch while the server finishes a batch's COPY, and the next write takes it: every batch after the first, the same rows as prepared then")
    func nextBatchPreparedAhead() throws {
        let server = try PostgresTestServer.fromEnvironment()
        let schema = server.newSchemaName("import_ahead")
        defer { try? server.dropSchema(schema) }
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var job = try PipelineFixtures.productsJob(rows: 3000, in: directory, options: "batch: { size: 500 }")
        job.store = StoreReference(kind: .postgresql, url: URL(string: server.storeURL(schema: schema))!)
        let setup = try ImportStack(job: job, onWarning: nil)
        let plan = setup.plans[0]
        let stack = try setup.open(job, contextName: "test")
        // The batches read beforehand, so the next one is always ready (in a run the reader
        // thread has it ready when it is the faster).
        let (reader, mapper, _) = try ImportStack.source(plan)
        var batches: [MappedBatch] = []
        while let batch = try mapper.nextBatch(from: reader, maxRecords: 500) { batches.append(batch) }
        #expect(batches.count == 6)
        let context = stack.context
        let (prepared, counts) = try context.performAndWait { () throws -> (Int, ImportCounts) in
            let writer = BatchInsertWriter(context: context, plan: plan, model: setup.model)
            var next = 0
            var asked = 0
            writer.upcoming = {
                asked += 1
                return next < batches.count ? batches[next] : nil
            }
            var counts = ImportCounts()
            for (index, batch) in batches.enumerated() {
                next = index + 1
                let written = try writer.write(batch, allowedRejects: 0, counts: &counts)
                #expect(written.applied && written.rejects.isEmpty)
            }
            try writer.commit(last: true)
            // Asked once per batch: every batch was inserted first, by one COPY.
            #expect(asked == batches.count)
            return (writer.batchesPreparedAhead, counts)
        }
        // The first batch's categories were created by it, before its rows: every later batch
        // found all it names known, and was prepared while the batch before it was finishing.
        #expect(prepared == batches.count - 1)
        #expect(counts.inserted == 3_000 && counts.createdDestinations == 13, "\(counts)")
        let table = PostgresTestServer.quotedIdentifier(schema)
        #expect(try server.psql("SELECT count(*), count(DISTINCT \"ZSKU\"), count(\"ZCATEGORY\") FROM \(table).\"ZPRODUCT\"") == "3000|3000|3000")
    }
}
