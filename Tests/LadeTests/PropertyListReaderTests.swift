import Foundation
import Testing
@testable import Lade

@Suite("Binary property lists: read with every declared size checked")
struct PropertyListReaderTests {
    static let sample: PropertyListValue = .dictionary([
        "NSStoreType": .string("SQLite"), "NSStoreUUID": .string("6B8E1E46-3E0E-4C2B-9B7E-000000000001"),
        "numbers": .array([.integer(0), .integer(255), .integer(65_536), .integer(-1), .integer(.max), .integer(.min), .real(2.5), .real(-0.0)]),
        "flags": .array([.bool(true), .bool(false)]), "bytes": .data(Data([0, 1, 2, 255])),
        "when": .date(Date(timeIntervalSinceReferenceDate: 754_000_000.25)),
        "text": .string("Zoë \u{1F600} a\u{0}b"), "nested": .dictionary(["empty": .array([]), "none": .dictionary([:])]),
    ])

    @Test("what Foundation writes reads back the same, every value type")
    func readsFoundationOutput() throws {
        let data = try PropertyListSerialization.data(fromPropertyList: Self.sample.foundationValue, format: .binary, options: 0)
        #expect(try BinaryPropertyListReader.read(data) == Self.sample)
        #expect(try PropertyListValue.decode(data) == Self.sample)
    }

    /// Found by `make fuzz` (target plist): mutated metadata blocks that crashed Foundation's reader
    /// (the second one says 'bplist01', which Foundation also takes for a binary list).
    @Test("damaged lists found by the fuzzer give an error, not a crash", arguments: [
        "YnBsaXN0MDDDAQIDBAUGW2RTTlNvcmVUeXBlW05TU3RvcmVVVUlRbkRWU1FMaXRlXxAkN0I4RTFFNDYtM0UwRS00QzJFL0I5LTdCMDAwMDCwMDAwMDAxpQcICQoLEAEjQAQAAAAAAAAJQgAB0QwNUWRReAgPGycpMFddX2hpbG9xAAAAAAAAAQEAAAAAAAAADgAAAAAAAAAAAAAAAAAAAHM=",
        "YnBsaXN0MDHTAQIDBAUGW05TU3RvcmVUeXBlW05TU3RvcmVVVUlEUW5WU1ENAAAAAAAAAEI4RTFFNDYtM0UwRS00QzJC28ZCN0UtMDAwMDAwMDAwMDAxpQcICQoLEAEjQAQAAAAAAAAJQgAJwQwNUWRReAgPGycpMFddMmhpbG9xAAAAAAAAAQEAAAAAAAAADgAAAAAAAAAAAAAAAAAAAHM=",
    ])
    func fuzzFinding(_ base64: String) throws {
        let data = try #require(Data(base64Encoded: base64))
        #expect(throws: PropertyListError.self) { try PropertyListValue.decode(data) }
    }

    /// Found by `make fuzz` (target mapping-model): a compiled mapping model (a keyed archive)
    /// whose UID object holds 8 bytes with the top bit set trapped converting to Int64.
    @Test("a UID past Int64 in a keyed archive is refused as damaged, not a crash")
    func hugeUID() throws {
        var bytes = Array("bplist00".utf8)
        bytes += [0x87] + Array(repeating: 0xFF, count: 8)            // object 0: a UID of 8 bytes
        bytes += [0x08]                                               // the offset table: object 0 at 8
        bytes += Array(repeating: 0, count: 6) + [1, 1]               // offset and reference sizes
        bytes += [0, 0, 0, 0, 0, 0, 0, 1] + Array(repeating: 0, count: 8) + [0, 0, 0, 0, 0, 0, 0, 17]
        let error = #expect(throws: PropertyListError.self) { try BinaryPropertyListReader.read(Data(bytes), readingUIDs: true) }
        #expect(error?.description.contains("UID") == true, "\(String(describing: error))")
        bytes[9] = 0x7F                                               // the largest UID that fits
        #expect(try BinaryPropertyListReader.read(Data(bytes), readingUIDs: true) == .dictionary(["CF$UID": .integer(Int64.max)]))
    }

    @Test("an XML property list nested deeper than the limit is refused before Foundation reads it")
    func deepXML() throws {
        let depth = 100_000
        let xml = "<?xml version=\"1.0\"?><plist version=\"1.0\">" + String(repeating: "<array>", count: depth)
            + String(repeating: "</array>", count: depth) + "</plist>"
        #expect(throws: PropertyListError.self) { try PropertyListValue.decode(Data(xml.utf8)) }
    }

    /// A list whose only array refers to itself.
    static func selfReferencingArray() -> Data {
        var bytes = Array("bplist00".utf8)
        bytes += [0xA1, 0x00]                              // object 0 at 8: an array of one, object 0
        let offsets = bytes.count
        bytes += [8]                                       // the offset table: object 0 at 8
        bytes += [0, 0, 0, 0, 0, 0, 1, 1]                  // trailer: offset size 1, reference size 1
        bytes += [0, 0, 0, 0, 0, 0, 0, 1]                  // one object
        bytes += [0, 0, 0, 0, 0, 0, 0, 0]                  // top object 0
        bytes += [0, 0, 0, 0, 0, 0, 0, UInt8(offsets)]     // offset table position
        return Data(bytes)
    }

    @Test("a list that contains itself is refused")
    func cycle() {
        #expect(throws: PropertyListError.self) { try PropertyListValue.decode(Self.selfReferencingArray()) }
    }

    @Test("sizes the file cannot hold are refused before anything is allocated")
    func declaredSizes() {
        var data = Self.selfReferencingArray()
        data[data.count - 25] = 0xFF                       // object count: 2^56 + 1
        #expect(throws: PropertyListError.self) { try PropertyListValue.decode(data) }
        var long = Array("bplist00".utf8) + [0x4F, 0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]  // data of 2^63 bytes
        let offsets = long.count
        long += [8] + [0, 0, 0, 0, 0, 0, 1, 1] + [0, 0, 0, 0, 0, 0, 0, 1] + [0, 0, 0, 0, 0, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, UInt8(offsets)]
        #expect(throws: PropertyListError.self) { try PropertyListValue.decode(Data(long)) }
    }

    static func nested(_ depth: Int) -> PropertyListValue {
        (0..<depth).reduce(PropertyListValue.integer(1)) { inner, _ in .array([inner]) }
    }

    @Test("512 levels of nesting are written and read back; 513 are refused when writing")
    func depthLimit() throws {
        let deepest = Self.nested(PropertyListValue.maximumDepth)
        #expect(try PropertyListValue.decode(try deepest.binaryPropertyList()) == deepest)
        #expect(throws: PropertyListError.self) { try Self.nested(PropertyListValue.maximumDepth + 1).binaryPropertyList() }
        #expect(Self.nested(2_000).nestingDepth == 2_000)
    }

    @Test("a list nested deeper than the limit (written by another tool) is refused when reading")
    func deepFileRefused() throws {
        // 600 arrays, each holding the next; written by hand, as Lade's writer refuses it.
        let depth = 600
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for index in 0..<depth { offsets.append(bytes.count); bytes += [0xA1, UInt8(truncatingIfNeeded: 0), 0]; bytes[bytes.count - 2] = UInt8((index + 1) >> 8); bytes[bytes.count - 1] = UInt8((index + 1) & 0xFF) }
        offsets.append(bytes.count); bytes += [0x10, 0x01]
        let table = bytes.count
        for offset in offsets { bytes += [UInt8(offset >> 8), UInt8(offset & 0xFF)] }
        bytes += [0, 0, 0, 0, 0, 0, 2, 2]
        bytes += withUnsafeBytes(of: UInt64(depth + 1).bigEndian, Array.init)
        bytes += [0, 0, 0, 0, 0, 0, 0, 0]
        bytes += withUnsafeBytes(of: UInt64(table).bigEndian, Array.init)
        #expect(throws: PropertyListError.self) { try PropertyListValue.decode(Data(bytes)) }
    }
}
