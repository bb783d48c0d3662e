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

    /// How long ICU may look for a whole match before the text is called undecided, in ICU's
    /// ticks of 10,000 steps (its match callback's unit): 10 million steps, about 0.2 s.
    /// ICU itself gives up in silence ("no match", no error) somewhere past 4,000 ticks: at
    /// 4,231 for `(?=a)((a+)+c|a+b)` against `a…ab`, 4,443 for `(?=x)(x+x+)+y`, 4,039 for
    /// `(\w)\1?(a*)*b` (2026-11-27, whatever the text's length), where it had answered
    /// "match" for `a{24}b` after 3,355. Stopping well before that, Lade knows when it
    /// stopped, and never takes a silent give-up for an answer.
    static let tickBudget = 1_000

    /// Whether the whole of `text` matches; nil when ICU could not decide: it went past
    /// `tickBudget`, or failed (its backtracking stack overflowed on a long text).
    func matchesWhole(_ text: String) -> Bool? {
        let whole = NSRange(text.startIndex..., in: text)
        if let wholeExpression {
            return Self.decide(wholeExpression, text, options: [], range: whole) { _ in true }
        }
        // Not reached for any pattern ICU accepts that we know of; the closest question left.
        return Self.decide(expression, text, options: [.anchored], range: whole) { $0.range == whole }
    }

    /// ICU's first match of `expression` in `range`, judged by `accept`; nil when ICU failed or
    /// ran past `tickBudget` (then it is stopped).
    private static func decide(_ expression: NSRegularExpression, _ text: String, options: NSRegularExpression.MatchingOptions,
                               range: NSRange, accept: (NSTextCheckingResult) -> Bool) -> Bool? {
        var first: NSTextCheckingResult?
        var undecided = false
        var ticks = 0
        expression.enumerateMatches(in: text, options: options.union([.reportProgress, .reportCompletion]), range: range) { result, flags, stop in
            if let result {
                first = result
                stop.pointee = true
            } else if flags.contains(.internalError) {
                undecided = true
            } else if flags.contains(.progress) {
                ticks += 1
                if ticks > tickBudget {
                    undecided = true
                    stop.pointee = true
                }
            }
        }
        if let first { return accept(first) }
        return undecided ? nil : false
    }

    func matchesSomewhere(_ text: String) -> Bool {
        expression.firstMatch(in: text, options: [], range: NSRange(text.startIndex..., in: text)) != nil
    }
}
