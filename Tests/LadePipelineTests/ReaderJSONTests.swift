import Foundation
@testable import LadePipeline
import Testing

/// JSON values as the NDJSON and JSON array readers see them (RFC 8259).
@Suite("Reading JSON values")
struct ReaderJSONTests {
    /// The values of one NDJSON line.
    func line(_ json: String, _ fields: [FieldPath]) throws -> ReadRecord {
        let records = try read(json + "\n", named: "v.ndjson", fields: fields)
        try #require(records.count == 1)
        return records[0]
    }

    @Test("string escapes decode: quote, backslash, slash, control letters and \\u, with surrogate pairs")
    func escapes() throws {
        let record = try line(#"{"s": "q\" b\\ s\/ \b\f\n\r\t \u00e9\u4E2D \ud83d\ude00 \u0000 end"}"#, ["s"])
        #expect(record.problem == nil)
        #expect(record.values == [.string("q\" b\\ s/ \u{8}\u{C}\n\r\t é中 😀 \u{0} end")])
    }

    @Test("keys with escapes match the key they spell")
    func escapedKey() throws {
        #expect(try line(#"{"n\u0061me": "Lamp"}"#, ["name"]).values == [.string("Lamp")])
    }

    @Test("a lone surrogate is a problem at its escape")
    func loneSurrogate() throws {
        let high = try line(#"{"s": "a\ud83d b"}"#, ["s"])
        #expect(high.problem?.kind == .malformedJSON)
        #expect(high.problem?.column == 9)
        #expect(high.values == [])
        let low = try line(#"{"s": "\udE00"}"#, ["s"])
        #expect(low.problem?.description.contains("unpaired UTF-16 surrogate \\uDE00") == true, "\(String(describing: low.problem))")
    }

    @Test("an unknown escape or a short \\u is a problem")
    func badEscapes() throws {
        #expect(try line(#"{"s": "a\qb"}"#, ["s"]).problem?.description
            == #"v.ndjson:1:9: an invalid escape \q (one of \" \\ \/ \b \f \n \r \t \uXXXX; write a backslash as \\)"#)
        #expect(try line(#"{"s": "\u12G4"}"#, ["s"]).problem?.column == 8)
    }

    @Test("a raw control character inside a string is a problem, even in a key nobody asked for")
    func controlCharacter() throws {
        let record = try line("{\"a\": 1, \"b\": \"x\ty\"}", ["a"])
        #expect(record.problem?.description
            == #"v.ndjson:1:17: a raw control character byte 0x09 inside a string (control characters in strings must be escaped, as \n, \t or \u00XX)"#)
    }

    @Test("numbers keep their exact literal text")
    func numbers() throws {
        let fields: [FieldPath] = ["a", "b", "c", "d", "e", "f", "g"]
        let record = try line(#"{"a": 19.90, "b": -0, "c": 1e-7, "d": 2E+10, "e": 123456789012345678901234567890, "f": 0.1, "g": -12.5e3}"#, fields)
        #expect(record.values == ["19.90", "-0", "1e-7", "2E+10", "123456789012345678901234567890", "0.1", "-12.5e3"].map(SourceValue.number))
    }

    @Test("malformed numbers are problems with their position",
          arguments: [("01", 7), ("1.", 7), (".5", 7), ("-", 7), ("+1", 7), ("1e", 7), ("1.2.3", 7), ("-.5", 7), ("1e+", 7), ("0x10", 8)])
    func malformedNumbers(_ literal: String, _ column: Int) throws {
        let record = try line(#"{"n": \#(literal)}"#, ["n"])
        let problem = try #require(record.problem, "\(literal) was accepted")
        #expect(problem.line == 1)
        #expect(problem.column == column)
    }

    @Test("true, false and null; arrays of scalars; an object where a value is asked for")
    func literals() throws {
        let record = try line(#"{"t": true, "f": false, "n": null, "a": [1, "x", [true], {"k": 1}, null], "o": {"k": [1]}, "e": []}"#,
                              ["t", "f", "n", "a", "o", "e"])
        #expect(record.values == [
            .bool(true), .bool(false), .null,
            .array([.number("1"), .string("x"), .array([.bool(true)]), .object, .null]),
            .object, .array([]),
        ])
    }

    @Test("misspelt literals are errors", arguments: ["tru", "nul", "True", "falsey", "NaN"])
    func badLiterals(_ literal: String) throws {
        #expect(try line(#"{"x": \#(literal)}"#, ["x"]).problem?.kind == .malformedJSON)
    }

    @Test("key paths reach into nested objects; absent keys and paths through non-objects are missing")
    func keyPaths() throws {
        let json = #"{"sku": "A", "dimensions": {"width": 12.5, "depth": {"cm": 3}}, "tags": "x"}"#
        let record = try line(json, ["dimensions.width", "dimensions.depth.cm", "dimensions.height", "sku", "tags.name", "dimensions"])
        #expect(record.values == [.number("12.5"), .number("3"), .missing, .string("A"), .missing, .object])
    }

    @Test("a key path through an array of objects gives one value per element")
    func keyPathsThroughArrays() throws {
        let json = #"{"lines": [{"sku": "A", "qty": 1}, {"sku": "B"}, 7], "none": []}"#
        let record = try line(json, ["lines.sku", "lines.qty", "none.sku"])
        #expect(record.values == [
            .array([.string("A"), .string("B"), .missing]),
            .array([.number("1"), .missing, .missing]),
            .array([]),
        ])
    }

    @Test("a repeated key: the last one wins, also for the keys below it")
    func duplicateKeys() throws {
        let json = #"{"a": 1, "d": {"w": 1, "h": 2}, "a": 2, "d": {"w": 3}}"#
        #expect(try line(json, ["a", "d.w", "d.h"]).values == [.number("2"), .number("3"), .missing])
    }

    @Test("values nobody asked for are skipped but still checked")
    func skippedValuesAreChecked() throws {
        #expect(try line(#"{"a": 1, "b": {"c": [1, 2, {"d": "e"}], "f": "g"}}"#, ["a"]).values == [.number("1")])
        let broken = try line(#"{"a": 1, "b": [1 2]}"#, ["a"])
        #expect(broken.problem?.description == "v.ndjson:1:18: unexpected '2' (expected ',' or ']' after a value in an array)")
    }

    @Test("whitespace of every kind may surround tokens")
    func whitespace() throws {
        #expect(try line("\t{ \"a\"\t:\r [ 1 ,2 ] ,\"b\" : \"x\" }  \r", ["a", "b"]).values
            == [.array([.number("1"), .number("2")]), .string("x")])
    }

    @Test("structural damage is described with what was expected", arguments: [
        (#"{"a" 1}"#, "v.ndjson:1:6: unexpected '1' (expected ':' after the key)"),
        (#"{"a": 1,}"#, "v.ndjson:1:9: a trailing comma before '}' (another key; JSON does not allow a comma before '}')"),
        (#"{a: 1}"#, "v.ndjson:1:2: unexpected 'a' (expected a key in double quotes)"),
        (#"{"a": 1"#, "v.ndjson:1:8: the end of the line inside a JSON value (expected ',' or '}'; the value is incomplete)"),
        (#"{"a": "x}"#, "v.ndjson:1:7: a string that does not end (a closing '\"' before the end of the line)"),
        (#"{"a": 1} x"#, "v.ndjson:1:10: unexpected 'x' after the object (one JSON object per line, nothing after it)"),
    ])
    func structuralErrors(_ json: String, _ expected: String) throws {
        #expect(try line(json, ["a"]).problem?.description == expected)
    }

    @Test("nesting deeper than 512 levels is an error, not a crash")
    func deepNesting() throws {
        let deep = "{\"a\": " + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}"
        #expect(try line(deep, ["a"]).problem?.description.contains("nested more than 512 levels deep") == true)
        let fine = "{\"a\": " + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}"
        #expect(try line(fine, ["b"]).problem == nil)
    }

    @Test("the JSON formats report the keys of the first object as columns")
    func columns() throws {
        let folder = try SourceFolder()
        let ndjson = try RecordReader(path: try folder.write("c.ndjson", "\n{\"sku\": 1, \"name\": {\"x\": 1}, \"sku\": 2}\n{\"other\": 1}\n"),
                                      format: nil, fields: ["sku"])
        #expect(ndjson.columns == ["sku", "name"])
        #expect(try readAll(ndjson).map(\.values) == [[.number("2")], [.missing]], "reading ahead for the columns consumes nothing")
        let array = try RecordReader(path: try folder.write("c.json", "[{\"a\": 1, \"b\": 2}]"), format: nil, fields: [])
        #expect(array.columns == ["a", "b"])
        let broken = try RecordReader(path: try folder.write("b.ndjson", "[1]\n"), format: nil, fields: [])
        #expect(broken.columns == nil)
    }
}

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
