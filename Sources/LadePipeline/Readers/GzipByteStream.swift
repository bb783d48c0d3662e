import CZlib

/// Decompresses gzip data read from another stream, member after member (`cat a.gz b.gz` is valid gzip).
///
/// ```swift
/// let stream = try GzipByteStream(wrapping: FileByteStream(path: "feed.ndjson.gz"), displayName: "feed.ndjson.gz")
/// ```
///
/// Data cut short, or damaged, is an error naming the compressed offset: a feed truncated by a
/// failed download is never read as if it were complete. zlib also accepts a zlib (RFC 1950)
/// header in place of gzip's (`inflateInit2` with window bits 15 + 32).
package final class GzipByteStream: ByteStream {
    /// The magic bytes that start every gzip member: `1f 8b`.
    package static let magic: [UInt8] = [0x1f, 0x8b]

    private let source: any ByteStream
    private let displayName: String
    private let zstream: UnsafeMutablePointer<z_stream>
    private let input: UnsafeMutablePointer<UInt8>
    private let inputCapacity = 256 * 1024
    private var inputAtEnd = false
    private var memberEnded = false
    private var finished = false
    private var consumed: Int64 = 0          // compressed bytes inflate has taken

    /// Decompresses `source`; `displayName` names it in errors.
    package convenience init(wrapping source: any ByteStream, displayName: String) throws {
        try self.init(wrapping: source, displayName: displayName, alreadyRead: [])
    }

    /// `alreadyRead` holds compressed bytes taken from `source` before (to sniff the magic bytes).
    init(wrapping source: any ByteStream, displayName: String, alreadyRead: [UInt8]) throws {
        self.source = source
        self.displayName = displayName
        zstream = .allocate(capacity: 1)
        zstream.initialize(to: z_stream())
        let capacity = max(inputCapacity, alreadyRead.count)
        input = .allocate(capacity: capacity)
        alreadyRead.withUnsafeBufferPointer { bytes in
            if let base = bytes.baseAddress { input.update(from: base, count: bytes.count) }
        }
        zstream.pointee.next_in = input
        zstream.pointee.avail_in = UInt32(alreadyRead.count)
        // zlib keeps a pointer back to the z_stream, so it lives at a fixed address (allocated above).
        let status = inflateInit2_(zstream, 15 + 32, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else {
            zstream.deallocate()
            input.deallocate()
            throw ReaderError(.gzip, file: displayName, found: "cannot start gzip decompression (zlib status \(status))", expected: "")
        }
    }

    deinit {
        inflateEnd(zstream)
        zstream.deallocate()
        input.deallocate()
    }

    package var bytesRead: Int64 { consumed }

    package var totalBytes: Int64? { source.totalBytes }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !finished, let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        let capacity = UInt32(clamping: buffer.count)
        zstream.pointee.next_out = base.assumingMemoryBound(to: UInt8.self)
        zstream.pointee.avail_out = capacity
        while zstream.pointee.avail_out == capacity {
            if zstream.pointee.avail_in == 0 && !inputAtEnd { try refillInput() }
            if memberEnded {
                // Another member may follow (concatenated gzip files); only the end of the input ends the stream.
                if zstream.pointee.avail_in == 0 {
                    if inputAtEnd { finished = true; break }
                    continue
                }
                inflateReset(zstream)
                memberEnded = false
            }
            let before = zstream.pointee.avail_in
            let status = inflate(zstream, Z_NO_FLUSH)
            consumed += Int64(before - zstream.pointee.avail_in)
            switch status {
            case Z_STREAM_END:
                memberEnded = true
            case Z_OK:
                continue
            case Z_BUF_ERROR where zstream.pointee.avail_in == 0 && inputAtEnd:
                throw ReaderError(.gzip, file: displayName,
                                  found: "truncated gzip data: the compressed stream ends at byte \(consumed) before its end marker",
                                  expected: "the file was cut short, probably by an interrupted download or copy; fetch it again")
            case Z_BUF_ERROR:
                continue
            default:
                let reason = zstream.pointee.msg.map { String(cString: $0) } ?? "zlib status \(status)"
                throw ReaderError(.gzip, file: displayName,
                                  found: "corrupt gzip data at compressed byte \(consumed): \(reason)",
                                  expected: "the file is damaged or is not gzip; check it with `gzip -t`")
            }
        }
        let produced = Int(capacity - zstream.pointee.avail_out)
        return produced
    }

    private func refillInput() throws {
        let count = try source.read(into: UnsafeMutableRawBufferPointer(start: input, count: inputCapacity))
        if count == 0 { inputAtEnd = true }
        zstream.pointee.next_in = input
        zstream.pointee.avail_in = UInt32(count)
    }
}
