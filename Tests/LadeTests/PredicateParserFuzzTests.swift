import Foundation
import Testing
@testable import Lade

@Suite("Predicate parser under random and mutated input")
struct PredicateParserFuzzTests {
    static let validFormats = [
        "price < %@ AND name BEGINSWITH[cd] %@", "ANY tags.label IN {'a', 'b'}", "NOT (a == 1 OR b != 2) && c <= 3",
        "SUBQUERY(items, $x, $x.price > 10 AND $x.name LIKE[c] 'a*').@count >= 2", "date > CAST(700000000, 'NSDate')",
        "owner.manager.name ==[d] \"Zoë\"", "%K == %d", "items.@sum.price BETWEEN {1, 1e3}", "TRUEPREDICATE", "SELF IN %@",
        "name MATCHES '[a-z]+\\\\d'", "ALL items.flag == YES OR NONE items.flag == NO", "0x1F = 0b101 || 0o17 => -2.5e-3",
        "#IN == nil", "'é' IN name", "$VAR.key != $OTHER", "(price) > 3", "items.@count == 0 AND NOT items.@max.date < %@",
    ]

    /// Tokens the random inputs are made of: the language's own, and things it does not know.
    static let vocabulary = [
        "AND", "and", "OR", "NOT", "!", "&&", "||", "(", ")", "{", "}", "[", "]", "[c]", "[cd]", "[x]", ",", ".", "==", "=", "!=",
        "<>", "<", "<=", "=<", ">", ">=", "=>", "IN", "CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE", "MATCHES", "BETWEEN", "ANY",
        "SOME", "ALL", "NONE", "TRUEPREDICATE", "FALSEPREDICATE", "TRUE", "YES", "FALSE", "NO", "NIL", "NULL", "SELF", "SUBQUERY",
        "CAST", "FUNCTION", "@count", "@sum", "@avg", "@min", "@max", "@foo", "$x", "$", "@", "%@", "%K", "%d", "%ld", "%f", "%s",
        "%", "%q", "name", "items", "price", "#IN", "#", "0", "1", "-1", "1.5", "1e", "1e99999", "0x", "0xFFFFFFFFFFFFFFFFFF",
        "0b102", "99999999999999999999", "'text'", "'unterminated", "\"q\"", "'\\u00e9'", "'\\uZZ'", "'\\", "+", "-", "*", "/", "**",
        "é", "👍🏽", "\u{301}", "\0", "\n", " ", "?", ":", ";", "\\", "'NSDate'",
    ]

    static let arguments: [[PredicateValue]] = [
        [], ["name"], [1, "a"], [.null, [1, 2], 2.5], ["items.price", .date(Date(timeIntervalSinceReferenceDate: 0)), true],
    ]

    @Test("100,000 random and mutated inputs each give a predicate (whose description reads back the same) or an error with a column inside the input", .slow)
    func fuzz() throws {
        let seed = ProcessInfo.processInfo.environment["LADE_PREDICATE_SEED"].flatMap(UInt64.init) ?? 7
        var random = SeededGenerator(seed: seed)
        var parsed = 0, refused = 0
        var badColumns: [String] = []
        var notRoundTripped: [String] = []
        for round in 0..<100_000 {
            let input: String
            if round % 2 == 0 {
                input = (0..<random.int(14)).map { _ in random.pick(Self.vocabulary) }.joined(separator: random.chance(80) ? " " : "")
            } else {
                input = Self.mutate(random.pick(Self.validFormats), &random)
            }
            do {
                let predicate = try FetchPredicate(format: input, arguments: random.pick(Self.arguments))
                parsed += 1
                // What the parser made, written back as a format string, reads back the same.
                if (try? FetchPredicate(format: predicate.description)) != predicate {
                    notRoundTripped.append("\(input.debugDescription) → \(predicate.description.debugDescription)")
                }
            } catch {
                refused += 1
                if error.column < 1 || error.column > input.count + 1 || error.message.isEmpty {
                    badColumns.append("\(input.debugDescription): \(error)")
                }
            }
        }
        #expect(notRoundTripped.isEmpty, "seed \(seed): descriptions that do not read back: \(notRoundTripped.prefix(5))")
        #expect(badColumns.isEmpty, "seed \(seed): errors placed outside their input: \(badColumns.prefix(5))")
        #expect(parsed > 1_000 && refused > 1_000, "seed \(seed): \(parsed) parsed, \(refused) refused: the inputs do not exercise both outcomes")
        print("parser fuzz: 100000 inputs, seed \(seed), \(parsed) parsed, \(refused) refused with a positioned error")
    }

    @Test("nesting deeper than the limit is an error, not a stack overflow")
    func deepNesting() {
        let deep = String(repeating: "(", count: 10_000) + "a == 1" + String(repeating: ")", count: 10_000)
        #expect(throws: PredicateSyntaxError.self) { try FetchPredicate(format: deep) }
        let notChain = String(repeating: "NOT ", count: 10_000) + "a == 1"
        #expect(throws: PredicateSyntaxError.self) { try FetchPredicate(format: notChain) }
        let arrays = "a IN " + String(repeating: "{", count: 10_000)
        #expect(throws: PredicateSyntaxError.self) { try FetchPredicate(format: arrays) }
        #expect(throws: Never.self) { try FetchPredicate(format: String(repeating: "(", count: 50) + "a == 1" + String(repeating: ")", count: 50)) }
    }

    /// Deletes, inserts, duplicates or swaps pieces of a valid format.
    static func mutate(_ format: String, _ random: inout SeededGenerator) -> String {
        var characters = Array(format)
        for _ in 0..<(1 + random.int(3)) {
            let position = characters.isEmpty ? 0 : random.int(characters.count + 1)
            switch random.int(5) {
            case 0 where !characters.isEmpty:
                let end = min(characters.count, position + 1 + random.int(4))
                if position < end { characters.removeSubrange(position..<end) }
            case 1:
                characters.insert(contentsOf: random.pick(vocabulary), at: position)
            case 2:
                characters.insert(random.pick(Array("()[]{}'\"%$@#.,!=<>\\ 0aZ👍é")), at: position)
            case 3 where characters.count > 2:
                let start = random.int(characters.count - 1)
                let piece = characters[start..<min(characters.count, start + 1 + random.int(6))]
                characters.insert(contentsOf: piece, at: position)
            default:
                if characters.count > 1 {
                    let other = random.int(characters.count)
                    characters.swapAt(min(position, characters.count - 1), other)
                }
            }
        }
        return String(characters)
    }
}
