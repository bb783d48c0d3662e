import Foundation

/// One token of a predicate format string, with where it starts (in Unicode scalars).
struct PredicateToken: Equatable {
    enum Kind: Equatable {
        /// A name: a key, a keyword (`AND`, `ANY`, `TRUE`…) or a `#`-escaped key.
        case identifier(String, escaped: Bool)
        /// `@count`, `@sum`…
        case collectionOperator(String)
        case integer(Int64)
        case double(Double)
        case string(String)
        /// `$NAME`.
        case variable(String)
        /// `%@`, `%K`, `%d`…: the letters after `%`.
        case argument(String)
        /// Punctuation and operators: `(`, `==`, `&&`, `[`…
        case symbol(String)
        case end
    }

    let kind: Kind
    let offset: Int
    let length: Int
    /// The upper-cased word when the token is an unescaped reserved word.
    var keyword: String? = nil
}

/// Splits a format string into tokens, as Apple's "Predicate Format String Syntax" spells them.
struct PredicateLexer {
    private let scalars: [Unicode.Scalar]
    private var position = 0

    init(_ format: String) {
        scalars = Array(format.unicodeScalars)
    }

    /// Every token, ending with `.end`; a character that starts no token is an error.
    static func tokens(_ format: String) throws(PredicateSyntaxError) -> [PredicateToken] {
        var lexer = PredicateLexer(format)
        var tokens: [PredicateToken] = []
        while true {
            let token = try lexer.next(format)
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private static let symbols = ["==", "=<", "=>", "!=", "<>", "<=", ">=", "&&", "||", "**",
                                  "=", "<", ">", "!", "(", ")", "{", "}", "[", "]", ",", ".", "+", "-", "*", "/"]
        .map { ($0, Array($0.unicodeScalars)) }

    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        position + ahead < scalars.count ? scalars[position + ahead] : nil
    }

    private func error(_ message: String, at offset: Int, _ format: String) -> PredicateSyntaxError {
        PredicateSyntaxError(message: message, column: PredicateLexer.column(of: offset, in: format), format: format)
    }

    /// The 1-based character column of a scalar offset.
    static func column(of offset: Int, in format: String) -> Int {
        let prefix = format.unicodeScalars.prefix(offset)
        // ASCII text has one character per scalar.
        if prefix.allSatisfy({ $0.isASCII && $0 != "\r" }) { return prefix.count + 1 }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: format.unicodeScalars.prefix(offset))
        return String(scalars).count + 1
    }

    private static func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x80 { return (value | 0x20) >= 0x61 && (value | 0x20) <= 0x7A || value == 0x5F }
        return scalar.properties.isAlphabetic
    }

    private static func isIdentifierPart(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x80 { return (value | 0x20) >= 0x61 && (value | 0x20) <= 0x7A || value == 0x5F || (value >= 0x30 && value <= 0x39) }
        return scalar.properties.isAlphabetic || scalar.properties.generalCategory == .nonspacingMark
    }

    private static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x80 { return value == 0x20 || (value >= 0x09 && value <= 0x0D) }
        return scalar.properties.isWhitespace
    }

    private mutating func next(_ format: String) throws(PredicateSyntaxError) -> PredicateToken {
        while position < scalars.count, Self.isWhitespace(scalars[position]) { position += 1 }
        let start = position
        guard let scalar = peek() else { return PredicateToken(kind: .end, offset: start, length: 0) }
        func token(_ kind: PredicateToken.Kind) -> PredicateToken {
            PredicateToken(kind: kind, offset: start, length: position - start)
        }
        if Self.isIdentifierStart(scalar) || (scalar == "#" && peek(1).map(Self.isIdentifierStart) == true) {
            let escaped = scalar == "#"
            if escaped { position += 1 }
            let name = readName()
            var word = token(.identifier(name, escaped: escaped))
            if !escaped {
                let upper = name.uppercased()
                if PredicateParser.reserved.contains(upper) { word.keyword = upper }
            }
            return word
        }
        if scalar == "@" || scalar == "$" {
            position += 1
            guard let first = peek(), Self.isIdentifierStart(first) else {
                throw error("expected a name after '\(scalar)'", at: start, format)
            }
            let name = readName()
            return token(scalar == "@" ? .collectionOperator(name) : .variable(name))
        }
        if ("0"..."9").contains(scalar) {
            return token(try readNumber(format))
        }
        if scalar == "\"" || scalar == "'" {
            return token(.string(try readString(quote: scalar, format)))
        }
        if scalar == "%" {
            position += 1
            var letters = ""
            while let next = peek(), ["l", "h", "q"].contains(next) { letters.unicodeScalars.append(next); position += 1 }
            guard let conversion = peek(), conversion == "@" || conversion.properties.isAlphabetic else {
                throw error("expected a format argument such as %@ or %K after '%'", at: start, format)
            }
            letters.unicodeScalars.append(conversion)
            position += 1
            return token(.argument(letters))
        }
        for (symbol, symbolScalars) in Self.symbols where symbolScalars[0] == scalar && matches(symbolScalars) {
            position += symbolScalars.count
            return token(.symbol(symbol))
        }
        throw error("unexpected character '\(Character(scalar))'", at: start, format)
    }

    private func matches(_ symbol: [Unicode.Scalar]) -> Bool {
        guard position + symbol.count <= scalars.count else { return false }
        for offset in 0..<symbol.count where scalars[position + offset] != symbol[offset] { return false }
        return true
    }

    private mutating func readName() -> String {
        let start = position
        while position < scalars.count, Self.isIdentifierPart(scalars[position]) { position += 1 }
        var name = String.UnicodeScalarView()
        name.append(contentsOf: scalars[start..<position])
        return String(name)
    }

    private mutating func readNumber(_ format: String) throws(PredicateSyntaxError) -> PredicateToken.Kind {
        let start = position
        if peek() == "0", let radixLetter = peek(1), let radix = ["x": 16, "X": 16, "o": 8, "O": 8, "b": 2, "B": 2][Character(radixLetter)] {
            position += 2
            var digits = ""
            while let scalar = peek(), Character(scalar).hexDigitValue.map({ $0 < radix }) == true {
                digits.unicodeScalars.append(scalar)
                position += 1
            }
            guard !digits.isEmpty else { throw error("expected digits after '0\(radixLetter)'", at: start, format) }
            guard let value = Int64(digits, radix: radix) else { throw error("the number 0\(radixLetter)\(digits) is too large", at: start, format) }
            return .integer(value)
        }
        var text = ""
        var isInteger = true
        func digits() {
            while let scalar = peek(), ("0"..."9").contains(scalar) { text.unicodeScalars.append(scalar); position += 1 }
        }
        digits()
        if peek() == ".", let after = peek(1), ("0"..."9").contains(after) {
            isInteger = false
            text += "."
            position += 1
            digits()
        }
        if let e = peek(), e == "e" || e == "E" {
            var ahead = 1
            if let sign = peek(1), sign == "+" || sign == "-" { ahead = 2 }
            if let digit = peek(ahead), ("0"..."9").contains(digit) {
                isInteger = false
                for _ in 0..<ahead { text.unicodeScalars.append(peek()!); position += 1 }
                digits()
            }
        }
        if let scalar = peek(), Self.isIdentifierStart(scalar) {
            throw error("unexpected '\(Character(scalar))' in the number \(text)", at: position, format)
        }
        if isInteger, let value = Int64(text) { return .integer(value) }
        guard let value = Double(text), value.isFinite else { throw error("the number \(text) is too large", at: start, format) }
        return .double(value)
    }

    private mutating func readString(quote: Unicode.Scalar, _ format: String) throws(PredicateSyntaxError) -> String {
        let start = position
        position += 1
        var text = String.UnicodeScalarView()
        while true {
            guard let scalar = peek() else {
                throw error("expected \(quote) to close the string that starts", at: start, format)
            }
            position += 1
            if scalar == quote { return String(text) }
            guard scalar == "\\" else { text.append(scalar); continue }
            guard let escaped = peek() else { continue }
            position += 1
            switch escaped {
            case "n": text.append("\n")
            case "t": text.append("\t")
            case "r": text.append("\r")
            case "\"", "'", "\\": text.append(escaped)
            case "u", "x":
                let count = escaped == "u" ? 4 : 2
                var value: UInt32 = 0
                for _ in 0..<count {
                    guard let digit = peek(), let number = Character(digit).hexDigitValue else {
                        throw error("expected \(count) hexadecimal digits after \\\(escaped)", at: position, format)
                    }
                    value = value * 16 + UInt32(number)
                    position += 1
                }
                guard let decoded = Unicode.Scalar(value) else {
                    throw error("\\\(escaped) names no Unicode character", at: position - count - 2, format)
                }
                text.append(decoded)
            default:
                // Kept as written, so LIKE and MATCHES patterns see their own escapes (`\*`, `\d`).
                text.append("\\")
                text.append(escaped)
            }
        }
    }
}
