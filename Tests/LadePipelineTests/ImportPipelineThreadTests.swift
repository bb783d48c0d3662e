import Foundation
import Lade
import Testing
@testable import LadePipeline

/// The import pipeline in this process: the reader thread parses and maps, this thread writes,
/// a bounded queue between them. `make tsan` runs these under ThreadSanitizer.
@Suite("The import pipeline's threads, in process")
struct ImportPipelineThreadTests {
    @Test("20,000 rows through the reader thread, the queue and the writer: every row once, and a re-run changes nothing", .slow,
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

    @Test("put untilTaken returns only once the consumer has taken the item; cancel releases it with false")
    func handOff() throws {
        let queue = BoundedQueue<Int>(capacity: 1)
        let returned = NSCondition()
        nonisolated(unsafe) var results: [Bool] = []
        let producer = Thread {
            for item in 1...2 {
                let result = queue.put(item, untilTaken: true)
                returned.lock(); results.append(result); returned.broadcast(); returned.unlock()
            }
        }
        producer.start()
        /// The puts returned so far, once there are `count` or `seconds` have passed.
        func returns(_ count: Int, within seconds: Double) -> [Bool] {
            let deadline = Date(timeIntervalSinceNow: seconds)
            returned.lock(); defer { returned.unlock() }
            while results.count < count && returned.wait(until: deadline) {}
            return results
        }
        // Queued, not taken: the put has not returned.
        #expect(returns(1, within: 0.2) == [])
        #expect(queue.take() == 1)
        #expect(returns(1, within: 10) == [true])
        // The second put waits for a take that never comes; cancel ends it.
        #expect(returns(2, within: 0.2) == [true])
        queue.cancel()
        #expect(returns(2, within: 10) == [true, false])
    }
}
