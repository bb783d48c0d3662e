import Foundation
@testable import LadePipeline
import Testing

@Suite("Batches and memory")
struct ReaderBatchTests {
    @Test("a batch holds at most maxRecords records, and raw holds exactly their text")
    func batches() throws {
        let text = "a,b\n" + (0..<25).map { "\($0),\"x\ny\"\n\n" }.joined()
        let folder = try SourceFolder()
        let reader = try RecordReader(path: try folder.write("b.csv", text), format: nil, fields: ["a"])
        var sizes: [Int] = []
        var index: Int64 = 0
        while let batch = try reader.nextBatch(maxRecords: 10) {
            sizes.append(batch.records.count)
            let rawText = String(decoding: batch.raw, as: UTF8.self)
            #expect(rawText.hasPrefix("\(batch.records[0].values[0])".isEmpty ? "" : "\(index),"))
            #expect(batch.records.last?.rawRange.upperBound == batch.raw.count)
            for record in batch.records {
                #expect(batch.rawText(of: record) == "\(record.recordIndex),\"x\ny\"")
                index += 1
            }
        }
        #expect(sizes == [10, 10, 5])
    }

    /// CSV rows made on the fly, so the test holds neither the input nor the output.
    final class GeneratedCSV: ByteStream {
        let rows: Int
        private var row = -1
        private var pending: [UInt8] = []
        private(set) var bytesRead: Int64 = 0
        init(rows: Int) { self.rows = rows }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            while pending.count < buffer.count && row < rows {
                pending += Array((row < 0 ? "sku,name,description\n" : "S-\(row),\"Name \(row), \"\"quoted\"\"\",\(String(repeating: "d", count: row % 200))\n").utf8)
                row += 1
            }
            let count = min(buffer.count, pending.count)
            pending.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: count) }
            pending.replaceSubrange(0..<count, with: EmptyCollection())
            bytesRead += Int64(count)
            return count
        }
    }

    @Test("memory follows the batch, not the input: 30 MB stream through a buffer that does not grow")
    func boundedMemory() throws {
        let stream = GeneratedCSV(rows: 250_000)
        let reader = try RecordReader(stream: stream, format: .csv(CSVDialect()), fields: ["sku", "description"], displayName: "generated")
        var records = 0
        var largestRaw = 0
        // Batches of about 2.5 MB: larger than the buffer, whose bytes are copied out as it moves on.
        while let batch = try reader.nextBatch(maxRecords: 20_000) {
            for record in [batch.records.first!, batch.records[batch.records.count / 2], batch.records.last!] {
                let text = String(decoding: batch.raw[record.rawRange], as: UTF8.self)
                #expect(text.hasPrefix("S-\(record.recordIndex),\"Name \(record.recordIndex), ") && !text.hasSuffix("\n"), "record \(record.recordIndex)'s raw text: \(text.prefix(60))")
            }
            records += batch.records.count
            largestRaw = max(largestRaw, batch.raw.count)
            #expect(reader.bufferCapacity <= 512 << 10, "the buffer holds a record and a chunk, whatever the input's or the batch's size")
        }
        #expect(records == 250_000)
        #expect(stream.bytesRead > 30_000_000)
        #expect(largestRaw > 2_000_000 && largestRaw < 20_000 * 260)
    }

    @Test("one record larger than maxRecordBytes is thrown instead of filling memory")
    func recordTooLong() throws {
        let folder = try SourceFolder()
        let path = try folder.write("big.csv", "a\n\"" + String(repeating: "x", count: 8_000_000) + "\n")
        let reader = try RecordReader(path: path, format: nil, fields: ["a"], displayName: "big.csv")
        reader.maxRecordBytes = 1 << 20
        let error = readerError { _ = try reader.nextBatch(maxRecords: 10) }
        #expect(error?.kind == .recordTooLong)
        #expect(error?.description.hasPrefix("big.csv:2:1: a record longer than 1048576 bytes (") == true, "\(String(describing: error))")
    }

    @Test("a record larger than the read chunk is read whole")
    func largeRecord() throws {
        let big = String(repeating: "é", count: 400_000)
        #expect(try values("{\"a\": \"\(big)\"}\n{\"a\": 1}\n", named: "l.ndjson", fields: ["a"]) == [[.string(big)], [.number("1")]])
    }
}
