import CZlib
import Foundation
import OrderedCollections

/// Lade's binary store file, specified byte by byte in `docs/binary-store.md`: a fixed header,
/// the metadata as a binary property list (readable without touching the rest), then the
/// objects as one zlib stream that ends with the file.
///
/// ```
/// 0   8  magic        89 4C 41 44 45 0D 0A 1A   ("\x89LADE\r\n\x1a")
/// 8   4  version      1, little-endian
/// 12  4  flags        0
/// 16  8  M            metadata length, little-endian
/// 24  4  CRC-32       of the metadata bytes
/// 28  M  metadata     binary property list (bplist00), a dictionary
/// 28+M    body        zlib stream (RFC 1950) to the end of the file
/// ```
enum BinaryStoreFile {
    static let magic: [UInt8] = [0x89, 0x4C, 0x41, 0x44, 0x45, 0x0D, 0x0A, 0x1A]
    static let formatVersion: UInt32 = 1
    static let headerSize = 28

    /// Tags of attribute values in the body.
    enum ValueTag: UInt8 {
        case integer = 1, double, float, decimal, string, bool, date, binary, uuid, uri
    }

    // MARK: Header and metadata

    /// Opens the file and reads its header and metadata; the descriptor is left at the body.
    static func openHeader(at url: URL) throws -> (descriptor: Int32, metadata: [String: PropertyListValue], bodyOffset: Int) {
        let path = url.path
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            throw StoreError(code == ENOENT ? .notFound : .io, path: path, code == ENOENT ? "no store here" : "cannot open the store: \(String(cString: strerror(code)))")
        }
        do {
            let header = try readExactly(descriptor, headerSize, path: path)
            guard Array(header[0..<8]) == magic else {
                throw StoreError(.notAStore, path: path, "the file does not start with the binary store's magic bytes: it is not a Lade binary store")
            }
            let version = UInt32(littleEndian: header, at: 8)
            guard version == formatVersion else {
                throw StoreError(.notAStore, path: path, "binary store format version \(version); this Lade reads version \(formatVersion) (a newer Lade wrote it?)")
            }
            let declaredLength = UInt64(littleEndian: header, at: 16)
            let checksum = UInt32(littleEndian: header, at: 24)
            var info = stat()
            let fileSize = fstat(descriptor, &info) == 0 ? Int(info.st_size) : 0
            guard declaredLength <= UInt64(max(0, fileSize - headerSize)) else {
                throw StoreError(.notAStore, path: path, "the metadata length \(declaredLength) is more than the file holds (\(fileSize) bytes): the file is damaged")
            }
            let length = Int(declaredLength)
            let bytes = try readExactly(descriptor, length, path: path)
            guard crc(bytes) == checksum else {
                throw StoreError(.notAStore, path: path, "the metadata block fails its CRC-32 check: the file is damaged")
            }
            guard let decoded = try? PropertyListValue.decode(Data(bytes)), let metadata = decoded.dictionaryValue else {
                throw StoreError(.notAStore, path: path, "the metadata block is not a property list dictionary: the file is damaged")
            }
            return (descriptor, metadata, headerSize + length)
        } catch {
            close(descriptor)
            throw error
        }
    }

    /// Reads the metadata only: the header and metadata block, whatever the size of the body.
    static func readMetadata(at url: URL) throws -> [String: PropertyListValue] {
        let (descriptor, metadata, _) = try openHeader(at: url)
        close(descriptor)
        return metadata
    }

    static func writeHeader(_ metadata: [String: PropertyListValue], to output: FileOutput) throws {
        let plist = [UInt8](try PropertyListValue.dictionary(metadata).binaryPropertyList())
        var header = magic
        header.appendLittleEndian(formatVersion)
        header.appendLittleEndian(UInt32(0))
        header.appendLittleEndian(UInt64(plist.count))
        header.appendLittleEndian(crc(plist))
        try output.write(header)
        try output.write(plist)
    }

    /// Replaces the metadata block: the new header and metadata go to a new file beside the
    /// store, the compressed body is copied through unchanged, and the file is moved into place.
    static func writeMetadata(_ metadata: [String: PropertyListValue], at url: URL) throws {
        let (descriptor, _, _) = try openHeader(at: url)
        defer { close(descriptor) }
        try AtomicFileWriter.replace(url) { output in
            try writeHeader(metadata, to: output)
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let count = chunk.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress!, $0.count) }
                guard count >= 0 else { throw StoreError(.io, path: url.path, "cannot read the store: \(String(cString: strerror(errno)))") }
                if count == 0 { break }
                try output.write(chunk[0..<count])
            }
        }
    }

    // MARK: Whole store

    /// Writes the whole store.
    static func write(_ contents: AtomicStoreContents, model: ManagedObjectModel, to output: FileOutput) throws {
        try writeHeader(contents.metadata, to: output)
        let body = try BodyWriter(output: output)
        let graph = contents.graph
        body.uvarint(UInt64(graph.nextKey))
        var entityIndex: [String: Int] = [:]
        var attributeIndex: [String: [String: Int]] = [:]
        var relationshipIndex: [String: [String: Int]] = [:]
        body.uvarint(UInt64(model.entities.count))
        for (position, entity) in model.entities.enumerated() {
            entityIndex[entity.name] = position
            body.string(entity.name)
            let attributes = model.attributes(of: entity.name).filter { !$0.isTransient && $0.type != .undefined }
            body.uvarint(UInt64(attributes.count))
            for (index, attribute) in attributes.enumerated() {
                body.string(attribute.name)
                attributeIndex[entity.name, default: [:]][attribute.name] = index
            }
            let relationships = model.relationships(of: entity.name).filter { !$0.isTransient }
            body.uvarint(UInt64(relationships.count))
            for (index, relationship) in relationships.enumerated() {
                body.string(relationship.name)
                relationshipIndex[entity.name, default: [:]][relationship.name] = index
            }
        }
        try body.flushIfFull()
        body.uvarint(UInt64(graph.count))
        for key in graph.objects.keys.sorted() {
            let object = graph[key]!
            guard let entity = entityIndex[object.entity] else { continue }
            body.uvarint(UInt64(entity))
            body.uvarint(UInt64(key))
            body.uvarint(UInt64(object.version))
            let attributes = attributeIndex[object.entity] ?? [:]
            let values = object.attributes.compactMap { name, value in attributes[name].map { ($0, value) } }.sorted { $0.0 < $1.0 }
            body.uvarint(UInt64(values.count))
            for (index, value) in values {
                body.uvarint(UInt64(index))
                body.value(value)
            }
            let relationships = relationshipIndex[object.entity] ?? [:]
            var links: [(Int, [Int64])] = []
            for (name, destination) in object.toOne where graph[destination] != nil {
                if let index = relationships[name] { links.append((index, [destination])) }
            }
            for (name, destinations) in object.toMany {
                let present = Array(destinations.filter { graph[$0] != nil })
                if let index = relationships[name], !present.isEmpty { links.append((index, present)) }
            }
            links.sort { $0.0 < $1.0 }
            body.uvarint(UInt64(links.count))
            for (index, destinations) in links {
                body.uvarint(UInt64(index))
                body.uvarint(UInt64(destinations.count))
                for destination in destinations { body.uvarint(UInt64(destination)) }
            }
            try body.flushIfFull()
        }
        try body.finish()
    }

    /// Reads the whole store; objects of entities, and properties, the model lacks are refused.
    static func read(at url: URL, model: ManagedObjectModel) throws -> AtomicStoreContents {
        let path = url.path
        let (descriptor, metadata, _) = try openHeader(at: url)
        defer { close(descriptor) }
        let body = try BodyReader(descriptor: descriptor, path: path)
        var graph = AtomicObjectGraph(nextKey: try body.signed())
        struct EntityTable { var name: String; var attributes: [AttributeDescription]; var relationships: [RelationshipDescription] }
        var entities: [EntityTable] = []
        for _ in 0..<(try body.count()) {
            let name = try body.string()
            guard model.entity(named: name) != nil else {
                throw StoreError(.modelMismatch(entities: [name]), path: path, "the store has entity \(name), which the model does not have; open it with the model it was made with")
            }
            var table = EntityTable(name: name, attributes: [], relationships: [])
            for _ in 0..<(try body.count()) {
                let attribute = try body.string()
                guard let described = model.attribute(attribute, of: name) else {
                    throw StoreError(.modelMismatch(entities: [name]), path: path, "the store has attribute \(name).\(attribute), which the model does not have; open it with the model it was made with")
                }
                table.attributes.append(described)
            }
            for _ in 0..<(try body.count()) {
                let relationship = try body.string()
                guard let described = model.relationship(relationship, of: name) else {
                    throw StoreError(.modelMismatch(entities: [name]), path: path, "the store has relationship \(name).\(relationship), which the model does not have; open it with the model it was made with")
                }
                table.relationships.append(described)
            }
            entities.append(table)
        }
        for _ in 0..<(try body.count()) {
            let entityNumber = try body.count()
            guard entityNumber < entities.count else { throw body.damaged("an object of entity number \(entityNumber)") }
            let table = entities[entityNumber]
            let key = try body.signed()
            var object = AtomicObject(entity: table.name, version: try body.signed())
            for _ in 0..<(try body.count()) {
                let index = try body.count()
                guard index < table.attributes.count else { throw body.damaged("attribute number \(index) of \(table.name)") }
                object.attributes[table.attributes[index].name] = try body.value()
            }
            for _ in 0..<(try body.count()) {
                let index = try body.count()
                guard index < table.relationships.count else { throw body.damaged("relationship number \(index) of \(table.name)") }
                let relationship = table.relationships[index]
                var destinations: OrderedSet<Int64> = []
                for _ in 0..<(try body.count()) { destinations.append(try body.signed()) }
                if relationship.isToMany {
                    object.toMany[relationship.name] = destinations
                } else if let destination = destinations.first {
                    object.toOne[relationship.name] = destination
                }
            }
            guard graph[key] == nil else { throw body.damaged("a second object with key \(key)") }
            graph.set(object, for: key)
        }
        try body.finish()
        return AtomicStoreContents(metadata: metadata, graph: graph)
    }

    // MARK: Bytes

    static func crc(_ bytes: [UInt8]) -> UInt32 {
        UInt32(bytes.withUnsafeBufferPointer { crc32(0, $0.baseAddress, uInt($0.count)) })
    }

    static func readExactly(_ descriptor: Int32, _ count: Int, path: String) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let read = bytes.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress! + offset, count - offset) }
            if read < 0 {
                if errno == EINTR { continue }
                throw StoreError(.io, path: path, "cannot read the store: \(String(cString: strerror(errno)))")
            }
            guard read > 0 else { throw StoreError(.notAStore, path: path, "the file ends inside its header: it is truncated or not a binary store") }
            offset += read
        }
        return bytes
    }
}

/// The body's encoding: unsigned LEB128 varints for counts, indexes, keys and versions;
/// strings as a varint byte length and UTF-8; values tagged (`BinaryStoreFile.ValueTag`).
final class BodyWriter {
    private let deflater: ZlibDeflater
    private var bytes: [UInt8] = []

    init(output: FileOutput) throws {
        deflater = try ZlibDeflater(output: output)
        bytes.reserveCapacity(1 << 16)
    }

    func uvarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    func string(_ text: String) {
        let utf8 = Array(text.utf8)
        uvarint(UInt64(utf8.count))
        bytes += utf8
    }

    func value(_ value: AttributeValue) {
        typealias Tag = BinaryStoreFile.ValueTag
        switch value {
        case .integer(let number): bytes.append(Tag.integer.rawValue); bytes.appendLittleEndian(UInt64(bitPattern: number))
        case .double(let number): bytes.append(Tag.double.rawValue); bytes.appendLittleEndian(number.bitPattern)
        case .float(let number): bytes.append(Tag.float.rawValue); bytes.appendLittleEndian(number.bitPattern)
        case .decimal: bytes.append(Tag.decimal.rawValue); string(value.canonicalText)
        case .string(let text): bytes.append(Tag.string.rawValue); string(text)
        case .bool(let flag): bytes.append(Tag.bool.rawValue); bytes.append(flag ? 1 : 0)
        // Values are checked against their attribute's type, and a binary store refuses every
        // model with a composite attribute (`StoreError.refusingComposites`).
        case .composite: preconditionFailure("a composite value reached a binary store, which refuses composite attributes")
        case .date(let date): bytes.append(Tag.date.rawValue); bytes.appendLittleEndian(date.timeIntervalSinceReferenceDate.bitPattern)
        case .binary(let data):
            bytes.append(Tag.binary.rawValue)
            uvarint(UInt64(data.count))
            bytes += data
        case .uuid(let uuid): bytes.append(Tag.uuid.rawValue); withUnsafeBytes(of: uuid.uuid) { bytes += $0 }
        case .uri(let url): bytes.append(Tag.uri.rawValue); string(url.absoluteString)
        }
    }

    /// Bytes as they are, for tests that build damaged bodies.
    func rawForTesting(_ raw: [UInt8]) { bytes += raw }

    func flushIfFull() throws {
        guard bytes.count >= 1 << 16 else { return }
        try deflater.write(bytes)
        bytes.removeAll(keepingCapacity: true)
    }

    func finish() throws {
        try deflater.write(bytes)
        bytes.removeAll()
        try deflater.finish()
    }
}

final class BodyReader {
    private let inflater: ZlibInflater
    private let path: String

    init(descriptor: Int32, path: String) throws {
        inflater = try ZlibInflater(descriptor: descriptor, path: path)
        self.path = path
    }

    func damaged(_ what: String) -> StoreError {
        StoreError(.notAStore, path: path, "the store's body holds \(what), which cannot be: the file is damaged")
    }

    func uvarint() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try inflater.readByte()
            guard shift < 64 else { throw damaged("a number longer than 64 bits") }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }

    /// A key, version or next key: a varint that must fit in 63 bits.
    func signed() throws -> Int64 {
        let value = try uvarint()
        guard value <= UInt64(Int64.max) else { throw damaged("a key or version of \(value), beyond 63 bits") }
        return Int64(value)
    }

    /// A count or index: a varint that must fit in memory.
    func count() throws -> Int {
        let value = try uvarint()
        guard value < UInt64(Int32.max) else { throw damaged("a count of \(value)") }
        return Int(value)
    }

    /// The largest single value (a string or binary data) a binary store may hold: checked
    /// before anything is allocated for a length the file declares.
    static let maximumValueBytes = 256 << 20

    func bytes(_ count: Int) throws -> ArraySlice<UInt8> {
        try inflater.read(count)
    }

    /// A length declared in the body, for a value about to be read.
    func length() throws -> Int {
        let length = try uvarint()
        guard length <= UInt64(Self.maximumValueBytes) else {
            throw damaged("a value of \(length) bytes (a value holds at most \(Self.maximumValueBytes >> 20) MiB)")
        }
        return Int(length)
    }

    func string() throws -> String {
        String(decoding: try bytes(try length()), as: UTF8.self)
    }

    func value() throws -> AttributeValue {
        let tag = try inflater.readByte()
        switch BinaryStoreFile.ValueTag(rawValue: tag) {
        case .integer: return .integer(Int64(bitPattern: UInt64(littleEndian: Array(try bytes(8)), at: 0)))
        case .double: return .double(Double(bitPattern: UInt64(littleEndian: Array(try bytes(8)), at: 0)))
        case .float: return .float(Float(bitPattern: UInt32(littleEndian: Array(try bytes(4)), at: 0)))
        case .decimal:
            let text = try string()
            guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else { throw damaged("the decimal '\(text)'") }
            return .decimal(decimal)
        case .string: return .string(try string())
        case .bool: return .bool(try inflater.readByte() != 0)
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: UInt64(littleEndian: Array(try bytes(8)), at: 0))))
        case .binary: return .binary(Data(try bytes(try length())))
        case .uuid:
            let b = Array(try bytes(16))
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case .uri:
            let text = try string()
            guard let url = URL(string: text) else { throw damaged("the URI '\(text)'") }
            return .uri(url)
        case nil: throw damaged("a value with tag \(tag)")
        }
    }

    func finish() throws {
        try inflater.finish()
    }
}

extension [UInt8] {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}

extension FixedWidthInteger {
    /// Reads a little-endian integer from `bytes` at `offset`.
    init(littleEndian bytes: [UInt8], at offset: Int) {
        var value: Self = 0
        for index in 0..<(Self.bitWidth / 8) { value |= Self(bytes[offset + index]) << (8 * index) }
        self = value
    }
}
