import Foundation
@testable import LadePipeline
import Testing

@Suite("Reading NDJSON")
struct ReaderNDJSONTests {
    @Test("one object per line; blank and whitespace-only lines are skipped but counted; CRLF works")
    func lines() throws {
        let records = try read("{\"a\": 1}\r\n\n   \n{\"a\": 2}\n\t\n{\"a\": 3}", named: "l.ndjson", fields: ["a"])
        #expect(records.map(\.values) == [[.number("1")], [.number("2")], [.number("3")]])
        #expect(records.map(\.line) == [1, 4, 6])
        #expect(records.map(\.raw) == ["{\"a\": 1}", "{\"a\": 2}", "{\"a\": 3}"])
        #expect(records.map(\.recordIndex) == [0, 1, 2])
    }

    @Test(".jsonl is NDJSON too")
    func jsonl() throws {
        #expect(try values("{\"a\": true}\n", named: "x.jsonl", fields: ["a"]) == [[.bool(true)]])
    }

    @Test("a bad line is a record with a problem at its line and column, and reading goes on")
    func badLine() throws {
        let records = try read("{\"a\": 1}\n{\"a\": 2,, }\n{\"a\": 3}\n", named: "feed.ndjson", fields: ["a"])
        #expect(records.count == 3)
        #expect(records[1].values == [])
        #expect(records[1].raw == "{\"a\": 2,, }")
        #expect(records[1].problem?.description == "feed.ndjson:2:9: unexpected ',' (expected a key in double quotes)")
        #expect(records[2].values == [.number("3")])
    }

    @Test("a line holding something other than an object is a problem")
    func notAnObject() throws {
        let records = try read("[1, 2]\n\"x\"\n{\"a\": 1}\n", named: "n.ndjson", fields: ["a"])
        #expect(records.map { $0.problem?.kind } == [.notAnObject, .notAnObject, nil])
        #expect(records[0].problem?.description == "n.ndjson:1:1: a JSON array where a record should be (one JSON object per line)")
    }

    @Test("invalid UTF-8 on a line is a problem with its byte column")
    func invalidUTF8() throws {
        let folder = try SourceFolder()
        let path = try folder.write("u.ndjson", bytes: Array("{\"a\": 1}\n{\"a\": \"x".utf8) + [0xC3, 0x28] + Array("\"}\n".utf8))
        let records = try readAll(RecordReader(path: path, format: nil, fields: ["a"], displayName: "u.ndjson"))
        #expect(records[1].problem?.kind == .invalidUTF8)
        #expect(records[1].problem?.line == 2)
        #expect(records[1].problem?.column == 9)
    }
}
