import Foundation
import Lade
import Testing
@testable import LadePipeline

/// The import pipeline in this process: the reader thread parses and maps, this thread writes,
/// a bounded queue between them. `make tsan` runs these under ThreadSanitizer.
@Suite("The import pipeline's threads, in process")
struct ImportPipelineThreadTests {
    @Test("20,000 rows through the reader thread, the queue and the writer: every row once, and a re-run changes nothing",
          arguments: [ImportWriterChoice.batch, .objects])
    func pipeline(writer: ImportWriterChoice) throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var csv = "sku,name,price,stock,category\n"
        for index in 0..<20_000 { csv += "SKU-\(index),Product \(index),\(index % 100).5,\(index % 7),Cat \(index % 13)\n" }
        try Data(csv.utf8).write(to: directory.appendingPathComponent("products.csv"))
        let job = try PipelineFixtures.job("""
            kind: import
            model: \(PipelineFixtures.catalog.path)
            store: { path: catalog.sqlite }
            source: products.csv
            entity: Product
            key: [sku]
            writer: \(writer.rawValue)
            batch: { size: 500, resetEvery: 4 }
            relationships:
              category: { from: category, match: name, create: true }
            """, directory: directory)
        let first = try ImportRunner(job: job, options: ImportOptions(handlesSignals: false)).run()
        #expect(first.writer == writer)
        #expect(first.counts.inserted == 20_000, "\(first.counts)")
        #expect(first.batches == 40)
        let again = try ImportRunner(job: job, options: ImportOptions(force: true, handlesSignals: false)).run()
        #expect(again.counts.inserted == 0 && again.counts.unchanged == 20_000, "\(again.counts)")
        let connection = try SQLiteConnection(path: directory.appendingPathComponent("catalog.sqlite").path, mode: .readOnly)
        #expect(try connection.rows("SELECT COUNT(*), COUNT(DISTINCT ZSKU) FROM ZPRODUCT") == [[.integer(20_000), .integer(20_000)]])
        #expect(try connection.rows("SELECT COUNT(*) FROM ZCATEGORY") == [[.integer(13)]])
    }
}
