import Foundation

/// NSRegularExpression standing in for the native engine on patterns outside its subset
/// (lookaround, backreferences, `\p{…}`, inline flags, set operations, `\Q…\E`, …), so the
/// answer is always ICU's own.
///
/// A whole match is asked as ICU's `matches()` (what `NSPredicate`'s `MATCHES` uses): the
/// pattern is wrapped as `\A(?:pattern)\z`, so ICU backtracks until a match spans the text.
/// When the wrapper cannot be closed (the pattern ends inside a `\Q…` quote or an `(?x)`
/// comment), a `\E` or a newline ends it first.
///
/// ```swift
/// let fallback = try RegularExpressionFallback("(\\w)\\1")
/// fallback.matchesWhole("aa")   // true
/// ```
///
/// Related ICU documentation: <https://unicode-org.github.io/icu/userguide/strings/regexp.html>
final class RegularExpressionFallback: @unchecked Sendable {
    // @unchecked: NSRegularExpression is immutable once made and documented as safe to share
    // between threads; neither reference is ever replaced.
    private let expression: NSRegularExpression
    private let wholeExpression: NSRegularExpression?

    /// Compiles `pattern` with ICU; throws NSRegularExpression's error when ICU refuses it.
    init(_ pattern: String, caseInsensitive: Bool = false) throws {
        let options: NSRegularExpression.Options = caseInsensitive ? [.caseInsensitive] : []
        expression = try NSRegularExpression(pattern: pattern, options: options)
        wholeExpression = ["", "\\E", "\n"].lazy.compactMap { closer in
            try? NSRegularExpression(pattern: "\\A(?:" + pattern + closer + ")\\z", options: options)
        }.first
    }

    /// Whether ICU accepts `pattern`.
    static func accepts(_ pattern: String) -> Bool {
        (try? NSRegularExpression(pattern: pattern)) != nil
    }

    func matchesWhole(_ text: String) -> Bool {
        let whole = NSRange(text.startIndex..., in: text)
        if let wholeExpression {
            return wholeExpression.firstMatch(in: text, options: [], range: whole) != nil
        }
        // Not reached for any pattern ICU accepts that we know of; the closest question left.
        return expression.firstMatch(in: text, options: [.anchored], range: whole)?.range == whole
    }

    func matchesSomewhere(_ text: String) -> Bool {
        expression.firstMatch(in: text, options: [], range: NSRange(text.startIndex..., in: text)) != nil
    }
}
