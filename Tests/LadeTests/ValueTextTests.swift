import Foundation
import Testing
@testable import Lade
import LadeTestSupport

@Suite("Fast exact decimal and date text")
struct ValueTextTests {
    @Test("decimals format exactly as Decimal.description does, and parse back")
    func decimalFormat() throws {
        #expect(DecimalText.layoutIsKnown, "the fast path is off: Decimal's storage layout is not the one expected")
        var random = SystemRandomNumberGenerator()
        var samples = ["0", "1", "-1", "922.16", "0.001", "-12345678901234.5678", "1e10", "100", "0.5", "18446744073709551615",
                       "18446744073709551616", "-0.0000042", "123456789012345678901234567890.123", "1e-20", "7.000"]
        for _ in 0..<2000 {
            let digits = String(UInt64.random(in: 0...UInt64.max, using: &random) >> UInt64.random(in: 0...63, using: &random))
            let exponent = Int.random(in: -25...12, using: &random)
            samples.append((Bool.random(using: &random) ? "-" : "") + digits + "e\(exponent)")
        }
        for text in samples {
            let value = try #require(Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), "\(text)")
            #expect(DecimalText.format(value) == value.description, "\(text)")
            #expect(DecimalText.parse(DecimalText.format(value)) == value, "\(text)")
            #expect(DecimalText.significantDigits(of: value) == DecimalText.significantDigits(value.description), "\(text)")
        }
    }

    @Test("decimal parsing is exact and refuses what is not a whole number literal")
    func decimalParse() {
        for text in ["0.1", "19.99", "-0.000001", "123456789012345678.9", "12345678901234567890123.456", "1e-5", "2.5E3", "+3", "007.50"] {
            #expect(DecimalText.parse(text) == Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), "\(text)")
        }
        for text in ["", "-", ".", "12abc", "1.2.3", "1e", "e5", " 1", "1,5", "0x10"] {
            #expect(DecimalText.parse(text) == nil, "\(text)")
        }
        // Past 18 digits parsing goes to Foundation (no locale: "." whatever the process's).
        let long = (Decimal(UInt64(12_345_678_901_234_567_890)) * 10 + 5) / 10
        #expect(DecimalText.parse("12345678901234567890.5") == long)
        #expect(DecimalText.parse("12345678901234567890,5") == nil)
    }

    @Test("ISO 8601 dates agree with ISO8601DateFormatter where both read them")
    func iso8601() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plain = ISO8601DateFormatter()
        for text in ["2024-02-29T23:59:59Z", "1970-01-01T00:00:00Z", "1900-03-01T12:00:00+05:30", "2038-01-19T03:14:07-08:00", "1600-02-29T00:00:00Z"] {
            #expect(ISO8601Date.parse(text) == plain.date(from: text), "\(text)")
        }
        #expect(ISO8601Date.parse("2024-03-01T12:30:00.125Z") == formatter.date(from: "2024-03-01T12:30:00.125Z"))
        for text in ["2024-02-30", "2023-02-29", "2024-00-10", "2024-1-01", "2024-01-01T25:00", "2024-01-01T12:60", "2024-01-01T12:00:00+2", "2024-01-01X"] {
            #expect(ISO8601Date.parse(text) == nil, "\(text)")
        }
    }

    @Test("strings and URIs are equal when their bytes are: NFC and NFD text differ, as in SQLite's BINARY collation")
    func byteEquality() {
        let nfc = "caf\u{E9}", nfd = "cafe\u{301}"
        #expect(AttributeValue.string(nfc) != .string(nfd))
        #expect(AttributeValue.string(nfc) == .string(String(decoding: Array(nfc.utf8), as: UTF8.self)))
        #expect(AttributeValue.string("") == .string(""))
        #expect(AttributeValue.string("a") != .string(""))
        #expect(AttributeValue.string("ab") != .string("ac") && AttributeValue.string("ab") != .string("abc"))
        #expect(AttributeValue.string(String(repeating: "x", count: 100) + "a") != .string(String(repeating: "x", count: 100) + "b"))
        #expect(Set([AttributeValue.string(nfc), .string(nfd), .string(nfc)]).count == 2)
        #expect(AttributeValue.uri(URL(string: "https://example.com/a%20b")!) == .uri(URL(string: "https://example.com/a%20b")!))
        #expect(AttributeValue.uri(URL(string: "https://example.com/a")!) != .uri(URL(string: "https://example.com/b")!))
    }

    @Test("ISO 8601 timestamps written as ISO8601DateFormatter writes them: around 1970, leap days, 1582 to 9999, fractions dropped; earlier in the proleptic Gregorian calendar")
    func iso8601Format() {
        let plain = ISO8601DateFormatter()
        // From 1582-10-15 on: before it, ISO8601DateFormatter counts in the Julian calendar.
        var intervals: [TimeInterval] = [0, -1, 1, 86_399, 86_400, -86_400, -86_401, 951_782_400, 1_709_164_800, 2_147_483_647, -2_208_988_800,
                                         -12_219_292_800, 253_402_300_799, 1_764_134_400.75, -0.5, 59.999]
        var generator = SeededGenerator(seed: 0x150_8601)
        for _ in 0..<5_000 { intervals.append(Double(Int64.random(in: -12_219_292_800...253_402_300_799, using: &generator))) }
        for interval in intervals {
            let date = Date(timeIntervalSince1970: interval)
            #expect(ISO8601Date.format(date) == plain.string(from: date), "\(interval)")
            #expect(ISO8601Date.parse(ISO8601Date.format(date)) == Date(timeIntervalSince1970: interval.rounded(.down)), "\(interval)")
        }
        #expect(ISO8601Date.format(Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00Z")
        #expect(ISO8601Date.format(Date(timeIntervalSince1970: -12_219_292_801)) == "1582-10-14T23:59:59Z")
    }

    @Test("the whitespace test before trimming answers as Character.isWhitespace on the first and last character, for every edge the byte check skips")
    func edgeWhitespace() throws {
        // ASCII (whitespace, controls, letters), every Unicode space and line separator, a
        // combining mark, a prepended format character, a wide character, an emoji with a
        // modifier, CR LF.
        let pieces = ["", " ", "\t", "\n", "\r", "\u{0B}", "\u{0C}", "\r\n", "\u{00}", "\u{1F}", "\u{7F}", "a", "1", "-", "\"",
                      "\u{85}", "\u{A0}", "\u{1680}", "\u{2000}", "\u{2007}", "\u{200A}", "\u{200B}", "\u{2028}", "\u{2029}", "\u{202F}",
                      "\u{205F}", "\u{3000}", "\u{FEFF}", "\u{301}", "\u{600}", "é", "日", "👍🏽"]
        for first in pieces {
            for middle in ["", "x", " ", "\u{301}"] {
                for last in pieces {
                    let text = first + middle + last
                    let expected = text.first?.isWhitespace == true || text.last?.isWhitespace == true
                    #expect(AttributeValue.mayHaveEdgeWhitespace(text) == expected, "\(Array(text.unicodeScalars).map { String($0.value, radix: 16) })")
                    #expect(AttributeValue.trimmingEdgeWhitespace(text) == (expected ? text.trimmingCharacters(in: .whitespaces) : text))
                }
            }
        }
        // And what the parsers make of it: trimmed where there is whitespace, kept where there is not.
        #expect(try AttributeValue(parsing: "\u{3000}42\t", as: .integer64) == .integer(42))
        #expect(try AttributeValue(parsing: " 1.50", as: .decimal) == .decimal(Decimal(string: "1.50")!))
        #expect(throws: ValueParseError.self) { try AttributeValue(parsing: "4\u{301}2", as: .integer64) }
    }
}
