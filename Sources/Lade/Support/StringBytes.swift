import Foundation

extension String {
    /// Runs `body` on the string's UTF-8 bytes where they are (a native string's storage: no
    /// copy, and no retain of the string as `withUTF8` on a `var` copy makes), copying them only
    /// when they are not contiguous (a bridged string). For comparisons on hot paths: the
    /// import's key order, stored values compared in place, regular expressions.
    package func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return try copy.withUTF8(body)
    }
}

extension UnsafeBufferPointer where Element == UInt8 {
    /// Whether `other` holds the same bytes: the lengths, then one `memcmp` (`elementsEqual`
    /// goes byte by byte). Either may be empty with no base address.
    package func hasSameBytes(as other: UnsafeBufferPointer<UInt8>) -> Bool {
        count == other.count && (isEmpty || memcmp(baseAddress!, other.baseAddress!, count) == 0)
    }
}
