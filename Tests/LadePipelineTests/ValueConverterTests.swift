import Foundation
import Lade
@testable import LadePipeline
import Testing

@Suite("Reading source values for attributes")
struct ValueConverterTests {
    func converter(_ type: AttributeType, date: DateFormat? = nil, timeZone: String = "UTC", empty: FieldSettings.EmptyRule? = nil,
                   nulls: [String] = [""], isOptional: Bool = true, defaultValue: AttributeValue? = nil) throws -> ValueConverter {
        let attribute = AttributeDescription(name: "a", type: type, isOptional: isOptional, defaultValue: defaultValue)
        let field = FieldSettings(attribute: "a", origin: .field(FieldPath(components: ["a"])), dateFormat: date,
                                  timeZone: TimeZone(identifier: timeZone)!, empty: empty, listed: true, location: "t")
        return try ValueConverter(attribute: attribute, field: field, nulls: nulls)
    }

    func date(_ text: String) -> AttributeValue { .date(ISO8601DateFormatter().date(from: text)!) }

    @Test("a value quoted in a message shows control characters escaped (a NUL, ESC, tab, newline), never raw; plain text as it is")
    func clippedControlCharacters() {
        #expect(ValueConverter.clip("bad\u{0}name") == "bad\\u{0}name")
        #expect(ValueConverter.clip("a\tb\nc\rd\u{1B}[2Ke\u{7F}") == "a\\tb\\nc\\rd\\u{1b}[2Ke\\u{7f}")
        #expect(ValueConverter.clip("smörgåsbord Ωmega") == "smörgåsbord Ωmega")
        #expect(ValueConverter.clip(String(repeating: "x", count: 100)) == String(repeating: "x", count: 77) + "…")
    }

    @Test("every attribute type reads from text")
    func everyType() throws {
        #expect(try converter(.integer16).convert(.string("-32768")) == .value(.integer(-32768)))
        #expect(try converter(.integer32).convert(.string("12")) == .value(.integer(12)))
        #expect(try converter(.integer64).convert(.string("9007199254740993")) == .value(.integer(9_007_199_254_740_993)))
        #expect(try converter(.double).convert(.string("2.5")) == .value(.double(2.5)))
        #expect(try converter(.float).convert(.string("0.25")) == .value(.float(0.25)))
        #expect(try converter(.decimal).convert(.string("0.1")) == .value(.decimal(Decimal(string: "0.1")!)))
        #expect(try converter(.string).convert(.string("Grüße, \"x\"")) == .value(.string("Grüße, \"x\"")))
        #expect(try converter(.uuid).convert(.string("7F3C1C2E-9A4B-4B8E-9A0D-2F6E1B9D4C11")) == .value(.uuid(UUID(uuidString: "7F3C1C2E-9A4B-4B8E-9A0D-2F6E1B9D4C11")!)))
        #expect(try converter(.uri).convert(.string("https://example.com/a?b=1")) == .value(.uri(URL(string: "https://example.com/a?b=1")!)))
        #expect(try converter(.binary).convert(.string("AAEC")) == .value(.binary(Data([0, 1, 2]))))
        #expect(try converter(.date).convert(.string("2024-03-01T12:30:00Z")) == .value(date("2024-03-01T12:30:00Z")))
    }

    @Test("booleans: true/false/1/0/yes/no in any case", arguments: [("true", true), ("FALSE", false), ("1", true), ("0", false), ("Yes", true), ("no", false)])
    func booleans(text: String, value: Bool) throws {
        #expect(try converter(.boolean).convert(.string(text)) == .value(.bool(value)))
    }

    @Test("decimals keep every digit: no binary rounding")
    func decimals() throws {
        let converter = try converter(.decimal)
        for text in ["0.1", "19.99", "-0.000001", "123456789012345678.9", "12345678901234567890123.456", "1e-5", "2.5E3"] {
            #expect(converter.convert(.string(text)) == .value(.decimal(Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))!)), "\(text)")
        }
        #expect(converter.convert(.number("0.30000000000000004")) == .value(.decimal(Decimal(string: "0.30000000000000004")!)))
        if case .failure = converter.convert(.string("12abc")) {} else { Issue.record("12abc must not parse") }
        if case .failure = converter.convert(.string("1.2.3")) {} else { Issue.record("1.2.3 must not parse") }
    }

    @Test("ISO 8601 with or without fraction and offset; a plain date is midnight UTC")
    func iso8601() throws {
        let converter = try converter(.date)
        #expect(converter.convert(.string("2024-03-01")) == .value(date("2024-03-01T00:00:00Z")))
        #expect(converter.convert(.string("2024-03-01T12:30:00+02:00")) == .value(date("2024-03-01T10:30:00Z")))
        #expect(converter.convert(.string("2024-03-01T12:30:00-0130")) == .value(date("2024-03-01T14:00:00Z")))
        #expect(converter.convert(.string("2024-03-01 12:30")) == .value(date("2024-03-01T12:30:00Z")))
        #expect(converter.convert(.string("2024-02-29T23:59:59.250Z")) == .value(.date(Date(timeIntervalSince1970: 1_709_251_199.25))))
        for bad in ["2023-02-29", "2024-13-01", "2024-03-01T24:00:00Z", "2024-03-01T12:30:00Zjunk", "yesterday"] {
            if case .failure = converter.convert(.string(bad)) {} else { Issue.record("\(bad) must not parse") }
        }
        guard case .failure(let hint) = converter.convert(.string("1709251199")) else { Issue.record("a number is not ISO 8601"); return }
        #expect(hint.contains("date: unix"))
    }

    @Test("unix seconds and milliseconds, and explicit patterns in their time zone")
    func otherDates() throws {
        #expect(try converter(.date, date: .unixSeconds).convert(.string("1709251200")) == .value(date("2024-03-01T00:00:00Z")))
        #expect(try converter(.date, date: .unixSeconds).convert(.number("1709251200.5")) == .value(.date(Date(timeIntervalSince1970: 1_709_251_200.5))))
        #expect(try converter(.date, date: .unixMilliseconds).convert(.number("1709251200000")) == .value(date("2024-03-01T00:00:00Z")))
        let berlin = try converter(.date, date: .pattern("dd.MM.yyyy HH:mm"), timeZone: "Europe/Berlin")
        #expect(berlin.convert(.string("01.03.2024 13:00")) == .value(date("2024-03-01T12:00:00Z")))
        if case .failure(let reason) = berlin.convert(.string("2024-03-01")) {
            #expect(reason.contains("does not have the date pattern 'dd.MM.yyyy HH:mm' (time zone Europe/Berlin)"))
        } else { Issue.record("a pattern must be followed") }
        // A field without timeZone is read in UTC (a fixed offset, so ICU's zones stay unloaded), and said so.
        let field = FieldSettings(attribute: "a", origin: .field(FieldPath(components: ["a"])), dateFormat: .pattern("dd.MM.yyyy HH:mm"),
                                  timeZone: .utc, empty: nil, listed: true, location: "t")
        let utc = try ValueConverter(attribute: AttributeDescription(name: "a", type: .date), field: field, nulls: [""])
        #expect(utc.convert(.string("01.03.2024 13:00")) == .value(date("2024-03-01T13:00:00Z")))
        if case .failure(let reason) = utc.convert(.string("2024-03-01")) {
            #expect(reason.contains("(time zone UTC)"), "\(reason)")
        } else { Issue.record("a pattern must be followed") }
    }

    @Test("nulls, empty strings and the per-field empty rule")
    func emptiness() throws {
        #expect(try converter(.string, nulls: ["", "NA"]).convert(.string("NA")) == .value(nil))
        #expect(try converter(.string, nulls: ["", "NA"]).convert(.string("")) == .value(nil))
        #expect(try converter(.string, nulls: []).convert(.string("")) == .value(.string("")))
        #expect(try converter(.string, empty: .keep).convert(.string("")) == .value(.string("")))
        #expect(try converter(.integer32, empty: .default, defaultValue: .integer(7)).convert(.string("")) == .value(.integer(7)))
        #expect(try converter(.integer32).convert(.null) == .value(nil))
        #expect(try converter(.integer32).convert(.missing) == .absent)
        // Markers match as Swift strings do (canonically equivalent text is equal), listed
        // twice or not, few or many.
        let few = try converter(.string, nulls: ["", "NA", "n/a", "NA", "caf\u{E9}"])
        #expect(few.convert(.string("cafe\u{301}")) == .value(nil))
        #expect(few.convert(.string("n/a")) == .value(nil))
        #expect(few.convert(.string("na")) == .value(.string("na")))
        let many = try converter(.string, nulls: (0..<50).map { "null\($0)" } + ["caf\u{E9}"])
        #expect(many.convert(.string("null49")) == .value(nil))
        #expect(many.convert(.string("cafe\u{301}")) == .value(nil))
        #expect(many.convert(.string("null50")) == .value(.string("null50")))
        #expect(many.convert(.string("")) == .value(.string("")))
    }

    @Test("JSON values: typed numbers, booleans, and no lists or objects for one value")
    func jsonValues() throws {
        #expect(try converter(.integer64).convert(.number("42")) == .value(.integer(42)))
        #expect(try converter(.boolean).convert(.bool(true)) == .value(.bool(true)))
        #expect(try converter(.string).convert(.number("4.50")) == .value(.string("4.50")))
        if case .failure(let reason) = try converter(.string).convert(.array([.string("a")])) {
            #expect(reason == "expected one String value, found a list")
        } else { Issue.record("a list is not one value") }
        if case .failure = try converter(.integer16).convert(.number("40000")) {} else { Issue.record("40000 is out of Integer 16's range") }
    }

    @Test("a date pattern takes only text of its own width: yyyy refuses a two-digit year, dd a one-digit day")
    func patternWidth() throws {
        let converter = try converter(.date, date: .pattern("yyyy-MM-dd"))
        #expect(converter.convert(.string("2024-03-01")) == .value(date("2024-03-01T00:00:00Z")))
        for text in ["24-03-01", "2024-3-01", "2024-03-1"] {
            guard case .failure(let reason) = converter.convert(.string(text)) else {
                Issue.record("'\(text)' was read as a date")
                continue
            }
            #expect(reason.contains("does not have the date pattern"))
        }
    }

    @Test("unix dates outside the years 1 to 9999 are refused", arguments: ["1e20", "-1e12", "253402300800"])
    func unixRange(_ text: String) throws {
        guard case .failure(let reason) = try converter(.date, date: .unixSeconds).convert(.string(text)) else {
            Issue.record("'\(text)' was read as a date")
            return
        }
        #expect(reason.contains("outside the years 1 to 9999"))
        #expect(try converter(.date, date: .unixSeconds).convert(.string("253402300799")) == .value(date("9999-12-31T23:59:59Z")))
    }
}

