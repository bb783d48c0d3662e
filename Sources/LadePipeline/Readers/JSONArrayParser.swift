/// Where a JSON array source stands between its elements.
enum JSONArrayState: UInt8 {
    /// Before the opening `[`.
    case beforeArray
    /// Just after `[`: an element or `]` comes next.
    case afterOpening
    /// Just after a `,`: an element comes next.
    case afterComma
    /// After the closing `]`: only whitespace may follow.
    case ended
}

/// Reads a top-level JSON array of objects incrementally, one element at a time, never the whole
/// document. An element that is well-formed JSON but not an object, or that has a bad escape,
/// number or encoding, is a record with a ``Record/problem``; damage to the structure is thrown,
/// because the next element can no longer be found.
final class JSONArrayParser: RecordParser {
    @exclusivity(unchecked) var scanner: JSONScanner

    var countsLoneCarriageReturn: Bool { false }

    init(file: String, tree: KeyTree) {
        scanner = JSONScanner(file: file, tree: tree, endName: "the end of the file")
    }

    func next(in window: Window, at cursor: inout Cursor, into values: inout [SourceValue],
              problem: inout RecordProblem?) throws(ParseStop) -> ParsedRecord? {
        scanner.start(window, at: cursor.index, end: window.count, isFinal: window.isFinal,
                      line: cursor.line, lineStart: cursor.lineStart)
        var state = cursor.arrayState
        if state == .beforeArray {
            let first = try scanner.peek(expecting: "'[' to open the array of records")
            guard first == ASCII.openBracket else {
                throw scanner.fatal(at: scanner.i, "\(NDJSONParser.kindOfValue(first)) where the source should open with '['",
                                    "a JSON array of objects; for one object per line use the ndjson format (.ndjson, .jsonl)")
            }
            scanner.i += 1
            state = .afterOpening
        }
        if state == .ended {
            scanner.skipWhitespace()
            if scanner.i < scanner.end {
                throw scanner.unexpected("nothing after the array's closing ']'")
            }
            if !window.isFinal { throw .needMore }
            update(&cursor, state)
            return nil
        }
        let first = try scanner.peek(expecting: state == .afterOpening ? "an object or ']'" : "an object")
        if first == ASCII.closeBracket {
            guard state == .afterOpening else {
                throw scanner.fatal(at: scanner.i, "a trailing comma before ']'", "another object; JSON does not allow a comma before ']'")
            }
            scanner.i += 1
            // An empty array: check what follows, as after the last element.
            update(&cursor, .ended)
            return try next(in: window, at: &cursor, into: &values, problem: &problem)
        }
        var record = ParsedRecord(start: scanner.i, end: scanner.i, line: scanner.line, lineStart: scanner.lineStart)
        if first == ASCII.openBrace {
            try scanner.readObject(node: 0, into: &values, depth: 1)
            problem = scanner.problem.map(RecordProblem.init)
        } else {
            let at = scanner.i
            try scanner.skipValue(depth: 1)
            problem = RecordProblem(scanner.error(.notAnObject, at: at, "\(NDJSONParser.kindOfValue(first)) where a record should be",
                                                         "every element of the array to be an object"))
        }
        record.end = scanner.i
        let separator = try scanner.peek(expecting: "',' or ']' after the element")
        if separator == ASCII.comma {
            state = .afterComma
        } else if separator == ASCII.closeBracket {
            state = .ended
        } else {
            throw scanner.unexpected("',' or ']' after an element of the array")
        }
        scanner.i += 1
        update(&cursor, state)
        return record
    }

    private func update(_ cursor: inout Cursor, _ state: JSONArrayState) {
        cursor.index = scanner.i
        cursor.line = scanner.line
        cursor.lineStart = scanner.lineStart
        cursor.arrayState = state
    }
}
