import CZlib
import Foundation
import Testing
@testable import Lade

@Suite("Binary store: the file docs/binary-store.md specifies")
struct BinaryStoreTests {
    static func noteModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)])])
    }

    /// CRC-32 (ISO-HDLC), computed here bit by bit, independently of zlib.
    static func crc32(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0) }
        }
        return ~crc
    }

    static func uint<T: FixedWidthInteger>(_ bytes: [UInt8], _ offset: Int, as: T.Type) -> T {
        (0..<(T.bitWidth / 8)).reduce(T(0)) { $0 | T(bytes[offset + $1]) << (8 * $1) }
    }

    /// The body, inflated with zlib's one-shot `uncompress`.
    static func inflate(_ compressed: [UInt8]) throws -> [UInt8] {
        var size = uLongf(1 << 20)
        var output = [UInt8](repeating: 0, count: Int(size))
        let result = output.withUnsafeMutableBufferPointer { out in
            compressed.withUnsafeBufferPointer { uncompress(out.baseAddress, &size, $0.baseAddress, uLong($0.count)) }
        }
        #expect(result == Z_OK)
        return Array(output.prefix(Int(size)))
    }

    @Test("an empty store's bytes: magic, version, flags, metadata length and CRC-32, bplist metadata, zlib body")
    func layout() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("notes.store")
        let store = try BinaryStore.create(at: url, model: Self.noteModel())
        let bytes = [UInt8](try Data(contentsOf: url))
        #expect(Array(bytes[0..<8]) == [0x89, 0x4C, 0x41, 0x44, 0x45, 0x0D, 0x0A, 0x1A])
        #expect(Self.uint(bytes, 8, as: UInt32.self) == 1)
        #expect(Self.uint(bytes, 12, as: UInt32.self) == 0)
        let length = Int(Self.uint(bytes, 16, as: UInt64.self))
        let metadata = Array(bytes[28..<(28 + length)])
        #expect(Self.uint(bytes, 24, as: UInt32.self) == Self.crc32(metadata))
        #expect(metadata.starts(with: Array("bplist00".utf8)))
        #expect(try PropertyListValue.decode(Data(metadata)) == .dictionary(store.metadata))
        #expect(store.metadata["NSStoreType"] == .string("Binary") && store.metadata["NSStoreUUID"] == .string(store.identifier))
        let body = try Self.inflate(Array(bytes[(28 + length)...]))
        #expect(body == [0x01, 0x01, 0x04] + Array("Note".utf8) + [0x01, 0x04] + Array("text".utf8) + [0x00, 0x00])
    }

    @Test("objects are tagged values with varint keys, both sides of relationships written")
    func body() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "A", attributes: [AttributeDescription(name: "n", type: .integer16), AttributeDescription(name: "s", type: .string)],
                              relationships: [RelationshipDescription(name: "b", destinationEntityName: "B", inverseName: "a")]),
            EntityDescription(name: "B", relationships: [RelationshipDescription(name: "a", destinationEntityName: "A", inverseName: "b", isToMany: true)]),
        ])
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("ab.store")
        let store = try BinaryStore.create(at: url, model: model)
        let a = try store.newObjectIDs(for: "A", count: 1)[0], b = try store.newObjectIDs(for: "B", count: 1)[0]
        var request = StoreSaveRequest()
        request.inserted = [
            .init(objectID: a, attributes: ["n": .integer(-2), "s": .string("é")], toOne: ["b": b]),
            .init(objectID: b, attributes: [:], toOne: [:]),
        ]
        try store.save(request)
        let bytes = [UInt8](try Data(contentsOf: url))
        let length = Int(Self.uint(bytes, 16, as: UInt64.self))
        let body = try Self.inflate(Array(bytes[(28 + length)...]))
        let table: [UInt8] = [0x03, 0x02, 0x01, 0x41, 0x02, 0x01, 0x6E, 0x01, 0x73, 0x01, 0x01, 0x62, 0x01, 0x42, 0x00, 0x01, 0x01, 0x61]
        let objectA: [UInt8] = [0x00, 0x01, 0x01, 0x02, 0x00, 0x01] + [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF] + [0x01, 0x05, 0x02, 0xC3, 0xA9, 0x01, 0x00, 0x01, 0x02]
        let objectB: [UInt8] = [0x01, 0x02, 0x01, 0x00, 0x01, 0x00, 0x01, 0x01]
        #expect(body == table + [0x02] + objectA + objectB)
    }

    @Test("a damaged file is refused, saying so", arguments: ["magic", "version", "metadata", "truncated body", "trailing bytes", "body"])
    func damage(kind: String) throws {
        let stack = try AtomicTestStack(.binary)
        try EveryType.populate(stack.context(), items: 6)
        var bytes = [UInt8](try Data(contentsOf: stack.url))
        let length = Int(Self.uint(bytes, 16, as: UInt64.self))
        switch kind {
        case "magic": bytes[1] = 0x4D
        case "version": bytes[8] = 2
        case "metadata": bytes[40] ^= 0xFF
        case "truncated body": bytes.removeLast(10)
        case "trailing bytes": bytes += [0, 1, 2]
        default: bytes[28 + length + 20] ^= 0xFF
        }
        try Data(bytes).write(to: stack.url)
        let error = #expect(throws: StoreError.self) { try BinaryStore(url: stack.url, model: stack.model) }
        #expect(error?.kind == .notAStore)
        let expected = ["magic": "magic bytes", "version": "format version 2", "metadata": "CRC-32", "truncated body": "ends early",
                        "trailing bytes": "follow the end", "body": "not valid zlib data"][kind]!
        #expect(error?.message.contains(expected) == true, "\(String(describing: error))")
    }

    @Test("the metadata reads without the body: with the body gone, metadata still reads and the store does not open")
    func metadataAlone() throws {
        let stack = try AtomicTestStack(.binary)
        try EveryType.populate(stack.context(), items: 6)
        let expected = try #require(stack.coordinator.persistentStores.first).metadata
        var bytes = [UInt8](try Data(contentsOf: stack.url))
        let length = Int(Self.uint(bytes, 16, as: UInt64.self))
        bytes = Array(bytes.prefix(28 + length))
        try Data(bytes).write(to: stack.url)
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: stack.url) == expected)
        #expect(throws: StoreError.self) { try BinaryStore(url: stack.url, model: stack.model) }
    }

    @Test("a store with a large body (8,000 objects) round-trips through streaming compression")
    func largeBody() throws {
        let stack = try AtomicTestStack(.binary, model: Self.noteModel())
        let store = try #require(stack.coordinator.persistentStores.first as? BinaryStore)
        var request = StoreSaveRequest()
        var random = SeededGenerator(seed: 3)
        let texts = (0..<8_000).map { index in "note \(index) " + random.bytes(random.int(0...64)).base64EncodedString() }
        for (id, text) in zip(try store.newObjectIDs(for: "Note", count: texts.count), texts) {
            request.inserted.append(.init(objectID: id, attributes: ["text": .string(text)], toOne: [:]))
        }
        try store.save(request)
        let reopened = try BinaryStore(url: stack.url, model: stack.model, readOnly: true)
        #expect(reopened.objectCount == 8_000)
        let rows = try reopened.fetch(StoreFetchRequest(entityName: "Note"))
        #expect(rows.compactMap { if case .string(let text)? = $0.attributes["text"] { text } else { nil } } == texts)
    }
}
