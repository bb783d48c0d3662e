/// Up to `maxRecords` records read together, with their raw text in one buffer.
///
/// ```swift
/// while let batch = try reader.nextBatch(maxRecords: 5_000) {
///     try importBatch(batch.records)
///     checkpoint = batch.endPoint          // resume here after a kill
/// }
/// ```
public struct RecordBatch: Sendable {
    /// The records, in source order.
    public var records: [Record]
    /// The source bytes from the first record's start to the last record's end; each record's
    /// ``Record/rawRange`` indexes into it.
    public var raw: [UInt8]
    /// Where the record after this batch begins.
    public var endPoint: ResumePoint

    /// A batch, as a reader makes it.
    public init(records: [Record], raw: [UInt8], endPoint: ResumePoint) {
        self.records = records
        self.raw = raw
        self.endPoint = endPoint
    }

    /// The raw text of one of this batch's records, as UTF-8 (invalid bytes replaced with U+FFFD).
    public func rawText(of record: Record) -> String {
        raw.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[record.rawRange]), as: UTF8.self) }
    }
}

/// What a batch read record by record (``RecordReader/nextBatch(maxRecords:each:)``) leaves
/// once its records have been handed on: their raw text and where the batch ends.
public struct RecordBatchText: Sendable {
    /// The source bytes from the first record's start to the last record's end; each record's
    /// ``Record/rawRange`` indexes into it.
    public var raw: [UInt8]
    /// Where the record after this batch begins.
    public var endPoint: ResumePoint
    /// How many records the batch had.
    public var recordCount: Int
}
