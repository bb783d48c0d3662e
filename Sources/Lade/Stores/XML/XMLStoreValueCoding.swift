import Foundation

/// How Core Data's XML store spells attribute types and values:
/// `<attribute name="price" type="decimal">12.5</attribute>`.
///
/// | Model type    | `type=`         | Text                                                      |
/// |---------------|-----------------|-----------------------------------------------------------|
/// | Integer 16/32/64 | `int16` `int32` `int64` | decimal digits                              |
/// | Decimal       | `decimal`       | `12.5` (base 10, no exponent unless needed)               |
/// | Double, Float | `double` `float`| shortest text that reads back to the same number          |
/// | String        | `string`        | the characters, XML-escaped                               |
/// | Boolean       | `bool`          | `1` or `0`                                                |
/// | Date          | `date`          | seconds since 2001-01-01 UTC, `%.20f` (`336046917.00164198875427246094`) |
/// | Binary        | `binary`        | base64, 76-character lines                                |
/// | Transformable | `transformable` | base64 of the transformed data                            |
/// | UUID          | `uuid`          | `7F3C1C2E-9A4B-4B8E-9A0D-2F6E1B9D4C11`                    |
/// | URI           | `uri`           | the absolute URI                                          |
///
/// The corpus of Apple-written files shows `int16`, `int32`, `float`, `string`, `bool` and
/// `binary`; the others follow the same scheme (`int64`, `date` and `decimal` as other
/// Core Data XML files show them).
enum XMLStoreValueCoding {
    static func typeName(_ type: AttributeType) -> String {
        switch type {
        case .integer16: "int16"
        case .integer32: "int32"
        case .integer64: "int64"
        case .decimal: "decimal"
        case .double: "double"
        case .float: "float"
        case .string: "string"
        case .boolean: "bool"
        case .date: "date"
        case .binary: "binary"
        case .transformable: "transformable"
        case .uuid: "uuid"
        case .uri: "uri"
        case .undefined: "undefined"
        case .composite: "composite"  // refused before any value is written (`StoreError.refusingComposites`)
        }
    }

    /// The element text of a value.
    static func text(_ value: AttributeValue) -> String {
        switch value {
        case .bool(let flag): flag ? "1" : "0"
        case .date(let date): String(format: "%.20f", date.timeIntervalSinceReferenceDate)
        case .binary(let data): data.isEmpty ? "" : data.base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed]) + "\n"
        default: value.canonicalText
        }
    }

    /// Reads element text for an attribute of `type`; nil when the text does not spell one.
    static func value(_ text: String, as type: AttributeType) -> AttributeValue? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        switch type {
        case .string:
            return .string(text)
        case .binary, .transformable:
            return Data(base64Encoded: trimmed, options: .ignoreUnknownCharacters).map { .binary($0) }
        case .boolean:
            switch trimmed.lowercased() {
            case "1", "yes", "true": return .bool(true)
            case "0", "no", "false": return .bool(false)
            default: return nil
            }
        case .date:
            return Double(trimmed).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .uri:
            return URL(string: trimmed).map { .uri($0) }
        default:
            return try? AttributeValue(parsing: trimmed, as: type)
        }
    }

    /// The first character XML 1.0 cannot hold, if `text` has one (Core Data's XML store
    /// cannot store such strings either).
    static func unrepresentableCharacter(in text: String) -> Unicode.Scalar? {
        text.unicodeScalars.first { scalar in
            switch scalar.value {
            case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: false
            default: true
            }
        }
    }
}

extension XMLStreamWriter {
    /// Writes a property list (`<plist version="1.0">…`) as elements, one per line, starting at
    /// `indent` levels.
    func propertyList(_ value: PropertyListValue, indent: Int) throws {
        try start("plist")
        try attribute("version", "1.0")
        try newline(indent: indent + 1)
        try plistValue(value, indent: indent + 1)
        try newline(indent: indent)
        try end()
    }

    private func plistValue(_ value: PropertyListValue, indent: Int) throws {
        switch value {
        case .string(let text): try element("string", text)
        case .integer(let number): try element("integer", String(number))
        case .real(let number): try element("real", String(number))
        case .bool(let flag):
            try start(flag ? "true" : "false")
            try endCompact()
        case .date(let date):
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime]
            try element("date", formatter.string(from: date))
        case .data(let data): try element("data", data.base64EncodedString())
        case .array(let items):
            try start("array")
            for item in items {
                try newline(indent: indent + 1)
                try plistValue(item, indent: indent + 1)
            }
            if !items.isEmpty { try newline(indent: indent) }
            try end()
        case .dictionary(let entries):
            try start("dict")
            for key in entries.keys.sorted() {
                try newline(indent: indent + 1)
                try element("key", key)
                try newline(indent: indent + 1)
                try plistValue(entries[key]!, indent: indent + 1)
            }
            if !entries.isEmpty { try newline(indent: indent) }
            try end()
        }
    }
}
