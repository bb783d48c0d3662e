/// Reads the records of a CSV, NDJSON or JSON array source, optionally gzipped, in batches,
/// streaming: memory follows the batch, never the size of the input.
///
/// ```swift
/// let reader = try RecordReader(path: "feeds/products.ndjson.gz", format: nil,
///                               fields: ["sku", "price", "dimensions.width"])
/// while let batch = try reader.nextBatch(maxRecords: 5_000) {
///     for record in batch.records {
///         if let problem = record.problem { print(problem); continue }   // feed.ndjson.gz:7:12: …
///         let sku = record.values[0]                                      // .string("A-1") or .missing
///     }
///     print("\(reader.bytesRead) of \(reader.totalBytes ?? 0) bytes")
/// }
/// ```
///
/// The formats: CSV per RFC 4180 (<https://www.rfc-editor.org/rfc/rfc4180>), see ``CSVDialect``;
/// NDJSON, one JSON object per line; and a JSON array of objects, read element by element.
/// JSON is RFC 8259 (<https://www.rfc-editor.org/rfc/rfc8259>), scanned at the byte level:
/// only the requested key paths become values, the rest is checked and skipped. A UTF-8 byte
/// order mark at the start is ignored; everything else must be UTF-8.
///
/// Damage the reader can skip past makes a record with a ``Record/problem`` (a CSV row with the
/// wrong number of fields, a bad NDJSON line, invalid UTF-8); damage it cannot skip past (an
/// unterminated quoted field, a broken JSON array, truncated gzip, an I/O error) is thrown by
/// ``nextBatch(maxRecords:)``, after the records before it have been returned.
///
/// A reader is used from one thread at a time (it is not `Sendable`): create it on the thread
/// that reads, or hand it over with `sending`.
package final class RecordReader {
    /// The fields asked for; each record's ``Record/values`` are aligned with them.
    package let fields: [FieldPath]
    /// The source's format.
    package let format: SourceFormat
    /// The name used in errors: the path as given, or "stdin".
    package let displayName: String
    /// The CSV header (or the dialect's explicit columns), read when the reader opens; for the
    /// JSON formats, the keys of the first object when it could be read at open, else nil.
    package private(set) var columns: [String]?
    /// How much of one record the reader will buffer, in bytes (64 MiB by default): when a
    /// record needs more, it is thrown as ``ReaderError/Kind/recordTooLong`` (in CSV that is
    /// usually an unterminated quote swallowing the rest of the file). Memory stays within about
    /// twice this, whatever the input.
    package var maxRecordBytes = 64 << 20

    @exclusivity(unchecked) private var buffer: InputBuffer
    private let parser: any RecordParser
    private var cursor: Cursor
    /// The number of distinct fields; values are read into this many slots.
    private let slotCount: Int
    /// For each field, its slot, when two fields ask for the same path (else nil: field k is slot k).
    private let fieldSlots: [Int]?
    private var failure: ReaderError?
    private var atEnd = false

    /// Opens a source: a file path, or "-" for standard input (whose format must then be given).
    ///
    /// The format, when nil, comes from the path's extension (``SourceFormat/inferred(fromPath:)``).
    /// Gzip is recognised by its magic bytes `1f 8b`; a path ending in `.gz` that is not gzip
    /// is an error. `resumingAt` continues after a record a previous reader returned.
    ///
    /// ```swift
    /// let csv = try RecordReader(path: "products.csv", format: nil, fields: ["sku", "name"])
    /// let piped = try RecordReader(path: "-", format: .ndjson, fields: ["sku"])   // cat feed | lade run
    /// ```
    package convenience init(path: String, format: SourceFormat?, fields: [FieldPath], resumingAt resume: ResumePoint? = nil,
                            displayName: String? = nil) throws {
        let name = displayName ?? (path == "-" ? "stdin" : path)
        let inferred = path == "-" ? nil : SourceFormat.inferred(fromPath: path)
        guard let format = format ?? inferred?.format else {
            throw ReaderError(.configuration, file: name,
                              found: path == "-" ? "standard input has no extension to tell its format"
                                  : "the extension does not tell the source's format",
                              expected: "name the format (csv, ndjson or json), or use a .csv, .tsv, .ndjson, .jsonl or .json file, optionally .gz")
        }
        let stream: any ByteStream = path == "-" ? FileByteStream.standardInput() : try FileByteStream(path: path)
        try self.init(stream: stream, format: format, fields: fields, resumingAt: resume, displayName: name,
                      namedGzip: path.lowercased().hasSuffix(".gz"))
    }

    /// Reads from any ``ByteStream`` (standard input, a pipe, a test's bytes); gzip is recognised by its magic bytes.
    ///
    /// ```swift
    /// let reader = try RecordReader(stream: FileByteStream.standardInput(), format: .jsonArray,
    ///                               fields: ["sku"], displayName: "stdin")
    /// ```
    package convenience init(stream: some ByteStream, format: SourceFormat, fields: [FieldPath], resumingAt resume: ResumePoint? = nil,
                            displayName: String) throws {
        try self.init(stream: stream as any ByteStream, format: format, fields: fields, resumingAt: resume, displayName: displayName,
                      namedGzip: false)
    }

    private init(stream: any ByteStream, format: SourceFormat, fields: [FieldPath], resumingAt resume: ResumePoint?,
                 displayName: String, namedGzip: Bool) throws {
        self.fields = fields
        self.format = format
        self.displayName = displayName
        var unique: [FieldPath] = []
        var slotOf: [FieldPath: Int] = [:]
        let slots = fields.map { field in
            if let slot = slotOf[field] { return slot }
            slotOf[field] = unique.count
            unique.append(field)
            return unique.count - 1
        }
        slotCount = unique.count
        fieldSlots = unique.count == fields.count ? nil : slots

        buffer = InputBuffer(stream: stream)
        cursor = Cursor(index: 0, line: 1, lineStart: 0, recordIndex: 0)
        switch format {
        case .csv(let dialect):
            let delimiter = dialect.delimiter
            guard delimiter < 0x80, delimiter != ASCII.quote, delimiter != ASCII.lineFeed, delimiter != ASCII.carriageReturn else {
                throw ReaderError(.configuration, file: displayName, found: "the CSV delimiter \(JSONScanner.describe(delimiter)) cannot be used",
                                  expected: "an ASCII character other than a quote or a line break, such as ',', ';' or a tab")
            }
            parser = CSVParser(delimiter: delimiter, file: displayName)
        case .ndjson:
            parser = NDJSONParser(file: displayName, tree: KeyTree(paths: unique.map(\.components)))
        case .jsonArray:
            parser = JSONArrayParser(file: displayName, tree: KeyTree(paths: unique.map(\.components)))
        }

        try openStream(namedGzip: namedGzip)
        if case .csv(let dialect) = format {
            try readHeader(dialect, fields: unique)
        }
        if let resume, resume.byteOffset > 0 { try skip(to: resume) }
        if parser is any JSONRecordParser { columns = firstObjectKeys() }
    }

    // MARK: Reading

    /// The size of the last batch's raw text.
    private var lastRawCount = 0

    /// The physical bytes consumed so far (for gzip, compressed bytes), for percent-of-file progress.
    package var bytesRead: Int64 { buffer.stream.bytesRead }

    /// The physical size of the source when known (a file's size; nil for a pipe).
    package var totalBytes: Int64? { buffer.stream.totalBytes }

    /// The next records, at most `maxRecords` of them; nil at the end of the source.
    ///
    /// Throws a ``ReaderError`` for damage it cannot skip past; the records read before the
    /// damage come first in a batch of their own, and every later call throws the same error.
    package func nextBatch(maxRecords: Int) throws -> RecordBatch? {
        var records: [Record] = []
        records.reserveCapacity(min(maxRecords, 8_192))
        guard let text = try nextBatch(maxRecords: maxRecords, each: { records.append($0) }) else { return nil }
        return RecordBatch(records: records, raw: text.raw, endPoint: text.endPoint)
    }

    /// The next records, at most `maxRecords` of them, each handed to `body` as soon as it is
    /// read rather than kept in a batch; nil at the end of the source (`body` not called).
    ///
    /// A record's values are read into the same array each time: one that `body` does not keep
    /// is written over in place for the next record, so reading a record allocates only its
    /// text values. A record's ``Record/rawRange`` indexes into the returned batch's
    /// ``RecordBatchText/raw``, complete only once the batch is. `body` must not use this reader
    /// (it is in the middle of a batch). Errors as ``nextBatch(maxRecords:)``.
    ///
    /// ```swift
    /// while let batch = try reader.nextBatch(maxRecords: 5_000, each: { record in rows.append(map(record)) }) {
    ///     checkpoint = batch.endPoint
    /// }
    /// ```
    package func nextBatch(maxRecords: Int, each body: (Record) -> Void) throws -> RecordBatchText? {
        precondition(maxRecords > 0, "a batch holds at least one record")
        if let failure { throw failure }
        if atEnd { return nil }
        // The loop works on locals; they go back to the reader however it ends.
        var cursor = self.cursor
        defer { self.cursor = cursor }
        cursor.index -= buffer.shrink(keepingFrom: cursor.index)
        let parser = self.parser

        var count = 0
        var last: (rawEnd: Int, resumePoint: ResumePoint)?
        // The batch's raw text, from its first record's start: copied out as the window moves
        // on (before each refill), so the buffer holds the unfinished record and the next
        // chunk, not the whole batch.
        var raw: [UInt8] = []
        // About the last batch's size: appends that outgrow it would double the array.
        raw.reserveCapacity(lastRawCount + lastRawCount / 8)
        var copiedTo = -1 // the buffer index up to which `raw` holds the batch; -1 before its first record
        // Every record's values are read into this array: when the record handed on is not kept,
        // it is the only reference again by the next record, which then writes it in place.
        var values: [SourceValue] = []
        values.reserveCapacity(slotCount)
        while count < maxRecords {
            let saved = cursor
            // Emptied in place when the last record was not kept; when it was, a new array
            // (`removeAll(keepingCapacity:)` copies nothing the record holds).
            values.removeAll(keepingCapacity: true)
            values.append(contentsOf: repeatElement(SourceValue.missing, count: slotCount))
            var problem: RecordProblem?
            let parsed: ParsedRecord?
            do {
                parsed = try parser.next(in: buffer.window, at: &cursor, into: &values, problem: &problem)
            } catch {
                cursor = saved
                var damage: ReaderError
                switch error {
                case .needMore:
                    do {
                        if copiedTo >= 0, cursor.index > copiedTo {
                            raw.append(contentsOf: UnsafeBufferPointer(start: buffer.bytes + copiedTo, count: cursor.index - copiedTo))
                            copiedTo = cursor.index
                        }
                        let shift = try refill(keepingFrom: cursor.index, cursor: &cursor)
                        if copiedTo >= 0 { copiedTo -= shift }
                        continue
                    } catch let readError {
                        damage = readError
                    }
                case .fatal(let error):
                    damage = error
                }
                failure = damage
                if count == 0 { throw damage }
                break
            }
            guard let parsed else {
                atEnd = true
                break
            }
            if problem == nil, let bad = UTF8Validation.firstInvalidByte(in: buffer.bytes, from: parsed.start, to: parsed.end) {
                problem = RecordProblem(invalidUTF8(at: bad, in: parsed))
            }
            if copiedTo < 0 { copiedTo = parsed.start }
            // Positions in the batch's raw text: what is copied out already, then the buffer's bytes.
            let base = raw.count - copiedTo
            let record = Record(values: problem != nil ? [] : fieldSlots.map { slots in slots.map { values[$0] } } ?? values,
                                line: parsed.line, recordIndex: cursor.recordIndex,
                                endOffset: buffer.offset + Int64(cursor.index), endLine: cursor.line,
                                rawRange: (parsed.start + base)..<(parsed.end + base), problemBox: problem)
            last = (record.rawRange.upperBound, record.resumePoint)
            count += 1
            cursor.recordIndex += 1
            body(record)
        }
        guard let last else { return nil }
        // Up to the last record's end: the rest is in the buffer still, or (when a refill found
        // no further record) `raw` holds a few bytes past it.
        let end = last.rawEnd
        if raw.count < end {
            raw.append(contentsOf: UnsafeBufferPointer(start: buffer.bytes + copiedTo, count: end - raw.count))
        } else if raw.count > end {
            raw.removeSubrange(end...)
        }
        lastRawCount = raw.count
        return RecordBatchText(raw: raw, endPoint: last.resumePoint, recordCount: count)
    }

    /// Reads more input, keeping the buffer from `keep` on; returns how far indexes moved down
    /// (already applied to `cursor`).
    private func refill(keepingFrom keep: Int, cursor: inout Cursor) throws(ReaderError) -> Int {
        let pending = buffer.count - cursor.index
        if pending > maxRecordBytes {
            throw ReaderError(.recordTooLong, file: displayName, line: cursor.line,
                              column: Int(buffer.offset + Int64(cursor.index) - cursor.lineStart) + 1,
                              found: "a record longer than \(maxRecordBytes) bytes",
                              expected: parser is CSVParser
                                  ? "records of a sensible size; in CSV this is usually a quoted field whose closing quote is missing"
                                  : "records of a sensible size")
        }
        do {
            // Ask for at least as much again as the unfinished record holds, so a huge record is re-scanned only a few times.
            let shift = try buffer.fill(keepingFrom: keep, wanted: pending)
            cursor.index -= shift
            return shift
        } catch {
            throw wrap(error)
        }
    }

    private func wrap(_ error: any Error) -> ReaderError {
        if var error = error as? ReaderError {
            error.file = displayName
            return error
        }
        return ReaderError(.io, file: displayName, found: "cannot read the source: \(error)", expected: "")
    }

    private func invalidUTF8(at index: Int, in record: ParsedRecord) -> ReaderError {
        let (line, column) = TextPosition.locate(index, in: buffer.window, from: record.start, line: record.line,
                                                 lineStart: record.lineStart,
                                                 countingLoneCarriageReturn: parser.countsLoneCarriageReturn)
        let byte = buffer.bytes[index]
        return ReaderError(.invalidUTF8, file: displayName, line: line, column: column,
                           found: "invalid UTF-8: \(JSONScanner.describe(byte)) does not begin or continue a character",
                           expected: "text in UTF-8; convert a Latin-1 or Windows-1252 file with `iconv -f WINDOWS-1252 -t UTF-8`")
    }

    /// The size of the reader's buffer, which holds the unfinished record and the next chunk.
    var bufferCapacity: Int { buffer.capacity }

    // MARK: Opening

    /// Reads the first chunk, switches to decompression when it is gzip, and skips a byte order mark.
    private func openStream(namedGzip: Bool) throws {
        do {
            _ = try buffer.fill(keepingFrom: 0, wanted: 0)
        } catch {
            throw wrap(error)
        }
        let magic = GzipByteStream.magic
        if buffer.count >= 2 && buffer.bytes[0] == magic[0] && buffer.bytes[1] == magic[1] {
            let alreadyRead = Array(UnsafeBufferPointer(start: buffer.bytes, count: buffer.count))
            let gzip = try GzipByteStream(wrapping: buffer.stream, displayName: displayName, alreadyRead: alreadyRead)
            buffer = InputBuffer(stream: gzip)
            do {
                _ = try buffer.fill(keepingFrom: 0, wanted: 0)
            } catch {
                throw wrap(error)
            }
        } else if namedGzip {
            throw ReaderError(.gzip, file: displayName, found: "the file is named .gz but is not gzip data (it does not start with 1f 8b)",
                              expected: "gzip data, or a name without .gz for an uncompressed file")
        }
        if buffer.count >= 3 && buffer.bytes[0] == 0xEF && buffer.bytes[1] == 0xBB && buffer.bytes[2] == 0xBF {
            cursor.index = 3
            cursor.lineStart = 3
        }
    }

    private func readHeader(_ dialect: CSVDialect, fields: [FieldPath]) throws {
        guard let csv = parser as? CSVParser else { return }
        var names = dialect.columns
        if dialect.hasHeader {
            while true {
                let saved = cursor
                do {
                    guard let (header, record) = try csv.readHeader(in: buffer.window, at: &cursor) else { break }
                    if let bad = UTF8Validation.firstInvalidByte(in: buffer.bytes, from: record.start, to: record.end) {
                        throw invalidUTF8(at: bad, in: record)
                    }
                    if let explicit = dialect.columns, explicit.count != header.count {
                        throw ReaderError(.configuration, file: displayName, line: record.line, column: 1,
                                          found: "columns: lists \(explicit.count) names but the header has \(header.count) columns",
                                          expected: "one name per header column to rename them, or no columns:")
                    }
                    names = dialect.columns ?? header
                    break
                } catch let stop as ParseStop {
                    cursor = saved
                    switch stop {
                    case .needMore: _ = try refill(keepingFrom: cursor.index, cursor: &cursor)
                    case .fatal(let error): throw error
                    }
                }
            }
        } else if names == nil {
            throw ReaderError(.configuration, file: displayName, found: "a CSV source without a header row has no column names",
                              expected: "list them with columns: in the source, or set header: true")
        }
        columns = names
        let columnNames = names ?? []
        // A name that appears twice: the last column of that name wins, as with a repeated JSON key.
        var columnOf: [String: Int] = [:]
        for (index, name) in columnNames.enumerated() { columnOf[name] = index }
        var slots = [Int](repeating: -1, count: columnNames.count)
        for (slot, field) in fields.enumerated() {
            if let column = columnOf[field.description] { slots[column] = slot }
        }
        csv.columnCount = columnNames.count
        csv.columnSlots = slots
    }

    /// Moves to a resume point, checking that it is a record boundary: the byte before it ends a
    /// line (CSV, NDJSON) or an array element (JSON array), or it is the end of the source.
    /// (Offset 0 is the start, header included, and needs no moving.)
    private func skip(to resume: ResumePoint) throws {
        let dataStart = buffer.offset + Int64(cursor.index)
        func mismatch(_ found: String) -> ReaderError {
            ReaderError(.resume, file: displayName, found: "cannot resume at byte \(resume.byteOffset): \(found)",
                        expected: "the source has probably changed since the checkpoint; import it again from the start (--force)")
        }
        guard resume.byteOffset >= dataStart else {
            throw mismatch("the first record starts at byte \(dataStart)")
        }
        cursor.line = resume.line
        cursor.recordIndex = resume.recordIndex
        guard resume.byteOffset > dataStart else { return }
        do {
            guard try buffer.skip(to: resume.byteOffset - 1) else { throw mismatch("the source is shorter than that") }
            if buffer.count < 2 && !buffer.isAtEnd { _ = try buffer.fill(keepingFrom: 0, wanted: 0) }
        } catch let error as ReaderError where error.kind == .resume {
            throw error
        } catch {
            throw wrap(error)
        }
        guard buffer.count >= 1 else { throw mismatch("the source is shorter than that") }
        let previous = buffer.bytes[0]
        let atSourceEnd = buffer.count == 1 && buffer.isAtEnd
        switch format {
        case .csv:
            guard previous == ASCII.lineFeed || previous == ASCII.carriageReturn || atSourceEnd else {
                throw mismatch("it is not at the start of a line")
            }
        case .ndjson:
            guard previous == ASCII.lineFeed || atSourceEnd else { throw mismatch("it is not at the start of a line") }
        case .jsonArray:
            switch previous {
            case ASCII.comma: cursor.arrayState = .afterComma
            case ASCII.closeBracket: cursor.arrayState = .ended
            case ASCII.openBracket: cursor.arrayState = .afterOpening
            default: throw mismatch("it does not follow an element of the array")
            }
        }
        cursor.index = 1
        cursor.lineStart = resume.byteOffset
    }

    /// The keys of the first object, read ahead without consuming it; nil when it cannot be read.
    private func firstObjectKeys() -> [String]? {
        guard let json = parser as? any JSONRecordParser else { return nil }
        json.scanner.collectedKeys = []
        defer { json.scanner.collectedKeys = nil }
        var probe = cursor
        var values = [SourceValue](repeating: .missing, count: slotCount)
        var problem: RecordProblem?
        while true {
            do {
                guard try parser.next(in: buffer.window, at: &probe, into: &values, problem: &problem) != nil, problem == nil else { return nil }
                return json.scanner.collectedKeys
            } catch {
                guard case .needMore = error, (try? refill(keepingFrom: cursor.index, cursor: &cursor)) != nil else { return nil }
                probe = cursor
            }
        }
    }
}

/// A parser of one of the JSON formats, whose scanner can collect an object's keys.
protocol JSONRecordParser: RecordParser {
    var scanner: JSONScanner { get set }
}

extension NDJSONParser: JSONRecordParser {}
extension JSONArrayParser: JSONRecordParser {}
