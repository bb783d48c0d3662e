import Foundation
@testable import LadePipeline
import Testing

@Suite("Key order: a batch's rows in the order of its key's unique index")
struct KeyOrderTests {
    /// The order `textOrder` must give: UTF-8 bytes as SQLite's BINARY collation compares
    /// them, equal texts in position order.
    static func expected(_ texts: [String]) -> [Int] {
        texts.indices.sorted { a, b in
            let x = Array(texts[a].utf8), y = Array(texts[b].utf8)
            if x == y { return a < b }
            return x.lexicographicallyPrecedes(y)
        }
    }

    @Test("texts sorted by their bytes after a shared prefix equal a byte-by-byte sort", arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func matchesBytewiseSort(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        // Short alphabets and a shared prefix: many ties within the first 8 bytes after it,
        // texts that are prefixes of others, NUL bytes (a text "A" and "A\0" tie on the
        // integer, which pads with zeros), non-ASCII, empty texts, duplicates.
        let alphabets: [[String]] = [["0", "1", "9"], ["a", "b", "\u{0}", "é", "Ω"], ["x"]]
        let prefixes = ["", "SKU-00", "Ä", "same-prefix-longer-than-eight-"]
        for round in 0..<40 {
            let prefix = random.pick(prefixes)
            let alphabet = random.pick(alphabets)
            var texts: [String] = []
            for _ in 0..<random.int(0...300) {
                if !texts.isEmpty, random.chance(10) { texts.append(random.pick(texts)); continue }
                texts.append(prefix + (0..<random.int(0...12)).map { _ in random.pick(alphabet) }.joined())
            }
            if round % 5 == 0 { texts = texts.map { String($0.dropFirst(prefix.count)) } }
            #expect(BatchWriter.textOrder(texts) == Self.expected(texts), "seed \(seed), round \(round): \(texts.prefix(20))")
        }
    }

    @Test("edge cases: none, one, all equal, one text a prefix of another, a text ending in NUL")
    func edges() {
        for texts in [[], ["a"], ["k", "k", "k"], ["SKU-1", "SKU-10", "SKU-1", "SKU-"], ["A\u{0}", "A", "A\u{0}\u{0}", ""],
                      ["123456789", "12345678", "1234567", "12345679"]] {
            #expect(BatchWriter.textOrder(texts) == Self.expected(texts), "\(texts)")
        }
    }
}
