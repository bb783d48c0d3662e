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

    /// Converts what `PropertyListSerialization` returns.
    public init?(foundation value: Any) {
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
                guard let converted = PropertyListValue(foundation: item) else { return nil }
                items.append(converted)
            }
            self = .array(items)
        case let dictionary as [String: Any]:
            var items: [String: PropertyListValue] = [:]
            for (key, item) in dictionary {
                guard let converted = PropertyListValue(foundation: item) else { return nil }
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

    /// Reads a property list in any of its formats (binary, XML).
    public static func decode(_ data: Data) throws -> PropertyListValue {
        let object = try PropertyListSerialization.propertyList(from: data, format: nil)
        guard let value = PropertyListValue(foundation: object) else {
            throw CocoaError(.propertyListReadCorrupt)
        }
        return value
    }

    /// The value as a binary property list (`bplist00`), as Core Data writes `Z_PLIST`.
    public func binaryPropertyList() throws -> Data {
        try PropertyListSerialization.data(fromPropertyList: foundationValue, format: .binary, options: 0)
    }

    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }
    public var integerValue: Int64? { if case .integer(let value) = self { value } else { nil } }
    public var dataValue: Data? { if case .data(let value) = self { value } else { nil } }
    public var arrayValue: [PropertyListValue]? { if case .array(let value) = self { value } else { nil } }
    public var dictionaryValue: [String: PropertyListValue]? { if case .dictionary(let value) = self { value } else { nil } }
}
