import Foundation

/// `Decimal` to and from base-10 text, exactly (no binary rounding) and fast for the common
/// case. Parsing builds up to 18 significant digits directly and leaves longer ones to
/// `Decimal(string:)`; formatting writes values of up to 64 bits of mantissa directly and
/// leaves the rest to `description`. Both of Foundation's own ways cost microseconds a call.
///
/// ```swift
/// DecimalText.parse("922.16")     // 922.16, exactly
/// DecimalText.parse("-1.5e3")     // -1500
/// DecimalText.parse("12abc")      // nil: the whole text must be a number
/// DecimalText.format(DecimalText.parse("922.160")!)   // "922.16", as Decimal.description
/// ```
package enum DecimalText {
    /// The text `Decimal.description` gives, without its cost for values whose mantissa fits
    /// 64 bits. Reads Decimal's storage as swift-foundation lays it out (exponent byte; a byte
    /// holding length, sign and compact bits; then eight 16-bit mantissa words); checked against
    /// `description` once per process, which turns the fast path off if the layout differs.
    package static func format(_ value: Decimal) -> String {
        guard layoutIsKnown, let text = fastText(value) else { return value.description }
        return text
    }

    static let layoutIsKnown: Bool = {
        guard MemoryLayout<Decimal>.size == 20 else { return false }
        let samples = ["0", "1", "-1", "922.16", "0.001", "-12345678901234.5678", "1e10", "100", "0.5", "18446744073709551615", "-0.0000042"]
        return samples.allSatisfy { text in
            guard let value = Decimal(string: text) else { return false }
            return fastText(value).map { $0 == value.description } ?? true
        }
    }()

    /// The sign, mantissa and exponent of a value whose mantissa fits 64 bits, read from its
    /// storage; nil otherwise (or for NaN).
    private static func parts(_ value: Decimal) -> (negative: Bool, mantissa: UInt64, exponent: Int)? {
        var copy = value
        return withUnsafeBytes(of: &copy) { raw -> (Bool, UInt64, Int)? in
            let exponent = Int(Int8(bitPattern: raw[0]))
            // swift-foundation packs length in the high nibble, then the sign bit.
            let length = Int(raw[1] >> 4)
            let negative = raw[1] & 0x08 != 0
            guard length <= 4 else { return nil }
            if length == 0 { return negative ? nil : (false, 0, 0) }  // a negative length 0 is NaN
            var mantissa: UInt64 = 0
            for word in 0..<length {
                let bits = UInt64(raw[4 + word * 2]) | UInt64(raw[5 + word * 2]) << 8
                mantissa |= bits << (16 * UInt64(word))
            }
            return (negative, mantissa, exponent)
        }
    }

    private static func fastText(_ value: Decimal) -> String? {
        guard let (negative, stored, scale) = parts(value) else { return nil }
        var mantissa = stored, exponent = scale
        if mantissa == 0 { return "0" }
        // description drops trailing zeros of the fraction
        while exponent < 0 && mantissa % 10 == 0 {
            mantissa /= 10
            exponent += 1
        }
        var count = 0
        var rest = mantissa
        while rest > 0 {
            rest /= 10
            count += 1
        }
        // The digits, with zeros after them (exponent ≥ 0), "0." and zeros before them (no
        // integer part), or a point among them; written backwards straight into the string's
        // storage (no buffer of its own: a price fits a small string, which allocates nothing).
        let start = negative ? 1 : 0
        let length = exponent >= 0 ? count + exponent : (count <= -exponent ? 2 - exponent : count + 1)
        return String(unsafeUninitializedCapacity: start + length) { out in
            var index = start + length - 1
            func put(_ byte: UInt8) {
                out[index] = byte
                index -= 1
            }
            if exponent >= 0 {
                for _ in 0..<exponent { put(UInt8(ascii: "0")) }
                while mantissa > 0 { put(UInt8(ascii: "0") + UInt8(mantissa % 10)); mantissa /= 10 }
            } else if count <= -exponent {
                while mantissa > 0 { put(UInt8(ascii: "0") + UInt8(mantissa % 10)); mantissa /= 10 }
                while index > start + 1 { put(UInt8(ascii: "0")) }
                put(UInt8(ascii: "."))
                put(UInt8(ascii: "0"))
            } else {
                var fraction = -exponent
                while mantissa > 0 {
                    put(UInt8(ascii: "0") + UInt8(mantissa % 10))
                    mantissa /= 10
                    fraction -= 1
                    if fraction == 0 { put(UInt8(ascii: ".")) }
                }
            }
            if negative { out[0] = UInt8(ascii: "-") }
            return start + length
        }
    }

    /// 10^0 … 10^22: the powers of ten a double holds exactly.
    private static let exactPowersOfTen: [Double] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]

    /// The double nearest `value` when one IEEE operation gives it exactly rounded (a mantissa
    /// below 10^15, so at most 15 significant digits, and a power of ten up to 10^22, both
    /// exact as doubles); nil otherwise, and for zero. A value of at most 15 significant
    /// digits is the only such value its nearest double stands for (doubles keep 15 digits),
    /// so a stored double equal to this one reads back as `value`.
    package static func nearestDouble(_ value: Decimal) -> Double? {
        guard layoutIsKnown, let (negative, mantissa, exponent) = parts(value), mantissa > 0, mantissa < 1_000_000_000_000_000, abs(exponent) <= 22 else { return nil }
        let magnitude = exponent >= 0 ? Double(mantissa) * exactPowersOfTen[exponent] : Double(mantissa) / exactPowersOfTen[-exponent]
        return negative ? -magnitude : magnitude
    }

    /// The double whose shortest text reads back as exactly `value`, or nil when no double's
    /// does. Swift writes a double as the shortest text that reads back as it (`String(0.1)` is
    /// "0.1"), and a SQLite store reads a stored double that way, so this double is the one
    /// form in which a SQLite store keeps `value`. Every value of at most 15 significant digits
    /// has one (doubles keep 15 digits); of longer ones, those a double was written as, such
    /// as the 17 digits of `3.3333333332999993` in Apple-written stores.
    ///
    /// ```swift
    /// DecimalText.doubleReadingBack(as: DecimalText.parse("3.3333333332999993")!)   // 3.3333333332999993
    /// DecimalText.doubleReadingBack(as: DecimalText.parse("9007199254740993")!)     // nil: 2^53 + 1
    /// ```
    package static func doubleReadingBack(as value: Decimal) -> Double? {
        guard let double = Double(format(value)), double.isFinite, parse(String(double)) == value else { return nil }
        return double
    }

    /// The significant digits of `value` as `significantDigits(format(value))` counts them,
    /// without writing the text for values whose mantissa fits 64 bits.
    package static func significantDigits(of value: Decimal) -> Int {
        guard layoutIsKnown, let (_, stored, _) = parts(value) else { return significantDigits(format(value)) }
        var mantissa = stored
        if mantissa == 0 { return 0 }
        while mantissa % 10 == 0 { mantissa /= 10 }
        var count = 0
        while mantissa > 0 { mantissa /= 10; count += 1 }
        return count
    }

    /// The significant digits of a decimal number written in text (`-001.2300e5` has 3): from
    /// the first non-zero digit to the last non-zero one, exponent aside.
    package static func significantDigits(_ text: String) -> Int {
        // Digits are counted from the first non-zero one; `last` is the count at the latest
        // non-zero one (so trailing zeros are not counted). No buffer: this runs per value.
        var counted = 0
        var last = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { break }
            guard byte >= 48 && byte <= 57 else { continue }
            if byte != 48 {
                counted += 1
                last = counted
            } else if counted > 0 {
                counted += 1
            }
        }
        return last
    }

    /// Foundation's `Decimal` keeps 38 significant digits (a 128-bit mantissa holds every
    /// 38-digit number); a longer text would be cut, so it is refused.
    package static let maximumSignificantDigits = 38

    package static func parse(_ text: String) -> Decimal? {
        var copy = text
        return copy.withUTF8 { bytes -> Decimal? in
            var index = 0
            let count = bytes.count
            var negative = false
            if index < count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
                negative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            var significand: UInt64 = 0
            var significantDigits = 0
            var exponent = 0
            var sawDigit = false
            var sawPoint = false
            while index < count {
                let byte = bytes[index]
                if byte >= 48 && byte <= 57 {
                    sawDigit = true
                    if significand == 0 && byte == 48 {
                        if sawPoint { exponent -= 1 }
                    } else {
                        significantDigits += 1
                        guard significantDigits <= 18 else { return slow(text) }
                        significand = significand * 10 + UInt64(byte - 48)
                        if sawPoint { exponent -= 1 }
                    }
                } else if byte == UInt8(ascii: ".") && !sawPoint {
                    sawPoint = true
                } else {
                    break
                }
                index += 1
            }
            guard sawDigit else { return nil }
            if index < count {
                guard bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") else { return nil }
                index += 1
                var exponentNegative = false
                if index < count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
                    exponentNegative = bytes[index] == UInt8(ascii: "-")
                    index += 1
                }
                var value = 0
                let start = index
                while index < count, bytes[index] >= 48, bytes[index] <= 57 {
                    value = min(value * 10 + Int(bytes[index] - 48), 100_000)
                    index += 1
                }
                guard index > start, index == count else { return nil }
                exponent += exponentNegative ? -value : value
            }
            if significand == 0 { return Decimal(0) }
            guard exponent >= -128 && exponent <= 127 else { return slow(text) }
            return Decimal(sign: negative ? .minus : .plus, exponent: exponent, significand: Decimal(significand))
        }
    }

    /// `Decimal(string:)` without a locale reads "." as the separator whatever the process's
    /// locale; building a `Locale` for it would load ICU's data, which then stays resident.
    private static func slow(_ text: String) -> Decimal? {
        guard AttributeValue.isDecimalLiteral(text), significantDigits(text) <= maximumSignificantDigits else { return nil }
        return Decimal(string: text)
    }
}
