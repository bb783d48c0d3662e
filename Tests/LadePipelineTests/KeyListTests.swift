import Lade
@testable import LadePipeline
import Testing

@Suite("Key lists")
struct KeyListTests {
    @Test("one value held inline is equal to, and hashes as, the same value in a list; order and count matter")
    func equalityAndHashing() {
        let sku = AttributeValue.string("SKU-1")
        let one = KeyList(sku)
        #expect(one == KeyList([sku]) && one == [sku])
        #expect(one.hashValue == KeyList([sku]).hashValue)
        #expect(Array(one) == [sku] && one.count == 1 && one.first == sku && one[0] == sku && one.values == [sku])
        #expect(one != KeyList([sku, sku]) && one != KeyList())
        let pair: KeyList = [.string("a"), .integer(1)]
        #expect(pair == KeyList([.string("a"), .integer(1)]) && pair != [.integer(1), .string("a")])
        #expect(KeyList().isEmpty && KeyList([]) == KeyList() && KeyList().values.isEmpty)
        // Text compares as attribute values compare it, by its bytes (as the store's unique
        // index does): NFC and NFD "café" are two keys, inline or in a list, as in an array.
        let nfc = AttributeValue.string("caf\u{E9}"), nfd = AttributeValue.string("cafe\u{301}")
        #expect(KeyList(nfc) != KeyList([nfd]) && KeyList(nfc) != KeyList(nfd))
        #expect(Array<AttributeValue>([nfc]) != Array<AttributeValue>([nfd]))
    }

    @Test("as a dictionary key: a key made inline finds the entry a key made from a list put there, and the reverse")
    func dictionaryKey() {
        var objects: [KeyList: Int] = [:]
        for n in 0..<1_000 { objects[KeyList([.string("K-\(n)")])] = n }
        objects[[.string("K-1"), .integer(2)]] = -1
        for n in 0..<1_000 { #expect(objects[KeyList(.string("K-\(n)"))] == n) }
        #expect(objects[[.string("K-1"), .integer(2)]] == -1 && objects[[.integer(2), .string("K-1")]] == nil)
        #expect(objects[KeyList(.string("K-1000"))] == nil && objects.count == 1_001)
    }

    @Test("appending: the first value inline, then a list, equal to the array of the same values at every step")
    func appending() {
        var keys = KeyList()
        var array: [AttributeValue] = []
        for value in [AttributeValue.string("a"), .integer(2), .string("c"), .bool(true)] {
            keys.append(value)
            array.append(value)
            #expect(keys == KeyList(array) && Array(keys) == array && keys.hashValue == KeyList(array).hashValue)
        }
        let copy = keys
        keys.append(.integer(5))
        #expect(copy.count == 4 && keys.count == 5, "a copy is not changed by an append to the original")
    }
}
