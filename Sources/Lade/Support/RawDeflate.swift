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

    /// A raw deflate stream inflated, refused (damaged) when it is not one, does not end where
    /// `bytes` ends, or inflates past `limit` bytes (a small cache may expand enormously).
    static func decompress(_ bytes: Data, limit: Int) throws -> Data {
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw PropertyListError("cannot start raw deflate decompression (out of memory?)")
        }
        defer { inflateEnd(&stream) }
        var input = [UInt8](bytes)
        var inflated: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var result: Int32 = Z_OK
        try input.withUnsafeMutableBufferPointer { inBytes in
            stream.next_in = inBytes.baseAddress
            stream.avail_in = uInt(inBytes.count)
            while result != Z_STREAM_END {
                let produced: Int
                (result, produced) = chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    let code = inflate(&stream, Z_NO_FLUSH)
                    return (code, out.count - Int(stream.avail_out))
                }
                guard result == Z_OK || result == Z_STREAM_END else {
                    throw PropertyListError(damaged: "the compressed model is not a raw deflate stream (zlib code \(result))")
                }
                inflated += chunk[0..<produced]
                guard inflated.count <= limit else {
                    throw PropertyListError(damaged: "the compressed model inflates past \(limit) bytes")
                }
                guard produced > 0 || stream.avail_in > 0 || result == Z_STREAM_END else {
                    throw PropertyListError(damaged: "the compressed model ends early")
                }
            }
        }
        guard stream.avail_in == 0 else {
            throw PropertyListError(damaged: "bytes follow the end of the compressed model")
        }
        return Data(inflated)
    }
}
