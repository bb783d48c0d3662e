import Foundation
import Lade

/// Turns a source value into an attribute value as one field of a job says: the source's
/// null spellings, the field's rule for empty strings, and its date format.
///
/// ```swift
/// let price = try ValueConverter(attribute: priceAttribute, field: field, nulls: [""])
/// price.convert(.string("19.90"))    // .value(.decimal(19.90)), exactly
/// price.convert(.string("abc"))      // .failure("'abc' is not a valid Decimal value: …")
/// ```
package final class ValueConverter: @unchecked Sendable {
    // DateFormatter is not Sendable; a converter is used by one thread at a time (the reader's).
    // A class: the mapper calls one per value of every row, and a copy of the struct retained
    // and released each of its fields (9% of the reader's thread on NDJSON).
    package enum Outcome: Equatable {
        /// The record does not have the field: leave the attribute as it is.
        case absent
        /// The attribute's new value (nil clears it).
        case value(AttributeValue?)
        case failure(String)
    }

    package let attribute: AttributeDescription
    private let dateFormat: DateFormat?
    private let timeZone: TimeZone
    private let empty: FieldSettings.EmptyRule?
    /// The source's null markers. A list, not a `Set`: they are few and short, and hashing
    /// every value (NFC normalization for each non-ASCII one) took a seventh of the reader's
    /// time, where `==` stops at the first byte or length that differs.
    private let nulls: [String]
    /// The same as a set when a job lists many (a list scan would then cost more than a hash).
    private let manyNulls: Set<String>?
    private let formatter: DateFormatter?

    package init(attribute: AttributeDescription, field: FieldSettings, nulls: [String]) throws {
        self.attribute = attribute
        self.timeZone = field.timeZone
        self.empty = field.empty
        self.nulls = nulls
        manyNulls = nulls.count > 8 ? Set(nulls) : nil
        if field.dateFormat != nil && attribute.type != .date {
            throw JobError(file: field.location, field: "fields.\(field.attribute).date", "'\(attribute.name)' is a \(attribute.type.rawValue) attribute, not a Date")
        }
        dateFormat = attribute.type == .date ? (field.dateFormat ?? .iso8601) : nil
        if case .pattern(let pattern)? = dateFormat {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = field.timeZone
            formatter.dateFormat = pattern
            formatter.isLenient = false
            self.formatter = formatter
        } else {
            formatter = nil
        }
    }

    package func convert(_ value: SourceValue) -> Outcome {
        switch value {
        case .missing: return .absent
        case .null: return .value(nil)
        case .string(let text):
            if text.isEmpty, let empty {
                switch empty {
                case .null: return .value(nil)
                case .default: return .value(attribute.defaultValue)
                case .keep: break
                }
            } else if manyNulls?.contains(text) ?? nulls.contains(text) {
                return .value(nil)
            }
            return parse(text)
        case .number(let literal): return parse(literal)
        case .bool(let flag):
            switch attribute.type {
            case .boolean: return .value(.bool(flag))
            case .string: return .value(.string(flag ? "true" : "false"))
            case _ where attribute.type.isInteger: return .value(.integer(flag ? 1 : 0))
            default: return .failure("\(flag) is not a valid \(attribute.type.rawValue) value")
            }
        case .array: return .failure("expected one \(attribute.type.rawValue) value, found a list")
        case .object: return .failure("expected one \(attribute.type.rawValue) value, found an object")
        }
    }

    private func parse(_ text: String) -> Outcome {
        switch attribute.type {
        case .string:
            return .value(.string(text))
        case .date:
            return parseDate(text)
        case .binary, .transformable:
            guard let data = Data(base64Encoded: text) else { return .failure("'\(Self.clip(text))' is not base64 data") }
            return .value(.binary(data))
        default:
            do {
                return .value(try AttributeValue(parsing: text, as: attribute.type))
            } catch let error as ValueParseError {
                return .failure("'\(Self.clip(error.text))' is not a valid \(error.type.rawValue) value: \(error.reason)")
            } catch {
                return .failure("\(error)")
            }
        }
    }

    private func parseDate(_ text: String) -> Outcome {
        let trimmed = AttributeValue.trimmingEdgeWhitespace(text)
        switch dateFormat {
        case .iso8601?, nil:
            switch ISO8601Date.parseKept(trimmed) {
            case .date(let date): return .value(.date(date))
            case .notKept(let kept):
                return .failure("'\(Self.clip(text))' cannot be kept exactly: Core Data keeps a date as seconds since 2001 in a double, which holds this one as \(ISO8601Date.format(kept, fractionalSeconds: true)); give it with fewer fractional digits")
            case .invalid: break
            }
            let hint = Double(trimmed) != nil ? " (for a number of seconds since 1970 say date: unix, for milliseconds date: unix-ms)" : ""
            return .failure("'\(Self.clip(text))' is not an ISO 8601 date such as 2024-03-01T12:30:00Z\(hint)")
        case .unixSeconds?, .unixMilliseconds?:
            guard let number = Double(trimmed), number.isFinite else {
                return .failure("'\(Self.clip(text))' is not a number of \(dateFormat == .unixSeconds ? "seconds" : "milliseconds") since 1970")
            }
            let seconds = dateFormat == .unixSeconds ? number : number / 1000
            // Years 1 to 9999: what ISO 8601 text (exports, XML stores) writes and reads back.
            guard seconds >= -62_135_596_800, seconds < 253_402_300_800 else {
                return .failure("'\(Self.clip(text))' is outside the years 1 to 9999 as \(dateFormat == .unixSeconds ? "seconds" : "milliseconds") since 1970; a date there cannot be written and read back")
            }
            return .value(.date(Date(timeIntervalSince1970: seconds)))
        case .pattern(let pattern)?:
            // DateFormatter is lenient ("24" passes for yyyy, as year 24): the text must also be
            // what the pattern writes for that date, so every field has the pattern's width.
            guard let formatter, let date = formatter.date(from: trimmed),
                  formatter.string(from: date).caseInsensitiveCompare(trimmed) == .orderedSame else {
                return .failure("'\(Self.clip(text))' does not have the date pattern '\(pattern)' (time zone \(timeZone == .utc ? "UTC" : timeZone.identifier))")
            }
            return .value(.date(date))
        }
    }

    /// A value as quoted in messages: long ones shortened, and control characters (a NUL, an
    /// escape that would drive the terminal) written as `\t`, `\n`, `\r` or `\u{…}`, never as
    /// themselves.
    static func clip(_ text: String) -> String {
        let short = text.count <= 80 ? text : String(text.prefix(77)) + "…"
        guard short.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return short }
        var shown = ""
        for scalar in short.unicodeScalars {
            switch scalar {
            case "\t": shown += "\\t"
            case "\n": shown += "\\n"
            case "\r": shown += "\\r"
            case _ where scalar.properties.generalCategory == .control: shown += "\\u{\(String(scalar.value, radix: 16))}"
            default: shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }
}
