/// A compiled ICU regular expression, as Core Data's `regularExpressionString` uses it.
///
/// The common subset of ICU syntax is matched natively, in time linear in the text and
/// without allocating (a deterministic automaton over the string's UTF-8, or a Thompson NFA
/// simulation when the pattern uses `\b`): literals, `.`, classes `[...]` with ranges,
/// negation and escapes, `\d \D \w \W \s \S` with ICU's Unicode meanings, `\t \n \r \f \a \e`,
/// `\uhhhh`, `\Uhhhhhhhh`, `\xhh`, `\x{h…}`, escaped metacharacters, greedy and lazy
/// quantifiers `* + ? {n} {n,} {n,m}`, groups `( )` and `(?: )`, alternation, and the
/// assertions `^ $ \A \z \Z \b \B`. Anything else (lookaround, backreferences, possessive
/// quantifiers, `\p{…}`, inline flags, POSIX classes, set operations, `\Q…\E`, …) is handed to
/// NSRegularExpression, so every answer is ICU's. Matching runs over Unicode scalars, as ICU
/// matches code points.
///
/// Equality and hashing compare the patterns scalar by scalar (not by canonical equivalence:
/// `"é"` and `"e\u{301}"` are different patterns).
///
/// ```swift
/// let sku = try RegularExpression("[A-Z0-9][A-Z0-9-]{2,31}")
/// sku.matchesWhole("SKU-00012345")      // true
/// sku.matchesWhole("sku-1")             // false
/// sku.matchesSomewhere("ref sku-ABC1")  // true: "ABC1"
/// ```
///
/// Immutable once compiled: share one value between threads freely.
///
/// Related ICU documentation: <https://unicode-org.github.io/icu/userguide/strings/regexp.html>
public struct RegularExpression: Sendable, Hashable, CustomStringConvertible {
    /// The pattern, in ICU syntax.
    public let pattern: String
    private let engine: Engine

    private enum Engine: Sendable {
        case native(RegularExpressionMatcher)
        case icu(RegularExpressionFallback)
    }

    /// Compiles `pattern`.
    ///
    /// Throws ``RegularExpressionError`` for a pattern ICU refuses (and NSRegularExpression
    /// would refuse), saying where and what is wrong:
    ///
    /// ```swift
    /// try RegularExpression("(unclosed")
    /// // Invalid regular expression /(unclosed/ at offset 0: the group opened here is never closed with `)`.
    /// ```
    public init(_ pattern: String) throws {
        self.pattern = pattern
        do throws(RegularExpressionParser.Stop) {
            engine = .native(try RegularExpressionMatcher(try RegularExpressionParser.parse(pattern)))
        } catch {
            let stop = error
            // Either verdict is checked with ICU: refusals must be exactly ICU's, and whatever
            // the parser does not take natively, ICU answers.
            let error: RegularExpressionError
            switch stop {
            case .invalid(let reported), .outsideSubset(let reported): error = reported
            }
            guard let fallback = try? RegularExpressionFallback(pattern) else {
                throw RegularExpressionError(pattern: pattern, offset: error.offset, reason: error.reason)
            }
            engine = .icu(fallback)
        }
    }

    /// Whether the whole of `text` matches: Core Data's rule for `regularExpressionString`
    /// (ICU's `matches()`, as in `NSPredicate`'s `MATCHES`). Some way through the pattern
    /// must consume all of the text; `a|ab` matches all of `"ab"`.
    ///
    /// ```swift
    /// try RegularExpression("\\d{3}-\\d{4}").matchesWhole("555-0199")   // true
    /// ```
    public func matchesWhole(_ text: String) -> Bool {
        switch engine {
        case .native(let matcher): return matcher.matches(text, whole: true)
        case .icu(let fallback): return fallback.matchesWhole(text)
        }
    }

    /// Whether some part of `text`, possibly empty, matches (ICU's `find()`).
    ///
    /// ```swift
    /// try RegularExpression("[0-9]+").matchesSomewhere("order 66")   // true
    /// ```
    public func matchesSomewhere(_ text: String) -> Bool {
        switch engine {
        case .native(let matcher): return matcher.matches(text, whole: false)
        case .icu(let fallback): return fallback.matchesSomewhere(text)
        }
    }

    /// Whether the native engine matches this pattern (false: NSRegularExpression does).
    public var isNative: Bool {
        if case .native = engine { return true }
        return false
    }

    /// The NFA simulation's answer, bypassing the automaton (nil for a pattern ICU matches),
    /// so tests can hold both native paths to ICU's answers.
    func simulatedMatch(_ text: String, whole: Bool) -> Bool? {
        guard case .native(let matcher) = engine else { return nil }
        return matcher.program.matches(text.unicodeScalars.map(\.value), whole: whole)
    }

    public var description: String { "/\(pattern)/" }

    public static func == (lhs: RegularExpression, rhs: RegularExpression) -> Bool {
        lhs.pattern.unicodeScalars.elementsEqual(rhs.pattern.unicodeScalars)
    }

    public func hash(into hasher: inout Hasher) {
        for scalar in pattern.unicodeScalars { hasher.combine(scalar.value) }
    }
}
