/// One record of a source: the values the runner asked for, where it is, and where the next one starts.
///
/// ```swift
/// for record in batch.records {
///     if let problem = record.problem { reject(String(decoding: batch.raw[record.rawRange], as: UTF8.self), problem); continue }
///     let sku = record.values[0]      // aligned with reader.fields
/// }
/// ```
package struct Record: Sendable {
    /// The requested values, aligned with ``RecordReader/fields``; empty when ``problem`` is set.
    package var values: [SourceValue]
    /// The 1-based line where the record starts (for rejects: `file:line`).
    package var line: Int
    /// The 0-based index of the record among the source's data records (a CSV header is not one).
    package var recordIndex: Int64
    /// The byte offset in the decompressed stream just after this record and its line ending or separator.
    package var endOffset: Int64
    /// The 1-based line at ``endOffset``.
    package var endLine: Int
    /// This record's text in ``RecordBatch/raw``, without its line ending or separator.
    package var rawRange: Range<Int>
    /// Why this record could not be read, when the reader could skip past it: an NDJSON line that
    /// is not a JSON object, a CSV row with the wrong number of fields, invalid UTF-8, a bad JSON
    /// escape or number. ``values`` is then empty.
    package var problem: ReaderError? {
        get { problemBox?.error }
        set { problemBox = newValue.map(RecordProblem.init) }
    }
    // Boxed: problems are rare, and a record without one stays small in a batch of thousands.
    private var problemBox: RecordProblem?

    /// Where to resume to read the records after this one.
    package var resumePoint: ResumePoint {
        ResumePoint(byteOffset: endOffset, line: endLine, recordIndex: recordIndex + 1)
    }

    /// A record, as a reader makes it.
    package init(values: [SourceValue], line: Int, recordIndex: Int64, endOffset: Int64, endLine: Int,
                rawRange: Range<Int>, problem: ReaderError? = nil) {
        self.init(values: values, line: line, recordIndex: recordIndex, endOffset: endOffset, endLine: endLine,
                  rawRange: rawRange, problemBox: problem.map(RecordProblem.init))
    }

    init(values: [SourceValue], line: Int, recordIndex: Int64, endOffset: Int64, endLine: Int,
         rawRange: Range<Int>, problemBox: RecordProblem?) {
        self.values = values
        self.line = line
        self.recordIndex = recordIndex
        self.endOffset = endOffset
        self.endLine = endLine
        self.rawRange = rawRange
        self.problemBox = problemBox
    }
}

/// A record's problem in a box: one pointer to pass around and store while there is none.
final class RecordProblem: Sendable {
    let error: ReaderError
    init(_ error: ReaderError) { self.error = error }
}
