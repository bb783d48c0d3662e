/// Reads RFC 4180 records (<https://www.rfc-editor.org/rfc/rfc4180>) in place: fields end at the
/// delimiter or a line break; a field that opens with `"` runs to the matching `"`, with `""`
/// standing for a quote and delimiters and line breaks taken as data. LF, CRLF and a lone CR
/// end lines; empty lines are skipped; a `"` inside an unquoted field is taken literally.
final class CSVParser: RecordParser {
    let delimiter: UInt8
    let file: String
    /// The number of fields every record must have (the header's); 0 while reading the header.
    var columnCount = 0
    /// For each column, the value slot it fills, or -1 when nobody asked for it.
    var columnSlots: [Int] = [] {
        didSet {
            slots.deallocate()
            slots = .allocate(capacity: columnSlots.count)
            _ = slots.initialize(from: columnSlots)
        }
    }
    /// `columnSlots`, where the inner loop reads it without retaining anything.
    private var slots = UnsafeMutableBufferPointer<Int>.allocate(capacity: 0)
    @exclusivity(unchecked) private var scratch: [UInt8] = []

    var countsLoneCarriageReturn: Bool { true }

    init(delimiter: UInt8, file: String) {
        self.delimiter = delimiter
        self.file = file
    }

    deinit { slots.deallocate() }

    /// The header's fields, or nil when the source is empty.
    func readHeader(in window: Window, at cursor: inout Cursor) throws(ParseStop) -> (names: [String], record: ParsedRecord)? {
        var sink = HeaderSink()
        var problem: RecordProblem?
        guard let record = try parse(window, &cursor, &sink, &problem) else { return nil }
        if let problem { throw .fatal(problem.error) }
        return (sink.names, record)
    }

    func next(in window: Window, at cursor: inout Cursor, into values: inout [SourceValue],
              problem: inout RecordProblem?) throws(ParseStop) -> ParsedRecord? {
        // The sink takes the array for the parse (a swap, so it stays uniquely referenced and is never copied).
        var sink = ValueSink(slots: UnsafeBufferPointer(slots), values: [])
        swap(&sink.values, &values)
        defer { swap(&sink.values, &values) }
        guard let record = try parse(window, &cursor, &sink, &problem) else { return nil }
        if problem == nil && sink.fieldCount != columnCount {
            problem = RecordProblem(wrongFieldCount(sink, record, window))
        }
        return record
    }

    private func wrongFieldCount(_ sink: ValueSink, _ record: ParsedRecord, _ window: Window) -> ReaderError {
        let many = sink.fieldCount > columnCount
        // Point at the first field too many, or at the end of a record that is short.
        let at = many ? sink.firstExtraField : record.end
        let (line, column) = TextPosition.locate(at, in: window, from: record.start, line: record.line,
                                                 lineStart: record.lineStart, countingLoneCarriageReturn: true)
        let plural = sink.fieldCount == 1 ? "field" : "fields"
        return ReaderError(
            .wrongFieldCount, file: file, line: line, column: column,
            found: "a record with \(sink.fieldCount) \(plural) where the header has \(columnCount)",
            expected: many
                ? "quote fields that contain the delimiter, or check the delimiter"
                : "every record needs all \(columnCount) fields; an unquoted line break splits a record in two")
    }

    /// Parses one record, giving each field to `sink`; leaves the cursor after its line ending.
    private func parse<Sink: CSVFieldSink>(_ window: Window, _ cursor: inout Cursor, _ sink: inout Sink,
                                           _ problem: inout RecordProblem?) throws(ParseStop) -> ParsedRecord? {
        let bytes = window.bytes
        let end = window.count
        let final = window.isFinal
        let delimiter = self.delimiter
        var i = cursor.index
        var line = cursor.line
        var lineStart = cursor.lineStart

        // Skip empty lines.
        while true {
            guard i < end else {
                if final { cursor.index = i; cursor.line = line; cursor.lineStart = lineStart; return nil }
                throw .needMore
            }
            let byte = bytes[i]
            if byte == ASCII.lineFeed {
                i += 1
            } else if byte == ASCII.carriageReturn {
                if i + 1 < end { i += bytes[i + 1] == ASCII.lineFeed ? 2 : 1 } else if final { i += 1 } else { throw .needMore }
            } else {
                break
            }
            line += 1
            lineStart = window.offset + Int64(i)
        }

        var record = ParsedRecord(start: i, end: i, line: line, lineStart: lineStart)
        var field = 0
        while true {
            if i < end && bytes[i] == ASCII.quote {
                let open = i
                i += 1
                let contentStart = i
                var doubled = false
                while true {
                    i = ByteScanning.firstOf(ASCII.quote, ASCII.lineFeed, ASCII.carriageReturn, in: bytes, from: i, to: end)
                    guard i < end else {
                        if !final { throw .needMore }
                        let (openLine, openColumn) = TextPosition.locate(open, in: window, from: record.start, line: record.line,
                                                                         lineStart: record.lineStart, countingLoneCarriageReturn: true)
                        throw .fatal(ReaderError(.malformedCSV, file: file, line: openLine, column: openColumn,
                                                 found: "unterminated quoted field",
                                                 expected: "a field that opens with \" must close with \"; write a quote inside it as \"\""))
                    }
                    let byte = bytes[i]
                    if byte == ASCII.quote {
                        if i + 1 < end && bytes[i + 1] == ASCII.quote { doubled = true; i += 2; continue }
                        if i + 1 == end && !final { throw .needMore }
                        break
                    }
                    // A line break inside quotes is data, but still a new line for positions.
                    if byte == ASCII.carriageReturn {
                        if i + 1 == end && !final { throw .needMore }
                        if i + 1 < end && bytes[i + 1] == ASCII.lineFeed { i += 1 }
                    }
                    i += 1
                    line += 1
                    lineStart = window.offset + Int64(i)
                }
                let contentEnd = i
                i += 1   // the closing quote
                if sink.wants(field) {
                    if doubled {
                        unescape(bytes, contentStart, contentEnd)
                        scratch.withUnsafeBufferPointer { sink.take(field, $0) }
                    } else {
                        sink.take(field, UnsafeBufferPointer(start: bytes + contentStart, count: contentEnd - contentStart))
                    }
                }
                sink.counted(field, start: open)
                field += 1
                if i < end {
                    let byte = bytes[i]
                    if byte == delimiter { i += 1; continue }
                    if byte != ASCII.lineFeed && byte != ASCII.carriageReturn {
                        let (badLine, badColumn) = TextPosition.locate(i, in: window, from: record.start, line: record.line,
                                                                       lineStart: record.lineStart, countingLoneCarriageReturn: true)
                        problem = RecordProblem(ReaderError(
                            .malformedCSV, file: file, line: badLine, column: badColumn,
                            found: "unexpected text after the closing quote of a field",
                            expected: "a delimiter or the end of the line; write a quote inside a quoted field as \"\""))
                        // Take the rest of the physical line as part of this broken record.
                        i = ByteScanning.firstOf(ASCII.lineFeed, ASCII.carriageReturn, ASCII.lineFeed, in: bytes, from: i, to: end)
                        if i == end && !final { throw .needMore }
                    }
                } else if !final {
                    throw .needMore
                }
            } else {
                let start = i
                i = ByteScanning.firstOf(delimiter, ASCII.lineFeed, ASCII.carriageReturn, in: bytes, from: i, to: end)
                if i == end && !final { throw .needMore }
                if sink.wants(field) {
                    sink.take(field, UnsafeBufferPointer(start: bytes + start, count: i - start))
                }
                sink.counted(field, start: start)
                field += 1
                if i < end && bytes[i] == delimiter { i += 1; continue }
            }
            break
        }

        // The line ending (none at the end of the source).
        record.end = i
        if i < end {
            if bytes[i] == ASCII.carriageReturn {
                if i + 1 < end { i += bytes[i + 1] == ASCII.lineFeed ? 2 : 1 } else if final { i += 1 } else { throw .needMore }
            } else {
                i += 1
            }
            line += 1
            lineStart = window.offset + Int64(i)
        }
        cursor.index = i
        cursor.line = line
        cursor.lineStart = lineStart
        return record
    }

    /// Puts the content of a quoted field into `scratch`, each `""` made one `"`.
    private func unescape(_ bytes: UnsafePointer<UInt8>, _ start: Int, _ end: Int) {
        scratch.removeAll(keepingCapacity: true)
        var i = start
        while i < end {
            let byte = bytes[i]
            scratch.append(byte)
            i += byte == ASCII.quote ? 2 : 1
        }
    }
}

/// Where a CSV parser puts the fields of a record.
protocol CSVFieldSink {
    /// Whether the field at this index is wanted (its bytes are decoded only if so).
    func wants(_ field: Int) -> Bool
    mutating func take(_ field: Int, _ bytes: UnsafeBufferPointer<UInt8>)
    /// Called for every field, wanted or not, with where it starts.
    mutating func counted(_ field: Int, start: Int)
}

/// Collects every field of the header as a name.
struct HeaderSink: CSVFieldSink {
    var names: [String] = []
    func wants(_ field: Int) -> Bool { true }
    mutating func take(_ field: Int, _ bytes: UnsafeBufferPointer<UInt8>) { names.append(String(decoding: bytes, as: UTF8.self)) }
    mutating func counted(_ field: Int, start: Int) {}
}

/// Writes the requested fields of a record into their value slots and counts the fields.
struct ValueSink: CSVFieldSink {
    let slots: UnsafeBufferPointer<Int>
    var values: [SourceValue]
    var fieldCount = 0
    var firstExtraField = 0

    @inline(__always)
    func wants(_ field: Int) -> Bool { field < slots.count && slots[field] >= 0 }

    @inline(__always)
    mutating func take(_ field: Int, _ bytes: UnsafeBufferPointer<UInt8>) {
        values[slots[field]] = .string(String(decoding: bytes, as: UTF8.self))
    }

    @inline(__always)
    mutating func counted(_ field: Int, start: Int) {
        if field == slots.count { firstExtraField = start }
        fieldCount = field + 1
    }
}
