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
        let job = try PipelineFixtures.productsJob(rows: 20000, in: directory, options: "writer: \(writer.rawValue)\nbatch: { size: 500, resetEvery: 4 }")
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

    @Test("a seed reads its source on the reader thread: the next batch is read while the writer waits after the last",
          arguments: [ImportWriterChoice.batch, .objects])
    func seedReadsAhead(writer: ImportWriterChoice) throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("categories.csv")
        try #require(mkfifo(fifo.path, 0o600) == 0, "mkfifo")
        let job = try PipelineFixtures.job("""
            kind: seed
            flag: com.example.read-ahead
            model: \(PipelineFixtures.catalog.path)
            store: { path: catalog.sqlite }
            writer: \(writer.rawValue)
            batch: { size: 100 }
            steps:
              - { source: categories.csv, entity: Category, key: [name] }
            """, directory: directory)
        // The second batch (500 KB) is more than the reader's first fill (256 KiB, taken before
        // the first batch is parsed) and a pipe (64 KiB) hold: the feeder gets all of it in only
        // while the source is read after the first batch.
        let secondBatchIn = DispatchSemaphore(value: 0)
        let feeder = Thread {
            guard let handle = FileHandle(forWritingAtPath: fifo.path) else { return }
            let padding = String(repeating: "x", count: 5_000)
            handle.write(Data(("name,note\n" + (0..<100).map { "Category \($0),\n" }.joined()).utf8))
            handle.write(Data((100..<200).map { "Category \($0),\(padding)\n" }.joined().utf8))
            secondBatchIn.signal()
            try? handle.close()
        }
        feeder.start()
        let readAhead = NSLock()
        nonisolated(unsafe) var waits: [Bool] = []
        var options = SeedOptions(progressInterval: 0, handlesSignals: false)
        options.progressOutput = { _ in
            // Told on the writer's thread after each batch: after the first, wait here for the
            // feeder, whose second batch gets in only if another thread reads it meanwhile.
            readAhead.withLock {
                if waits.isEmpty { waits.append(secondBatchIn.wait(timeout: .now() + 10) == .success) }
            }
        }
        let report = try SeedRunner(job: job, options: options).run()
        #expect(report.status == .seeded, "\(report.text())")
        #expect(report.steps.first?.inserted == 200)
        #expect(readAhead.withLock { waits } == [true], "the source was not read while the writer waited after its first batch")
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
