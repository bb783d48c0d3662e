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
