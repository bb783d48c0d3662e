// Word-at-a-time scans over bytes: the readers' inner loops look at eight bytes per step.
// Each test marks the matching bytes of a little-endian word in their high bits; borrows can
// only mark bytes above a real match, so the lowest marked byte is always exact.

/// ASCII bytes the readers look for.
enum ASCII {
    static let tab = UInt8(ascii: "\t")
    static let lineFeed = UInt8(ascii: "\n")
    static let carriageReturn = UInt8(ascii: "\r")
    static let space = UInt8(ascii: " ")
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let comma = UInt8(ascii: ",")
    static let colon = UInt8(ascii: ":")
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
    static let minus = UInt8(ascii: "-")
    static let plus = UInt8(ascii: "+")
    static let dot = UInt8(ascii: ".")
    static let zero = UInt8(ascii: "0")
    static let nine = UInt8(ascii: "9")
}

enum ByteScanning {
    static let ones: UInt64 = 0x0101_0101_0101_0101
    static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// A word with `byte` in each of its eight bytes.
    @inline(__always)
    static func broadcast(_ byte: UInt8) -> UInt64 { ones &* UInt64(byte) }

    /// Marks the bytes of `word` equal to the broadcast byte `pattern`.
    @inline(__always)
    static func equal(_ word: UInt64, _ pattern: UInt64) -> UInt64 {
        let x = word ^ pattern
        return (x &- ones) & ~x & highBits
    }

    /// Marks the bytes of `word` below 0x20 (control characters).
    @inline(__always)
    static func control(_ word: UInt64) -> UInt64 {
        (word &- ones &* 0x20) & ~word & highBits
    }

    @inline(__always)
    static func load(_ bytes: UnsafePointer<UInt8>, _ index: Int) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(bytes + index).loadUnaligned(as: UInt64.self))
    }

    /// The index of the first byte in `index..<end` equal to `a`, `b` or `c`, or `end`.
    @inline(__always)
    static func firstOf(_ a: UInt8, _ b: UInt8, _ c: UInt8, in bytes: UnsafePointer<UInt8>, from index: Int, to end: Int) -> Int {
        var i = index
        let pa = broadcast(a), pb = broadcast(b), pc = broadcast(c)
        while i + 8 <= end {
            let word = load(bytes, i)
            let hits = equal(word, pa) | equal(word, pb) | equal(word, pc)
            if hits != 0 { return i + hits.trailingZeroBitCount >> 3 }
            i += 8
        }
        while i < end {
            let byte = bytes[i]
            if byte == a || byte == b || byte == c { return i }
            i += 1
        }
        return end
    }

    /// The index of the first `"`, `\` or control character in `index..<end`, or `end`: where a JSON string's plain run stops.
    @inline(__always)
    static func firstStringSpecial(in bytes: UnsafePointer<UInt8>, from index: Int, to end: Int) -> Int {
        var i = index
        let quote = broadcast(ASCII.quote), backslash = broadcast(ASCII.backslash)
        while i + 8 <= end {
            let word = load(bytes, i)
            let hits = equal(word, quote) | equal(word, backslash) | control(word)
            if hits != 0 { return i + hits.trailingZeroBitCount >> 3 }
            i += 8
        }
        while i < end {
            let byte = bytes[i]
            if byte == ASCII.quote || byte == ASCII.backslash || byte < 0x20 { return i }
            i += 1
        }
        return end
    }

    /// The index of the first byte in `index..<end` with its high bit set (not ASCII), or `end`.
    @inline(__always)
    static func firstNonASCII(in bytes: UnsafePointer<UInt8>, from index: Int, to end: Int) -> Int {
        var i = index
        while i + 8 <= end {
            let hits = load(bytes, i) & highBits
            if hits != 0 { return i + hits.trailingZeroBitCount >> 3 }
            i += 8
        }
        while i < end && bytes[i] < 0x80 { i += 1 }
        return i
    }

    /// The index of the first `byte` in `index..<end`, or `end` (memchr).
    @inline(__always)
    static func first(_ byte: UInt8, in bytes: UnsafePointer<UInt8>, from index: Int, to end: Int) -> Int {
        guard index < end, let found = memchr(bytes + index, Int32(byte), end - index) else { return end }
        return UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - bytes
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
