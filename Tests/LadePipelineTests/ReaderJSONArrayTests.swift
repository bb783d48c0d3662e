import Foundation
@testable import LadePipeline
import Testing

@Suite("Reading a JSON array")
struct ReaderJSONArrayTests {
    @Test("elements are records, with their lines, whatever the whitespace")
    func elements() throws {
        let text = "\n  [\n  {\"a\": 1},\n\n  {\n    \"a\": 2\n  }\t,{\"a\":3}\n]\n"
        let records = try read(text, named: "a.json", fields: ["a"])
        #expect(records.map(\.values) == [[.number("1")], [.number("2")], [.number("3")]])
        #expect(records.map(\.line) == [3, 5, 7])
        #expect(records.map(\.raw) == ["{\"a\": 1}", "{\n    \"a\": 2\n  }", "{\"a\":3}"])
    }

    @Test("a whole array on one line")
    func oneLine() throws {
        #expect(try values("[{\"a\":1},{\"a\":2}]", named: "a.json", fields: ["a"]) == [[.number("1")], [.number("2")]])
    }

    @Test("an empty array has no records")
    func empty() throws {
        #expect(try read("[ ]\n", named: "e.json", fields: ["a"]).isEmpty)
    }

    @Test("an element that is not an object is a problem; the next element is read")
    func notAnObject() throws {
        let records = try read("[{\"a\": 1}, [2], {\"a\": 3}]", named: "n.json", fields: ["a"])
        #expect(records.count == 3)
        #expect(records[1].problem?.description
            == "n.json:1:12: a JSON array where a record should be (every element of the array to be an object)")
        #expect(records[2].values == [.number("3")])
    }

    @Test("a bad escape inside an element is a problem; the array goes on")
    func recoverableDamage() throws {
        let records = try read("[{\"a\": \"\\x\"},\n{\"a\": 01},\n{\"a\": 2}]", named: "r.json", fields: ["a"])
        #expect(records.map { $0.problem?.line } == [1, 2, nil])
        #expect(records[2].values == [.number("2")])
    }

    @Test("damage to the structure is thrown with its line and column, after the records before it")
    func structureError() throws {
        let folder = try SourceFolder()
        let path = try folder.write("products.json", "[\n  {\"a\": 1},\n  {\"a\": 2} x\n]")
        let reader = try RecordReader(path: path, format: nil, fields: ["a"])
        let batch = try #require(try reader.nextBatch(maxRecords: 10))
        #expect(batch.records.count == 1)
        let error = readerError { _ = try reader.nextBatch(maxRecords: 10) }
        #expect(error?.kind == .malformedJSON)
        #expect(error?.description == "\(path):3:12: unexpected 'x' (expected ',' or ']' after an element of the array)")
    }

    @Test("structural mistakes are thrown with what was expected", arguments: [
        ("[{\"a\": 1},]", "t.json:1:11: a trailing comma before ']' (another object; JSON does not allow a comma before ']')"),
        ("[{\"a\": 1}] [", "t.json:1:12: unexpected '[' (expected nothing after the array's closing ']')"),
        ("{\"a\": 1}", "t.json:1:1: unexpected '{' where the source should open with '[' (a JSON array of objects; for one object per line use the ndjson format (.ndjson, .jsonl))"),
        ("[{\"a\": 1}", "t.json:1:10: the end of the file inside a JSON value (expected ',' or ']' after the element; the value is incomplete)"),
        ("", "t.json:1:1: the end of the file inside a JSON value (expected '[' to open the array of records; the value is incomplete)"),
        ("[{\"a\" 1}]", "t.json:1:7: unexpected '1' (expected ':' after the key)"),
    ])
    func structuralMistakes(_ text: String, _ expected: String) throws {
        let folder = try SourceFolder()
        let path = try folder.write("t.json", text)
        let error = readerError {
            let reader = try RecordReader(path: path, format: nil, fields: ["a"], displayName: "t.json")
            _ = try readAll(reader)
        }
        #expect(error?.description == expected)
    }
}
