import Foundation
import Lade

/// How `lade export` and `lade fetch` write attribute values as text: exactly, and the same
/// way every time (the export of a store is compared byte for byte).
///
/// ```swift
/// ExportText.json(.double(0.1))                       // 0.1
/// ExportText.json(.decimal(Decimal(string: "9.90")!))  // "9.9"
/// ExportText.isoDate(Date(timeIntervalSince1970: 1.5)) // 1970-01-01T00:00:01.5Z
/// ExportText.csvField("a,b")                           // "a,b" (quoted)
/// ```
public enum ExportText {
    /// A value as JSON: numbers as numbers (doubles and floats in Swift's shortest text that
    /// reads back to the same value; NaN and infinities as the strings "NaN", "Infinity",
    /// "-Infinity", which JSON has no numbers for), decimals as strings of their exact decimal
    /// text, dates as ISO 8601 strings (`isoDate`), binary data as base64 strings, UUIDs and
    /// URIs as strings.
    public static func json(_ value: AttributeValue) -> String {
        switch value {
        case .integer(let number): String(number)
        case .double(let number): number.isFinite ? number.description : jsonString(nonFinite(number))
        case .float(let number): number.isFinite ? number.description : jsonString(nonFinite(Double(number)))
        case .bool(let flag): flag ? "true" : "false"
        default: jsonString(text(value))
        }
    }

    /// A value as plain text (CSV fields, table cells): what `json` writes, without the quotes
    /// of JSON strings.
    public static func text(_ value: AttributeValue) -> String {
        switch value {
        case .integer(let number): String(number)
        case .double(let number): number.isFinite ? number.description : nonFinite(number)
        case .float(let number): number.isFinite ? number.description : nonFinite(Double(number))
        case .decimal(let number): DecimalText.format(number)
        case .string(let text): text
        case .bool(let flag): flag ? "true" : "false"
        case .date(let date): isoDate(date)
        case .binary(let data): data.base64EncodedString()
        case .uuid(let uuid): uuid.uuidString
        case .uri(let url): url.absoluteString
        }
    }

    private static func nonFinite(_ number: Double) -> String {
        number.isNaN ? "NaN" : number < 0 ? "-Infinity" : "Infinity"
    }

    /// A JSON string literal: `"`, `\` and control characters escaped (`\n`, `\r`, `\t`, `\b`,
    /// `\f`, else `\u00XX`); everything else, non-ASCII included, as it is (UTF-8).
    public static func jsonString(_ text: String) -> String {
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

    /// A date as ISO 8601 in UTC, exact to the microsecond with no more fractional digits than
    /// it needs: `2024-01-02T03:04:05Z`, `2024-01-02T03:04:05.5Z`,
    /// `2024-01-02T03:04:05.123456Z`. Years before 1 or after 9999 are written with their
    /// sign or extra digits (`-0001-…`, `10000-…`).
    public static func isoDate(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        // Beyond ±100,000 years microseconds overflow nothing yet but mean nothing either.
        guard seconds.isFinite, abs(seconds) < 3e12 else { return String(date.timeIntervalSinceReferenceDate) }
        let micros = Int64((seconds * 1_000_000).rounded())
        let perDay: Int64 = 86_400_000_000
        let days = micros >= 0 ? micros / perDay : (micros - perDay + 1) / perDay
        let inDay = micros - days * perDay
        let (year, month, day) = civil(fromDays: days)
        let second = inDay / 1_000_000
        let fraction = inDay % 1_000_000
        var out = year < 0 ? "-" + pad(-year, 4) : pad(year, 4)
        out += "-" + pad(month, 2) + "-" + pad(day, 2)
        out += "T" + pad(second / 3600, 2) + ":" + pad(second / 60 % 60, 2) + ":" + pad(second % 60, 2)
        if fraction != 0 {
            var digits = pad(fraction, 6)
            while digits.hasSuffix("0") { digits.removeLast() }
            out += "." + digits
        }
        return out + "Z"
    }

    private static func pad(_ number: Int64, _ width: Int) -> String {
        let text = String(number)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    /// Howard Hinnant's days-to-civil: the proleptic Gregorian date `days` after 1970-01-01.
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// A CSV field as RFC 4180 writes it: quoted (inner quotes doubled) when it holds a comma,
    /// a quote, CR or LF, or is empty: an empty string is `""`, so that it differs from null,
    /// which is written as nothing at all.
    public static func csvField(_ text: String) -> String {
        guard text.isEmpty || text.utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
