import Foundation

/// Base-10 decimal literals read into `Decimal` exactly (no binary rounding), fast for the
/// common case: up to 18 significant digits are built directly; longer ones go through
/// `Decimal(string:)`, which is exact but costs microseconds.
///
/// ```swift
/// DecimalParsing.parse("922.16")     // 922.16, exactly
/// DecimalParsing.parse("-1.5e3")     // -1500
/// DecimalParsing.parse("12abc")      // nil: the whole text must be a number
/// ```
public enum DecimalParsing {
    private static let posix = Locale(identifier: "en_US_POSIX")

    public static func parse(_ text: String) -> Decimal? {
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

    private static func slow(_ text: String) -> Decimal? {
        guard AttributeValue.isDecimalLiteral(text) else { return nil }
        return Decimal(string: text, locale: posix)
    }
}
