import Foundation
@testable import LadePipeline
import Testing

@Suite("Reading gzip sources")
struct ReaderGzipTests {
    static let csv = "sku,name\n" + (1...300).map { "S-\($0),\"Name, \($0)\"\n" }.joined()

    @Test("a .gz file is decompressed, in each format")
    func formats() throws {
        let folder = try SourceFolder()
        let csv = try readAll(RecordReader(path: try folder.writeGzip("p.csv.gz", Self.csv), format: nil, fields: ["name"]))
        #expect(csv.count == 300)
        #expect(csv.last?.values == [.string("Name, 300")])
        let ndjson = try readAll(RecordReader(path: try folder.writeGzip("p.ndjson.gz", "{\"a\": 1}\n{\"a\": 2}\n"), format: nil, fields: ["a"]))
        #expect(ndjson.map(\.values) == [[.number("1")], [.number("2")]])
        let json = try readAll(RecordReader(path: try folder.writeGzip("p.json.gz", "[{\"a\": 1}, {\"a\": 2}]"), format: nil, fields: ["a"]))
        #expect(json.map(\.values) == [[.number("1")], [.number("2")]])
    }

    @Test("gzip is recognised by its magic bytes whatever the file is called")
    func magic() throws {
        let folder = try SourceFolder()
        let path = try folder.writeGzip("p.csv", Self.csv)
        #expect(try readAll(RecordReader(path: path, format: nil, fields: ["sku"])).count == 300)
    }

    @Test("concatenated gzip members read as one stream")
    func concatenated() throws {
        let folder = try SourceFolder()
        let first = try gzip(Array("sku\nA\nB\n".utf8))
        let second = try gzip(Array("C\nD\n".utf8))
        let path = try folder.write("two.csv.gz", bytes: first + second)
        #expect(try readAll(RecordReader(path: path, format: nil, fields: ["sku"])).map(\.values)
            == [[.string("A")], [.string("B")], [.string("C")], [.string("D")]])
    }

    @Test("truncated gzip is an error naming the file and the compressed offset, after the records before the cut")
    func truncated() throws {
        let folder = try SourceFolder()
        let whole = try gzip(Array(Self.csv.utf8))
        let cut = Array(whole.prefix(whole.count * 2 / 3))
        let path = try folder.write("cut.csv.gz", bytes: cut)
        let reader = try RecordReader(path: path, format: nil, fields: ["sku"], displayName: "cut.csv.gz")
        var records = 0
        let error = readerError {
            while let batch = try reader.nextBatch(maxRecords: 50) { records += batch.records.count }
        }
        #expect(records > 0 && records < 300)
        #expect(error?.kind == .gzip)
        #expect(error?.description == "cut.csv.gz: truncated gzip data: the compressed stream ends at byte \(cut.count) before its end marker (the file was cut short, probably by an interrupted download or copy; fetch it again)")
    }

    @Test("corrupt gzip data is an error naming the compressed offset")
    func corrupt() throws {
        let folder = try SourceFolder()
        var bytes = try gzip(Array(Self.csv.utf8))
        for index in stride(from: 20, to: bytes.count - 8, by: 7) { bytes[index] ^= 0x5A }
        let path = try folder.write("bad.csv.gz", bytes: bytes)
        let error = readerError {
            _ = try readAll(RecordReader(path: path, format: nil, fields: ["sku"], displayName: "bad.csv.gz"))
        }
        #expect(error?.kind == .gzip)
        #expect(error?.description.hasPrefix("bad.csv.gz: corrupt gzip data at compressed byte ") == true, "\(String(describing: error))")
    }

    @Test("bytes after the last member that are not gzip are an error, not silently ignored")
    func trailingGarbage() throws {
        let folder = try SourceFolder()
        let path = try folder.write("tail.csv.gz", bytes: try gzip(Array("a\n1\n".utf8)) + Array("junk".utf8))
        let error = readerError { _ = try readAll(RecordReader(path: path, format: nil, fields: ["a"])) }
        #expect(error?.kind == .gzip)
    }

    @Test("a file named .gz that is not gzip is refused")
    func notGzip() throws {
        let folder = try SourceFolder()
        let path = try folder.write("p.csv.gz", "sku\nA\n")
        let error = readerError { _ = try RecordReader(path: path, format: nil, fields: [], displayName: "p.csv.gz") }
        #expect(error?.description == "p.csv.gz: the file is named .gz but is not gzip data (it does not start with 1f 8b) (gzip data, or a name without .gz for an uncompressed file)")
    }

    @Test("progress counts compressed bytes against the file's size")
    func progress() throws {
        let folder = try SourceFolder()
        let path = try folder.writeGzip("p.csv.gz", Self.csv)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let reader = try RecordReader(path: path, format: nil, fields: [])
        #expect(reader.totalBytes == Int64(size))
        _ = try readAll(reader)
        #expect(reader.bytesRead == Int64(size))
    }
}

@Suite("Reading from streams")
struct ReaderStreamTests {
    static let sources: [(String, SourceFormat, String)] = [
        ("csv", .csv(CSVDialect()), "id,text\r\n1,\"a\r\nb\"\r\n\r\n2,\"x \"\"y\"\"\",\n3,z\n"),
        ("ndjson", .ndjson, "{\"id\": 1, \"text\": \"a\\u00e9\"}\n\n{\"id\": 2 \"text\": 1}\n{\"id\": 3, \"text\": [1, {\"k\": 2}]}"),
        ("json", .jsonArray, "[\n {\"id\": 1, \"text\": \"\\ud83d\\ude00\"},\n [],\n {\"id\": 3, \"text\": -1.5e3}\n]\n"),
    ]

    @Test("a stream that delivers a few bytes at a time gives exactly what the file gives", arguments: 0..<3)
    func trickle(_ index: Int) throws {
        let (name, format, text) = Self.sources[index]
        let expected = try read(text, named: "s.\(name)", format: format, fields: ["id", "text"])
        #expect(expected.count == 3)
        for seed in 1...20 as ClosedRange<UInt64> {
            let reader = try RecordReader(stream: TrickleStream(text, largestRead: 1 + Int(seed % 5), seed: seed), format: format,
                                          fields: ["id", "text"], displayName: "s.\(name)")
            #expect(try readAll(reader, batch: 1 + Int(seed % 3)) == expected, "seed \(seed)")
        }
    }

    @Test("a pipe is read to its end, gzip included, like standard input")
    func pipe() throws {
        let text = (0..<5_000).map { "{\"n\": \($0)}\n" }.joined()
        let compressed = try gzip(Array(text.utf8))
        var descriptors: [Int32] = [0, 0]
        #expect(Foundation.pipe(&descriptors) == 0)
        let writeEnd = descriptors[1]
        let writer = Thread {
            compressed.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = Foundation.write(writeEnd, bytes.baseAddress! + offset, min(1_000, bytes.count - offset))
                    if written <= 0 { break }
                    offset += written
                }
            }
            close(writeEnd)
        }
        writer.start()
        let stream = FileByteStream(fileDescriptor: descriptors[0], path: "stdin", closeOnDeinit: true)
        let reader = try RecordReader(stream: stream, format: .ndjson, fields: ["n"], displayName: "stdin")
        #expect(reader.totalBytes == nil)
        let records = try readAll(reader, batch: 777)
        #expect(records.count == 5_000)
        #expect(records.last?.values == [.number("4999")])
        #expect(records.last?.line == 5_000)
    }

    @Test("standard input needs its format named")
    func standardInputFormat() throws {
        let error = readerError { _ = try RecordReader(path: "-", format: nil, fields: []) }
        #expect(error?.kind == .configuration)
        #expect(error?.file == "stdin")
    }

    @Test("a missing file is an I/O error naming it")
    func missingFile() throws {
        let error = readerError { _ = try RecordReader(path: "/nonexistent/p.csv", format: nil, fields: []) }
        #expect(error?.description == "/nonexistent/p.csv: cannot open the source: No such file or directory (check the source path; relative paths in a job file start at the job file's folder)")
    }

    @Test("an unknown extension without a format is refused")
    func unknownExtension() throws {
        let folder = try SourceFolder()
        let error = readerError { _ = try RecordReader(path: try folder.write("p.txt", "x"), format: nil, fields: []) }
        #expect(error?.kind == .configuration)
    }

    @Test("formats come from extensions, case-insensitively, each optionally .gz")
    func inferredFormats() {
        #expect(SourceFormat.inferred(fromPath: "a/b.csv")! == (.csv(CSVDialect()), false))
        #expect(SourceFormat.inferred(fromPath: "B.CSV.GZ")! == (.csv(CSVDialect()), true))
        #expect(SourceFormat.inferred(fromPath: "x.tsv")?.format == .csv(CSVDialect(delimiter: ASCII.tab)))
        #expect(SourceFormat.inferred(fromPath: "x.ndjson.gz")! == (.ndjson, true))
        #expect(SourceFormat.inferred(fromPath: "x.jsonl")! == (.ndjson, false))
        #expect(SourceFormat.inferred(fromPath: "dir.v2/x.json")! == (.jsonArray, false))
        #expect(SourceFormat.inferred(fromPath: "x.gz") == nil)
        #expect(SourceFormat.inferred(fromPath: "x.txt") == nil)
        #expect(SourceFormat.inferred(fromPath: "csv") == nil)
    }

    @Test("field paths split on dots")
    func fieldPaths() {
        #expect(FieldPath("a.b.c").components == ["a", "b", "c"])
        let literal: FieldPath = "sku"
        #expect(literal.components == ["sku"])
        #expect(FieldPath(components: ["a.b"]).description == "a.b")
    }
}

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
            pending.removeFirst(count)
            bytesRead += Int64(count)
            return count
        }
    }

    @Test("memory follows the batch, not the input: 30 MB stream through a buffer that does not grow")
    func boundedMemory() throws {
        let stream = GeneratedCSV(rows: 250_000)
        let reader = try RecordReader(stream: stream, format: .csv(CSVDialect()), fields: ["sku", "description"], displayName: "generated")
        let startCapacity = reader.bufferCapacity
        var records = 0
        var largestRaw = 0
        while let batch = try reader.nextBatch(maxRecords: 2_000) {
            records += batch.records.count
            largestRaw = max(largestRaw, batch.raw.count)
            #expect(reader.bufferCapacity <= 2 * startCapacity)
        }
        #expect(records == 250_000)
        #expect(stream.bytesRead > 30_000_000)
        #expect(largestRaw < 2_000 * 260)
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
