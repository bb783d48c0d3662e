import Foundation

/// One token of a predicate format string, with where it starts (in UTF-8 bytes).
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
    /// The format's UTF-8 bytes; `position` is a byte offset, always at a scalar's start.
    private let bytes: [UInt8]
    private var position = 0

    init(_ format: String) {
        bytes = Array(format.utf8)
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
        .map { ($0, Array($0.utf8)) }

    /// The scalar `ahead` scalars after the current one.
    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        var offset = position
        for _ in 0..<ahead {
            guard offset < bytes.count else { return nil }
            offset += Self.length(of: bytes[offset])
        }
        return offset < bytes.count ? scalar(at: offset) : nil
    }

    /// The byte length of the scalar a UTF-8 lead byte starts.
    private static func length(of lead: UInt8) -> Int {
        lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
    }

    private func scalar(at offset: Int) -> Unicode.Scalar {
        let lead = bytes[offset]
        if lead < 0x80 { return Unicode.Scalar(lead) }
        let length = Self.length(of: lead)
        var value = UInt32(lead) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
        for index in 1..<length { value = value << 6 | UInt32(bytes[offset + index] & 0x3F) }
        return Unicode.Scalar(value) ?? "\u{FFFD}"
    }

    /// Moves past the current scalar.
    private mutating func step() {
        position += Self.length(of: bytes[position])
    }

    private func error(_ message: String, at offset: Int, _ format: String) -> PredicateSyntaxError {
        PredicateSyntaxError(message: message, column: PredicateLexer.column(of: offset, in: format), format: format)
    }

    /// The 1-based character column of a UTF-8 offset.
    static func column(of offset: Int, in format: String) -> Int {
        let prefix = format.utf8.prefix(offset)
        // ASCII text has one character per byte.
        if prefix.allSatisfy({ $0 < 0x80 && $0 != 0x0D }) { return prefix.count + 1 }
        return String(decoding: prefix, as: UTF8.self).count + 1
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
        while position < bytes.count, Self.isWhitespace(scalar(at: position)) { step() }
        let start = position
        guard let scalar = peek() else { return PredicateToken(kind: .end, offset: start, length: 0) }
        func token(_ kind: PredicateToken.Kind) -> PredicateToken {
            PredicateToken(kind: kind, offset: start, length: position - start)
        }
        if Self.isIdentifierStart(scalar) || (scalar == "#" && peek(1).map(Self.isIdentifierStart) == true) {
            let escaped = scalar == "#"
            if escaped { step() }
            let name = readName()
            var word = token(.identifier(name, escaped: escaped))
            if !escaped {
                let upper = name.uppercased()
                if PredicateParser.reserved.contains(upper) { word.keyword = upper }
            }
            return word
        }
        if scalar == "@" || scalar == "$" {
            step()
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
            step()
            var letters = ""
            while let next = peek(), ["l", "h", "q"].contains(next) { letters.unicodeScalars.append(next); step() }
            guard let conversion = peek(), conversion == "@" || conversion.properties.isAlphabetic else {
                throw error("expected a format argument such as %@ or %K after '%'", at: start, format)
            }
            letters.unicodeScalars.append(conversion)
            step()
            return token(.argument(letters))
        }
        for (symbol, symbolBytes) in Self.symbols where symbolBytes[0] == bytes[position] && matches(symbolBytes) {
            position += symbolBytes.count
            return token(.symbol(symbol))
        }
        throw error("unexpected character '\(Character(scalar))'", at: start, format)
    }

    private func matches(_ symbol: [UInt8]) -> Bool {
        guard position + symbol.count <= bytes.count else { return false }
        for offset in 0..<symbol.count where bytes[position + offset] != symbol[offset] { return false }
        return true
    }

    private mutating func readName() -> String {
        let start = position
        while position < bytes.count, Self.isIdentifierPart(scalar(at: position)) { step() }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    private mutating func readNumber(_ format: String) throws(PredicateSyntaxError) -> PredicateToken.Kind {
        let start = position
        if peek() == "0", let radixLetter = peek(1), let radix = ["x": 16, "X": 16, "o": 8, "O": 8, "b": 2, "B": 2][Character(radixLetter)] {
            position += 2
            var digits = ""
            while let scalar = peek(), scalar.isASCII, Character(scalar).hexDigitValue.map({ $0 < radix }) == true {
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
        step()
        var text: [UInt8] = []
        func append(_ scalar: Unicode.Scalar) { text.append(contentsOf: String(scalar).utf8) }
        while true {
            guard position < bytes.count else {
                throw error("expected \(quote) to close the string that starts", at: start, format)
            }
            let byte = bytes[position]
            guard byte < 0x80 else {
                let length = Self.length(of: byte)
                text.append(contentsOf: bytes[position..<position + length])
                position += length
                continue
            }
            position += 1
            if byte == quote.value { return String(decoding: text, as: UTF8.self) }
            guard byte == UInt8(ascii: "\\") else { text.append(byte); continue }
            guard let escaped = peek() else { continue }
            step()
            switch escaped {
            case "n": text.append(0x0A)
            case "t": text.append(0x09)
            case "r": text.append(0x0D)
            case "\"", "'", "\\": append(escaped)
            case "u", "x":
                let count = escaped == "u" ? 4 : 2
                var value: UInt32 = 0
                for _ in 0..<count {
                    guard let digit = peek(), digit.isASCII, let number = Character(digit).hexDigitValue else {
                        throw error("expected \(count) hexadecimal digits after \\\(escaped)", at: position, format)
                    }
                    value = value * 16 + UInt32(number)
                    position += 1
                }
                guard let decoded = Unicode.Scalar(value) else {
                    throw error("\\\(escaped) names no Unicode character", at: position - count - 2, format)
                }
                append(decoded)
            default:
                // Kept as written, so LIKE and MATCHES patterns see their own escapes (`\*`, `\d`).
                text.append(UInt8(ascii: "\\"))
                append(escaped)
            }
        }
    }
}
