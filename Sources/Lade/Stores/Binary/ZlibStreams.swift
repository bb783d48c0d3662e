import CZlib
import Foundation

/// Compresses a byte stream into a file as one zlib stream (RFC 1950: deflate with an
/// Adler-32 check), a buffer at a time, so memory stays flat.
///
/// ```swift
/// let deflater = try ZlibDeflater(output: output)
/// try deflater.write(bytes)
/// try deflater.finish()
/// ```
///
/// Related zlib documentation: <https://zlib.net/manual.html>
final class ZlibDeflater {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let output: FileOutput
    private var pending: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)

    init(output: FileOutput, level: Int32 = Z_DEFAULT_COMPRESSION) throws {
        self.output = output
        // z_stream points back at itself once initialised, so it lives at a fixed address.
        stream.initialize(to: z_stream())
        guard deflateInit_(stream, level, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            stream.deallocate()
            throw StoreError(.io, path: output.path, "cannot start zlib compression (out of memory?)")
        }
        pending.reserveCapacity(1 << 16)
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    func write(_ bytes: some Collection<UInt8>) throws {
        pending.append(contentsOf: bytes)
        if pending.count >= 1 << 16 { try deflate(finishing: false) }
    }

    /// Compresses what is left and ends the stream.
    func finish() throws {
        try deflate(finishing: true)
    }

    private func deflate(finishing: Bool) throws {
        try pending.withUnsafeMutableBufferPointer { input in
            stream.pointee.next_in = input.baseAddress
            stream.pointee.avail_in = uInt(input.count)
            while true {
                let result = chunk.withUnsafeMutableBufferPointer { out -> Int32 in
                    stream.pointee.next_out = out.baseAddress
                    stream.pointee.avail_out = uInt(out.count)
                    return CZlib.deflate(stream, finishing ? Z_FINISH : Z_NO_FLUSH)
                }
                guard result == Z_OK || result == Z_STREAM_END || result == Z_BUF_ERROR else {
                    throw StoreError(.io, path: output.path, "zlib compression failed (code \(result)); the store is unchanged")
                }
                let produced = chunk.count - Int(stream.pointee.avail_out)
                if produced > 0 { try output.write(chunk[0..<produced]) }
                if finishing ? result == Z_STREAM_END : (stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0) { break }
            }
        }
        pending.removeAll(keepingCapacity: true)
    }
}

/// Decompresses a zlib stream read from a file descriptor, handing out the bytes as they are
/// needed; the stream must end exactly where the file ends.
final class ZlibInflater {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let descriptor: Int32
    private let path: String
    private var input = [UInt8](repeating: 0, count: 1 << 16)
    private var inputStart = 0, inputEnd = 0
    private var ended = false
    /// Decompressed bytes not handed out yet.
    private var buffer: [UInt8] = []
    private var position = 0

    /// How many bytes the body may inflate to: at least 256 MiB, else 100 times the file (zlib
    /// can expand 1,032 times, so a small hostile file could otherwise claim gigabytes; real
    /// stores compress 2 to 10 times).
    private let inflationLimit: Int
    private var inflated = 0

    init(descriptor: Int32, path: String) throws {
        self.descriptor = descriptor
        self.path = path
        var info = stat()
        let fileSize = fstat(descriptor, &info) == 0 ? Int(info.st_size) : 0
        inflationLimit = max(256 << 20, fileSize.multipliedReportingOverflow(by: 100).overflow ? Int.max : fileSize * 100)
        stream.initialize(to: z_stream())
        guard inflateInit_(stream, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            stream.deallocate()
            throw StoreError(.io, path: path, "cannot start zlib decompression (out of memory?)")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    /// The next `count` bytes.
    func read(_ count: Int) throws -> ArraySlice<UInt8> {
        while buffer.count - position < count {
            guard try inflateMore() else {
                throw StoreError(.notAStore, path: path, "the store's body ends early: the file is truncated or damaged")
            }
        }
        defer { position += count }
        return buffer[position..<(position + count)]
    }

    func readByte() throws -> UInt8 {
        if position < buffer.count {
            defer { position += 1 }
            return buffer[position]
        }
        return try read(1).first!
    }

    /// Checks that every byte was used and the stream ended with the file.
    func finish() throws {
        while try inflateMore() {}
        guard position == buffer.count, ended else {
            throw StoreError(.notAStore, path: path, "the store's body holds more than its objects: the file is damaged")
        }
    }

    /// Decompresses another piece; false once the stream has ended.
    private func inflateMore() throws -> Bool {
        guard !ended else { return false }
        if position > 0 {
            buffer.removeFirst(position)
            position = 0
        }
        if inputStart == inputEnd {
            let count = input.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress!, $0.count) }
            guard count >= 0 else { throw StoreError(.io, path: path, "cannot read the store: \(String(cString: strerror(errno)))") }
            guard count > 0 else { throw StoreError(.notAStore, path: path, "the store's body ends early: the file is truncated or damaged") }
            inputStart = 0
            inputEnd = count
        }
        var out = [UInt8](repeating: 0, count: 1 << 17)
        let (result, consumed, produced) = input.withUnsafeMutableBufferPointer { inBytes in
            out.withUnsafeMutableBufferPointer { outBytes in
                stream.pointee.next_in = inBytes.baseAddress! + inputStart
                stream.pointee.avail_in = uInt(inputEnd - inputStart)
                stream.pointee.next_out = outBytes.baseAddress
                stream.pointee.avail_out = uInt(outBytes.count)
                let result = inflate(stream, Z_NO_FLUSH)
                return (result, inputEnd - inputStart - Int(stream.pointee.avail_in), outBytes.count - Int(stream.pointee.avail_out))
            }
        }
        guard result == Z_OK || result == Z_STREAM_END || (result == Z_BUF_ERROR && produced + consumed > 0) else {
            throw StoreError(.notAStore, path: path, "the store's body is not valid zlib data (code \(result)): the file is damaged")
        }
        inputStart += consumed
        inflated += produced
        guard inflated <= inflationLimit else {
            throw StoreError(.notAStore, path: path, "the store's body inflates to more than \(inflationLimit >> 20) MiB, over 100 times the file: the file is damaged or hostile")
        }
        buffer.append(contentsOf: out[0..<produced])
        if result == Z_STREAM_END {
            ended = true
            var extra: UInt8 = 0
            guard inputStart == inputEnd, Foundation.read(descriptor, &extra, 1) == 0 else {
                throw StoreError(.notAStore, path: path, "bytes follow the end of the store's body: the file is damaged")
            }
        }
        return true
    }
}
