import Foundation
import Testing
@testable import Lade

@Suite("Parsing attribute values as Xcode writes them")
struct AttributeValueTests {
    @Test("integers are range-checked per type; integral decimals like Xcode's 0.0 are accepted")
    func integers() throws {
        #expect(try AttributeValue(parsing: "32767", as: .integer16) == .integer(32767))
        #expect(throws: ValueParseError.self) { try AttributeValue(parsing: "32768", as: .integer16) }
        #expect(try AttributeValue(parsing: "-2147483648", as: .integer32) == .integer(-2_147_483_648))
        #expect(try AttributeValue(parsing: "0.0", as: .integer16) == .integer(0))
        #expect(throws: ValueParseError.self) { try AttributeValue(parsing: "1.5", as: .integer64) }
        #expect(throws: ValueParseError.self) { try AttributeValue(parsing: "12abc", as: .integer64) }
    }

    @Test("decimals keep every digit and refuse trailing junk")
    func decimals() throws {
        #expect(try AttributeValue(parsing: "0.1", as: .decimal) == .decimal(Decimal(string: "0.1")!))
        #expect(try AttributeValue(parsing: "12345678901234567890.123", as: .decimal).canonicalText == "12345678901234567890.123")
        #expect(throws: ValueParseError.self) { try AttributeValue(parsing: "12abc", as: .decimal) }
        #expect(throws: ValueParseError.self) { try AttributeValue(parsing: "", as: .decimal) }
    }

    @Test("booleans, UUIDs, URIs, dates and binary parse; canonical text reads back to the same value")
    func otherTypes() throws {
        #expect(try AttributeValue(parsing: "YES", as: .boolean) == .bool(true))
        #expect(try AttributeValue(parsing: "no", as: .boolean) == .bool(false))
        #expect(throws: ValueParseError.self) { try AttributeValue(parsing: "maybe", as: .boolean) }
        #expect(throws: ValueParseError.self) { try AttributeValue(parsing: "not-a-uuid", as: .uuid) }
        #expect(try AttributeValue(parsing: "2001-01-01T00:01:00Z", as: .date) == .date(Date(timeIntervalSinceReferenceDate: 60)))
        let samples: [(String, AttributeType)] = [
            ("-12", .integer64), ("2.5", .double), ("0.25", .float), ("-0.001", .decimal), ("NO", .boolean),
            ("any text", .string), ("12.75", .date), ("AAEC", .binary),
            ("7F3C1C2E-9A4B-4B8E-9A0D-2F6E1B9D4C11", .uuid), ("https://example.com/a?b=c", .uri),
        ]
        for (text, type) in samples {
            let value = try AttributeValue(parsing: text, as: type)
            #expect(value.fits(type))
            #expect(try AttributeValue(parsing: value.canonicalText, as: type) == value)
        }
    }
}
