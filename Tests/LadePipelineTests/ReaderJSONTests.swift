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
