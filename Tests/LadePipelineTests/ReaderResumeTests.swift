import Foundation
@testable import LadePipeline
import Testing

@Suite("Resuming a source at a record boundary")
struct ReaderResumeTests {
    /// Small sources with the awkward parts: quoted line breaks, blank lines, CRLF, problems,
    /// pretty-printed JSON, no line ending at the end.
    static let sources: [(name: String, text: String)] = [
        ("r.csv", "\u{FEFF}id,text\r\n1,\"a\nb\"\r\n\r\n2,plain\n3,\"x \"\"q\"\"\"\n4,too,many\n\n5,last"),
        ("r.ndjson", "{\"id\": 1, \"text\": \"a\"}\n\n{\"id\": 2, \"text\": {\"k\": 1}}\r\nnot json\n{\"id\": 3, \"text\": [1]}\n{\"id\": 4}"),
        ("r.json", "[\n  {\"id\": 1, \"text\": \"a\"},\n  {\"id\": 2,\n   \"text\": null} ,\n  7,\n  {\"id\": 3, \"text\": \"\\u00e9\"}\n]\n"),
    ]

    func write(_ source: (name: String, text: String), gzipped: Bool, in folder: SourceFolder) throws -> String {
        gzipped ? try folder.writeGzip(source.name + ".gz", source.text) : try folder.write(source.name, source.text)
    }

    @Test("resuming after each record yields exactly the records after it, plain and gzipped",
          arguments: [0, 1, 2], [false, true])
    func everyBoundary(_ index: Int, _ gzipped: Bool) throws {
        let folder = try SourceFolder()
        let path = try write(Self.sources[index], gzipped: gzipped, in: folder)
        let all = try readAll(RecordReader(path: path, format: nil, fields: ["id", "text"]), batch: 1)
        #expect(all.count >= 4)
        let starts = [ResumePoint.start] + all.map { ResumePoint(byteOffset: $0.endOffset, line: $0.endLine, recordIndex: $0.recordIndex + 1) }
        for (k, point) in starts.enumerated() {
            let reader = try RecordReader(path: path, format: nil, fields: ["id", "text"], resumingAt: point)
            #expect(try readAll(reader, batch: 2) == Array(all[k...]), "resuming at \(point)")
        }
    }

    @Test("a stream that cannot seek resumes by reading forward", arguments: [0, 1, 2])
    func nonSeekable(_ index: Int) throws {
        let source = Self.sources[index]
        let format = SourceFormat.inferred(fromPath: source.name)!.format
        let all = try read(source.text, named: source.name, fields: ["id"], batch: 3)
        for record in all {
            let reader = try RecordReader(stream: TrickleStream(source.text, largestRead: 5), format: format, fields: ["id"],
                                          resumingAt: record.resumePoint, displayName: source.name)
            #expect(try readAll(reader) == Array(all.drop(while: { $0.recordIndex <= record.recordIndex })))
        }
    }

    @Test("an offset that is not at a record boundary is refused", arguments: [
        ("r.csv", "a\nxyz\nuvw\n", Int64(4)),
        ("r.ndjson", "{\"a\": 1}\n{\"a\": 2}\n", Int64(3)),
        ("r.json", "[{\"a\": 1}, {\"a\": 2}]", Int64(5)),
    ])
    func notABoundary(_ name: String, _ text: String, _ offset: Int64) throws {
        let folder = try SourceFolder()
        let path = try folder.write(name, text)
        let error = readerError {
            _ = try RecordReader(path: path, format: nil, fields: [], resumingAt: ResumePoint(byteOffset: offset, line: 2, recordIndex: 1),
                                 displayName: name)
        }
        #expect(error?.kind == .resume)
        #expect(error?.description.hasPrefix("\(name): cannot resume at byte \(offset): it ") == true, "\(String(describing: error))")
    }

    @Test("an offset past the end, or inside the header, is refused")
    func outOfRange() throws {
        let folder = try SourceFolder()
        let path = try folder.write("s.csv", "id\n1\n")
        let past = readerError { _ = try RecordReader(path: path, format: nil, fields: [], resumingAt: ResumePoint(byteOffset: 99, line: 9, recordIndex: 9)) }
        #expect(past?.description.contains("the source is shorter than that") == true)
        let header = readerError { _ = try RecordReader(path: path, format: nil, fields: [], resumingAt: ResumePoint(byteOffset: 1, line: 1, recordIndex: 0)) }
        #expect(header?.description.contains("the first record starts at byte 3") == true)
    }

    @Test("resuming at the end of a finished source reads nothing")
    func atTheEnd() throws {
        let folder = try SourceFolder()
        let path = try folder.write("s.csv", "id\n1\n2")
        let all = try readAll(RecordReader(path: path, format: nil, fields: ["id"]))
        let reader = try RecordReader(path: path, format: nil, fields: ["id"], resumingAt: all.last!.resumePoint)
        #expect(try reader.nextBatch(maxRecords: 5) == nil)
    }
}

extension ReadRecord {
    var resumePoint: ResumePoint { ResumePoint(byteOffset: endOffset, line: endLine, recordIndex: recordIndex + 1) }
}
