/// A set of Unicode scalars as a regular expression sees them: ranges of code points plus
/// ICU's property classes (`\d`, `\w`, `\s`, and `.`'s "not a line terminator"), optionally
/// negated as a whole (`[^...]`).
///
/// Membership of the property classes depends on a few facts about a scalar, its
/// ``RegularExpressionScalarProperties``, which is what lets the automaton group all scalars
/// into a handful of equivalence classes.
///
/// ```swift
/// var set = RegularExpressionScalarSet()
/// set.insert(0x41...0x5A)                 // [A-Z]
/// set.insert(.digit, inverted: false)     // \d
/// set.contains(0x35)                      // true: "5"
/// ```
struct RegularExpressionScalarSet: Hashable, Sendable {
    /// Sorted, non-overlapping, non-adjacent code-point ranges.
    private(set) var ranges: [ClosedRange<UInt32>] = []
    /// Property classes in the set, each as (property, inverted): `\D` is (`.digit`, true).
    private(set) var properties: [PropertyItem] = []
    /// Whether the set is the complement of its ranges and properties (`[^...]`).
    var isNegated = false

    struct PropertyItem: Hashable, Sendable {
        var property: RegularExpressionScalarProperties.Property
        var inverted: Bool
    }

    init() {}

    /// The set holding exactly one scalar.
    init(scalar: UInt32) { ranges = [scalar...scalar] }

    /// The set of a property class: `\d` is `init(property: .digit, inverted: false)`.
    init(property: RegularExpressionScalarProperties.Property, inverted: Bool) {
        properties = [PropertyItem(property: property, inverted: inverted)]
    }

    /// `.` without the dot-all flag: any scalar but a line terminator.
    static let anyButLineTerminator = RegularExpressionScalarSet(property: .lineTerminator, inverted: true)

    mutating func insert(_ range: ClosedRange<UInt32>) {
        var merged = range
        var kept: [ClosedRange<UInt32>] = []
        kept.reserveCapacity(ranges.count + 1)
        for existing in ranges {
            if existing.upperBound &+ 1 < merged.lowerBound || merged.upperBound &+ 1 < existing.lowerBound {
                kept.append(existing)
            } else {
                merged = min(existing.lowerBound, merged.lowerBound)...max(existing.upperBound, merged.upperBound)
            }
        }
        kept.append(merged)
        kept.sort { $0.lowerBound < $1.lowerBound }
        ranges = kept
    }

    mutating func insert(_ property: RegularExpressionScalarProperties.Property, inverted: Bool) {
        let item = PropertyItem(property: property, inverted: inverted)
        if !properties.contains(item) { properties.append(item) }
    }

    /// The properties this set's membership depends on, as a mask of property bits.
    var propertyMask: UInt8 {
        properties.reduce(0) { $0 | $1.property.bit }
    }

    /// Whether `scalar`, whose properties are `facts`, is in the set.
    func contains(_ scalar: UInt32, facts: RegularExpressionScalarProperties) -> Bool {
        containsInRanges(scalar, facts: facts) != isNegated
    }

    /// Whether `scalar` is in the set (computing its properties when they matter).
    func contains(_ scalar: UInt32) -> Bool {
        let facts = properties.isEmpty ? RegularExpressionScalarProperties(bits: 0) : RegularExpressionScalarProperties(scalar)
        return contains(scalar, facts: facts)
    }

    /// Membership before negation, for a scalar known only by "in range `rangeHit`" and `facts`.
    func contains(inRanges rangeHit: Bool, facts: RegularExpressionScalarProperties) -> Bool {
        (rangeHit || properties.contains { facts.has($0.property) != $0.inverted }) != isNegated
    }

    private func containsInRanges(_ scalar: UInt32, facts: RegularExpressionScalarProperties) -> Bool {
        if rangesContain(scalar) { return true }
        return properties.contains { facts.has($0.property) != $0.inverted }
    }

    /// Whether one of the ranges holds `scalar` (properties and negation aside).
    func rangesContain(_ scalar: UInt32) -> Bool {
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound < scalar { low = middle + 1 } else { high = middle }
        }
        return low < ranges.count && ranges[low].contains(scalar)
    }
}

/// The facts about a scalar that ICU's built-in classes and `\b` depend on, as bits.
///
/// - `\d` is `\p{Nd}` (general category decimal number).
/// - `\w` is ICU's word set: `[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\u200C\u200D]`.
/// - `\s` is `\p{White_Space}`.
/// - `.` refuses ICU's line terminators: U+000A–U+000D, U+0085, U+2028, U+2029.
/// - `\b` looks through grapheme extenders and format characters (`\p{Grapheme_Extend}`, `\p{Cf}`).
///
/// ```swift
/// RegularExpressionScalarProperties(0x0663).has(.digit)   // true: ARABIC-INDIC DIGIT THREE
/// ```
struct RegularExpressionScalarProperties: Hashable, Sendable {
    var bits: UInt8

    enum Property: UInt8, Hashable, Sendable, CaseIterable {
        case digit = 0, word, space, lineTerminator
        /// A grapheme extender or format character, which `\b` looks through.
        case ignoredByWordBoundary
        var bit: UInt8 { 1 << rawValue }
    }

    /// How many distinct property bit patterns there are.
    static let combinations = 1 << Property.allCases.count

    init(bits: UInt8) { self.bits = bits }

    init(_ scalar: UInt32) {
        bits = Self.lookUp(scalar)
    }

    /// The bits of `scalar`, from a table for the first 12,288 code points (Latin, Greek,
    /// Cyrillic, Hebrew, Arabic, Indic scripts, …) and computed for the rest.
    @inline(__always)
    static func lookUp(_ scalar: UInt32) -> UInt8 {
        scalar < 0x80 ? asciiTable[Int(scalar)] : scalar < 0x3000 ? commonTable[Int(scalar)] : compute(scalar)
    }

    func has(_ property: Property) -> Bool { bits & property.bit != 0 }

    static func compute(_ value: UInt32) -> UInt8 {
        guard let scalar = Unicode.Scalar(value) else { return 0 }
        let properties = scalar.properties
        var bits: UInt8 = 0
        let category = properties.generalCategory
        if category == .decimalNumber { bits |= Property.digit.bit }
        if properties.isAlphabetic || value == 0x200C || value == 0x200D || isWordCategory(category) {
            bits |= Property.word.bit
        }
        if properties.isWhitespace { bits |= Property.space.bit }
        if isLineTerminator(value) { bits |= Property.lineTerminator.bit }
        if properties.isGraphemeExtend || category == .format { bits |= Property.ignoredByWordBoundary.bit }
        return bits
    }

    private static func isWordCategory(_ category: Unicode.GeneralCategory) -> Bool {
        switch category {
        case .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .connectorPunctuation: return true
        default: return false
        }
    }

    /// ICU's line terminators: what `.` refuses and what `$` may stand before at the end.
    static func isLineTerminator(_ value: UInt32) -> Bool {
        (0x0A...0x0D).contains(value) || value == 0x85 || value == 0x2028 || value == 0x2029
    }

    /// Whether ICU's `\b` skips the scalar (a grapheme extender or a format character):
    /// no boundary falls just before it, and it does not count as the previous character.
    static func isIgnoredByWordBoundary(_ value: UInt32) -> Bool {
        lookUp(value) & Property.ignoredByWordBoundary.bit != 0
    }

    static let asciiTable: [UInt8] = (0..<128).map { compute(UInt32($0)) }
    static let commonTable: [UInt8] = (0..<0x3000).map { compute(UInt32($0)) }
}
