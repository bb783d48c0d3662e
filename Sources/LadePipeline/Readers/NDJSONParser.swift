/// Reads newline-delimited JSON (<https://github.com/ndjson/ndjson-spec>): one object per line,
/// blank lines skipped. A line that is not one well-formed JSON object is a record with a
/// ``Record/problem``, and reading goes on with the next line.
final class NDJSONParser: RecordParser {
    @exclusivity(unchecked) var scanner: JSONScanner

    var countsLoneCarriageReturn: Bool { false }

    init(file: String, tree: KeyTree) {
        scanner = JSONScanner(file: file, tree: tree, endName: "the end of the line")
    }

    func next(in window: Window, at cursor: inout Cursor, into values: inout [SourceValue],
              problem: inout RecordProblem?) throws(ParseStop) -> ParsedRecord? {
        let bytes = window.bytes
        var i = cursor.index
        while true {
            guard i < window.count else {
                if window.isFinal { cursor.index = i; return nil }
                throw .needMore
            }
            let newline = ByteScanning.first(ASCII.lineFeed, in: bytes, from: i, to: window.count)
            if newline == window.count && !window.isFinal { throw .needMore }
            let next = min(newline + 1, window.count)
            scanner.start(window, at: i, end: newline, isFinal: true, line: cursor.line, lineStart: window.offset + Int64(i))
            scanner.skipWhitespace()
            if scanner.i == newline {
                // A blank line.
                i = next
                cursor.line += 1
                cursor.lineStart = window.offset + Int64(i)
                continue
            }
            var end = newline
            if end > i && bytes[end - 1] == ASCII.carriageReturn { end -= 1 }
            let record = ParsedRecord(start: i, end: end, line: cursor.line, lineStart: window.offset + Int64(i))
            problem = readLine(into: &values).map(RecordProblem.init)
            cursor.index = next
            cursor.line += 1
            cursor.lineStart = window.offset + Int64(next)
            return record
        }
    }

    /// Reads the object on the line the scanner is at; returns what is wrong with it, if anything.
    private func readLine(into values: inout [SourceValue]) -> ReaderError? {
        do {
            let first = scanner.bytes[scanner.i]
            guard first == ASCII.openBrace else {
                // Name the value only when it is one: `not json` is malformed, not JSON null.
                let at = scanner.i
                try scanner.skipValue(depth: 1)
                return scanner.error(.notAnObject, at: at, "\(Self.kindOfValue(first)) where a record should be",
                                     "one JSON object per line")
            }
            try scanner.readObject(node: 0, into: &values, depth: 1)
            scanner.skipWhitespace()
            if scanner.i < scanner.end {
                return scanner.error(at: scanner.i, "unexpected \(JSONScanner.describe(scanner.bytes[scanner.i])) after the object",
                                     "one JSON object per line, nothing after it")
            }
            return scanner.problem
        } catch {
            if case .fatal(let error) = error { return error }
            preconditionFailure("a whole line never needs more input")
        }
    }

    /// How a JSON value starting with `byte` is called in messages.
    static func kindOfValue(_ byte: UInt8) -> String {
        switch byte {
        case ASCII.openBracket: return "a JSON array"
        case ASCII.quote: return "a JSON string"
        case ASCII.minus, ASCII.zero...ASCII.nine: return "a JSON number"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return "a JSON boolean"
        case UInt8(ascii: "n"): return "JSON null"
        default: return "unexpected \(JSONScanner.describe(byte))"
        }
    }
}
