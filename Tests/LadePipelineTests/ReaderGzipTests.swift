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
