/// Why a pattern is not a regular expression ICU (and so Core Data) would accept.
///
/// Its ``description`` reads as one sentence that names the pattern, the position and
/// what is wrong there:
///
/// ```swift
/// do { _ = try RegularExpression("[A-Z]{5,2}") }
/// catch { print(error) }
/// // Invalid regular expression /[A-Z]{5,2}/ at offset 5: the repetition {5,2} has a maximum below its minimum.
/// ```
///
/// Related ICU documentation: <https://unicode-org.github.io/icu/userguide/strings/regexp.html>
public struct RegularExpressionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The refused pattern.
    public let pattern: String
    /// Where the problem is, counted in Unicode scalars from 0.
    public let offset: Int
    /// What is wrong at ``offset``, as a clause (no leading capital, no final period).
    public let reason: String

    package init(pattern: String, offset: Int, reason: String) {
        self.pattern = pattern
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        "Invalid regular expression /\(pattern)/ at offset \(offset): \(reason)."
    }
}

extension RegularExpressionError: LadeError {
    public var code: String { "regex" }
}
