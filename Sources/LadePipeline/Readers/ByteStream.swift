/// A source of bytes a ``RecordReader`` reads from: a file, standard input, a gzip decompressor,
/// or anything else that can fill a buffer.
///
/// ```swift
/// final class Bytes: ByteStream {
///     var data: [UInt8], position = 0
///     init(_ data: [UInt8]) { self.data = data }
///     func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
///         let count = min(buffer.count, data.count - position)
///         buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: data.withUnsafeBytes { $0 }[position..<position + count]))
///         position += count
///         return count
///     }
///     var bytesRead: Int64 { Int64(position) }
/// }
/// ```
///
/// Streams are used from one thread at a time; the reader owning one is not `Sendable`.
public protocol ByteStream: AnyObject {
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
    public var totalBytes: Int64? { nil }
    public func seek(to offset: Int64) throws -> Bool { false }
}
