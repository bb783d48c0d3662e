import Foundation
import Lade
import Testing

/// Sources that are not regular files (standard input, pipes, FIFOs, devices) are read once,
/// as streams: every row counted, no resume, and a signal still ends a run waiting for a writer.
@Suite("Sources read as streams", .eachWriter)
struct SourceStreamTests {
    static func rows(_ count: Int) -> String {
        "code,name\n" + (0..<count).map { "S\($0),Supplier \($0)\n" }.joined()
    }

    @Test("20,000 rows written into a FIFO named as the source are all imported, and the report says it cannot resume", .slow)
    func fifoSource() throws {
        let sandbox = try ImportSandbox()
        try #require(mkfifo(sandbox.url("feed.fifo").path, 0o600) == 0)
        try sandbox.job("source: { path: feed.fifo, format: csv }\nentity: Supplier\nkey: code\n")
        let text = Data(Self.rows(20_000).utf8)
        let fifo = sandbox.url("feed.fifo").path
        let writer = Thread {
            if let handle = FileHandle(forWritingAtPath: fifo) {
                handle.write(text)
                try? handle.close()
            }
        }
        writer.start()
        let (result, report) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZSUPPLIER") == 20_000)
        #expect(report?["resumable"] as? Bool == false)
        #expect(report?["rows"] as? Int == 20_000)
        #expect(result.stdout.contains("is a stream"), "\(result.stdout)")
    }

    @Test("SIGTERM ends a run still waiting for a FIFO's writer", .slow)
    func fifoWithoutWriter() throws {
        let sandbox = try ImportSandbox()
        try #require(mkfifo(sandbox.url("feed.fifo").path, 0o600) == 0)
        try sandbox.job("source: { path: feed.fifo, format: csv }\nentity: Supplier\nkey: code\n")
        let child = try LadeChild(["run", "job.yaml"], in: sandbox.directory)
        Thread.sleep(forTimeInterval: 1)
        #expect(child.send(SIGTERM), "lade ended before the signal: \(child.stderr)")
        let deadline = Date().addingTimeInterval(10)
        while child.process.isRunning && Date() < deadline { usleep(10_000) }
        if child.process.isRunning { child.send(SIGKILL) }
        #expect(child.finish() == 128 + SIGTERM, "\(child.stderr)")
    }
}
