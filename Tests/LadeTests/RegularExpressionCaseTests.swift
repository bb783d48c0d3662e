import Foundation
import Testing
@testable import Lade

/// Case-insensitive matching (`MATCHES[c]`, `(?i)`) on Lade's own engine, held to ICU's
/// answers through NSRegularExpression with `.caseInsensitive`.
@Suite("RegularExpression: case-insensitive, as ICU")
struct RegularExpressionCaseTests {
    func icu(_ pattern: String) -> NSRegularExpression? {
        try? NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z", options: [.caseInsensitive])
    }

    func icuSearch(_ pattern: String) -> NSRegularExpression? {
        try? NSRegularExpression(pattern: pattern, options: [.caseInsensitive])
    }

    func found(_ expression: NSRegularExpression, _ text: String) -> Bool {
        expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// The first disagreement with ICU on `texts`, skipping texts the engine says it cannot decide.
    func disagreement(_ pattern: String, _ texts: [String]) throws -> String? {
        guard let whole = icu(pattern), let search = icuSearch(pattern) else { return nil }
        let expression = try RegularExpression(pattern, caseInsensitive: true)
        #expect(expression.isNative)
        for text in texts {
            let shown = text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined()
            // Where ICU folds one of the text's characters into two, the exact answer is
            // ICU's own (or a refusal): compared whole only.
            guard expression.undecidableScalar(in: text) == nil else {
                if let exact = try? expression.matchesWholeExactly(text), exact != found(whole, text) {
                    return "/\(pattern)/i matchesWholeExactly(\"\(shown)\") is \(exact), ICU says \(found(whole, text))"
                }
                continue
            }
            if try expression.matchesWholeExactly(text) != found(whole, text) {
                return "/\(pattern)/i matchesWholeExactly(\"\(shown)\") is \(!found(whole, text)), ICU says \(found(whole, text))"
            }
            if expression.matchesWhole(text) != found(whole, text) {
                return "/\(pattern)/i matchesWhole(\"\(shown)\") is \(!found(whole, text)), ICU says \(found(whole, text))"
            }
            if expression.matchesSomewhere(text) != found(search, text) {
                return "/\(pattern)/i matchesSomewhere(\"\(shown)\") is \(!found(search, text)), ICU says \(found(search, text))"
            }
        }
        return nil
    }

    @Test("ICU's case closure of sets, before negation, and its single-character literals", arguments: [
        "[^a]", "s", "k", "[^k]", "σ", "[^σ]", "ǅ", "[^ǅ]", "\\u0345", "[\\u0000-\\u00FF]", "[^\\u0100-\\uFFFF]",
        "a[^b]c", "i", "I", "[a-z]+", "\\w+", ".", "[A-Z0-9][A-Z0-9-]{2,31}", "(foo|bar)+baz", "[^@\\s]+@[^@\\s]+",
    ])
    func knownCases(_ pattern: String) throws {
        let texts = ["a", "A", "s", "S", "ſ", "k", "K", "\u{212A}", "σ", "ς", "Σ", "ß", "ǅ", "ǆ", "Ǆ", "ι", "Ι", "\u{345}", "i", "I", "ı", "İ",
                     "aBc", "abc", "ABC", "AbC", "hello", "HELLO", "ſtop", "sku-001", "SKU-001", "FooBARbaz", "fooBarBAZ", "X@Y.Z", "", "é", "É"]
        #expect(try disagreement(pattern, texts) == nil)
        // `(?i)` at the start means the same.
        let inline = try RegularExpression("(?i)" + pattern)
        #expect(inline.isCaseInsensitive && inline.isNative)
        for text in texts where inline.undecidableScalar(in: text) == nil {
            #expect(inline.matchesWhole(text) == (try RegularExpression(pattern, caseInsensitive: true)).matchesWhole(text))
        }
    }

    /// Characters this machine's ICU does not know yet (assigned in a later Unicode version
    /// than its tables; Lade follows Swift's): ICU gives them no case, so they are not compared.
    static let unknownToICU = try! NSRegularExpression(pattern: "\\p{Cn}")

    func knownToICU(_ scalars: [UInt32]) -> Bool {
        let text = String(String.UnicodeScalarView(scalars.compactMap(Unicode.Scalar.init)))
        return Self.unknownToICU.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) == nil
    }

    @Test("every cased character ICU knows, as a literal and in a class, matches its case variants as ICU says", .slow)
    func everyCasedScalar() throws {
        var failures: [String] = []
        var checked = 0
        for (scalar, orbit) in RegularExpressionCaseFolding.orbits.sorted(by: { $0.key < $1.key }) {
            guard RegularExpressionCaseFolding.multipleFoldings[scalar] == nil, knownToICU(orbit) else { continue }
            let escaped = "\\x{\(String(scalar, radix: 16))}"
            var texts = orbit.compactMap { Unicode.Scalar($0).map(String.init) }
            if let value = Unicode.Scalar(scalar) {
                texts += [value.properties.uppercaseMapping, value.properties.lowercaseMapping, value.properties.titlecaseMapping]
            }
            for pattern in [escaped, "[\(escaped)]", "[^\(escaped)]"] {
                checked += 1
                if let failure = try disagreement(pattern, texts) { failures.append(failure) }
            }
        }
        #expect(checked > 2000)
        #expect(failures.isEmpty, "\(failures.count) disagreements: \(failures.prefix(10).joined(separator: "\n"))")
    }

    @Test("thousands of generated patterns, case-insensitive, answer as ICU does", .slow)
    func differential() throws {
        var generator = PatternGenerator(random: SeededGenerator(seed: 20_261_125))
        var failures: [String] = []
        var compared = 0
        for _ in 0..<1500 {
            let (pattern, sample) = generator.pattern(depth: 3)
            guard !pattern.isEmpty, let expression = try? RegularExpression(pattern, caseInsensitive: true) else { continue }
            guard expression.isNative else { continue }
            compared += 1
            let texts = generator.texts(around: sample) + [sample.uppercased(), sample.lowercased()]
            if let failure = try disagreement(pattern, texts) { failures.append(failure) }
        }
        #expect(compared > 1000)
        #expect(failures.isEmpty, "\(failures.prefix(10).joined(separator: "\n"))")
    }

    @Test("a literal folding to two characters is refused, and so is a text where ICU would fold one into two")
    func multipleFoldings() throws {
        // Not native: ICU matches them where a model rule needs it; MATCHES refuses them.
        #expect(try !RegularExpression("straße", caseInsensitive: true).isNative)
        #expect(try RegularExpression("(?i)ﬁne").whyNotNative?.contains("'ﬁ' folds to 'fi'") == true)
        #expect(try !RegularExpression("\\x{1E9E}", caseInsensitive: true).isNative)
        #expect(throws: FetchPredicateError.self) { try StringComparison.linearExpression("straße", caseInsensitive: true) }
        let expression = try RegularExpression("stras+e", caseInsensitive: true)
        #expect(expression.undecidableScalar(in: "STRAßE") == "ß")
        #expect(expression.undecidableScalar(in: "STRASSE") == nil)
        #expect(expression.matchesWhole("STRASSE"))
        // A class never folds one character into two: no text is undecidable for it.
        #expect(try RegularExpression("[a-zß]+", caseInsensitive: true).undecidableScalar(in: "Straße") == nil)
        #expect(try RegularExpression("[a-zß]+", caseInsensitive: true).matchesWhole("STRAẞE"))
    }

    @Test("MATCHES[c] runs on Lade's engine: linear on backtracking patterns, and refuses rather than guess")
    func predicates() throws {
        let backtracking = try FetchPredicate(format: "name MATCHES[c] %@", "((A+)+C|A+B)")
        let subject: [String: PredicateValue] = ["name": .string(String(repeating: "a", count: 40) + "b")]
        #expect(try backtracking.evaluate(with: subject))
        // Where ICU folds ß into ss, ICU answers (the pattern backtracks boundedly, the text is short)…
        let folded = try FetchPredicate(format: "name MATCHES[c] %@", ".*ss.*")
        #expect(try folded.evaluate(with: ["name": PredicateValue.string("Straße")]))
        #expect(try folded.evaluate(with: ["name": PredicateValue.string("STRASSE")]))
        #expect(try !folded.evaluate(with: ["name": PredicateValue.string("Strase")]))
        // …or the predicate is refused, naming the pattern: never a guess.
        let nested = try FetchPredicate(format: "name MATCHES[c] %@", "(s+t)+.*")
        #expect(throws: FetchPredicateError.self) { try nested.evaluate(with: ["name": PredicateValue.string("ßt")]) }
        #expect(try nested.evaluate(with: ["name": PredicateValue.string("SSTst")]))
        let long = String(repeating: "x", count: 5000) + "ß"
        #expect(throws: FetchPredicateError.self) { try folded.evaluate(with: ["name": PredicateValue.string(long)]) }
        let manyStars = try FetchPredicate(format: "name MATCHES[c] %@", ".*s.*t.*r.*")
        #expect(throws: FetchPredicateError.self) { try manyStars.evaluate(with: ["name": PredicateValue.string("ßtr")]) }
        #expect(throws: FetchPredicateError.self) { try FetchPredicate(format: "name MATCHES[c] %@", "(a)\\1").evaluate(with: ["name": PredicateValue.string("aa")]) }
    }
}
