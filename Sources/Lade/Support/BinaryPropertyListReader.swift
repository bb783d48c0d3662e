import Foundation

/// Reads a binary property list (`bplist00`, the format of Core Data's `Z_METADATA` and of the
/// binary store's metadata block) into a ``PropertyListValue``, checking everything the file
/// declares before trusting it: the trailer's sizes against the file, every offset and length
/// against the bytes there are, object references against the object count, nesting depth,
/// reference cycles, and the number of values a shared object would expand into.
///
/// Foundation's reader on Linux crashes on some damaged files (found by `make fuzz`), and a
/// store's metadata is read by every command, so a hostile store must get an error instead.
///
/// Format reference: Apple's CFBinaryPList.c (opensource.apple.com, CF), "HEADER / OBJECT TABLE /
/// OFFSET TABLE / TRAILER".
struct BinaryPropertyListReader {
    /// How deep arrays and dictionaries may nest: the same bound the writers keep
    /// (``PropertyListValue/maximumDepth``), so that nothing is written that cannot be read.
    static var maximumDepth: Int { PropertyListValue.maximumDepth }
    /// How many values one file may expand into (an object referred to twice counts twice):
    /// a million, or eight for each object the file holds, whichever is more, so that sharing
    /// cannot blow a small file up, while a large archive (a model of 20,000 entities' cache
    /// holds several million objects, each read once) is still read.
    static let maximumValues = 1_000_000
    private var valueBound: Int { max(Self.maximumValues, objectCount * 8) * readsPerObject }
    /// How many times each object may be read: once when the whole file is read; in an archive
    /// read object by object (``readKeyedArchive(_:)``), each time its reader asks for one,
    /// which `KeyedArchive` bounds (its `readsPerObject`, and its own error comes first).
    private var readsPerObject = 1

    private let bytes: [UInt8]
    private let offsetSize: Int
    private let referenceSize: Int
    private let objectCount: Int
    private let offsetTable: Int
    private var values = 0
    private var onPath: Set<Int> = []
    /// Strings, numbers, data and UIDs already read, by object: a keyed archive refers to one
    /// key string or UID object from thousands of places, and each place then shares one value
    /// instead of holding a copy (a model of 100,000 entities' archive held 3.3 million UIDs).
    private var scalars: [Int: PropertyListValue] = [:]
    /// Whether UIDs (keyed archives' object references) are read, as `["CF$UID": n]`, the
    /// form Apple's XML property lists give them; metadata holds none.
    private var readsUIDs = false

    static func isBinaryPropertyList(_ data: Data) -> Bool { data.starts(with: Array("bplist".utf8)) }

    static func read(_ data: Data, readingUIDs: Bool = false) throws -> PropertyListValue {
        var reader = try BinaryPropertyListReader(bytes: [UInt8](data))
        reader.readsUIDs = readingUIDs
        let top = try reader.integer(at: data.count - 16, size: 8)
        guard top < reader.objectCount else { throw PropertyListError(damaged: "the top object \(top) is outside the \(reader.objectCount) objects") }
        return try reader.object(Int(top), depth: 0)
    }

    /// Reads a keyed archive's top dictionary (`$archiver`, `$top`, …) but not its `$objects`:
    /// their object references are returned, and ``archivedObject(_:)`` reads each when it is
    /// asked for. A compiled model's archive decoded whole was ten times its size in memory (a
    /// model of 100,000 entities: 47 MB of archive, 500 MB of decoded objects; issue 43 §4
    /// "Slow"); read this way, what is kept is the file and the strings read. Every check of
    /// ``read(_:readingUIDs:)`` applies, to each object as it is read.
    static func readKeyedArchive(_ data: Data) throws -> (top: [String: PropertyListValue], objects: [Int], reader: BinaryPropertyListReader) {
        var reader = try BinaryPropertyListReader(bytes: [UInt8](data))
        reader.readsUIDs = true
        reader.readsPerObject = KeyedArchive.readsPerObject
        let top = try reader.integer(at: data.count - 16, size: 8)
        guard top < reader.objectCount else { throw PropertyListError(damaged: "the top object \(top) is outside the \(reader.objectCount) objects") }
        let start = try reader.offset(of: Int(top))
        guard reader.bytes[start] >> 4 == 0xD else { return ([:], [], reader) }
        let (count, content) = try reader.count(reader.bytes[start] & 0xF, at: start)
        let length = count.multipliedReportingOverflow(by: reader.referenceSize * 2)
        guard !length.overflow else { throw PropertyListError(damaged: "object \(top) declares \(count) members") }
        _ = try reader.slice(content, length.partialValue)
        var dictionary: [String: PropertyListValue] = [:]
        var objects: [Int] = []
        for index in 0..<count {
            guard case .string(let key) = try reader.object(try reader.reference(at: content + index * reader.referenceSize), depth: 1) else {
                throw PropertyListError(damaged: "object \(top) is a dictionary with a key that is not a string")
            }
            let value = try reader.reference(at: content + (count + index) * reader.referenceSize)
            let valueStart = try reader.offset(of: value)
            if key == "$objects", reader.bytes[valueStart] >> 4 == 0xA {
                let (members, memberContent) = try reader.count(reader.bytes[valueStart] & 0xF, at: valueStart)
                let membersLength = members.multipliedReportingOverflow(by: reader.referenceSize)
                guard !membersLength.overflow else { throw PropertyListError(damaged: "object \(value) declares \(members) members") }
                _ = try reader.slice(memberContent, membersLength.partialValue)
                objects = try (0..<members).map { try reader.reference(at: memberContent + $0 * reader.referenceSize) }
                dictionary[key] = .array([])
            } else {
                dictionary[key] = try reader.object(value, depth: 1)
            }
        }
        return (dictionary, objects, reader)
    }

    /// One of a keyed archive's `$objects`, by its reference (``readKeyedArchive(_:)``).
    mutating func archivedObject(_ reference: Int) throws -> PropertyListValue {
        try object(reference, depth: 2)
    }

    private init(bytes: [UInt8]) throws {
        self.bytes = bytes
        guard bytes.count >= 8 + 1 + 32, bytes.starts(with: Array("bplist00".utf8)) else {
            throw PropertyListError(damaged: "too short, or not version 00 ('bplist00')")
        }
        let trailer = bytes.count - 32
        offsetSize = Int(bytes[trailer + 6])
        referenceSize = Int(bytes[trailer + 7])
        guard [1, 2, 4, 8].contains(offsetSize), [1, 2, 4, 8].contains(referenceSize) else {
            throw PropertyListError(damaged: "offset size \(offsetSize) or reference size \(referenceSize) is not 1, 2, 4 or 8")
        }
        func word(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 << 8 | UInt64(bytes[at + $1]) } }
        let count = word(trailer + 8), table = word(trailer + 24)
        guard count >= 1, table >= 8, table < UInt64(trailer),
              count <= UInt64(trailer) / UInt64(offsetSize), table + count * UInt64(offsetSize) <= UInt64(trailer) else {
            throw PropertyListError(damaged: "the trailer declares \(count) objects with their offsets at \(table), which the file cannot hold")
        }
        objectCount = Int(count)
        offsetTable = Int(table)
    }

    private func integer(at offset: Int, size: Int) throws -> UInt64 {
        guard offset >= 0, size <= 8, offset + size <= bytes.count else { throw PropertyListError(damaged: "a field at \(offset) runs past the end") }
        var value: UInt64 = 0
        for index in 0..<size { value = value << 8 | UInt64(bytes[offset + index]) }
        return value
    }

    private func offset(of object: Int) throws -> Int {
        let offset = try integer(at: offsetTable + object * offsetSize, size: offsetSize)
        guard offset >= 8, offset < UInt64(offsetTable) else { throw PropertyListError(damaged: "object \(object) lies outside the object table") }
        return Int(offset)
    }

    private func reference(at offset: Int) throws -> Int {
        let reference = try integer(at: offset, size: referenceSize)
        guard reference < UInt64(objectCount) else { throw PropertyListError(damaged: "a reference to object \(reference) of \(objectCount)") }
        return Int(reference)
    }

    /// The count of an object whose marker's low nibble is `nibble`: the nibble, or (0xF) an integer object after the marker.
    private func count(_ nibble: UInt8, at start: Int) throws -> (count: Int, contentStart: Int) {
        guard nibble == 0xF else { return (Int(nibble), start + 1) }
        guard start + 1 < bytes.count else { throw PropertyListError(damaged: "a length at \(start) runs past the end") }
        let marker = bytes[start + 1]
        guard marker >> 4 == 0x1, marker & 0xF <= 3 else { throw PropertyListError(damaged: "a length at \(start) is not an integer") }
        let size = 1 << Int(marker & 0xF)
        let count = try integer(at: start + 2, size: size)
        guard count <= UInt64(bytes.count) else { throw PropertyListError(damaged: "a length of \(count) in a file of \(bytes.count) bytes") }
        return (Int(count), start + 2 + size)
    }

    private func slice(_ start: Int, _ length: Int) throws -> ArraySlice<UInt8> {
        guard length >= 0, start <= offsetTable, length <= offsetTable - start else {
            throw PropertyListError(damaged: "an object at \(start) of \(length) bytes runs past the object table")
        }
        return bytes[start..<(start + length)]
    }

    private mutating func object(_ reference: Int, depth: Int) throws -> PropertyListValue {
        values += 1
        guard values <= valueBound else { throw PropertyListError(damaged: "it expands into more than \(valueBound) values") }
        let start = try offset(of: reference)
        let isContainer = bytes[start] >> 4 == 0xA || bytes[start] >> 4 == 0xD
        if isContainer { return try object(reference, at: start, depth: depth) }
        if let shared = scalars[reference] { return shared }
        let value = try object(reference, at: start, depth: depth)
        scalars[reference] = value
        return value
    }

    private mutating func object(_ reference: Int, at start: Int, depth: Int) throws -> PropertyListValue {
        let marker = bytes[start]
        let nibble = marker & 0xF
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            default: throw PropertyListError(damaged: "object \(reference) is a null or fill marker, which metadata cannot hold")
            }
        case 0x1:
            switch nibble {
            case 0, 1, 2:
                return .integer(Int64(try integer(at: start + 1, size: 1 << Int(nibble))))
            case 3:
                return .integer(Int64(bitPattern: try integer(at: start + 1, size: 8)))
            case 4:
                // 16 bytes: what fits in 64 bits (the high half a sign extension of the low) is kept.
                let high = try integer(at: start + 1, size: 8), low = try integer(at: start + 9, size: 8)
                guard high == 0 && low >> 63 == 0 || high == .max && low >> 63 == 1 else {
                    throw PropertyListError(damaged: "object \(reference) is an integer beyond 64 bits")
                }
                return .integer(Int64(bitPattern: low))
            default: throw PropertyListError(damaged: "object \(reference) is an integer of \(1 << Int(nibble)) bytes")
            }
        case 0x2:
            switch nibble {
            case 2: return .real(Double(Float(bitPattern: UInt32(try integer(at: start + 1, size: 4)))))
            case 3: return .real(Double(bitPattern: try integer(at: start + 1, size: 8)))
            default: throw PropertyListError(damaged: "object \(reference) is a real of \(1 << Int(nibble)) bytes")
            }
        case 0x3:
            guard marker == 0x33 else { throw PropertyListError(damaged: "object \(reference) has the unknown marker \(marker)") }
            let seconds = Double(bitPattern: try integer(at: start + 1, size: 8))
            guard seconds.isFinite else { throw PropertyListError(damaged: "object \(reference) is a date that is not finite") }
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case 0x4:
            let (length, content) = try count(nibble, at: start)
            return .data(Data(try slice(content, length)))
        case 0x5:
            let (length, content) = try count(nibble, at: start)
            let ascii = try slice(content, length)
            guard !ascii.contains(where: { $0 >= 0x80 }) else { throw PropertyListError(damaged: "object \(reference) is an ASCII string with non-ASCII bytes") }
            return .string(String(decoding: ascii, as: UTF8.self))
        case 0x6:
            let (units, content) = try count(nibble, at: start)
            guard units <= Int.max / 2 else { throw PropertyListError(damaged: "object \(reference) is too long") }
            let raw = try slice(content, units * 2)
            var utf16: [UInt16] = []
            utf16.reserveCapacity(units)
            var index = raw.startIndex
            while index < raw.endIndex { utf16.append(UInt16(raw[index]) << 8 | UInt16(raw[index + 1])); index += 2 }
            guard let string = String(validating: utf16, as: UTF16.self) else {
                throw PropertyListError(damaged: "object \(reference) is a UTF-16 string with unpaired surrogates")
            }
            return .string(string)
        case 0xA, 0xD:
            let isDictionary = marker >> 4 == 0xD
            let (count, content) = try count(nibble, at: start)
            guard depth < Self.maximumDepth else {
                throw PropertyListError(damaged: "arrays and dictionaries nest deeper than \(Self.maximumDepth) levels")
            }
            let referencesLength = count.multipliedReportingOverflow(by: referenceSize * (isDictionary ? 2 : 1))
            guard !referencesLength.overflow else { throw PropertyListError(damaged: "object \(reference) declares \(count) members") }
            _ = try slice(content, referencesLength.partialValue)
            guard onPath.insert(reference).inserted else { throw PropertyListError(damaged: "object \(reference) contains itself") }
            defer { onPath.remove(reference) }
            if isDictionary {
                var dictionary: [String: PropertyListValue] = [:]
                for index in 0..<count {
                    guard case .string(let key) = try object(try self.reference(at: content + index * referenceSize), depth: depth + 1) else {
                        throw PropertyListError(damaged: "object \(reference) is a dictionary with a key that is not a string")
                    }
                    dictionary[key] = try object(try self.reference(at: content + (count + index) * referenceSize), depth: depth + 1)
                }
                return .dictionary(dictionary)
            }
            var array: [PropertyListValue] = []
            for index in 0..<count {
                array.append(try object(try self.reference(at: content + index * referenceSize), depth: depth + 1))
            }
            return .array(array)
        case 0x8 where readsUIDs:
            let uid = try integer(at: start + 1, size: Int(nibble) + 1)
            guard let value = Int64(exactly: uid) else {
                throw PropertyListError(damaged: "object \(reference) is a UID of \(uid), past what a keyed archive can refer to")
            }
            return .dictionary(["CF$UID": .integer(value)])
        default:
            throw PropertyListError(damaged: "object \(reference) has the marker \(String(marker, radix: 16)), which metadata cannot hold (UID, set or unknown)")
        }
    }
}
