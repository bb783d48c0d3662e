import Foundation
import Testing
@testable import Lade

/// ICU's own answers, through NSRegularExpression: the oracle every test compares with.
///
/// A whole match is ICU's `matches()` (Core Data's rule, `NSPredicate`'s `MATCHES`), asked as
/// a search for `\A(?:pattern)\z`; a match somewhere is `firstMatch` over the whole text.
struct ICUOracle {
    let plain: NSRegularExpression
    let whole: NSRegularExpression

    init?(_ pattern: String) {
        // A pattern ending inside `\Q…` or an `(?x)` comment would swallow the wrapper's end:
        // `\E` or a newline ends those first.
        guard let plain = try? NSRegularExpression(pattern: pattern),
            let whole = ["", "\\E", "\n"].lazy.compactMap({ try? NSRegularExpression(pattern: "\\A(?:" + pattern + $0 + ")\\z") }).first
        else { return nil }
        self.plain = plain
        self.whole = whole
    }

    func matchesWhole(_ text: String) -> Bool {
        whole.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    func matchesSomewhere(_ text: String) -> Bool {
        plain.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// The first match anchored at the start spans the text: a stricter question than
    /// `matches()` (`a|ab` on "ab" finds "a" first), which implies it.
    func firstAnchoredMatchIsWhole(_ text: String) -> Bool {
        let range = NSRange(text.startIndex..., in: text)
        return plain.firstMatch(in: text, options: [.anchored], range: range)?.range == range
    }
}

/// Random patterns from the native grammar, each with a way to produce texts it likely matches.
struct PatternGenerator {
    var random: SeededGenerator

    /// Texts are made of these: ASCII, non-ASCII letters and digits, a combining mark, a
    /// format character, emoji, line terminators (CR LF among them).
    static let textPieces: [String] = [
        "a", "b", "c", "A", "Z", "0", "7", "_", "-", ".", " ", "@", "é", "ß", "Ж", "日", "٣", "\u{301}", "\u{200D}",
        "\u{AD}", "😀", "\n", "\r", "\r\n", "\u{2028}", "\u{85}", "\t", "\u{A0}", "]", "&", "^", "\\",
    ]

    /// Literal atoms: what the pattern says, and a text it matches.
    static let literals: [(String, String)] = [
        ("a", "a"), ("b", "b"), ("c", "c"), ("A", "A"), ("0", "0"), ("-", "-"), ("_", "_"), (" ", " "), ("@", "@"),
        ("é", "é"), ("ß", "ß"), ("日", "日"), ("😀", "😀"), ("\u{301}", "\u{301}"), ("]", "]"), ("#", "#"),
        ("\\.", "."), ("\\-", "-"), ("\\*", "*"), ("\\\\", "\\"), ("\\t", "\t"), ("\\n", "\n"), ("\\r", "\r"),
        ("\\u00E9", "é"), ("\\x{1F600}", "😀"), ("\\x41", "A"), ("\\U0001F600", "😀"), ("\\e", "\u{1B}"), ("\\ ", " "),
    ]

    /// Class atoms and escapes: pattern and a text in the set.
    static let classes: [(String, String)] = [
        (".", "x"), ("\\d", "٣"), ("\\D", "a"), ("\\w", "ß"), ("\\W", " "), ("\\s", "\u{A0}"), ("\\S", "é"),
        ("[abc]", "b"), ("[a-c]", "c"), ("[^a]", "b"), ("[^\\d\\s]", "Ж"), ("[é-ü]", "ö"), ("[\\w-]", "-"),
        ("[-a]", "-"), ("[a-]", "a"), ("[]a]", "]"), ("[^]a]", "b"), ("[a&b]", "&"), ("[.$^|(){*+?]", "^"),
        ("[\\]\\[]", "["), ("[ \\t]", "\t"), ("[\\x{1F600}-\\x{1F64F}]", "😀"), ("[\\u0300-\\u036F]", "\u{301}"),
        ("[A-Z0-9]", "Q"), ("[^@\\s]", "x"), ("[\\D\\d]", "z"), ("[\\n\\r]", "\r"), ("[^\\n]", "\r"),
    ]

    static let assertions = ["^", "$", "\\A", "\\z", "\\Z", "\\b", "\\B"]

    /// A pattern of at most `depth` levels of nesting, and a text it probably matches.
    ///
    /// Quantifiers nest at most two deep: ICU backtracks, and `((a|a)*)*`-like patterns
    /// would keep the oracle busy for minutes.
    mutating func pattern(depth: Int) -> (pattern: String, sample: String) {
        let (pattern, sample, _) = quantifiedPattern(depth: depth)
        return (pattern, sample)
    }

    private mutating func quantifiedPattern(depth: Int) -> (String, String, nesting: Int) {
        let roll = Int.random(in: 0..<100, using: &random)
        switch roll {
        case 0..<30 where depth > 0:
            var pattern = ""
            var sample = ""
            var nesting = 0
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let (p, s, n) = quantifiedPattern(depth: depth - 1)
                pattern += p
                sample += s
                nesting = max(nesting, n)
            }
            return (pattern, sample, nesting)
        case 30..<42 where depth > 0:
            let branches = (0..<Int.random(in: 2...3, using: &random)).map { _ in
                Int.random(in: 0..<8, using: &random) == 0 ? ("", "", 0) : quantifiedPattern(depth: depth - 1)
            }
            let chosen = branches.randomElement(using: &random)!
            let open = Bool.random(using: &random) ? "(" : "(?:"
            return (open + branches.map(\.0).joined(separator: "|") + ")", chosen.1, branches.map(\.2).max()!)
        case 42..<60 where depth > 0:
            let (inner, sample, nesting) = quantifiedPattern(depth: depth - 1)
            // Nor a repeated assertion (`(\\b)*`) or zero count (`(x{0})*`): ICU crawls on both.
            if nesting >= 2 || inner.contains("{0}") || Self.assertions.contains(inner) { return (inner, sample, nesting) }
            let grouped = inner.unicodeScalars.count == 1 || inner.hasPrefix("(") && inner.hasSuffix(")") && !inner.contains("|") ? inner : "(" + inner + ")"
            let lazy = Int.random(in: 0..<4, using: &random) == 0 ? "?" : ""
            // Over a quantified body, only bounded quantifiers: ICU is exponential on `((\\s)*)*`.
            let bounded: [(String, Int)] = [("?", 1), ("{2}", 2), ("{0,2}", 1), ("{2,3}", 3)]
            let unbounded: [(String, Int)] = [("*", 2), ("+", 1), ("{1,}", 3), ("{0}", 0), ("*", 0)]
            let (quantifier, times) = (nesting == 0 ? bounded + unbounded : bounded).randomElement(using: &random)!
            let safeGroup = grouped.hasSuffix("\\") ? "(" + inner + ")" : grouped
            return (safeGroup + quantifier + lazy, String(repeating: sample, count: times), nesting + 1)
        case 60..<68:
            return (Self.assertions.randomElement(using: &random)!, "", 0)
        case 68..<84:
            let (pattern, sample) = Self.classes.randomElement(using: &random)!
            return (pattern, sample, 0)
        default:
            let (pattern, sample) = Self.literals.randomElement(using: &random)!
            return (pattern, sample, 0)
        }
    }

    /// Texts to try a pattern on: its sample, variations of it, and random texts.
    mutating func texts(around sample: String) -> [String] {
        let sample = String(String.UnicodeScalarView(sample.unicodeScalars.prefix(12)))
        var texts = [sample, "", sample + "\n", sample + "\r\n", "a" + sample, sample + sample]
        var scalars = Array(sample.unicodeScalars)
        if !scalars.isEmpty {
            scalars.remove(at: Int.random(in: 0..<scalars.count, using: &random))
            texts.append(String(String.UnicodeScalarView(scalars)))
        }
        for _ in 0..<5 {
            let count = Int.random(in: 0...6, using: &random)
            texts.append((0..<count).map { _ in Self.textPieces.randomElement(using: &random)! }.joined())
        }
        return texts
    }
}

@Suite("RegularExpression: ICU's answers, natively and fast")
struct RegularExpressionTests {
    /// Compares `pattern` with ICU on `texts`; returns a description of the first disagreement.
    func disagreement(_ pattern: String, on texts: [String]) -> String? {
        guard let oracle = ICUOracle(pattern) else {
            return (try? RegularExpression(pattern)) == nil ? nil : "/\(pattern)/ compiles, but ICU refuses it"
        }
        let expression: RegularExpression
        do { expression = try RegularExpression(pattern) } catch { return "/\(pattern)/ is refused, but ICU accepts it: \(error)" }
        for text in texts {
            let shown = text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined()
            let whole = oracle.matchesWhole(text)
            if expression.matchesWhole(text) != whole {
                return "/\(pattern)/ matchesWhole(\"\(shown)\") is \(!whole), ICU says \(whole) (native: \(expression.isNative))"
            }
            if oracle.firstAnchoredMatchIsWhole(text) && !whole {
                return "/\(pattern)/ on \"\(shown)\": the first anchored match spans the text, but matches() says no"
            }
            if let simulated = expression.simulatedMatch(text, whole: true), simulated != whole {
                return "/\(pattern)/ simulated whole match of \"\(shown)\" is \(simulated), ICU says \(whole)"
            }
            let somewhere = oracle.matchesSomewhere(text)
            if let simulated = expression.simulatedMatch(text, whole: false), simulated != somewhere {
                return "/\(pattern)/ simulated search in \"\(shown)\" is \(simulated), ICU says \(somewhere)"
            }
            if expression.matchesSomewhere(text) != somewhere {
                return "/\(pattern)/ matchesSomewhere(\"\(shown)\") is \(!somewhere), ICU says \(somewhere) (native: \(expression.isNative))"
            }
        }
        return nil
    }

    @Test("thousands of generated patterns answer as ICU does, whole and somewhere", .slow)
    func differential() throws {
        let seed = ProcessInfo.processInfo.environment["LADE_REGEX_SEED"].flatMap { UInt64($0) } ?? 20_261_122
        var generator = PatternGenerator(random: SeededGenerator(seed: seed))
        var patterns = 0
        var native = 0
        var texts = 0
        var failures: [String] = []
        let count = ProcessInfo.processInfo.environment["LADE_REGEX_PATTERNS"].flatMap { Int($0) } ?? 3000
        for _ in 0..<count {
            let (pattern, sample) = generator.pattern(depth: 3)
            guard !pattern.isEmpty else { continue }
            let inputs = generator.texts(around: sample)
            patterns += 1
            texts += inputs.count
            if (try? RegularExpression(pattern))?.isNative == true { native += 1 }
            if let failure = disagreement(pattern, on: inputs) { failures.append(failure) }
        }
        print("differential (seed \(seed)): \(patterns) patterns (\(native) native) × \(texts) texts, \(failures.count) disagreements")
        #expect(failures.isEmpty, "seed \(seed) (replay with LADE_REGEX_SEED=\(seed)): \(failures.prefix(10).joined(separator: "\n"))")
        #expect(native * 10 >= patterns * 9, "most generated patterns should be native")
    }

    @Test("every regularExpressionString in the corpus compiles and answers as ICU does", .needsCorpus)
    func corpus() throws {
        var found: [String] = []
        for directory in Corpus.modelDirectories() {
            guard let xml = try? String(contentsOf: directory.appendingPathComponent("contents"), encoding: .utf8) else { continue }
            found += Self.attributeValues(named: "regularExpressionString", in: xml)
        }
        print("corpus: \(found.count) regularExpressionString value(s)")
        for pattern in found {
            #expect(throws: Never.self, "/\(pattern)/") { _ = try RegularExpression(pattern) }
            #expect(disagreement(pattern, on: Self.samples) == nil)
        }
    }

    @Test("patterns seen in published Core Data models answer as ICU does")
    func publishedPatterns() throws {
        let patterns = [
            "^[-_A-Za-z0-9]{1,64}$", "\\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}\\b",
            "[A-Z0-9][A-Z0-9-]{2,31}", "[^@\\s]+@[^@\\s]+", "\\d{3}-\\d{4}", "[A-Z]{3}-[0-9]{4}", "[A-Za-z ]*",
            "^\\+?[0-9 ()-]{7,20}$", "#[0-9a-fA-F]{6}", "[0-9]{5}(-[0-9]{4})?", "https?://.+", "\\w+( \\w+)*",
        ]
        let texts = Self.samples + ["release-notes_2024", "jane.doe@example.com", "SKU-00012345", "555-0199", "ABC-1234",
                                    "+1 (555) 010-0199", "#c0ffee", "12345-6789", "https://example.com", "Königsallee straße"]
        for pattern in patterns {
            #expect(try RegularExpression(pattern).isNative, "/\(pattern)/")
            #expect(disagreement(pattern, on: texts) == nil)
        }
    }

    @Test("a whole match is ICU's matches(): any way through the pattern may consume the text")
    func wholeMatchIsMatches() throws {
        let expression = try RegularExpression("a|ab")
        #expect(expression.matchesWhole("ab"))
        #expect(!expression.matchesWhole("abb"))
        #expect(try RegularExpression("[A-Z0-9][A-Z0-9-]{2,31}").matchesWhole("SKU-00012345"))
        #expect(try !RegularExpression("[A-Z0-9][A-Z0-9-]{2,31}").matchesWhole("-SKU"))
    }

    @Test("$ and \\Z hold before a final line terminator, but not inside CR LF")
    func dollar() throws {
        let expression = try RegularExpression("a$")
        #expect(expression.matchesSomewhere("a\n"))
        #expect(expression.matchesSomewhere("a\r\n"))
        #expect(expression.matchesSomewhere("a\u{2028}"))
        #expect(!expression.matchesSomewhere("a\n\n"))
        #expect(try RegularExpression("a\\r$\\n").matchesWhole("a\r\n") == ICUOracle("a\\r$\\n")!.matchesWhole("a\r\n"))
    }

    @Test("\\b skips combining marks and format characters, as ICU does")
    func wordBoundary() throws {
        for (pattern, text) in [("\\bé\\b", "e\u{301}"), ("a\\b", "a\u{301}"), ("a\\B\u{301}", "a\u{301}"), ("\\b\u{200D}", "\u{200D}"),
                                ("x\\b ", "x "), ("\\b", ""), ("\\B", ""), ("a\u{AD}\\b", "a\u{AD}")] {
            #expect(disagreement(pattern, on: [text]) == nil)
        }
    }

    @Test("invalid patterns are refused where ICU refuses them, with position and reason")
    func invalid() throws {
        let cases: [(String, Int, String)] = [
            ("(unclosed", 0, "never closed"), ("abc)", 3, "closes no group"), ("[a-z", 0, "never closed"),
            ("[z-a]", 1, "reversed"), ("a{5,2}", 1, "maximum below its minimum"), ("*a", 0, "nothing before it to repeat"),
            ("a**", 2, "follows another quantifier"), ("a{", 1, "must begin a repetition"), ("a{x}", 1, "must begin a repetition"),
            ("}", 0, "closes no repetition"), ("\\", 0, "lone backslash"), ("\\u12", 0, "four hexadecimal digits"),
            ("\\x{110000}", 0, "above U+10FFFF"), ("", 0, "empty pattern"), ("[a-\\d]", 3, "single character"),
            ("(?", 0, "ICU refuses the pattern at or after the group syntax"), ("\\8", 0, "back reference `\\8`"), ("[[a-z]", 1, "nested set"), ("a{1,2}{3}", 6, "follows another quantifier"),
        ]
        for (pattern, offset, reason) in cases {
            #expect(ICUOracle(pattern) == nil, "ICU accepts /\(pattern)/")
            let error = #expect(throws: RegularExpressionError.self, "/\(pattern)/") { try RegularExpression(pattern) }
            #expect(error?.offset == offset, "/\(pattern)/: \(String(describing: error))")
            #expect(error?.reason.contains(reason) == true, "/\(pattern)/: \(String(describing: error))")
            #expect(error?.description.hasPrefix("Invalid regular expression /\(pattern)/ at offset \(offset): ") == true)
        }
    }

    @Test("patterns outside the native subset fall back to NSRegularExpression and answer exactly", .slow)
    func fallback() throws {
        let patterns = [
            "(\\w)\\1", "(?i)a(?=b)", "a(?=b)", "(?<!x)y", "\\p{Lu}+\\p{Ll}*", "a*+", "[[a-z]&&[^aeiou]]+", "\\Qa.b\\E",
            "[[:alpha:]]+", "(?x) a b # comment", "\\Qab", "(?x)a#c", "[\\d-z]+", "(?<name>a)\\k<name>", "\\N{LATIN SMALL LETTER A}",
            "[a-z--[aeiou]]+", "\\h+", "\\R", "(?s).+", "(?m)^a$", "\\cA", "\\0101", "[\\b]", "a{2000}", "\\uD83D", "(|x)*?", "((?:|x)*?){2,3}",
        ]
        let texts = Self.samples + ["aa", "ABC", "abc", "ab", "a.b", "Abc", "bcd", "a b", "aA", "\u{1}", "A", "\u{8}"]
        for pattern in patterns {
            let expression = try RegularExpression(pattern)
            #expect(!expression.isNative, "/\(pattern)/ should take the fallback")
            #expect(disagreement(pattern, on: texts) == nil)
        }
        // The wrapper for a whole match survives a pattern that ends inside a quote or a comment.
        #expect(try RegularExpression("\\Qa.b").matchesWhole("a.b"))
        #expect(try !RegularExpression("\\Qa.b").matchesWhole("axb"))
        #expect(try RegularExpression("(?x) a b # comment").matchesWhole("ab"))
        #expect(try !RegularExpression("(?x) a b # comment").matchesWhole("a b"))
    }

    @Test("catastrophic patterns return promptly")
    func pathological() throws {
        let clock = ContinuousClock()
        let cases: [(String, String, Bool)] = [
            ("(a*)*b", String(repeating: "a", count: 30), false), ("(a|aa)*c", String(repeating: "a", count: 40), false),
            ("(x+x+)+y", String(repeating: "x", count: 30), false), ("(a?){25}a{25}", String(repeating: "a", count: 25), true),
            ("(\\w+\\s?)*$!", String(repeating: "ab ", count: 30), false), ("(.*a){20}", String(repeating: "a", count: 19), false),
        ]
        for (pattern, text, answer) in cases {
            let expression = try RegularExpression(pattern)
            #expect(expression.isNative)
            let elapsed = clock.measure {
                #expect(expression.matchesWhole(text) == answer, "/\(pattern)/")
                #expect(expression.matchesSomewhere(text + "\n") == answer, "/\(pattern)/")
            }
            #expect(elapsed < .seconds(1), "/\(pattern)/ took \(elapsed)")
        }
    }

    @Test("equal and hashed by the pattern's scalars, not by canonical equivalence")
    func equality() throws {
        #expect(try RegularExpression("[a-z]+") == RegularExpression("[a-z]+"))
        #expect(try RegularExpression("é") != RegularExpression("e\u{301}"))
        #expect(try Set([RegularExpression("a"), RegularExpression("a"), RegularExpression("b")]).count == 2)
        #expect(try !RegularExpression("é").matchesWhole("e\u{301}"))
    }

    @Test("one compiled expression is shared by many threads")
    func sendable() async throws {
        let expression = try RegularExpression("[A-Z0-9][A-Z0-9-]{2,31}")
        let answers = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<16 {
                group.addTask { (0..<500).allSatisfy { _ in expression.matchesWhole("SKU-\(index)") } }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0 })
    }

    /// Texts every pattern from a model is tried on.
    static let samples = [
        "", "a", "A", "abc", "ABC", "123", "a1", "Zürich", "e\u{301}", "😀", "hello world", "x\n", "x\r\n", " ", "_", "-",
        "jane@example.com", "AB-12", "\u{2028}", "٣٤٥",
    ]

    /// The values of every `name="…"` attribute in `xml`, with XML's five entities decoded.
    static func attributeValues(named name: String, in xml: String) -> [String] {
        var values: [String] = []
        var rest = xml[...]
        let marker = " \(name)=\""
        while let start = rest.range(of: marker) {
            rest = rest[start.upperBound...]
            guard let end = rest.firstIndex(of: "\"") else { break }
            values.append(String(rest[..<end])
                .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
                .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                .replacingOccurrences(of: "&amp;", with: "&"))
            rest = rest[end...]
        }
        return values
    }
}
