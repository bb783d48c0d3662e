import Foundation

/// What `[c]`, `[d]`, `LIKE`, `MATCHES` and the sort comparators mean for strings, in one
/// place: the evaluator calls these functions directly and the SQLite store registers them as
/// SQL functions and collations (`SQLiteFunctions`), so both back ends run the same code.
///
/// - Without options strings compare by their UTF-8 bytes (SQLite's BINARY collation).
/// - `[c]` compares Unicode case folds (`ß` matches `SS`, `ﬁ` matches `fi`); `[d]` drops
///   diacritics (`é` matches `e`); with either, the folded strings are also put in canonical
///   composed form (NFC), so `e` + U+0301 and `é` compare equal.
/// - `LIKE`: `?` is one character (a grapheme cluster: `👍🏽` is one), `*` any run of
///   characters, `\` makes the next character literal; the pattern must match the whole string.
/// - `MATCHES`: an ICU regular expression that must match the whole string, run by Lade's own
///   linear-time engine (patterns that need backtracking are refused); `[c]` makes it
///   case-insensitive (ICU's case closure, by Lade's engine), `[d]` drops diacritics from the string matched.
enum StringComparison {
    /// The form `[c]`/`[d]` compare: the string itself when `options` is empty.
    static func fold(_ text: String, _ options: ComparisonOptions) -> String {
        guard !options.isEmpty else { return text }
        var foldOptions: String.CompareOptions = []
        if options.contains(.caseInsensitive) { foldOptions.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { foldOptions.insert(.diacriticInsensitive) }
        return text.folding(options: foldOptions, locale: nil).precomposedStringWithCanonicalMapping
    }

    static func beginsWith(_ text: String, _ prefix: String, _ options: ComparisonOptions) -> Bool {
        Array(fold(text, options).utf8).starts(with: fold(prefix, options).utf8)
    }

    static func endsWith(_ text: String, _ suffix: String, _ options: ComparisonOptions) -> Bool {
        Array(fold(text, options).utf8).reversed().starts(with: Array(fold(suffix, options).utf8).reversed())
    }

    static func contains(_ text: String, _ part: String, _ options: ComparisonOptions) -> Bool {
        let needle = Array(fold(part, options).utf8)
        return needle.isEmpty || Array(fold(text, options).utf8).firstRange(of: needle) != nil
    }

    /// -1, 0 or 1 by UTF-8 bytes of the folded strings.
    static func compare(_ a: String, _ b: String, _ options: ComparisonOptions) -> Int {
        let x = fold(a, options), y = fold(b, options)
        if x.utf8.elementsEqual(y.utf8) { return 0 }
        return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1
    }

    // MARK: LIKE

    static func like(_ text: String, _ pattern: String, _ options: ComparisonOptions) -> Bool {
        let characters = Array(fold(text, options))
        var tokens: [LikeToken] = []
        var escaped = false
        for character in fold(pattern, options) {
            if escaped {
                tokens.append(.literal(character))
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "*" {
                if tokens.last != .anyRun { tokens.append(.anyRun) }
            } else if character == "?" {
                tokens.append(.anyOne)
            } else {
                tokens.append(.literal(character))
            }
        }
        if escaped { tokens.append(.literal("\\")) }
        // Greedy wildcard matching with backtracking to the last `*` only: linear in practice.
        var t = 0, p = 0
        var starToken = -1, starText = 0
        while t < characters.count {
            if p < tokens.count, tokens[p] == .anyOne || tokens[p] == .literal(characters[t]) {
                t += 1
                p += 1
            } else if p < tokens.count, tokens[p] == .anyRun {
                starToken = p
                starText = t
                p += 1
            } else if starToken >= 0 {
                p = starToken + 1
                starText += 1
                t = starText
            } else {
                return false
            }
        }
        while p < tokens.count, tokens[p] == .anyRun { p += 1 }
        return p == tokens.count
    }

    private enum LikeToken: Equatable {
        case literal(Character)
        case anyOne
        case anyRun
    }

    // MARK: MATCHES

    /// The project's own engine matches (``RegularExpression``), in time linear in the text,
    /// `[c]` (or a pattern starting `(?i)`) as ICU's case-insensitive matching does. A pattern
    /// it cannot match that way (backreferences, lookaround: constructs that need
    /// backtracking, where ICU gives up on some texts and answers "no match" in silence) is
    /// refused with an error naming it. Under `[c]`, a text whose answer depends on ICU's
    /// folding of one character into two (`ß` against a pattern's `ss`) is ICU's to answer
    /// where ICU cannot give up (see `RegularExpression.matchesWholeExactly(_:)`), else refused.
    static func matches(_ text: String, _ pattern: String, _ options: ComparisonOptions) throws -> Bool {
        let subject = options.contains(.diacriticInsensitive) ? fold(text, .diacriticInsensitive) : text
        let expression = try linearExpression(pattern, caseInsensitive: options.contains(.caseInsensitive))
        do {
            return try expression.matchesWholeExactly(subject)
        } catch let error as RegularExpressionError {
            throw FetchPredicateError.invalidRegularExpression(pattern: pattern, reason: error.reason)
        }
    }

    private static let linearCache = LinearExpressionCache()

    /// Checks a MATCHES pattern before a query runs: compiled the way `matches` will use it.
    static func checkPattern(_ pattern: String, _ options: ComparisonOptions) throws {
        _ = try linearExpression(pattern, caseInsensitive: options.contains(.caseInsensitive))
    }

    static func linearExpression(_ pattern: String, caseInsensitive: Bool = false) throws -> RegularExpression {
        try linearCache.expression(pattern, caseInsensitive: caseInsensitive)
    }

    // MARK: Sorting

    /// `caseInsensitiveCompare:`: the `[c]` fold compared by bytes; strings that fold alike tie.
    static func caseInsensitiveCompare(_ a: String, _ b: String) -> Int {
        compare(a, b, .caseInsensitive)
    }

    /// `localizedStandardCompare:` as Lade defines it, the same on every machine (no locale):
    /// case and diacritics ignored, runs of ASCII digits compared as numbers ("file2" before
    /// "file10"); strings equal so far are ordered by their bytes, so only equal strings tie.
    static func localizedStandardCompare(_ a: String, _ b: String) -> Int {
        let x = Array(fold(a, [.caseInsensitive, .diacriticInsensitive]).utf8)
        let y = Array(fold(b, [.caseInsensitive, .diacriticInsensitive]).utf8)
        var i = 0, j = 0
        func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
        while i < x.count && j < y.count {
            if isDigit(x[i]) && isDigit(y[j]) {
                var iEnd = i, jEnd = j
                while iEnd < x.count && isDigit(x[iEnd]) { iEnd += 1 }
                while jEnd < y.count && isDigit(y[jEnd]) { jEnd += 1 }
                var iStart = i, jStart = j
                while iStart < iEnd - 1 && x[iStart] == 0x30 { iStart += 1 }
                while jStart < jEnd - 1 && y[jStart] == 0x30 { jStart += 1 }
                let left = x[iStart..<iEnd], right = y[jStart..<jEnd]
                if left.count != right.count { return left.count < right.count ? -1 : 1 }
                if left != right { return left.lexicographicallyPrecedes(right) ? -1 : 1 }
                i = iEnd
                j = jEnd
            } else {
                if x[i] != y[j] { return x[i] < y[j] ? -1 : 1 }
                i += 1
                j += 1
            }
        }
        if i < x.count { return 1 }
        if j < y.count { return -1 }
        return compare(a, b, [])
    }
}

/// The project's linear-time expressions by pattern, shared by the evaluator and SQLite connections.
private final class LinearExpressionCache: @unchecked Sendable {
    private let lock = NSLock()
    /// By pattern, case-sensitive ones and `[c]` ones apart (no key built per match).
    private var expressions: [String: RegularExpression] = [:]
    private var insensitiveExpressions: [String: RegularExpression] = [:]

    func expression(_ pattern: String, caseInsensitive: Bool) throws -> RegularExpression {
        if let cached = lock.withLock({ caseInsensitive ? insensitiveExpressions[pattern] : expressions[pattern] }) { return cached }
        let compiled: RegularExpression
        do {
            compiled = try RegularExpression(pattern, caseInsensitive: caseInsensitive)
        } catch let error as RegularExpressionError {
            throw FetchPredicateError.invalidRegularExpression(pattern: pattern, reason: error.reason)
        }
        guard compiled.isNative else {
            if let why = compiled.whyNotNative, why.hasPrefix("its literal") {
                throw FetchPredicateError.invalidRegularExpression(pattern: pattern, reason: "under [c], \(why): spell both cases in the pattern, or match without [c]")
            }
            throw FetchPredicateError.invalidRegularExpression(
                pattern: pattern, reason: "it uses a construct that needs backtracking (a backreference, lookaround, an inline flag, \\p{…} or similar), which Lade does not run in MATCHES: ICU gives up on some texts and answers \"no match\" without saying so. Rewrite it without that construct")
        }
        lock.withLock {
            if expressions.count + insensitiveExpressions.count > 512 {
                expressions.removeAll()
                insensitiveExpressions.removeAll()
            }
            if caseInsensitive { insensitiveExpressions[pattern] = compiled } else { expressions[pattern] = compiled }
        }
        return compiled
    }
}
