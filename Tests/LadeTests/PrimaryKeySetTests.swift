import Foundation
import Testing
@testable import Lade

@Suite("The keys a batch insert session has touched")
struct PrimaryKeySetTests {
    @Test("pages listed, then bits: the same answers as Set throughout, over dense and spread keys, negative ones and Int64's ends")
    func matchesSet() {
        var random = SeededGenerator(seed: 20_261_125)
        for base in [Int64(-5), 1, 4_090, 1 << 40, .max - 30_000, .min] {
            for span in [1, 100, 4_096, 20_000] {
                var keys = PrimaryKeySet()
                var reference = Set<Int64>()
                // Dense enough that pages turn to bits, and removals in both forms.
                for _ in 0..<4_000 {
                    let key = base + Int64(random.int(span + 20))
                    if random.chance(20) {
                        keys.remove(key)
                        reference.remove(key)
                    } else {
                        #expect(keys.insert(key) == reference.insert(key).inserted, "base \(base), span \(span), key \(key)")
                    }
                }
                for key in base...(base + Int64(span) + 24) { #expect(keys.contains(key) == reference.contains(key), "base \(base), key \(key)") }
            }
        }
        var ends = PrimaryKeySet()
        let inserted = [ends.insert(.max), ends.insert(.min), ends.insert(0), ends.insert(.max)]
        #expect(inserted == [true, true, true, false])
        #expect(ends.contains(.max) && ends.contains(.min) && ends.contains(0) && !ends.contains(.max - 1) && !ends.contains(1))
    }

    @Test("memory follows the keys touched, not the table: 100,000 keys in order hold 26 pages of 512 bytes")
    func pagesFollowKeys() {
        var keys = PrimaryKeySet()
        #expect(keys.pageBytes == 0)
        var added = 0
        for key in Int64(5_000_001)...5_100_000 where keys.insert(key) { added += 1 }
        #expect(added == 100_000)
        // Pages of 4,096 keys from key 0: 5,000,001 is in page 1,220, 5,100,000 in page 1,245.
        #expect(keys.pageBytes == 26 * 512)
        #expect(keys.contains(5_000_001) && keys.contains(5_100_000) && !keys.contains(5_000_000) && !keys.contains(5_100_001))
        let again = keys.insert(5_050_000)
        #expect(!again)
        keys.remove(5_050_000)
        let contained = keys.contains(5_050_000), added2 = keys.insert(5_050_000)
        #expect(!contained && added2)
    }

    @Test("keys far apart (a sparse or hostile table, Z_PKs up to Int64.max) take 2 bytes each in their pages' lists, nothing sized by the largest key")
    func spreadKeys() {
        var keys = PrimaryKeySet()
        let stride = Int64.max / 10_000
        var added = 0
        for n in 0..<10_000 where keys.insert(Int64(n) * stride + 7) { added += 1 }
        if keys.insert(.max) { added += 1 }
        #expect(added == 10_001)
        #expect(keys.pageBytes == 10_001 * 2)
        #expect(keys.contains(5_000 * stride + 7) && !keys.contains(5_000 * stride + 8))
    }
}
