import Foundation

/// Writes a ``PropertyListValue`` as a binary property list (`bplist00`): Core Data's
/// `Z_METADATA` blob and the binary store's metadata block, laid out as Apple's CFBinaryPList.c
/// reads it (Linux Foundation's reader is that code) and as ``BinaryPropertyListReader`` does.
///
/// Lade writes the format itself rather than through `PropertyListSerialization`: linked
/// statically (`--static-swift-stdlib`, how `make install` builds `lade`), Linux Foundation
/// refuses every array ("property lists cannot contain objects of type 'Not A Type'"), and
/// Core Data's metadata always holds one (`NSStoreModelVersionIdentifiers`).
///
/// The output is deterministic: dictionary keys in the order of their UTF-8 bytes; a string,
/// number, date or data that occurs more than once written once (when its bytes are the same)
/// and referred to wherever it occurs.
///
/// Keyed archives (`NSKeyedArchiver`: Core Data's model cache, a compiled `.mom`) also hold UIDs,
/// their object references (marker 0x8). ``BinaryPropertyListReader`` reads a UID as the one-key
/// dictionary `["CF$UID": n]`; `write(_:writingUIDs: true)` writes that form back as a UID.
/// Metadata never asks for it, so a metadata dictionary that happens to look like one stays a
/// dictionary.
///
/// Format reference: Apple's CFBinaryPList.c (opensource.apple.com, CF).
struct BinaryPropertyListWriter {
    /// One object of the object table: a value without members, already encoded, or an array
    /// (marker 0xA) or dictionary (0xD) of `count` members and its references (a dictionary's
    /// keys, then its values).
    private enum Entry {
        case scalar([UInt8])
        case container(marker: UInt8, count: Int, references: [Int])
    }

    private var entries: [Entry] = []
    /// Scalars written so far, by their encoding: two values share an object only when their
    /// bytes are the same (`String`'s `==` would merge NFC and NFD spellings, and `Double`'s
    /// 0.0 and -0.0).
    private var scalars: [[UInt8]: Int] = [:]
    /// Objects of the ASCII dictionary keys written so far.
    private var asciiKeys: [String: Int] = [:]
    /// Whether `["CF$UID": n]` is written as a UID (keyed archives) rather than a dictionary.
    private var writesUIDs = false

    /// The value as a binary property list. Throws when it nests deeper than
    /// ``PropertyListValue/maximumDepth`` or holds a date that is not finite: neither could be
    /// read back. With `writingUIDs`, each one-key dictionary `["CF$UID": n]` (n from 0 to
    /// 2^32-1) is written as a UID, as ``BinaryPropertyListReader`` reads one back with `readingUIDs`.
    static func write(_ value: PropertyListValue, writingUIDs: Bool = false) throws -> Data {
        // A keyed archive is flat (its objects refer to each other by UID) and can be large:
        // only other lists are measured.
        guard writingUIDs || value.nestingDepth <= PropertyListValue.maximumDepth else {
            throw PropertyListError("arrays and dictionaries nest \(value.nestingDepth) levels deep; at most \(PropertyListValue.maximumDepth) can be stored and read back")
        }
        var writer = BinaryPropertyListWriter()
        writer.writesUIDs = writingUIDs
        let top = try writer.add(value)
        return writer.encode(top: top)
    }

    /// The UID a `["CF$UID": n]` dictionary stands for, when UIDs are written.
    private func uid(_ value: PropertyListValue) -> UInt32? {
        guard writesUIDs, case .dictionary(let members) = value, members.count == 1,
              case .integer(let number)? = members["CF$UID"] else { return nil }
        return UInt32(exactly: number)
    }

    /// Adds `value` (its members first for a container's references) and returns its object number.
    private mutating func add(_ value: PropertyListValue) throws -> Int {
        if let uid = uid(value) {
            // Marker 0x8, then the UID big-endian in 1, 2 or 4 bytes (the low nibble is the count less one).
            let size = Self.width(UInt64(uid))
            var encoded: [UInt8] = [0x80 | UInt8(size - 1)]
            Self.append(UInt64(uid), width: size, to: &encoded)
            return addScalar(encoded)
        }
        switch value {
        case .array(let items):
            let number = reserve()
            var references: [Int] = []
            references.reserveCapacity(items.count)
            for item in items { references.append(try add(item)) }
            entries[number] = .container(marker: 0xA, count: items.count, references: references)
            return number
        case .dictionary(let members):
            let number = reserve()
            let keys = members.keys.sorted(by: Self.precedes)
            var references: [Int] = []
            references.reserveCapacity(keys.count * 2)
            for key in keys { references.append(addKey(key)) }
            for key in keys { references.append(try add(members[key]!)) }
            entries[number] = .container(marker: 0xD, count: keys.count, references: references)
            return number
        case .date(let date) where !date.timeIntervalSinceReferenceDate.isFinite:
            throw PropertyListError("a date that is not finite (\(date.timeIntervalSinceReferenceDate) seconds) cannot be stored and read back")
        default:
            var encoded: [UInt8] = []
            Self.appendScalar(value, to: &encoded)
            return addScalar(encoded)
        }
    }

    /// A dictionary key's object. Keys repeat (a keyed archive has a few names in every object),
    /// so an ASCII key's object is remembered by the key itself; a key found there is used only
    /// when it is ASCII too (`String`'s `==` finds the Kelvin sign equal to "K"), any other goes
    /// by its encoding, as every string does.
    private mutating func addKey(_ key: String) -> Int {
        if let known = asciiKeys[key], key.utf8.withContiguousStorageIfAvailable({ $0.allSatisfy { $0 < 0x80 } }) == true { return known }
        var encoded: [UInt8] = []
        Self.appendScalar(.string(key), to: &encoded)
        let number = addScalar(encoded)
        if encoded.first.map({ $0 >> 4 == 0x5 }) == true { asciiKeys[key] = number }
        return number
    }

    /// Adds an encoded scalar once, or returns the object that already holds the same bytes.
    private mutating func addScalar(_ encoded: [UInt8]) -> Int {
        if let known = scalars[encoded] { return known }
        let number = entries.count
        entries.append(.scalar(encoded))
        scalars[encoded] = number
        return number
    }

    /// Whether `a`'s UTF-8 bytes sort before `b`'s (memcmp, then the shorter first).
    private static func precedes(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let common = min(x.count, y.count)
                let order = common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common)
                return order < 0 || (order == 0 && x.count < y.count)
            }
        }
    }

    /// A place for a container, filled once its members are added.
    private mutating func reserve() -> Int {
        entries.append(.scalar([]))
        return entries.count - 1
    }

    /// The fewest of 1, 2, 4 or 8 bytes that hold `value`.
    private static func width(_ value: UInt64) -> Int {
        value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
    }

    private static func append(_ value: UInt64, width: Int, to bytes: inout [UInt8]) {
        // A plain loop: `stride` costs a generic iterator per call, and this runs for every reference.
        var shift = (width - 1) * 8
        while shift >= 0 {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            shift -= 8
        }
    }

    /// A marker with `count` in its low nibble, or 0xF and the count as an integer object after it.
    private static func appendMarker(_ kind: UInt8, count: Int, to bytes: inout [UInt8]) {
        if count < 15 {
            bytes.append(kind << 4 | UInt8(count))
        } else {
            bytes.append(kind << 4 | 0xF)
            appendInteger(UInt64(count), to: &bytes)
        }
    }

    /// A non-negative integer object in the fewest bytes (1, 2 or 4 bytes are read as unsigned,
    /// 8 as signed, so a negative integer always takes 8).
    private static func appendInteger(_ value: UInt64, to bytes: inout [UInt8]) {
        let size = width(value)
        bytes.append(0x10 | UInt8(size.trailingZeroBitCount))
        append(value, width: size, to: &bytes)
    }

    private func encode(top: Int) -> Data {
        let referenceSize = Self.width(UInt64(entries.count - 1))
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        offsets.reserveCapacity(entries.count)
        for entry in entries {
            offsets.append(bytes.count)
            switch entry {
            case .container(let marker, let count, let references):
                Self.appendMarker(marker, count: count, to: &bytes)
                for reference in references { Self.append(UInt64(reference), width: referenceSize, to: &bytes) }
            case .scalar(let encoded):
                bytes += encoded
            }
        }
        let tableOffset = bytes.count
        let offsetSize = Self.width(UInt64(offsets.last ?? 0))
        for offset in offsets { Self.append(UInt64(offset), width: offsetSize, to: &bytes) }
        // The trailer: five unused bytes, the sort version, the two sizes, then three 8-byte words.
        bytes += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
        Self.append(UInt64(entries.count), width: 8, to: &bytes)
        Self.append(UInt64(top), width: 8, to: &bytes)
        Self.append(UInt64(tableOffset), width: 8, to: &bytes)
        return Data(bytes)
    }

    private static func appendScalar(_ value: PropertyListValue, to bytes: inout [UInt8]) {
        switch value {
        case .bool(let flag):
            bytes.append(flag ? 0x09 : 0x08)
        case .integer(let number):
            if number < 0 {
                bytes.append(0x13)
                append(UInt64(bitPattern: number), width: 8, to: &bytes)
            } else {
                appendInteger(UInt64(number), to: &bytes)
            }
        case .real(let number):
            bytes.append(0x23)
            append(number.bitPattern, width: 8, to: &bytes)
        case .date(let date):
            bytes.append(0x33)
            append(date.timeIntervalSinceReferenceDate.bitPattern, width: 8, to: &bytes)
        case .data(let data):
            appendMarker(0x4, count: data.count, to: &bytes)
            bytes += data
        case .string(let text):
            if text.utf8.allSatisfy({ $0 < 0x80 }) {
                appendMarker(0x5, count: text.utf8.count, to: &bytes)
                bytes += text.utf8
            } else {
                // UTF-16, big-endian; the count is in UTF-16 code units.
                appendMarker(0x6, count: text.utf16.count, to: &bytes)
                for unit in text.utf16 { bytes += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
            }
        case .array, .dictionary:
            preconditionFailure("containers are written as references")
        }
    }
}
