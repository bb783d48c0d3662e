/// Up to `maxRecords` records read together, with their raw text in one buffer.
///
/// ```swift
/// while let batch = try reader.nextBatch(maxRecords: 5_000) {
///     try importBatch(batch.records)
///     checkpoint = batch.endPoint          // resume here after a kill
/// }
/// ```
package struct RecordBatch: Sendable {
    /// The records, in source order.
    package var records: [Record]
    /// The source bytes from the first record's start to the last record's end; each record's
    /// ``Record/rawRange`` indexes into it.
    package var raw: [UInt8]
    /// Where the record after this batch begins.
    package var endPoint: ResumePoint

    /// A batch, as a reader makes it.
    package init(records: [Record], raw: [UInt8], endPoint: ResumePoint) {
        self.records = records
        self.raw = raw
        self.endPoint = endPoint
    }

    /// The raw text of one of this batch's records, as UTF-8 (invalid bytes replaced with U+FFFD).
    package func rawText(of record: Record) -> String {
        raw.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[record.rawRange]), as: UTF8.self) }
    }
}

/// What a batch read record by record (``RecordReader/nextBatch(maxRecords:each:)``) leaves
/// once its records have been handed on: their raw text and where the batch ends.
package struct RecordBatchText: Sendable {
    /// The source bytes from the first record's start to the last record's end; each record's
    /// ``Record/rawRange`` indexes into it.
    package var raw: [UInt8]
    /// Where the record after this batch begins.
    package var endPoint: ResumePoint
    /// How many records the batch had.
    package var recordCount: Int
}
