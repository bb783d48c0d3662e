import Foundation
import Testing
@testable import Lade

private func holds(_ format: String, on object: [String: PredicateValue], _ arguments: PredicateValue...) throws -> Bool {
    try FetchPredicate(format: format, arguments: arguments).evaluate(with: object)
}

private func holds(_ format: String, self value: PredicateValue) throws -> Bool {
    try FetchPredicate(format: format).evaluate(with: value)
}

@Suite("Evaluating predicates in memory")
struct PredicateEvaluatorTests {
    @Test("plain values evaluate as SELF, dictionaries by key")
    func plainValues() throws {
        #expect(try holds("SELF BEGINSWITH 'ab'", self: "abc"))
        #expect(try holds("SELF > 3", self: 4))
        #expect(try holds("SELF IN {1, 2, 3}", self: 2))
        #expect(try holds("SELF.@count == 3 AND SELF.@sum == 6", self: [1, 2, 3]))
        #expect(try holds("ANY SELF > 2", self: [1, 2, 3]))
        #expect(try !holds("ALL SELF > 2", self: [1, 2, 3]))
        let person: [String: PredicateValue] = ["name": "Zoë", "age": 41, "tags": ["a", "b"], "nickname": nil]
        #expect(try holds("name ==[cd] 'zoe' AND age BETWEEN {40, 50}", on: person))
        #expect(try holds("'a' IN tags AND tags CONTAINS 'b' AND NOT (tags CONTAINS 'c')", on: person))
        #expect(try holds("nickname == nil AND missing == nil", on: person))
    }

    @Test("nil equals only nil; != is true against nil; ordering and string tests with nil are false, and so their negation true")
    func nilSemantics() throws {
        let empty: [String: PredicateValue] = ["x": nil]
        #expect(try holds("x == nil", on: empty))
        #expect(try !holds("x == 5", on: empty))
        #expect(try holds("x != 5", on: empty))
        #expect(try !holds("x < 5", on: empty))
        #expect(try !holds("x >= 5", on: empty))
        #expect(try holds("NOT x < 5", on: empty))
        #expect(try !holds("x BEGINSWITH ''", on: empty))
        #expect(try !holds("x IN {1, 2}", on: empty))
        #expect(try holds("x IN {1, nil}", on: empty))
    }

    @Test("values of different kinds never compare: a string and a number are unequal and unordered")
    func kinds() throws {
        let values: [String: PredicateValue] = ["text": "3", "number": 3, "date": .date(Date(timeIntervalSinceReferenceDate: 3)), "flag": true]
        #expect(try !holds("text == 3", on: values))
        #expect(try holds("text != 3", on: values))
        #expect(try !holds("text < 4", on: values) && !holds("text >= 4", on: values))
        #expect(try holds("number == 3.0 AND flag == 1 AND date == 3", on: values), "numbers, booleans and dates compare as numbers")
        #expect(try holds("%@ == 9007199254740993", on: values, .integer(9_007_199_254_740_993)))
        #expect(try !holds("%@ == 9007199254740992.0", on: values, .integer(9_007_199_254_740_993)), "an integer and a double compare exactly")
        #expect(try holds("%@ == 2.5", on: values, .decimal(Decimal(string: "2.5")!)))
    }

    @Test("strings compare by bytes; [c] folds case (ß is ss), [d] drops diacritics, and either makes canonical equivalents equal")
    func stringOptions() throws {
        let values: [String: PredicateValue] = ["street": "Straße", "composed": "café", "decomposed": "cafe\u{301}", "ligature": "ﬁle"]
        #expect(try !holds("street == 'STRASSE'", on: values))
        #expect(try holds("street ==[c] 'STRASSE'", on: values))
        #expect(try holds("street BEGINSWITH[c] 'STRAS'", on: values))
        #expect(try !holds("composed == decomposed", on: values), "without options, bytes: é and e + U+0301 differ")
        #expect(try holds("composed ==[c] decomposed", on: values))
        #expect(try holds("composed ==[d] 'cafe' AND decomposed ==[d] 'cafe'", on: values))
        #expect(try holds("composed ENDSWITH[cd] 'E'", on: values))
        #expect(try holds("ligature ==[c] 'FILE'", on: values))
        #expect(try holds("composed > 'cafz' AND 'Z' < 'a'", on: values), "byte order: é after z, uppercase before lowercase")
        #expect(try holds("'Z' >[c] 'a'", on: values))
        #expect(try holds("composed CONTAINS '' AND composed BEGINSWITH ''", on: values), "the empty string is in every string")
    }

    @Test("LIKE: ? is one character (a whole emoji), * any run, backslash escapes; the whole string must match")
    func like() throws {
        #expect(try holds("SELF LIKE 'c?f*'", self: "café au lait"))
        #expect(try !holds("SELF LIKE 'caf'", self: "café"))
        #expect(try holds("SELF LIKE 'a?b'", self: "a👍🏽b"))
        #expect(try holds("SELF LIKE[cd] 'CAFE'", self: "Café"))
        #expect(try holds("SELF LIKE 'x\\\\*y'", self: "x*y"))
        #expect(try !holds("SELF LIKE 'x\\\\*y'", self: "xay"))
        #expect(try holds("SELF LIKE '*'", self: ""))
        #expect(try !holds("SELF LIKE '?'", self: ""))
        #expect(try holds("SELF LIKE '*a*a*'", self: "banana"))
    }

    @Test("MATCHES: an ICU regular expression over the whole string, [c] case-insensitive, a bad pattern an error")
    func matches() throws {
        #expect(try holds("SELF MATCHES '[a-z]+'", self: "abc"))
        #expect(try !holds("SELF MATCHES '[a-z]+'", self: "abc1"), "the whole string, not a part")
        #expect(try holds("SELF MATCHES 'a|ab'", self: "ab"), "alternatives are tried until the whole string matches")
        #expect(try holds("SELF MATCHES[c] 'ABC'", self: "abc"))
        #expect(try holds("SELF MATCHES '\\\\d+'", self: "2026"))
        #expect {
            try holds("SELF MATCHES '('", self: "x")
        } throws: { error in
            if case FetchPredicateError.invalidRegularExpression(pattern: "(", reason: _)? = error as? FetchPredicateError { true } else { false }
        }
        // A pattern that needs backtracking is refused, never answered "no match" when ICU gives up.
        #expect {
            try holds("SELF MATCHES '(a)\\\\1'", self: "aa")
        } throws: { error in
            "\(error)".contains("needs backtracking")
        }
        #expect(try holds("SELF MATCHES '((a+)+c|a+b)'", self: .attribute(.string(String(repeating: "a", count: 40) + "b"))), "linear time, a true answer")
    }

    @Test("ANY is false, ALL and NONE true over an empty collection; @sum of nothing is 0, @avg @min @max nil; nil members are skipped but counted")
    func collections() throws {
        let values: [String: PredicateValue] = ["empty": [], "few": [1, nil, 4]]
        #expect(try !holds("ANY empty > 0", on: values))
        #expect(try holds("ALL empty > 0", on: values))
        #expect(try holds("NONE empty > 0", on: values))
        #expect(try holds("empty.@count == 0 AND empty.@sum == 0 AND empty.@avg == nil AND empty.@max == nil", on: values))
        #expect(try holds("few.@count == 3 AND few.@sum == 5 AND few.@avg == 2.5 AND few.@min == 1 AND few.@max == 4", on: values))
        #expect(try !holds("ALL few > 0", on: values), "a nil member fails the comparison")
        #expect(throws: FetchPredicateError.self) { try holds("few == 1", on: values) }
        #expect(throws: FetchPredicateError.notACollection("ANY")) { try holds("ANY x > 1", on: ["x": 5]) }
    }

    @Test("a variable without a value is an error naming it")
    func missingVariable() {
        #expect(throws: FetchPredicateError.missingVariable("LIMIT")) { try holds("x < $LIMIT", on: ["x": 1]) }
    }
}
