import Foundation
import Testing
@testable import Lade

@Suite("Binary property lists: written by Lade, read by Foundation and by Lade")
struct PropertyListWriterTests {
    /// `value` written by Lade, read back by Foundation's reader and by Lade's own.
    static func roundTrips(_ value: PropertyListValue, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let data = try value.binaryPropertyList()
        let foundation = try PropertyListSerialization.propertyList(from: data, format: nil)
        #expect(PropertyListValue(foundation: foundation) == value, sourceLocation: sourceLocation)
        #expect(try BinaryPropertyListReader.read(data) == value, sourceLocation: sourceLocation)
    }

    @Test("every value type reads back the same through Foundation and through Lade's reader")
    func everyType() throws {
        try Self.roundTrips(PropertyListReaderTests.sample)
    }

    @Test("integers at every width boundary, negative ones included", arguments: [
        Int64(0), 1, 14, 15, 16, 255, 256, 65_535, 65_536, 4_294_967_295, 4_294_967_296, .max, -1, -256, .min,
    ])
    func integers(_ number: Int64) throws {
        try Self.roundTrips(.array([.integer(number)]))
    }

    @Test("strings: ASCII and UTF-16, at the 15-unit length boundary, long, with NUL and surrogate pairs")
    func strings() throws {
        let texts = ["", "a", String(repeating: "x", count: 14), String(repeating: "x", count: 15), String(repeating: "y", count: 16),
                     "naïve", String(repeating: "é", count: 15), "\u{1F600}\u{1F600}", "a\u{0}b", String(repeating: "Ω", count: 70_000),
                     String(repeating: "k", count: 300)]
        try Self.roundTrips(.array(texts.map(PropertyListValue.string)))
        try Self.roundTrips(.dictionary(Dictionary(uniqueKeysWithValues: texts.map { ($0, .string($0)) })))
    }

    @Test("two spellings of one text (NFC and NFD) stay two strings; 0.0 and -0.0 two reals")
    func exactValues() throws {
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        let value: PropertyListValue = .array([.string(composed), .string(decomposed), .real(0.0), .real(-0.0)])
        let read = try BinaryPropertyListReader.read(try value.binaryPropertyList())
        guard case .array(let items) = read, items.count == 4,
              case .string(let first) = items[0], case .string(let second) = items[1],
              case .real(let zero) = items[2], case .real(let negativeZero) = items[3] else {
            Issue.record("read back \(read)")
            return
        }
        #expect(Array(first.utf8) == Array(composed.utf8))
        #expect(Array(second.utf8) == Array(decomposed.utf8))
        #expect(zero.sign == .plus && negativeZero.sign == .minus)
    }

    @Test("data of every length class, dates, reals, booleans")
    func scalars() throws {
        try Self.roundTrips(.array([
            .data(Data()), .data(Data(repeating: 7, count: 14)), .data(Data(repeating: 8, count: 15)), .data(Data((0..<70_000).map { UInt8($0 & 0xFF) })),
            .date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: -1_000_000_000.5)),
            .real(.pi), .real(-1e300), .real(.infinity), .bool(true), .bool(false),
        ]))
    }

    @Test("more than 255 and more than 65,535 objects: wider references and offsets")
    func manyObjects() throws {
        try Self.roundTrips(.array((0..<300).map { .integer(Int64($0) * 1_000) }))
        try Self.roundTrips(.array((0..<70_000).map { .string("key \($0)") }))
    }

    @Test("empty and nested containers, up to the deepest that can be read")
    func nesting() throws {
        try Self.roundTrips(.dictionary([:]))
        try Self.roundTrips(.array([.array([]), .dictionary(["a": .array([.dictionary(["b": .integer(1)])])])]))
        try Self.roundTrips(PropertyListReaderTests.nested(PropertyListValue.maximumDepth))
    }

    @Test("a value occurring twice is written once; the same value always gives the same bytes")
    func sharedAndDeterministic() throws {
        let repeated: PropertyListValue = .array(Array(repeating: .string("NSStoreModelVersionHashes"), count: 1_000))
        let once = try PropertyListValue.array([.string("NSStoreModelVersionHashes")]).binaryPropertyList()
        #expect(try repeated.binaryPropertyList().count < once.count + 1_100)
        // Two equal dictionaries built apart, keys inserted in opposite orders: their own
        // iteration orders differ (each dictionary's hash seed is its own), the bytes must not.
        let keys = (0..<200).map { "key \($0)" }
        var forward: [String: PropertyListValue] = [:], backward: [String: PropertyListValue] = [:]
        for key in keys { forward[key] = .string(key) }
        for key in keys.reversed() { backward[key] = .string(key) }
        #expect(Array(forward.keys) != Array(backward.keys), "the test needs two iteration orders")
        #expect(try PropertyListValue.dictionary(forward).binaryPropertyList() == PropertyListValue.dictionary(backward).binaryPropertyList())
    }

    @Test("what cannot be read back is refused: a date that is not finite, nesting past the limit")
    func refused() {
        #expect(throws: PropertyListError.self) { try PropertyListValue.array([.date(Date(timeIntervalSinceReferenceDate: .infinity))]).binaryPropertyList() }
        #expect(throws: PropertyListError.self) { try PropertyListValue.dictionary(["when": .date(Date(timeIntervalSinceReferenceDate: .nan))]).binaryPropertyList() }
        #expect(throws: PropertyListError.self) { try PropertyListReaderTests.nested(PropertyListValue.maximumDepth + 1).binaryPropertyList() }
    }
}
