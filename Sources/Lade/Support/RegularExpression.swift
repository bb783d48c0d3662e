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
package struct RegularExpression: Sendable, Hashable, CustomStringConvertible {
    /// The pattern, in ICU syntax.
    package let pattern: String
    /// Whether letters match in either case (ICU's `UREGEX_CASE_INSENSITIVE`, `MATCHES[c]`).
    package let isCaseInsensitive: Bool
    private let engine: Engine
    /// Case-insensitive only: the scalars the pattern's literals match, for `undecidableScalar(in:)`.
    private let literalScalars: Set<UInt32>
    /// Why the native engine does not match this pattern (nil when it does).
    package let whyNotNative: String?
    /// Case-insensitive native patterns whose literals could meet ICU's folding of one
    /// character into two, when ICU answers such texts in bounded time (see
    /// `RegularExpressionCaseFolding.backtracksBoundedly`): ICU, for those texts alone.
    private let foldingOracle: RegularExpressionFallback?

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
    package init(_ pattern: String) throws {
        try self.init(pattern, caseInsensitive: false)
    }

    /// Compiles `pattern`, matching letters in either case when `caseInsensitive` (or when
    /// the pattern starts with `(?i)`), as ICU does (see `RegularExpressionCaseFolding`).
    ///
    /// A case-insensitive pattern is matched natively or not at all: one the native engine
    /// cannot match exactly as ICU would (a backreference, lookaround, or a literal such as
    /// `ß` whose case folding is two characters) throws, saying why.
    package init(_ pattern: String, caseInsensitive: Bool) throws {
        self.pattern = pattern
        var body = pattern
        var insensitive = caseInsensitive
        if pattern.hasPrefix("(?i)") && pattern.unicodeScalars.count > 4 {
            body = String(pattern.unicodeScalars.dropFirst(4))
            insensitive = true
        }
        isCaseInsensitive = insensitive
        if insensitive {
            do throws(RegularExpressionParser.Stop) {
                let syntax = try RegularExpressionParser.parse(body)
                engine = .native(try RegularExpressionMatcher(try RegularExpressionCaseFolding.close(syntax, pattern: pattern)))
                literalScalars = RegularExpressionCaseFolding.literalScalars(syntax)
                whyNotNative = nil
                foldingOracle = RegularExpressionCaseFolding.backtracksBoundedly(syntax)
                    ? try? RegularExpressionFallback(pattern, caseInsensitive: caseInsensitive) : nil
            } catch {
                let reported: RegularExpressionError
                switch error {
                case .invalid(let found), .outsideSubset(let found): reported = found
                }
                // Refusals are ICU's; what ICU accepts and the native engine does not match
                // exactly, ICU matches (MATCHES refuses such patterns, see `whyNotNative`).
                guard let fallback = try? RegularExpressionFallback(pattern, caseInsensitive: caseInsensitive) else {
                    throw RegularExpressionError(pattern: pattern, offset: reported.offset + (body == pattern ? 0 : 4), reason: reported.reason)
                }
                literalScalars = []
                engine = .icu(fallback)
                whyNotNative = reported.reason
                foldingOracle = nil
            }
            return
        }
        literalScalars = []
        foldingOracle = nil
        do throws(RegularExpressionParser.Stop) {
            engine = .native(try RegularExpressionMatcher(try RegularExpressionParser.parse(pattern)))
            whyNotNative = nil
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
            whyNotNative = error.reason
            return
        }
    }

    /// Whether the whole of `text` matches: Core Data's rule for `regularExpressionString`
    /// (ICU's `matches()`, as in `NSPredicate`'s `MATCHES`). Some way through the pattern
    /// must consume all of the text; `a|ab` matches all of `"ab"`.
    ///
    /// ```swift
    /// try RegularExpression("\\d{3}-\\d{4}").matchesWhole("555-0199")   // true
    /// ```
    package func matchesWhole(_ text: String) -> Bool {
        switch engine {
        case .native(let matcher): return matcher.matches(text, whole: true)
        // ICU may give up on a text (`matchesWholeExactly(_:)` says so); that is no match here.
        case .icu(let fallback): return fallback.matchesWhole(text) ?? false
        }
    }

    /// Whether some part of `text`, possibly empty, matches (ICU's `find()`).
    ///
    /// ```swift
    /// try RegularExpression("[0-9]+").matchesSomewhere("order 66")   // true
    /// ```
    package func matchesSomewhere(_ text: String) -> Bool {
        switch engine {
        case .native(let matcher): return matcher.matches(text, whole: false)
        case .icu(let fallback): return fallback.matchesSomewhere(text)
        }
    }

    /// For a case-insensitive pattern, the first scalar of `text` whose case folding is more
    /// than one character and starts with one the pattern's literals match (`ß` against
    /// `ss`): ICU's full folding could answer differently there, so the caller must refuse
    /// rather than answer. Nil when the answer is exactly ICU's.
    package func undecidableScalar(in text: String) -> Unicode.Scalar? {
        guard isCaseInsensitive, !literalScalars.isEmpty else { return nil }
        for scalar in text.unicodeScalars where scalar.value >= 0xDF {
            if let folding = RegularExpressionCaseFolding.multipleFoldings[scalar.value], literalScalars.contains(folding[0]) {
                return scalar
            }
        }
        return nil
    }

    /// The longest text ICU is asked about (see `matchesWholeExactly(_:)`): its backtracking
    /// stack grows with the text, and past its limit ICU answers "no match" in silence.
    static let largestFoldedText = 4096

    /// Whether the whole of `text` matches, with ICU's answer also where ICU folds one of the
    /// text's characters into two (`ß` as `ss`, see `undecidableScalar(in:)`): those texts go
    /// to ICU itself when the pattern backtracks boundedly and the text is short; otherwise
    /// this throws rather than guess. It throws too where ICU, matching a pattern outside the
    /// native subset, gives up on the text (backtracking that would take too long), where
    /// `matchesWhole(_:)` answers no.
    package func matchesWholeExactly(_ text: String) throws -> Bool {
        if case .icu(let fallback) = engine {
            guard let answer = fallback.matchesWhole(text) else { throw undecided(text) }
            return answer
        }
        guard let scalar = undecidableScalar(in: text) else { return matchesWhole(text) }
        if let foldingOracle, text.unicodeScalars.count <= Self.largestFoldedText {
            guard let answer = foldingOracle.matchesWhole(text) else { throw undecided(text) }
            return answer
        }
        throw RegularExpressionError(
            pattern: pattern, offset: 0,
            reason: "a text holds '\(scalar)', whose case folding is more than one character, and only ICU matches that as Core Data does; "
                + (foldingOracle == nil
                    ? "the pattern nests quantifiers or alternations or has more than two long ones, where ICU may take too long or give up in silence"
                    : "the text is longer than \(Self.largestFoldedText) characters, where ICU may give up in silence")
                + ": spell both cases in the pattern, or match without [c]")
    }

    /// ICU gave up on `text`: why, and what to do.
    private func undecided(_ text: String) -> RegularExpressionError {
        RegularExpressionError(
            pattern: pattern, offset: 0,
            reason: "ICU, which matches " + (whyNotNative.map { "this pattern for Lade (\($0))" } ?? "texts whose case folding is more than one character for Lade")
                + ", could not decide a text of \(text.unicodeScalars.count) characters within \(RegularExpressionFallback.tickBudget * 10_000) steps of backtracking: "
                + "nested or alternated quantifiers that can match the same characters, such as (a+)+, backtrack exponentially; "
                + "rewrite the pattern without them, or within the native subset (no lookaround or backreferences)")
    }

    /// Whether the native engine matches this pattern (false: NSRegularExpression does).
    package var isNative: Bool {
        if case .native = engine { return true }
        return false
    }

    /// The NFA simulation's answer, bypassing the automaton (nil for a pattern ICU matches),
    /// so tests can hold both native paths to ICU's answers.
    func simulatedMatch(_ text: String, whole: Bool) -> Bool? {
        guard case .native(let matcher) = engine else { return nil }
        return matcher.program.matches(text.unicodeScalars.map(\.value), whole: whole)
    }

    package var description: String { "/\(pattern)/" }

    package static func == (lhs: RegularExpression, rhs: RegularExpression) -> Bool {
        lhs.isCaseInsensitive == rhs.isCaseInsensitive && lhs.pattern.unicodeScalars.elementsEqual(rhs.pattern.unicodeScalars)
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(isCaseInsensitive)
        for scalar in pattern.unicodeScalars { hasher.combine(scalar.value) }
    }
}
