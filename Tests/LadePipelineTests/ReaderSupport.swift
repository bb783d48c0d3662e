import Foundation
@testable import LadePipeline
import Testing

/// A temporary folder for one test's source files, removed when the test is done with it.
final class SourceFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("lade-readers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// Writes `text` to a file named `name` and returns its path.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        try write(name, bytes: Array(text.utf8))
    }

    @discardableResult
    func write(_ name: String, bytes: [UInt8]) throws -> String {
        let path = url.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Compresses `bytes` with the real `gzip` command and writes them to `name`.
    @discardableResult
    func writeGzip(_ name: String, _ text: String) throws -> String {
        try write(name, bytes: try gzip(Array(text.utf8)))
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

/// `bytes` compressed by `gzip -c` (one gzip member).
func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
    let input = FileManager.default.temporaryDirectory.appendingPathComponent("lade-gzip-\(UUID().uuidString)")
    try Data(bytes).write(to: input)
    defer { try? FileManager.default.removeItem(at: input) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["gzip", "-c", "-n", input.path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "gzip failed")
    return Array(data)
}

/// A stream over bytes in memory that hands them out a few at a time, in sizes from a fixed
/// seed, the way a slow pipe does: every record boundary lands somewhere in the middle of a read.
final class TrickleStream: ByteStream {
    private let bytes: [UInt8]
    private var position = 0
    private var random: SeededGenerator
    private let largest: Int

    init(_ bytes: [UInt8], largestRead: Int = 7, seed: UInt64 = 1) {
        self.bytes = bytes
        largest = largestRead
        random = SeededGenerator(seed: seed)
    }

    convenience init(_ text: String, largestRead: Int = 7, seed: UInt64 = 1) {
        self.init(Array(text.utf8), largestRead: largestRead, seed: seed)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, bytes.count - position, 1 + random.int(largest))
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + position, byteCount: count)
        }
        position += count
        return count
    }

    var bytesRead: Int64 { Int64(position) }
}


/// A record as the tests compare it: values, position, raw text and problem.
struct ReadRecord: Equatable, CustomStringConvertible {
    var values: [SourceValue]
    var line: Int
    var recordIndex: Int64
    var endOffset: Int64
    var endLine: Int
    var raw: String
    var problem: ReaderError?

    var description: String {
        "#\(recordIndex) line \(line) \(values) raw \(raw.debugDescription)\(problem.map { " problem: \($0)" } ?? "")"
    }
}

/// Every record of a reader, batch by batch.
func readAll(_ reader: RecordReader, batch: Int = 1_000) throws -> [ReadRecord] {
    var records: [ReadRecord] = []
    while let next = try reader.nextBatch(maxRecords: batch) {
        #expect(next.records.count <= batch)
        for record in next.records {
            records.append(ReadRecord(values: record.values, line: record.line, recordIndex: record.recordIndex,
                                      endOffset: record.endOffset, endLine: record.endLine,
                                      raw: next.rawText(of: record), problem: record.problem))
        }
        #expect(next.endPoint == next.records.last?.resumePoint)
    }
    return records
}

/// Every record of a reader, each taken as it is read (`nextBatch(maxRecords:each:)`): its
/// values copied out, so the reader writes the next record's into the same array in place.
func readStreaming(_ reader: RecordReader, batch: Int = 1_000) throws -> [ReadRecord] {
    var records: [ReadRecord] = []
    var ranges: [Range<Int>] = []
    while true {
        let first = records.count
        ranges.removeAll()
        guard let text = try reader.nextBatch(maxRecords: batch, each: { record in
            records.append(ReadRecord(values: record.values.map { $0 }, line: record.line, recordIndex: record.recordIndex,
                                      endOffset: record.endOffset, endLine: record.endLine, raw: "", problem: record.problem))
            ranges.append(record.rawRange)
        }) else { break }
        #expect(text.recordCount == records.count - first && text.recordCount <= batch)
        #expect(ranges.last?.upperBound == text.raw.count)
        for (offset, range) in ranges.enumerated() {
            records[first + offset].raw = String(decoding: text.raw[range], as: UTF8.self)
        }
        let last = records[records.count - 1]
        #expect(text.endPoint == ResumePoint(byteOffset: last.endOffset, line: last.endLine, recordIndex: last.recordIndex + 1))
    }
    return records
}

/// The records of a source given as text in a file named `name`. Read both ways, batch by
/// batch and record by record: the two must give the same records, or throw the same error.
func read(_ text: String, named name: String, format: SourceFormat? = nil, fields: [FieldPath],
          batch: Int = 1_000, sourceLocation: SourceLocation = #_sourceLocation) throws -> [ReadRecord] {
    let folder = try SourceFolder()
    let path = try folder.write(name, text)
    let batched = Result { try readAll(RecordReader(path: path, format: format, fields: fields, displayName: name), batch: batch) }
    let streamed = Result { try readStreaming(RecordReader(path: path, format: format, fields: fields, displayName: name), batch: batch) }
    switch (batched, streamed) {
    case (.success(let a), .success(let b)):
        #expect(a == b, "read record by record, the records differ", sourceLocation: sourceLocation)
    case (.failure(let a), .failure(let b)):
        #expect("\(a)" == "\(b)", "read record by record, the error differs", sourceLocation: sourceLocation)
    default:
        Issue.record("read batch by batch: \(batched); record by record: \(streamed)", sourceLocation: sourceLocation)
    }
    return try batched.get()
}

/// The values of each record, for tests that only care about values.
func values(_ text: String, named name: String, format: SourceFormat? = nil, fields: [FieldPath]) throws -> [[SourceValue]] {
    try read(text, named: name, format: format, fields: fields).map(\.values)
}

/// The error `body` throws, as a ReaderError.
func readerError(_ body: () throws -> Void) -> ReaderError? {
    do {
        try body()
        return nil
    } catch let error as ReaderError {
        return error
    } catch {
        Issue.record("not a ReaderError: \(error)")
        return nil
    }
}
