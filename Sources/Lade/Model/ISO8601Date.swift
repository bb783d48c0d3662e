import Foundation

/// ISO 8601 dates as data files write them, read without `ISO8601DateFormatter` (which costs
/// hundreds of microseconds a call on Linux):
/// `2024-03-01`, `2024-03-01T12:30`, `2024-03-01T12:30:15`, `2024-03-01 12:30:15.250`,
/// each optionally followed by `Z` or an offset (`+01:00`, `+0100`, `+01`). A date without
/// an offset is UTC.
///
/// ```swift
/// ISO8601Date.parse("2024-03-01T12:30:00.5+01:00")   // 2024-03-01 11:30:00.5 UTC
/// ISO8601Date.parse("2024-02-30")                    // nil: February has no 30th
/// ```
package enum ISO8601Date {
    package static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    /// What `parseKept` makes of a text.
    package enum Parsed: Equatable {
        case date(Date)
        /// A date, but the double Core Data keeps a date in (seconds since 2001) holds another
        /// instant to the microsecond: `kept` (`9999-12-31T23:59:59.999999Z` is kept as
        /// `10000-01-01T00:00:00Z`).
        case notKept(kept: Date)
        case invalid
    }

    /// As `parse`, also telling a date the store's double cannot hold to the microsecond (to
    /// the precision the text gives, at most microseconds) from one it holds: such a value is
    /// refused, never rounded into another instant.
    package static func parseKept(_ text: String) -> Parsed {
        var text = text
        return text.withUTF8 { bytes in
            var exact: (seconds: Int64, micros: Int64) = (0, 0)
            guard let date = parse(bytes: bytes, exact: &exact) else { return .invalid }
            // Seconds since 2001, split exactly: the whole part, and the fraction in microseconds.
            let stored = date.timeIntervalSinceReferenceDate
            let whole = stored.rounded(.down)
            guard let wholeSeconds = Int64(exactly: whole) else { return .notKept(kept: date) }
            let storedMicros = wholeSeconds * 1_000_000 + Int64(((stored - whole) * 1_000_000).rounded())
            let exactMicros = (exact.seconds - 978_307_200) * 1_000_000 + exact.micros
            return storedMicros == exactMicros ? .date(date) : .notKept(kept: date)
        }
    }

    /// Parses the whole of `bytes`; nil unless every byte is part of the date.
    package static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        var exact: (seconds: Int64, micros: Int64) = (0, 0)
        return parse(bytes: bytes, exact: &exact)
    }

    /// `exact`: the instant as whole seconds since 1970 and microseconds (the text's fraction
    /// rounded to the microsecond), computed in integers.
    private static func parse(bytes: UnsafeBufferPointer<UInt8>, exact: inout (seconds: Int64, micros: Int64)) -> Date? {
        var index = 0
        let count = bytes.count
        func digits(_ n: Int) -> Int? {
            guard index + n <= count else { return nil }
            var value = 0
            for offset in 0..<n {
                let digit = Int(bytes[index + offset]) &- 48
                guard digit >= 0 && digit <= 9 else { return nil }
                value = value * 10 + digit
            }
            index += n
            return value
        }
        func take(_ byte: UInt8) -> Bool {
            guard index < count, bytes[index] == byte else { return false }
            index += 1
            return true
        }
        guard let year = digits(4), take(UInt8(ascii: "-")), let month = digits(2), take(UInt8(ascii: "-")), let day = digits(2),
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        var seconds = Double(daysFromCivil(year: year, month: month, day: day)) * 86_400
        exact = (Int64(daysFromCivil(year: year, month: month, day: day)) * 86_400, 0)
        guard index < count else { return Date(timeIntervalSince1970: seconds) }
        guard bytes[index] == UInt8(ascii: "T") || bytes[index] == UInt8(ascii: "t") || bytes[index] == UInt8(ascii: " ") else { return nil }
        index += 1
        guard let hour = digits(2), take(UInt8(ascii: ":")), let minute = digits(2), hour <= 23, minute <= 59 else { return nil }
        var second = 0
        var fraction = 0.0
        if take(UInt8(ascii: ":")) {
            guard let value = digits(2), value <= 59 else { return nil }
            second = value
            if index < count, bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: ",") {
                index += 1
                var numerator = 0.0
                var denominator = 1.0
                var micros: Int64 = 0
                let start = index
                while index < count, bytes[index] >= 48, bytes[index] <= 57 {
                    if denominator < 1e15 {
                        numerator = numerator * 10 + Double(bytes[index] - 48)
                        denominator *= 10
                    }
                    let place = index - start
                    if place < 6 { micros = micros * 10 + Int64(bytes[index] - 48) }
                    if place == 6, bytes[index] >= 53 { micros += 1 }  // the seventh digit rounds
                    index += 1
                }
                guard index > start else { return nil }
                for _ in min(index - start, 6)..<6 { micros *= 10 }
                exact.micros = micros
                fraction = numerator / denominator
            }
        }
        seconds += Double(hour * 3600 + minute * 60 + second) + fraction
        exact.seconds += Int64(hour * 3600 + minute * 60 + second)
        guard index < count else { return Date(timeIntervalSince1970: seconds) }
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = bytes[index] == UInt8(ascii: "+") ? 1.0 : -1.0
            index += 1
            guard let offsetHours = digits(2), offsetHours <= 23 else { return nil }
            var offsetMinutes = 0
            if index < count {
                _ = take(UInt8(ascii: ":"))
                guard let value = digits(2), value <= 59 else { return nil }
                offsetMinutes = value
            }
            seconds -= sign * Double(offsetHours * 3600 + offsetMinutes * 60)
            exact.seconds -= Int64(sign) * Int64(offsetHours * 3600 + offsetMinutes * 60)
        default:
            return nil
        }
        return index == count ? Date(timeIntervalSince1970: seconds) : nil
    }

    /// `date` as ISO 8601 in UTC, in the proleptic Gregorian calendar, without
    /// `ISO8601DateFormatter` (which loads ICU's calendar data, resident from then on: 6 MiB
    /// of an import's 64 MiB budget).
    /// - Whole seconds (the default): `2026-11-26T05:10:00Z`, a fraction dropped, as
    ///   `ISO8601DateFormatter` writes dates from 1582-10-15 on (before it, that counts Julian
    ///   days).
    /// - `fractionalSeconds`: exact to the microsecond with no more digits than it needs:
    ///   `2024-01-02T03:04:05.5Z`, `2024-01-02T03:04:05.123456Z`.
    ///
    /// Years before 1 or after 9999 are written with their sign or extra digits (`-0001-…`,
    /// `10000-…`); an instant beyond ±95,000 years as its seconds since 2001.
    package static func format(_ date: Date, fractionalSeconds: Bool = false) -> String {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, abs(seconds) < 3e12 else { return String(date.timeIntervalSinceReferenceDate) }
        let micros = fractionalSeconds ? Int64((seconds * 1_000_000).rounded()) : Int64(seconds.rounded(.down)) * 1_000_000
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

    /// Howard Hinnant's days-to-civil, the inverse of `daysFromCivil`: the proleptic
    /// Gregorian date `days` after 1970-01-01.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
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

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
