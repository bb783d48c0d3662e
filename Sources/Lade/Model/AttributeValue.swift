import Foundation

/// One attribute value of any model type: the single value currency of the stack.
///
/// Dates are kept as `Date`; on disk they are seconds since 2001-01-01 UTC, as in Core Data.
/// Transformable values are opaque `binary` data.
///
/// ```swift
/// let price = try AttributeValue(parsing: "19.99", as: .decimal)   // .decimal(19.99), no binary rounding
/// let flag = try AttributeValue(parsing: "YES", as: .boolean)      // .bool(true)
/// ```
public enum AttributeValue: Sendable, Hashable {
    case integer(Int64)
    case double(Double)
    case float(Float)
    case decimal(Decimal)
    case string(String)
    case bool(Bool)
    case date(Date)
    case binary(Data)
    case uuid(UUID)
    case uri(URL)
    /// A composite attribute's value: element name → value, a nested composite's value a
    /// nested `.composite`; an element without a value is absent (Core Data's dictionary).
    indirect case composite([String: AttributeValue])
}

extension AttributeValue {
    /// Strings (and URIs) are equal when their bytes are, as SQLite's BINARY collation and
    /// NSString's `isEqual:` compare them: Swift's own `String ==` treats canonically equivalent
    /// strings (NFC `café` and NFD `café`) as equal, which would merge two keys a store keeps apart.
    public static func == (lhs: AttributeValue, rhs: AttributeValue) -> Bool {
        switch (lhs, rhs) {
        case (.integer(let a), .integer(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.float(let a), .float(let b)): a == b
        case (.decimal(let a), .decimal(let b)): a == b
        case (.string(let a), .string(let b)): sameBytes(a, b)
        case (.bool(let a), .bool(let b)): a == b
        case (.date(let a), .date(let b)): a == b
        case (.binary(let a), .binary(let b)): a == b
        case (.uuid(let a), .uuid(let b)): a == b
        case (.uri(let a), .uri(let b)): sameBytes(a.absoluteString, b.absoluteString)
        case (.composite(let a), .composite(let b)): a == b
        default: false
        }
    }

    /// Whether two strings have the same UTF-8 bytes: lengths, then one `memcmp` (a key
    /// lookup compares strings for every row; `utf8.elementsEqual` goes byte by byte).
    static func sameBytes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.withUTF8Bytes { a in rhs.withUTF8Bytes { b in a.hasSameBytes(as: b) } }
    }

    /// How two strings compare by their UTF-8 bytes (negative: `lhs` first, 0: the same
    /// bytes), as SQLite's BINARY collation orders them: `memcmp`, then the shorter first.
    /// Reads the strings' storage in place (`withUTF8Bytes`: this orders every batch's keys).
    package static func byteOrder(_ lhs: String, _ rhs: String) -> Int {
        func order(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
            let common = min(a.count, b.count)
            let order = common == 0 ? 0 : Int(memcmp(a.baseAddress!, b.baseAddress!, common))
            return order != 0 ? order : a.count - b.count
        }
        return lhs.withUTF8Bytes { a in rhs.withUTF8Bytes { b in order(a, b) } }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .integer(let v): hasher.combine(0); hasher.combine(v)
        case .double(let v): hasher.combine(1); hasher.combine(v)
        case .float(let v): hasher.combine(2); hasher.combine(v)
        case .decimal(let v): hasher.combine(3); hasher.combine(v)
        case .string(let v): hasher.combine(4); Self.hashBytes(v, into: &hasher)
        case .bool(let v): hasher.combine(5); hasher.combine(v)
        case .date(let v): hasher.combine(6); hasher.combine(v)
        case .binary(let v): hasher.combine(7); hasher.combine(v)
        case .uuid(let v): hasher.combine(8); hasher.combine(v)
        case .uri(let v): hasher.combine(9); Self.hashBytes(v.absoluteString, into: &hasher)
        case .composite(let v): hasher.combine(10); hasher.combine(v)
        }
    }

    /// Hashes a string's UTF-8 bytes (as `sameBytes` compares it; `String`'s own hash is of
    /// its canonical form).
    static func hashBytes(_ text: String, into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(text.utf8.count)
    }
}

/// A string that does not spell a value of the attribute type it was read for.
public struct ValueParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let text: String
    public let type: AttributeType
    public let reason: String

    public var description: String {
        "'\(text)' is not a valid \(type.rawValue) value: \(reason)"
    }
}

extension AttributeValue {
    /// A floating-point value read from text is rounded to the nearest one the type holds, as
    /// Core Data does; but a number beyond the type's range (which would become infinity, or
    /// `inf` written out) or so small it becomes zero is not kept at all, and refused.
    /// NaN and the infinities, spelt as `lade export` writes them (and JSON tools commonly do):
    /// the value itself, not a number that overflowed (`1e999` is still refused).
    static let nonFinite: [String: Double] = ["NaN": .nan, "Infinity": .infinity, "-Infinity": -.infinity]

    static func checkKept<F: BinaryFloatingPoint>(_ value: F, text: String, largest: String, smallest: String, _ fail: (String) -> ValueParseError) throws {
        if value.isInfinite {
            throw fail("out of range: a \(F.self == Float.self ? "Float" : "Double") holds at most ±\(largest)")
        }
        if value == 0, mantissaHasNonzeroDigit(text) {
            throw fail("too small: a \(F.self == Float.self ? "Float" : "Double") holds nothing nearer zero than ±\(smallest), so it would be stored as 0")
        }
    }

    /// `text` without the spaces and tabs (`CharacterSet.whitespaces`) at its ends, as values
    /// are read (`AttributeValue(parsing:as:)`, a job's dates); `text` itself, without a copy,
    /// when it does not start or end with whitespace, as most values do.
    package static func trimmingEdgeWhitespace(_ text: String) -> String {
        mayHaveEdgeWhitespace(text) ? text.trimmingCharacters(in: .whitespaces) : text
    }

    /// Whether `text` starts or ends with a whitespace character (`Character.isWhitespace`), the
    /// test before trimming a value: its first and last bytes answer for ASCII, and only text
    /// that starts or ends with ASCII whitespace or a non-ASCII byte is asked about its
    /// characters (a `Character` is built by grapheme breaking and asked a Unicode property:
    /// 6% of the reader thread's time on NDJSON when asked for every value).
    static func mayHaveEdgeWhitespace(_ text: String) -> Bool {
        guard let first = text.utf8.first, let last = text.utf8.last else { return false }
        // Unicode's ASCII whitespace is 0x09–0x0D and the space; a grapheme that ends in an
        // ASCII byte is that byte alone or CR LF.
        func mayBe(_ byte: UInt8) -> Bool { byte == 0x20 || (byte >= 0x09 && byte <= 0x0D) || byte >= 0x80 }
        guard mayBe(first) || mayBe(last) else { return false }
        return text.first?.isWhitespace == true || text.last?.isWhitespace == true
    }

    /// Whether a number's digits before any exponent include one other than 0 (`1e-400` yes, `0.000` no).
    static func mantissaHasNonzeroDigit(_ text: String) -> Bool {
        for byte in text.utf8 {
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || byte == UInt8(ascii: "p") || byte == UInt8(ascii: "P") { return false }
            if byte >= UInt8(ascii: "1") && byte <= UInt8(ascii: "9") { return true }
        }
        return false
    }

    /// Parses `text` as Xcode writes default, minimum and maximum values in a model
    /// (`defaultValueString="0.0"`, `"YES"`), for an attribute of `type`.
    ///
    /// Integers must fit the type's range; decimals are parsed in base 10, without binary
    /// rounding; booleans accept `YES`/`NO`, `true`/`false` and `1`/`0`; dates accept a number
    /// of seconds since 2001-01-01 UTC (Xcode's `defaultDateTimeInterval`) or an ISO 8601 date.
    public init(parsing text: String, as type: AttributeType) throws {
        func fail(_ reason: String) -> ValueParseError {
            ValueParseError(text: text, type: type, reason: reason)
        }
        let trimmed = AttributeValue.trimmingEdgeWhitespace(text)
        switch type {
        case .integer16, .integer32, .integer64:
            // Xcode writes "0.0" when an attribute's type is changed from a floating type to an
            // integer one, and Core Data reads it as 0: accept decimals with no fraction.
            guard let value = Int64(trimmed) ?? AttributeValue.integralDecimal(trimmed) else {
                throw fail("expected a whole number")
            }
            guard type.integerRange!.contains(value) else {
                throw fail("out of range \(type.integerRange!.lowerBound)...\(type.integerRange!.upperBound)")
            }
            self = .integer(value)
        case .double:
            if let special = AttributeValue.nonFinite[trimmed] { self = .double(special); return }
            guard let value = Double(trimmed), !value.isNaN else {
                throw fail("expected a number")
            }
            try AttributeValue.checkKept(value, text: trimmed, largest: "1.7976931348623157e308", smallest: "4.9e-324", fail)
            self = .double(value)
        case .float:
            if let special = AttributeValue.nonFinite[trimmed] { self = .float(Float(special)); return }
            guard let value = Float(trimmed), !value.isNaN else { throw fail("expected a number") }
            try AttributeValue.checkKept(value, text: trimmed, largest: "3.4028235e38", smallest: "1.4e-45", fail)
            self = .float(value)
        case .decimal:
            let digits = DecimalText.significantDigits(trimmed)
            if digits > DecimalText.maximumSignificantDigits, AttributeValue.isDecimalLiteral(trimmed) {
                throw fail("it has \(digits) significant digits; a Decimal keeps at most \(DecimalText.maximumSignificantDigits) exactly")
            }
            guard let value = DecimalText.parse(trimmed) else {
                throw fail("expected a decimal number such as 12.50")
            }
            self = .decimal(value)
        case .boolean:
            guard let flag = AttributeValue.parseBoolean(trimmed) else { throw fail("expected YES or NO") }
            self = .bool(flag)
        case .string:
            self = .string(text)
        case .date:
            if let seconds = Double(trimmed), seconds.isFinite {
                self = .date(Date(timeIntervalSinceReferenceDate: seconds))
            } else if let date = AttributeValue.parseISO8601(trimmed) {
                self = .date(date)
            } else {
                throw fail("expected seconds since 2001-01-01 or an ISO 8601 date")
            }
        case .uuid:
            guard let value = UUID(uuidString: trimmed) else {
                throw fail("expected a UUID such as 7F3C1C2E-9A4B-4B8E-9A0D-2F6E1B9D4C11")
            }
            self = .uuid(value)
        case .uri:
            guard !trimmed.isEmpty, let value = URL(string: trimmed) else { throw fail("expected a URI") }
            self = .uri(value)
        case .binary, .transformable:
            guard let value = Data(base64Encoded: trimmed) else { throw fail("expected base64 data") }
            self = .binary(value)
        case .undefined:
            throw fail("an Undefined attribute has no values that can be written in a model")
        case .composite:
            throw fail("a Composite attribute's value is its elements' values, not one text")
        }
    }

    /// The canonical text of this value, which `init(parsing:as:)` reads back to an equal value.
    public var canonicalText: String {
        switch self {
        case .integer(let v): String(v)
        case .double(let v): String(v)
        case .float(let v): String(v)
        case .decimal(let v): DecimalText.format(v)  // "." whatever the locale
        case .string(let v): v
        case .bool(let v): v ? "YES" : "NO"
        case .date(let v): String(v.timeIntervalSinceReferenceDate)
        case .binary(let v): v.base64EncodedString()
        case .uuid(let v): v.uuidString
        case .uri(let v): v.absoluteString
        case .composite(let elements):
            // Element names in order, each with its value's own text; not read back.
            "{" + elements.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value.canonicalText)" }.joined(separator: "; ") + "}"
        }
    }

    /// Whether this value is one an attribute of `type` can hold.
    public func fits(_ type: AttributeType) -> Bool {
        switch (self, type) {
        case (.integer(let v), _) where type.isInteger: type.integerRange!.contains(v)
        case (.double, .double), (.float, .float), (.decimal, .decimal), (.string, .string),
             (.bool, .boolean), (.date, .date), (.binary, .binary), (.binary, .transformable),
             (.uuid, .uuid), (.uri, .uri), (.composite, .composite):
            true
        default: false
        }
    }

    static func integralDecimal(_ text: String) -> Int64? {
        guard isDecimalLiteral(text), let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else { return nil }
        var rounded = Decimal()
        var source = value
        NSDecimalRound(&rounded, &source, 0, .plain)
        guard rounded == value, let whole = Int64(exactly: NSDecimalNumber(decimal: rounded).doubleValue) else { return nil }
        return Decimal(whole) == value ? whole : nil
    }

    static func isDecimalLiteral(_ text: String) -> Bool {
        // Decimal(string:) accepts a numeric prefix ("12abc" -> 12); insist on the whole text.
        var rest = Substring(text)
        if rest.first == "-" || rest.first == "+" { rest = rest.dropFirst() }
        let parts = rest.split(separator: "e", maxSplits: 1, omittingEmptySubsequences: false)
        let mantissa = parts[0].split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let digits = mantissa.joined()
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return false }
        if parts.count == 2 {
            var exponent = parts[1]
            if exponent.first == "-" || exponent.first == "+" { exponent = exponent.dropFirst() }
            return !exponent.isEmpty && exponent.allSatisfy { $0.isASCII && $0.isNumber }
        }
        return true
    }

    static func parseISO8601(_ text: String) -> Date? {
        ISO8601Date.parse(text)
    }

    /// `YES`/`NO`, `true`/`false`, `1`/`0`, in any case.
    package static func parseBoolean(_ text: String) -> Bool? {
        switch text.utf8.count {
        case 1: return text == "1" ? true : text == "0" ? false : nil
        case 2, 3, 4, 5:
            switch text.lowercased() {
            case "yes", "true": return true
            case "no", "false": return false
            default: return nil
            }
        default: return nil
        }
    }
}

extension ValueParseError: LadeError {
    public var code: String { "value" }
}
