import Foundation

/// A property-list value: what store metadata holds. Sendable and comparable, unlike `Any`.
///
/// ```swift
/// let metadata: [String: PropertyListValue] = ["NSStoreType": .string("SQLite"), "seeded": .bool(true)]
/// let data = try PropertyListValue.dictionary(metadata).binaryPropertyList()
/// ```
public enum PropertyListValue: Sendable, Hashable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case bool(Bool)
    case date(Date)
    case data(Data)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])

    /// What the value is, in words ("a string", "an array"), for errors about a value of the wrong type.
    package var typeName: String {
        switch self {
        case .string: "a string"
        case .integer: "an integer"
        case .real: "a real number"
        case .bool: "a boolean"
        case .date: "a date"
        case .data: "data"
        case .array: "an array"
        case .dictionary: "a dictionary"
        }
    }

    /// Converts what `PropertyListSerialization` returns.
    public init?(foundation value: Any) {
        self.init(foundation: value, readingUIDs: false)
    }

    /// With `readingUIDs`, a keyed archive's object reference (a `CF$UID` dictionary of an XML
    /// list, which Foundation reads as its private UID class) becomes `["CF$UID": n]`, as
    /// ``BinaryPropertyListReader`` reads one; without, such a list is not converted.
    init?(foundation value: Any, readingUIDs: Bool) {
        if let uid = Self.keyedArchiverUID(value) {
            guard readingUIDs else { return nil }
            self = .dictionary(["CF$UID": .integer(Int64(uid))])
            return
        }
        switch value {
        case let string as String: self = .string(string)
        case let data as Data: self = .data(data)
        case let date as Date: self = .date(date)
        // A number bridges to Bool (and 0 or 1 would pass `as? Bool`), so ask the dynamic type.
        case let bool as Bool where type(of: value) == Bool.self: self = .bool(bool)
        case let number as NSNumber:
            switch String(cString: number.objCType) {
            case "d", "f": self = .real(number.doubleValue)
            case "B": self = .bool(number.boolValue)
            default: self = .integer(number.int64Value)
            }
        case let array as [Any]:
            var items: [PropertyListValue] = []
            for item in array {
                guard let converted = PropertyListValue(foundation: item, readingUIDs: readingUIDs) else { return nil }
                items.append(converted)
            }
            self = .array(items)
        case let dictionary as [String: Any]:
            var items: [String: PropertyListValue] = [:]
            for (key, item) in dictionary {
                guard let converted = PropertyListValue(foundation: item, readingUIDs: readingUIDs) else { return nil }
                items[key] = converted
            }
            self = .dictionary(items)
        default: return nil
        }
    }

    /// The value as Foundation property-list objects.
    public var foundationValue: Any {
        switch self {
        case .string(let value): value
        case .integer(let value): NSNumber(value: value)
        case .real(let value): NSNumber(value: value)
        case .bool(let value): NSNumber(value: value)
        case .date(let value): value
        case .data(let value): value
        case .array(let values): values.map(\.foundationValue)
        case .dictionary(let values): values.mapValues(\.foundationValue)
        }
    }

    /// How deep arrays and dictionaries may nest in metadata, for writing and reading alike:
    /// Foundation's reader refuses deeper lists, so a deeper value written would make the store
    /// unreadable.
    package static let maximumDepth = 512

    /// How deep this value's arrays and dictionaries nest (0 for a scalar), counted without recursion.
    package var nestingDepth: Int {
        var deepest = 0
        var pending: [(PropertyListValue, Int)] = [(self, 0)]
        while let (value, depth) = pending.popLast() {
            switch value {
            case .array(let items):
                deepest = max(deepest, depth + 1)
                pending.append(contentsOf: items.map { ($0, depth + 1) })
            case .dictionary(let items):
                deepest = max(deepest, depth + 1)
                pending.append(contentsOf: items.values.map { ($0, depth + 1) })
            default: break
            }
        }
        return deepest
    }

    /// Reads a property list in any of its formats (binary, XML). Binary lists are read by
    /// ``BinaryPropertyListReader``, which checks every size and reference a damaged or hostile
    /// file declares.
    /// With `readingUIDs`, a keyed archive's object references are read as `["CF$UID": n]`.
    package static func decode(_ data: Data, readingUIDs: Bool = false) throws -> PropertyListValue {
        if BinaryPropertyListReader.isBinaryPropertyList(data) { return try BinaryPropertyListReader.read(data, readingUIDs: readingUIDs) }
        // Foundation reads XML lists recursively: refuse nesting beyond the limit before it does.
        guard xmlNestingDepth(data) <= maximumDepth else {
            throw PropertyListError("a property list nests deeper than \(maximumDepth) levels")
        }
        let object = try PropertyListSerialization.propertyList(from: data, format: nil)
        guard let value = PropertyListValue(foundation: object, readingUIDs: readingUIDs) else {
            throw CocoaError(.propertyListReadCorrupt)
        }
        return value
    }

    /// Whether `data` is an XML property list (what `plutil -convert xml1` writes): markup whose
    /// prolog or root element is `plist`, as opposed to a model's `contents` XML, whose root
    /// is `model`.
    package static func isXMLPropertyList(_ data: Data) -> Bool {
        let head = data.prefix(1024)
        guard let first = head.firstIndex(where: { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }),
              head[first] == UInt8(ascii: "<") else { return false }
        let text = String(decoding: head, as: UTF8.self)
        return text.contains("<!DOCTYPE plist") || text.contains("<plist")
    }

    /// The number a keyed archive's object reference holds, as Foundation reads one from an XML
    /// list (`_NSKeyedArchiverUID`, a class it does not make public: its `value` is read by
    /// reflection); nil for any other value.
    private static func keyedArchiverUID(_ value: Any) -> UInt32? {
        guard String(describing: type(of: value)) == "_NSKeyedArchiverUID" else { return nil }
        return Mirror(reflecting: value).children.first { $0.label == "value" }?.value as? UInt32
    }

    /// The deepest nesting of `<array>` and `<dict>` elements in an XML property list (an upper bound:
    /// the elements are counted wherever their tags appear).
    static func xmlNestingDepth(_ data: Data) -> Int {
        var depth = 0, deepest = 0
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var index = 0
            func starts(_ text: StaticString, at offset: Int) -> Bool {
                let count = text.utf8CodeUnitCount
                guard offset + count <= bytes.count else { return false }
                return memcmp(bytes.baseAddress! + offset, text.utf8Start, count) == 0
            }
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "<") {
                    if starts("<array>", at: index) || starts("<dict>", at: index) || starts("<array ", at: index) || starts("<dict ", at: index) {
                        depth += 1
                        deepest = max(deepest, depth)
                    } else if starts("</array", at: index) || starts("</dict", at: index) {
                        depth -= 1
                    }
                }
                index += 1
            }
        }
        return deepest
    }

    /// The value as a binary property list (`bplist00`), as Core Data writes `Z_PLIST`.
    /// Throws when it nests deeper than ``maximumDepth`` or holds a date that is not finite.
    package func binaryPropertyList() throws -> Data {
        try BinaryPropertyListWriter.write(self)
    }

    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }
    public var integerValue: Int64? { if case .integer(let value) = self { value } else { nil } }
    public var dataValue: Data? { if case .data(let value) = self { value } else { nil } }
    public var arrayValue: [PropertyListValue]? { if case .array(let value) = self { value } else { nil } }
    public var dictionaryValue: [String: PropertyListValue]? { if case .dictionary(let value) = self { value } else { nil } }
}

/// A property list that cannot be read (damaged) or written (beyond what can be read back).
public struct PropertyListError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
    init(damaged reason: String) { description = "damaged binary property list: \(reason)" }
}


extension PropertyListError: LadeError {
    public var code: String { "plist" }
}
