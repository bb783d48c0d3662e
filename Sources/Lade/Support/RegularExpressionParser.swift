/// Parses a pattern into ``RegularExpressionSyntax`` when it lies in the native subset.
///
/// Three outcomes: the syntax; ``Stop/invalid(_:)`` when the pattern breaks a rule ICU
/// enforces; or ``Stop/outsideSubset(_:)`` when it uses something the native engine leaves to
/// NSRegularExpression (lookaround, backreferences, `\p{…}`, possessive quantifiers, inline
/// flags, set operations, …). In the last case the error says what may be wrong there, and is
/// used only if ICU refuses the pattern too. ``RegularExpression`` asks ICU before reporting an
/// `invalid` verdict, so what is refused is always exactly what ICU refuses.
///
/// ```swift
/// let syntax = try RegularExpressionParser.parse("[A-Z]{3}")
/// // .repetition(.scalar([A-Z]), minimum: 3, maximum: 3)
/// ```
struct RegularExpressionParser {
    enum Stop: Error {
        case invalid(RegularExpressionError)
        case outsideSubset(RegularExpressionError)
    }

    /// Counted repetitions above this go to ICU: expanding them would make the program large.
    static let largestCount = 1000

    private let pattern: String
    private let scalars: [UInt32]
    private var position = 0

    private init(_ pattern: String) {
        self.pattern = pattern
        self.scalars = pattern.unicodeScalars.map(\.value)
    }

    static func parse(_ pattern: String) throws(Stop) -> RegularExpressionSyntax {
        var parser = RegularExpressionParser(pattern)
        if parser.scalars.isEmpty { throw parser.invalid(at: 0, "an empty pattern is not a regular expression") }
        let syntax = try parser.parseAlternation(depth: 0)
        if parser.position < parser.scalars.count {
            // Only a `)` stops a top-level alternation early.
            throw parser.invalid(at: parser.position, "`)` closes no group")
        }
        return syntax
    }

    // MARK: Structure

    private mutating func parseAlternation(depth: Int) throws(Stop) -> RegularExpressionSyntax {
        var branches = [try parseConcatenation()]
        while peek == Self.bar {
            position += 1
            branches.append(try parseConcatenation())
        }
        if depth == 0, peek == Self.closeParenthesis {
            throw invalid(at: position, "`)` closes no group")
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private mutating func parseConcatenation() throws(Stop) -> RegularExpressionSyntax {
        var items: [RegularExpressionSyntax] = []
        while let scalar = peek, scalar != Self.bar, scalar != Self.closeParenthesis {
            let atomStart = position
            let atom = try parseAtom()
            items.append(try parseQuantifiers(of: atom, startingAt: atomStart))
        }
        switch items.count {
        case 0: return .empty
        case 1: return items[0]
        default: return .concatenation(items)
        }
    }

    private mutating func parseAtom() throws(Stop) -> RegularExpressionSyntax {
        let start = position
        let scalar = scalars[position]
        position += 1
        switch scalar {
        case Self.openParenthesis:
            if peek == Self.question {
                guard position + 1 < scalars.count, scalars[position + 1] == Self.colon else {
                    throw outsideSubset(at: start, "the group syntax `(?…` (valid forms include `(?:…)`, `(?=…)`, `(?<name>…)`, `(?i)`)")
                }
                position += 2
            }
            let inner = try parseAlternation(depth: 1)
            guard peek == Self.closeParenthesis else {
                throw invalid(at: start, "the group opened here is never closed with `)`")
            }
            position += 1
            return inner
        case Self.openBracket:
            return .scalar(try parseClass(openedAt: start))
        case Self.dot:
            return .scalar(.anyButLineTerminator)
        case Self.caret:
            return .assertion(.start)
        case Self.dollar:
            return .assertion(.endOrBeforeFinalLineTerminator)
        case Self.backslash:
            return try parseEscape(at: start)
        case Self.star, Self.plus, Self.question:
            throw invalid(at: start, "`\(Self.text(scalar))` has nothing before it to repeat")
        case Self.openBrace:
            throw invalid(at: start, "`{` has nothing before it to repeat (write `\\{` for a literal brace)")
        case Self.closeBrace:
            throw invalid(at: start, "`}` closes no repetition (write `\\}` for a literal brace)")
        default:
            return .scalar(RegularExpressionScalarSet(scalar: scalar))
        }
    }

    private mutating func parseQuantifiers(of atom: RegularExpressionSyntax, startingAt atomStart: Int) throws(Stop) -> RegularExpressionSyntax {
        guard let scalar = peek, Self.isQuantifierStart(scalar) else { return atom }
        let quantifierStart = position
        if case .assertion = atom {
            throw outsideSubset(at: quantifierStart, "the repeated assertion")
        }
        var minimum = 0
        var maximum: Int? = nil
        position += 1
        switch scalar {
        case Self.star: break
        case Self.plus: minimum = 1
        case Self.question: maximum = 1
        default:
            (minimum, maximum) = try parseInterval(openedAt: quantifierStart)
        }
        if peek == Self.question {
            // Lazy: the same answer to "is there a match", except that ICU gives up on a lazy
            // loop whose body matched nothing: `(|x)*?` does not match "xx" there.
            if atom.canMatchEmpty {
                throw outsideSubset(at: position, "the lazy quantifier")
            }
            position += 1
        } else if peek == Self.plus {
            throw outsideSubset(at: position, "the possessive quantifier")
        }
        if let next = peek, Self.isQuantifierStart(next) {
            throw invalid(at: position, "`\(Self.text(next))` follows another quantifier and has nothing to repeat")
        }
        return .repetition(atom, minimum: minimum, maximum: maximum)
    }

    /// `{n}`, `{n,}` or `{n,m}`, digits only, after the `{` at `start`.
    private mutating func parseInterval(openedAt start: Int) throws(Stop) -> (Int, Int?) {
        let malformed = "`{` must begin a repetition such as {3}, {2,} or {2,5} (write `\\{` for a literal brace)"
        guard let minimum = parseNumber(openedAt: start) else { throw invalid(at: start, malformed) }
        var maximum: Int? = minimum
        if peek == Self.comma {
            position += 1
            maximum = peek == Self.closeBrace ? nil : parseNumber(openedAt: start)
            if maximum == nil && peek != Self.closeBrace { throw invalid(at: start, malformed) }
        }
        guard peek == Self.closeBrace else { throw invalid(at: start, malformed) }
        position += 1
        if let maximum, maximum < minimum {
            throw invalid(at: start, "the repetition \(Self.text(scalars[start..<position])) has a maximum below its minimum")
        }
        if minimum > Self.largestCount || (maximum ?? 0) > Self.largestCount {
            throw outsideSubset(at: start, "the repetition \(Self.text(scalars[start..<position]))")
        }
        return (minimum, maximum)
    }

    private mutating func parseNumber(openedAt start: Int) -> Int? {
        var value = 0
        var digits = 0
        while let scalar = peek, (0x30...0x39).contains(scalar) {
            value = min(value * 10 + Int(scalar - 0x30), 1_000_000)
            digits += 1
            position += 1
        }
        return digits == 0 ? nil : value
    }

    // MARK: Escapes

    private enum Escaped {
        case scalar(UInt32)
        case property(RegularExpressionScalarProperties.Property, inverted: Bool)
        case assertion(RegularExpressionSyntax.Assertion)
    }

    private mutating func parseEscape(at start: Int) throws(Stop) -> RegularExpressionSyntax {
        switch try parseEscaped(at: start, inClass: false) {
        case .scalar(let scalar): return .scalar(RegularExpressionScalarSet(scalar: scalar))
        case .property(let property, let inverted): return .scalar(RegularExpressionScalarSet(property: property, inverted: inverted))
        case .assertion(let assertion): return .assertion(assertion)
        }
    }

    /// The escape whose backslash is at `start`; `position` is just after the backslash.
    private mutating func parseEscaped(at start: Int, inClass: Bool) throws(Stop) -> Escaped {
        guard let scalar = peek else {
            throw invalid(at: start, "the pattern ends with a lone backslash")
        }
        position += 1
        switch scalar {
        case 0x64: return .property(.digit, inverted: false)  // d
        case 0x44: return .property(.digit, inverted: true)   // D
        case 0x77: return .property(.word, inverted: false)   // w
        case 0x57: return .property(.word, inverted: true)    // W
        case 0x73: return .property(.space, inverted: false)  // s
        case 0x53: return .property(.space, inverted: true)   // S
        case 0x74: return .scalar(0x09)  // t
        case 0x6E: return .scalar(0x0A)  // n
        case 0x72: return .scalar(0x0D)  // r
        case 0x66: return .scalar(0x0C)  // f
        case 0x61: return .scalar(0x07)  // a
        case 0x65: return .scalar(0x1B)  // e
        case 0x62, 0x42, 0x41, 0x7A, 0x5A:  // b B A z Z
            if inClass {
                throw outsideSubset(at: start, "the escape `\\\(Self.text(scalar))` in a class")
            }
            let assertions: [UInt32: RegularExpressionSyntax.Assertion] = [
                0x62: .wordBoundary, 0x42: .notWordBoundary, 0x41: .start, 0x7A: .end, 0x5A: .endOrBeforeFinalLineTerminator,
            ]
            return .assertion(assertions[scalar]!)
        case 0x75:  // u: exactly four hex digits
            return .scalar(try parseHex(count: 4, escapeAt: start, "`\\u` must be followed by four hexadecimal digits"))
        case 0x55:  // U: exactly eight hex digits
            return .scalar(try parseHex(count: 8, escapeAt: start, "`\\U` must be followed by eight hexadecimal digits"))
        case 0x78:  // x: \xhh or \x{h...}
            if peek == Self.openBrace {
                position += 1
                let digitsStart = position
                var value: UInt32 = 0
                while let digit = peek.flatMap(Self.hexValue), position - digitsStart < 8 {
                    value = value << 4 | digit
                    position += 1
                }
                guard position > digitsStart, peek == Self.closeBrace else {
                    throw invalid(at: start, "`\\x{` must be followed by hexadecimal digits and `}`")
                }
                position += 1
                return .scalar(try checkedScalar(value, escapeAt: start))
            }
            let digitsStart = position
            var value: UInt32 = 0
            while let digit = peek.flatMap(Self.hexValue), position - digitsStart < 2 {
                value = value << 4 | digit
                position += 1
            }
            guard position > digitsStart else {
                throw invalid(at: start, "`\\x` must be followed by one or two hexadecimal digits, or `{…}`")
            }
            return .scalar(value)
        default:
            if scalar < 0x80, !Self.isAlphanumeric(scalar) {
                return .scalar(scalar)  // an escaped metacharacter or punctuation stands for itself
            }
            throw outsideSubset(at: start, (0x30...0x39).contains(scalar) ? "the back reference `\\\(Self.text(scalar))` (to a group the pattern may not have)" : "the escape `\\\(Self.text(scalar))`")
        }
    }

    private mutating func parseHex(count: Int, escapeAt start: Int, _ message: String) throws(Stop) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            guard let digit = peek.flatMap(Self.hexValue) else { throw invalid(at: start, message) }
            value = value << 4 | digit
            position += 1
        }
        return try checkedScalar(value, escapeAt: start)
    }

    private func checkedScalar(_ value: UInt32, escapeAt start: Int) throws(Stop) -> UInt32 {
        if value > 0x10FFFF {
            throw invalid(at: start, "the code point \(Self.text(scalars[start..<position])) is above U+10FFFF")
        }
        if (0xD800...0xDFFF).contains(value) {
            throw outsideSubset(at: start, "the lone surrogate")
        }
        return value
    }

    // MARK: Character classes

    /// `[...]` whose `[` is at `start`; `position` is just after it.
    private mutating func parseClass(openedAt start: Int) throws(Stop) -> RegularExpressionScalarSet {
        var set = RegularExpressionScalarSet()
        if peek == Self.caret {
            set.isNegated = true
            position += 1
        }
        var isFirst = true
        while true {
            guard let scalar = peek else {
                throw invalid(at: start, "the character class opened here is never closed with `]`")
            }
            let itemStart = position
            if scalar == Self.closeBracket && !isFirst {
                position += 1
                return set
            }
            defer { isFirst = false }
            if scalar == Self.openBracket {
                throw outsideSubset(at: itemStart, "the nested set or POSIX class")
            }
            if scalar == Self.ampersand && next(1) == Self.ampersand {
                throw outsideSubset(at: itemStart, "the set intersection `&&`")
            }
            if scalar == Self.hyphen {
                if next(1) == Self.hyphen {
                    throw outsideSubset(at: itemStart, "the set difference `--`")
                }
                guard isFirst || next(1) == Self.closeBracket else {
                    throw outsideSubset(at: itemStart, "the `-`, which joins no two single characters")
                }
                position += 1
                set.insert(Self.hyphen...Self.hyphen)
                continue
            }
            switch try parseClassItem() {
            case .property(let property, let inverted):
                set.insert(property, inverted: inverted)
            case .assertion:
                preconditionFailure("assertions are not parsed inside a class")
            case .scalar(let low):
                guard peek == Self.hyphen, let after = next(1), after != Self.closeBracket else {
                    set.insert(low...low)
                    continue
                }
                if after == Self.hyphen {
                    throw outsideSubset(at: position, "the set difference `--`")
                }
                position += 1
                let highStart = position
                if after == Self.openBracket {
                    throw outsideSubset(at: highStart, "the nested set")
                }
                guard case .scalar(let high) = try parseClassItem() else {
                    throw invalid(at: highStart, "a range in a class must end with a single character, not a class like `\\d`")
                }
                guard low <= high else {
                    throw invalid(at: itemStart, "the range \(Self.text(scalars[itemStart..<position])) in a class is reversed")
                }
                set.insert(low...high)
            }
        }
    }

    private mutating func parseClassItem() throws(Stop) -> Escaped {
        let start = position
        let scalar = scalars[position]
        position += 1
        if scalar == Self.backslash {
            return try parseEscaped(at: start, inClass: true)
        }
        return .scalar(scalar)
    }

    // MARK: Helpers

    private var peek: UInt32? { position < scalars.count ? scalars[position] : nil }

    private func next(_ offset: Int) -> UInt32? {
        position + offset < scalars.count ? scalars[position + offset] : nil
    }

    private func invalid(at offset: Int, _ reason: String) -> Stop {
        .invalid(RegularExpressionError(pattern: pattern, offset: offset, reason: reason))
    }

    /// Leaves the pattern to ICU at `construct`, a noun phrase; the reason reads well should ICU refuse it.
    private func outsideSubset(at offset: Int, _ construct: String) -> Stop {
        .outsideSubset(RegularExpressionError(pattern: pattern, offset: offset, reason: "ICU refuses the pattern at or after \(construct)"))
    }

    private static func isQuantifierStart(_ scalar: UInt32) -> Bool {
        scalar == star || scalar == plus || scalar == question || scalar == openBrace
    }

    private static func isAlphanumeric(_ scalar: UInt32) -> Bool {
        (0x30...0x39).contains(scalar) || (0x41...0x5A).contains(scalar) || (0x61...0x7A).contains(scalar)
    }

    private static func hexValue(_ scalar: UInt32) -> UInt32? {
        switch scalar {
        case 0x30...0x39: return scalar - 0x30
        case 0x41...0x46: return scalar - 0x41 + 10
        case 0x61...0x66: return scalar - 0x61 + 10
        default: return nil
        }
    }

    private static func text(_ scalar: UInt32) -> String { text([scalar][...]) }

    private static func text(_ scalars: ArraySlice<UInt32>) -> String {
        var result = ""
        for value in scalars { result.unicodeScalars.append(Unicode.Scalar(value) ?? "\u{FFFD}") }
        return result
    }

    private static let backslash: UInt32 = 0x5C, bar: UInt32 = 0x7C, dot: UInt32 = 0x2E
    private static let caret: UInt32 = 0x5E, dollar: UInt32 = 0x24, hyphen: UInt32 = 0x2D
    private static let star: UInt32 = 0x2A, plus: UInt32 = 0x2B, question: UInt32 = 0x3F
    private static let openParenthesis: UInt32 = 0x28, closeParenthesis: UInt32 = 0x29
    private static let openBracket: UInt32 = 0x5B, closeBracket: UInt32 = 0x5D
    private static let openBrace: UInt32 = 0x7B, closeBrace: UInt32 = 0x7D
    private static let comma: UInt32 = 0x2C, colon: UInt32 = 0x3A, ampersand: UInt32 = 0x26
}
