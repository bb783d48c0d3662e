/// Checks that bytes are well-formed UTF-8 (Unicode 15, table 3-7): no stray continuation
/// bytes, no overlong forms, no surrogates, nothing above U+10FFFF, no sequence cut short.
enum UTF8Validation {
    /// The index of the first byte in `index..<end` that does not belong to a well-formed sequence, or nil.
    static func firstInvalidByte(in bytes: UnsafePointer<UInt8>, from index: Int, to end: Int) -> Int? {
        var i = index
        while true {
            i = ByteScanning.firstNonASCII(in: bytes, from: i, to: end)
            if i == end { return nil }
            let lead = bytes[i]
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF   // the range of the second byte
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return i
            }
            guard i + 1 < end, (low...high).contains(bytes[i + 1]) else { return i }
            var k = 2
            while k < length {
                guard i + k < end, bytes[i + k] & 0xC0 == 0x80 else { return i }
                k += 1
            }
            i += length
        }
    }
}
