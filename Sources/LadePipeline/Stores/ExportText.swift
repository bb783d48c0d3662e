import Foundation
import Lade

/// How `lade export` and `lade fetch` write attribute values as text: exactly, and the same
/// way every time (the export of a store is compared byte for byte).
///
/// ```swift
/// ExportText.json(.double(0.1))                       // 0.1
/// ExportText.json(.decimal(Decimal(string: "9.90")!))  // "9.9"
/// ExportText.text(.date(Date(timeIntervalSince1970: 1.5)))  // 1970-01-01T00:00:01.5Z
/// ExportText.csvField("a,b")                           // "a,b" (quoted)
/// ```
package enum ExportText {
    /// A value as JSON: numbers as numbers (doubles and floats in Swift's shortest text that
    /// reads back to the same value; NaN and infinities as the strings "NaN", "Infinity",
    /// "-Infinity", which JSON has no numbers for), decimals as strings of their exact decimal
    /// text, dates as ISO 8601 strings (`isoDate`), binary data as base64 strings, UUIDs and
    /// URIs as strings.
    package static func json(_ value: AttributeValue) -> String {
        switch value {
        case .integer(let number): String(number)
        case .double(let number): number.isFinite ? number.description : jsonString(nonFinite(number))
        case .float(let number): number.isFinite ? number.description : jsonString(nonFinite(Double(number)))
        case .bool(let flag): flag ? "true" : "false"
        case .composite(let elements):
            "{" + elements.sorted { $0.key < $1.key }.map { jsonString($0.key) + ":" + json($0.value) }.joined(separator: ",") + "}"
        default: jsonString(text(value))
        }
    }

    /// A value as plain text (CSV fields, table cells): what `json` writes, without the quotes
    /// of JSON strings.
    package static func text(_ value: AttributeValue) -> String {
        switch value {
        case .integer(let number): String(number)
        case .double(let number): number.isFinite ? number.description : nonFinite(number)
        case .float(let number): number.isFinite ? number.description : nonFinite(Double(number))
        case .decimal(let number): DecimalText.format(number)
        case .string(let text): text
        case .bool(let flag): flag ? "true" : "false"
        case .date(let date): ISO8601Date.format(date, fractionalSeconds: true)
        case .binary(let data): data.base64EncodedString()
        case .uuid(let uuid): uuid.uuidString
        case .uri(let url): url.absoluteString
        // A composite's elements as one JSON object, element names in order.
        case .composite: json(value)
        }
    }

    private static func nonFinite(_ number: Double) -> String {
        number.isNaN ? "NaN" : number < 0 ? "-Infinity" : "Infinity"
    }

    /// A JSON string literal: `"`, `\` and control characters escaped (`\n`, `\r`, `\t`, `\b`,
    /// `\f`, else `\u00XX`); everything else, non-ASCII included, as it is (UTF-8).
    package static func jsonString(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case _ where scalar.value < 0x20:
                out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// A CSV field as RFC 4180 writes it: quoted (inner quotes doubled) when it holds a comma,
    /// a quote, CR or LF, or is empty: an empty string is `""`, so that it differs from null,
    /// which is written as nothing at all.
    package static func csvField(_ text: String) -> String {
        guard text.isEmpty || text.utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
