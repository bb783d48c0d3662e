/// A source of bytes a ``RecordReader`` reads from: a file, standard input, a gzip decompressor,
/// or anything else that can fill a buffer.
///
/// ```swift
/// /// Bytes already in memory.
/// final class MemoryStream: ByteStream {
///     let bytes: [UInt8]
///     var position = 0
///     init(_ bytes: [UInt8]) { self.bytes = bytes }
///
///     func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
///         let count = min(buffer.count, bytes.count - position)
///         bytes[position..<position + count].withUnsafeBytes { buffer.copyMemory(from: $0) }
///         position += count
///         return count
///     }
///     var bytesRead: Int64 { Int64(position) }
/// }
///
/// let reader = try RecordReader(stream: MemoryStream(Array("sku\nA-1\n".utf8)), format: .csv(CSVDialect()),
///                               fields: ["sku"], displayName: "memory")
/// ```
///
/// Streams are used from one thread at a time; the reader owning one is not `Sendable`.
package protocol ByteStream: AnyObject {
    /// Reads up to `buffer.count` bytes into `buffer` and returns how many it read: 0 only at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// The physical (for gzip: compressed) bytes consumed so far, for percent-of-file progress.
    var bytesRead: Int64 { get }
    /// The physical size, when known (a regular file's size; nil for a pipe).
    var totalBytes: Int64? { get }
    /// Moves so that the next read starts at `offset`; returns false when the stream cannot seek
    /// (a pipe, compressed data), in which case the caller reads forward instead.
    func seek(to offset: Int64) throws -> Bool
}

extension ByteStream {
    /// Unknown, by default.
    package var totalBytes: Int64? { nil }
    /// Cannot seek, by default: a reader resumes by reading forward.
    package func seek(to offset: Int64) throws -> Bool { false }
}
