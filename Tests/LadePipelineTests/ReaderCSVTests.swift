import Foundation
@testable import LadePipeline
import Testing

@Suite("Reading CSV (RFC 4180)")
struct ReaderCSVTests {
    @Test("the header names the columns; values come in the order the fields ask, a column not in the header is missing")
    func header() throws {
        let records = try read("sku,name,price\nA-1,Lamp,19.90\nB-2,Chair,5\n", named: "p.csv", fields: ["price", "sku", "colour"])
        #expect(records.map(\.values) == [
            [.string("19.90"), .string("A-1"), .missing],
            [.string("5"), .string("B-2"), .missing],
        ])
        #expect(records.map(\.line) == [2, 3])
        #expect(records.map(\.recordIndex) == [0, 1])
    }

    @Test("the reader reports the header as its columns")
    func columns() throws {
        let folder = try SourceFolder()
        let reader = try RecordReader(path: try folder.write("p.csv", "sku,name\n"), format: nil, fields: [])
        #expect(reader.columns == ["sku", "name"])
        #expect(try reader.nextBatch(maxRecords: 10) == nil)
    }

    @Test("quoted fields hold delimiters, doubled quotes and line breaks; lines still count physical lines")
    func quoting() throws {
        let text = "id,text\n1,\"a, b\"\n2,\"say \"\"hi\"\"\"\n3,\"two\nlines\"\n4,\"\"\n5,after\n"
        let records = try read(text, named: "q.csv", fields: ["id", "text"])
        #expect(records.map(\.values) == [
            [.string("1"), .string("a, b")],
            [.string("2"), .string("say \"hi\"")],
            [.string("3"), .string("two\nlines")],
            [.string("4"), .string("")],
            [.string("5"), .string("after")],
        ])
        #expect(records.map(\.line) == [2, 3, 4, 6, 7])
        #expect(records[2].raw == "3,\"two\nlines\"")
    }

    @Test("CRLF, LF and a lone CR all end a record, and a CRLF inside quotes is kept")
    func lineEndings() throws {
        let records = try read("a,b\r\n1,2\r\n3,\"x\r\ny\"\r\n5,6\r7,8\n", named: "e.csv", fields: ["a", "b"])
        #expect(records.map(\.values) == [
            [.string("1"), .string("2")],
            [.string("3"), .string("x\r\ny")],
            [.string("5"), .string("6")],
            [.string("7"), .string("8")],
        ])
        #expect(records.map(\.line) == [2, 3, 5, 6])
        #expect(records.map(\.raw) == ["1,2", "3,\"x\r\ny\"", "5,6", "7,8"])
    }

    @Test("a UTF-8 byte order mark before the header is ignored")
    func byteOrderMark() throws {
        let records = try read("\u{FEFF}sku,name\nA,Lamp\n", named: "bom.csv", fields: ["sku"])
        #expect(records.map(\.values) == [[.string("A")]])
    }

    @Test("a tab or semicolon delimiter separates fields; commas are then plain text")
    func delimiters() throws {
        let tab = try values("sku\tname\nA\tLamp, red\n", named: "p.tsv", fields: ["sku", "name"])
        #expect(tab == [[.string("A"), .string("Lamp, red")]])
        let semicolon = try values("sku;price\nA;\"1;5\"\nB;2,50\n", named: "p.csv",
                                   format: .csv(CSVDialect(delimiter: UInt8(ascii: ";"))), fields: ["sku", "price"])
        #expect(semicolon == [[.string("A"), .string("1;5")], [.string("B"), .string("2,50")]])
    }

    @Test("a source without a header row takes its names from columns:, and its first line is a record")
    func explicitColumns() throws {
        let dialect = CSVDialect(hasHeader: false, columns: ["sku", "name"])
        let records = try read("A,Lamp\nB,Chair\n", named: "n.csv", format: .csv(dialect), fields: ["name"])
        #expect(records.map(\.values) == [[.string("Lamp")], [.string("Chair")]])
        #expect(records.map(\.line) == [1, 2])
    }

    @Test("a source without a header row and without columns: is refused with what to do")
    func headerlessWithoutColumns() throws {
        let folder = try SourceFolder()
        let path = try folder.write("n.csv", "A,Lamp\n")
        let error = readerError { _ = try RecordReader(path: path, format: .csv(CSVDialect(hasHeader: false)), fields: ["sku"], displayName: "n.csv") }
        #expect(error?.kind == .configuration)
        #expect(error?.description == "n.csv: a CSV source without a header row has no column names (list them with columns: in the source, or set header: true)")
    }

    @Test("columns: renames the header's columns, and must name each of them")
    func renamedColumns() throws {
        let dialect = CSVDialect(columns: ["code", "title"])
        #expect(try values("SKU,Name\nA,Lamp\n", named: "r.csv", format: .csv(dialect), fields: ["title", "Name"])
            == [[.string("Lamp"), .missing]])
        let folder = try SourceFolder()
        let path = try folder.write("r.csv", "SKU,Name,Price\nA,Lamp,1\n")
        let error = readerError { _ = try RecordReader(path: path, format: .csv(dialect), fields: [], displayName: "r.csv") }
        #expect(error?.description == "r.csv:1:1: columns: lists 2 names but the header has 3 columns (one name per header column to rename them, or no columns:)")
    }

    @Test("the last record may end without a line ending, even inside quotes")
    func noTrailingNewline() throws {
        #expect(try values("a,b\n1,2", named: "t.csv", fields: ["b"]) == [[.string("2")]])
        #expect(try values("a,b\n1,\"2\"", named: "t.csv", fields: ["b"]) == [[.string("2")]])
        #expect(try values("a,b\n1,", named: "t.csv", fields: ["b"]) == [[.string("")]])
    }

    @Test("blank lines are skipped but still counted")
    func blankLines() throws {
        let records = try read("a\n\n1\n\r\n\n2\n\n", named: "b.csv", fields: ["a"])
        #expect(records.map(\.values) == [[.string("1")], [.string("2")]])
        #expect(records.map(\.line) == [3, 6])
        #expect(records.map(\.recordIndex) == [0, 1])
    }

    @Test("empty fields are empty strings, never null: the job's nulls list decides")
    func emptyFields() throws {
        #expect(try values("a,b,c\n,,\n\"\",NA,\n", named: "e.csv", fields: ["a", "b", "c"])
            == [[.string(""), .string(""), .string("")], [.string(""), .string("NA"), .string("")]])
    }

    @Test("a quote inside an unquoted field is taken literally")
    func quoteInsideUnquotedField() throws {
        #expect(try values("a,b\n5\" pipe,x\n", named: "u.csv", fields: ["a"]) == [[.string("5\" pipe")]])
    }

    @Test("a record with too many fields is a problem pointing at the first extra field, and reading goes on")
    func tooManyFields() throws {
        let records = try read("a,b\n1,2\n3,4,5\n6,7\n", named: "f.csv", fields: ["a"])
        #expect(records.count == 3)
        #expect(records[1].values == [])
        #expect(records[1].problem?.kind == .wrongFieldCount)
        #expect(records[1].problem?.description
            == "f.csv:3:5: a record with 3 fields where the header has 2 (quote fields that contain the delimiter, or check the delimiter)")
        #expect(records[1].raw == "3,4,5")
        #expect(records[2].values == [.string("6")])
        #expect(records[2].recordIndex == 2)
    }

    @Test("a record with too few fields is a problem pointing at its end")
    func tooFewFields() throws {
        let records = try read("a,b,c\n1,2\n", named: "f.csv", fields: ["a"])
        #expect(records[0].problem?.description
            == "f.csv:2:4: a record with 2 fields where the header has 3 (every record needs all 3 fields; an unquoted line break splits a record in two)")
    }

    @Test("an unterminated quoted field is thrown with where it opened, after the records before it")
    func unterminatedQuote() throws {
        let folder = try SourceFolder()
        let path = try folder.write("products.csv", "sku,name\nA,Lamp\nB,\"Chair\nC,Desk\n")
        let reader = try RecordReader(path: path, format: nil, fields: ["sku"], displayName: "products.csv")
        let first = try #require(try reader.nextBatch(maxRecords: 10))
        #expect(first.records.map(\.values) == [[.string("A")]])
        let error = readerError { _ = try reader.nextBatch(maxRecords: 10) }
        #expect(error?.kind == .malformedCSV)
        #expect(error?.description
            == "products.csv:3:3: unterminated quoted field (a field that opens with \" must close with \"; write a quote inside it as \"\")")
        #expect(readerError { _ = try reader.nextBatch(maxRecords: 10) } == error, "a failed reader keeps failing the same way")
    }

    @Test("text after a closing quote is a problem, and the record ends at the end of its line")
    func textAfterClosingQuote() throws {
        let records = try read("a,b\n\"x\"y,1\n2,3\n", named: "c.csv", fields: ["a", "b"])
        #expect(records.count == 2)
        #expect(records[0].problem?.description
            == "c.csv:2:4: unexpected text after the closing quote of a field (a delimiter or the end of the line; write a quote inside a quoted field as \"\")")
        #expect(records[1].values == [.string("2"), .string("3")])
    }

    @Test("invalid UTF-8 makes a problem with its line and byte column, naming the byte")
    func invalidUTF8() throws {
        let folder = try SourceFolder()
        let bytes = Array("sku,name\nA,Caf".utf8) + [0xE9] + Array(" noir\nB,ok\n".utf8)
        let path = try folder.write("latin1.csv", bytes: bytes)
        let records = try readAll(RecordReader(path: path, format: nil, fields: ["name"], displayName: "latin1.csv"))
        #expect(records.count == 2)
        #expect(records[0].values == [])
        #expect(records[0].problem?.kind == .invalidUTF8)
        #expect(records[0].problem?.description
            == "latin1.csv:2:6: invalid UTF-8: byte 0xE9 does not begin or continue a character (text in UTF-8; convert a Latin-1 or Windows-1252 file with `iconv -f WINDOWS-1252 -t UTF-8`)")
        #expect(records[1].values == [.string("ok")])
    }

    @Test("an invalid byte in the header is thrown: without names nothing can be read")
    func invalidHeader() throws {
        let folder = try SourceFolder()
        let path = try folder.write("h.csv", bytes: Array("sku,n".utf8) + [0xFF] + Array("\nA,b\n".utf8))
        let error = readerError { _ = try RecordReader(path: path, format: nil, fields: [], displayName: "h.csv") }
        #expect(error?.kind == .invalidUTF8)
        #expect(error?.line == 1 && error?.column == 6)
    }

    @Test("a column named twice gives the last one, as a repeated JSON key does")
    func repeatedColumn() throws {
        #expect(try values("a,b,a\n1,2,3\n", named: "d.csv", fields: ["a", "b"]) == [[.string("3"), .string("2")]])
    }

    @Test("a dotted field path names a CSV column with dots in its name")
    func dottedColumn() throws {
        #expect(try values("dimensions.width,x\n12,y\n", named: "d.csv", fields: ["dimensions.width"]) == [[.string("12")]])
    }

    @Test("the same field asked twice gets the value twice")
    func repeatedField() throws {
        #expect(try values("a,b\n1,2\n", named: "r.csv", fields: ["b", "a", "b"]) == [[.string("2"), .string("1"), .string("2")]])
    }

    @Test("an empty file has no records and no columns; a header alone has no records")
    func emptySources() throws {
        #expect(try read("", named: "e.csv", fields: ["a"]).isEmpty)
        #expect(try read("a,b\n", named: "e.csv", fields: ["a"]).isEmpty)
        let folder = try SourceFolder()
        let reader = try RecordReader(path: try folder.write("e.csv", ""), format: nil, fields: [])
        #expect(reader.columns == nil)
    }

    @Test("non-ASCII text comes through whole")
    func unicode() throws {
        #expect(try values("name\n\"Große Tasse, naïve 😀\"\n", named: "u.csv", fields: ["name"]) == [[.string("Große Tasse, naïve 😀")]])
    }

    @Test("a quote, CR or LF cannot be the delimiter")
    func badDelimiter() throws {
        let folder = try SourceFolder()
        let path = try folder.write("x.csv", "a\n")
        let error = readerError { _ = try RecordReader(path: path, format: .csv(CSVDialect(delimiter: ASCII.quote)), fields: []) }
        #expect(error?.kind == .configuration)
    }
}
