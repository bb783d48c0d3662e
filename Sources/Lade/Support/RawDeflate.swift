import CZlib
import Foundation

/// Raw deflate (RFC 1951, no zlib header or checksum), in memory: the form of Core Data's model
/// cache (`Z_MODELCACHE.Z_CONTENT`), which Python reads with `zlib.decompress(blob, -15)`.
enum RawDeflate {
    /// `bytes` compressed as one raw deflate stream.
    static func compress(_ bytes: Data) throws -> Data {
        var stream = z_stream()
        // windowBits -15: a raw stream with the largest window, as Core Data's caches are.
        guard deflateInit2_(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY,
                            zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw PropertyListError("cannot start raw deflate compression (out of memory?)")
        }
        defer { deflateEnd(&stream) }
        var input = [UInt8](bytes)
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 16)
        let result = input.withUnsafeMutableBufferPointer { inBytes in
            output.withUnsafeMutableBufferPointer { outBytes in
                stream.next_in = inBytes.baseAddress
                stream.avail_in = uInt(inBytes.count)
                stream.next_out = outBytes.baseAddress
                stream.avail_out = uInt(outBytes.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard result == Z_STREAM_END else {
            throw PropertyListError("raw deflate compression failed (zlib code \(result))")
        }
        return Data(output[0..<Int(stream.total_out)])
    }

    /// Why a raw deflate stream was not inflated; each reader says it in its own terms.
    enum Failure: Error, Equatable {
        /// zlib could not start (out of memory).
        case cannotStart
        /// Not a raw deflate stream: zlib's code.
        case notDeflate(Int32)
        /// The stream ends before its last block.
        case truncated
        /// It would inflate past the limit given.
        case tooLarge(limit: Int)
        /// Bytes follow the end of the stream.
        case trailingBytes
    }

    /// A raw deflate stream (no zlib or gzip header) inflated, refused when it is not one, does
    /// not end where `bytes` ends, or inflates past `limit` bytes (a small input may expand
    /// enormously): what a store's `Z_MODELCACHE` holds.
    static func decompress(_ bytes: Data, limit: Int) throws(Failure) -> Data {
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw .cannotStart
        }
        defer { inflateEnd(&stream) }
        var input = [UInt8](bytes)
        var inflated: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        let failure: Failure? = input.withUnsafeMutableBufferPointer { inBytes -> Failure? in
            stream.next_in = inBytes.baseAddress
            stream.avail_in = uInt(inBytes.count)
            while true {
                let (code, produced) = chunk.withUnsafeMutableBufferPointer { out -> (Int32, Int) in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    let code = inflate(&stream, Z_NO_FLUSH)
                    return (code, out.count - Int(stream.avail_out))
                }
                inflated += chunk[0..<produced]
                if inflated.count > limit { return .tooLarge(limit: limit) }
                if code == Z_STREAM_END { return stream.avail_in == 0 ? nil : .trailingBytes }
                if code == Z_BUF_ERROR && stream.avail_in == 0 { return .truncated }
                guard code == Z_OK else { return .notDeflate(code) }
                if produced == 0 && stream.avail_in == 0 { return .truncated }
            }
        }
        if let failure { throw failure }
        return Data(inflated)
    }
}
