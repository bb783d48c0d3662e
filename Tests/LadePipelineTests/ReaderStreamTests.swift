import Foundation
@testable import LadePipeline
import Testing

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
