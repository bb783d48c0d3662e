/// Where to restart a source: an offset in the (decompressed) byte stream at a record boundary,
/// with the line and record count there, as ``Record/resumePoint`` and ``RecordBatch/endPoint`` report them.
///
/// The import runner stores it in the checkpoint and hands it back to
/// ``RecordReader/init(path:format:fields:resumingAt:displayName:)`` after a kill:
///
/// ```swift
/// let reader = try RecordReader(path: "products.csv", format: nil, fields: fields,
///                               resumingAt: ResumePoint(byteOffset: 1_048_576, line: 5_002, recordIndex: 5_000))
/// ```
package struct ResumePoint: Sendable, Equatable, Codable {
    /// The offset in the decompressed stream where the next record (or the blank lines before it) begins.
    package var byteOffset: Int64
    /// The 1-based line at `byteOffset`.
    package var line: Int
    /// The 0-based index the next record will have.
    package var recordIndex: Int64

    /// A resume point; `ResumePoint(byteOffset: 0, line: 1, recordIndex: 0)` is the start of a source.
    package init(byteOffset: Int64, line: Int, recordIndex: Int64) {
        self.byteOffset = byteOffset
        self.line = line
        self.recordIndex = recordIndex
    }

    /// The start of a source.
    package static let start = ResumePoint(byteOffset: 0, line: 1, recordIndex: 0)
}
