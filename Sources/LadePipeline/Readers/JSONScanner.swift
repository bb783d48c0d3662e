/// A byte-level JSON (RFC 8259, <https://www.rfc-editor.org/rfc/rfc8259>) scanner working in
/// place on a window of the input. It reads the requested key paths of an object into value
/// slots and skips everything else without building it, checking the grammar all the same.
///
/// Structural damage (a missing colon, a stray character) is thrown, because the end of the
/// record can no longer be found. Damage inside a value whose extent is still clear (a bad
/// escape, a lone surrogate, a malformed number, a raw control character) is kept in
/// ``problem`` and scanning goes on, so a reader can skip the record and continue.
struct JSONScanner {
    static let maximumDepth = 512

    var bytes: UnsafePointer<UInt8>
    var i = 0
    var end = 0
    var isFinal = true
    var offset: Int64 = 0
    var line = 1
    var lineStart: Int64 = 0
    /// What the end of the input is called in messages ("the end of the line" for NDJSON).
    let endName: String
    let file: String
    let tree: KeyTree
    /// The first recoverable problem of the current record.
    var problem: ReaderError?
    /// When set, the keys of the record's top-level object are collected here.
    var collectedKeys: [String]?
    private var scratch: [UInt8] = []
    /// For each guess slot of the tree (after a member, at the start of a node), the member that came next last time.
    private var guesses: [Int]

    init(file: String, tree: KeyTree, endName: String) {
        self.file = file
        self.tree = tree
        self.endName = endName
        guesses = [Int](repeating: -1, count: tree.guessCount)
        bytes = UnsafePointer(bitPattern: 1)!   // set by `start` before any use
    }

    /// Points the scanner at `window[index..<end]`, at `line` starting at stream offset `lineStart`.
    mutating func start(_ window: Window, at index: Int, end: Int, isFinal: Bool, line: Int, lineStart: Int64) {
        bytes = window.bytes
        i = index
        self.end = end
        self.isFinal = isFinal
        offset = window.offset
        self.line = line
        self.lineStart = lineStart
        problem = nil
    }

    // MARK: Positions and errors

    func column(at index: Int) -> Int { Int(offset + Int64(index) - lineStart) + 1 }

    func error(_ kind: ReaderError.Kind = .malformedJSON, at index: Int, _ found: String, _ expected: String) -> ReaderError {
        ReaderError(kind, file: file, line: line, column: column(at: index), found: found, expected: expected)
    }

    /// An error at `index` on an earlier line, which started at stream offset `lineStart`.
    func error(at index: Int, line: Int, lineStart: Int64, _ found: String, _ expected: String) -> ReaderError {
        ReaderError(.malformedJSON, file: file, line: line, column: Int(offset + Int64(index) - lineStart) + 1,
                    found: found, expected: expected)
    }

    func fatal(at index: Int, _ found: String, _ expected: String) -> ParseStop {
        .fatal(error(at: index, found, expected))
    }

    /// The window ran out: more input may come, or the value is cut short.
    func endOfInput(_ expected: String) -> ParseStop {
        isFinal ? fatal(at: end, "\(endName) inside a JSON value", "\(expected); the value is incomplete") : .needMore
    }

    mutating func note(_ kind: ReaderError.Kind = .malformedJSON, at index: Int, _ found: String, _ expected: String) {
        if problem == nil { problem = error(kind, at: index, found, expected) }
    }

    static func describe(_ byte: UInt8) -> String {
        switch byte {
        case 0x21...0x7E: return "'\(Character(Unicode.Scalar(byte)))'"
        default: return "byte 0x\(String(byte, radix: 16, uppercase: true).leftPadded(to: 2))"
        }
    }

    func unexpected(_ expected: String) -> ParseStop {
        fatal(at: i, "unexpected \(Self.describe(bytes[i]))", "expected \(expected)")
    }

    // MARK: Whitespace

    @inline(__always)
    mutating func skipWhitespace() {
        while i < end {
            let byte = bytes[i]
            if byte == ASCII.space || byte == ASCII.tab || byte == ASCII.carriageReturn {
                i += 1
            } else if byte == ASCII.lineFeed {
                i += 1
                line += 1
                lineStart = offset + Int64(i)
            } else {
                return
            }
        }
    }

    /// The next byte that is not whitespace, without consuming it.
    @inline(__always)
    mutating func peek(expecting expected: String) throws(ParseStop) -> UInt8 {
        skipWhitespace()
        guard i < end else { throw endOfInput("expected \(expected)") }
        return bytes[i]
    }

    // MARK: Objects with requested keys

    /// Reads the object at `i` (at its `{`), filling the slots of `node`'s key paths.
    mutating func readObject(node: Int, into values: inout [SourceValue], depth: Int) throws(ParseStop) {
        try enter(depth)
        i += 1
        var byte = try peek(expecting: "a key or '}'")
        if byte == ASCII.closeBrace { i += 1; return }
        var previous = tree.startGuessSlot(of: node)
        while true {
            guard byte == ASCII.quote else { throw unexpected("a key in double quotes") }
            let member = try readKey(in: node, guess: guesses[previous])
            guard try peek(expecting: "':'") == ASCII.colon else { throw unexpected("':' after the key") }
            i += 1
            _ = try peek(expecting: "a value")
            if member >= 0 {
                guesses[previous] = member
                previous = member
                try readMember(member, into: &values, depth: depth)
            } else {
                try skipValue(depth: depth + 1)
            }
            byte = try peek(expecting: "',' or '}'")
            if byte == ASCII.comma {
                i += 1
                byte = try peek(expecting: "a key")
                if byte == ASCII.closeBrace { throw fatal(at: i, "a trailing comma before '}'", "another key; JSON does not allow a comma before '}'") }
            } else if byte == ASCII.closeBrace {
                i += 1
                return
            } else {
                throw unexpected("',' or '}' after a value in an object")
            }
        }
    }

    /// Reads a key at its opening quote and returns the member of `node` it names, or -1.
    private mutating func readKey(in node: Int, guess: Int) throws(ParseStop) -> Int {
        let member: Int
        let start = i + 1
        let stop = ByteScanning.firstStringSpecial(in: bytes, from: start, to: end)
        if stop < end && bytes[stop] == ASCII.quote {
            i = stop + 1
            let key = UnsafeBufferPointer(start: bytes + start, count: stop - start)
            member = tree.member(of: node, named: key, guess: guess)
            if node == 0 && collectedKeys != nil { collect(String(decoding: key, as: UTF8.self)) }
        } else {
            try scanString(decoding: true)
            member = scratch.withUnsafeBufferPointer { tree.member(of: node, named: $0, guess: guess) }
            if node == 0 && collectedKeys != nil { collect(String(decoding: scratch, as: UTF8.self)) }
        }
        return member
    }

    private mutating func collect(_ key: String) {
        if collectedKeys?.contains(key) == false { collectedKeys?.append(key) }
    }

    /// Reads the value of a requested member (at its first byte).
    private mutating func readMember(_ index: Int, into values: inout [SourceValue], depth: Int) throws(ParseStop) {
        let member = tree.members[index]
        if member.child >= 0 {
            // A repeated key replaces what an earlier one put below it: the last one wins.
            for k in member.slotsBelow { values[tree.slotsBelow[k]] = .missing }
            if bytes[i] == ASCII.openBrace {
                if member.slot >= 0 { values[member.slot] = .object }
                try readObject(node: member.child, into: &values, depth: depth + 1)
                return
            }
            if bytes[i] == ASCII.openBracket {
                try readArrayOfObjects(member, into: &values, depth: depth + 1)
                return
            }
        }
        if member.slot >= 0 {
            values[member.slot] = try readValue(depth: depth + 1)
        } else {
            try skipValue(depth: depth + 1)
        }
    }

    /// Reads an array whose elements' keys were asked for (`lines.sku`): each path below the
    /// member gets an array with one value per element (`.missing` for an element that is not an object).
    private mutating func readArrayOfObjects(_ member: KeyTree.Member, into values: inout [SourceValue], depth: Int) throws(ParseStop) {
        try enter(depth)
        i += 1
        var columns = [[SourceValue]](repeating: [], count: member.slotsBelow.count)
        var whole: [SourceValue] = []
        var element = [SourceValue](repeating: .missing, count: values.count)
        var byte = try peek(expecting: "a value or ']'")
        if byte != ASCII.closeBracket {
            while true {
                if byte == ASCII.openBrace {
                    for k in member.slotsBelow { element[tree.slotsBelow[k]] = .missing }
                    try readObject(node: member.child, into: &element, depth: depth + 1)
                    for (n, k) in member.slotsBelow.enumerated() { columns[n].append(element[tree.slotsBelow[k]]) }
                    if member.slot >= 0 { whole.append(.object) }
                } else {
                    let value = try readValue(depth: depth + 1)
                    for n in columns.indices { columns[n].append(.missing) }
                    if member.slot >= 0 { whole.append(value) }
                }
                byte = try peek(expecting: "',' or ']'")
                if byte == ASCII.comma {
                    i += 1
                    byte = try peek(expecting: "a value")
                    if byte == ASCII.closeBracket { throw fatal(at: i, "a trailing comma before ']'", "another value; JSON does not allow a comma before ']'") }
                } else if byte == ASCII.closeBracket {
                    break
                } else {
                    throw unexpected("',' or ']' after a value in an array")
                }
            }
        }
        i += 1
        for (n, k) in member.slotsBelow.enumerated() { values[tree.slotsBelow[k]] = .array(columns[n]) }
        if member.slot >= 0 { values[member.slot] = .array(whole) }
    }

    // MARK: Values

    /// Reads the value at `i` (at its first byte) as a ``SourceValue``; an object is skipped and read as `.object`.
    mutating func readValue(depth: Int) throws(ParseStop) -> SourceValue {
        switch bytes[i] {
        case ASCII.quote:
            return .string(try readString())
        case ASCII.openBrace:
            try skipObject(depth: depth)
            return .object
        case ASCII.openBracket:
            try enter(depth)
            i += 1
            var elements: [SourceValue] = []
            var byte = try peek(expecting: "a value or ']'")
            if byte != ASCII.closeBracket {
                while true {
                    elements.append(try readValue(depth: depth + 1))
                    byte = try peek(expecting: "',' or ']'")
                    if byte == ASCII.comma {
                        i += 1
                        byte = try peek(expecting: "a value")
                        if byte == ASCII.closeBracket { throw fatal(at: i, "a trailing comma before ']'", "another value; JSON does not allow a comma before ']'") }
                    } else if byte == ASCII.closeBracket {
                        break
                    } else {
                        throw unexpected("',' or ']' after a value in an array")
                    }
                }
            }
            i += 1
            return .array(elements)
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case ASCII.minus, ASCII.zero...ASCII.nine:
            let start = i
            guard try scanNumber() else { return .missing }
            return .number(String(decoding: UnsafeBufferPointer(start: bytes + start, count: i - start), as: UTF8.self))
        default:
            throw unexpected("a JSON value")
        }
    }

    /// Skips the value at `i` (at its first byte), checking its grammar without building it.
    mutating func skipValue(depth: Int) throws(ParseStop) {
        switch bytes[i] {
        case ASCII.quote: try scanString(decoding: false)
        case ASCII.openBrace: try skipObject(depth: depth)
        case ASCII.openBracket:
            try enter(depth)
            i += 1
            var byte = try peek(expecting: "a value or ']'")
            if byte != ASCII.closeBracket {
                while true {
                    try skipValue(depth: depth + 1)
                    byte = try peek(expecting: "',' or ']'")
                    if byte == ASCII.comma {
                        i += 1
                        byte = try peek(expecting: "a value")
                        if byte == ASCII.closeBracket { throw fatal(at: i, "a trailing comma before ']'", "another value; JSON does not allow a comma before ']'") }
                    } else if byte == ASCII.closeBracket {
                        break
                    } else {
                        throw unexpected("',' or ']' after a value in an array")
                    }
                }
            }
            i += 1
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case ASCII.minus, ASCII.zero...ASCII.nine: _ = try scanNumber()
        default: throw unexpected("a JSON value")
        }
    }

    /// Skips the object at `i` (at its `{`).
    mutating func skipObject(depth: Int) throws(ParseStop) {
        try enter(depth)
        i += 1
        var byte = try peek(expecting: "a key or '}'")
        if byte == ASCII.closeBrace { i += 1; return }
        while true {
            guard byte == ASCII.quote else { throw unexpected("a key in double quotes") }
            try scanString(decoding: false)
            guard try peek(expecting: "':'") == ASCII.colon else { throw unexpected("':' after the key") }
            i += 1
            _ = try peek(expecting: "a value")
            try skipValue(depth: depth + 1)
            byte = try peek(expecting: "',' or '}'")
            if byte == ASCII.comma {
                i += 1
                byte = try peek(expecting: "a key")
                if byte == ASCII.closeBrace { throw fatal(at: i, "a trailing comma before '}'", "another key; JSON does not allow a comma before '}'") }
            } else if byte == ASCII.closeBrace {
                i += 1
                return
            } else {
                throw unexpected("',' or '}' after a value in an object")
            }
        }
    }

    @inline(__always)
    private func enter(_ depth: Int) throws(ParseStop) {
        if depth > Self.maximumDepth {
            throw fatal(at: i, "JSON nested more than \(Self.maximumDepth) levels deep", "flatter records")
        }
    }

    private mutating func literal(_ word: StaticString) throws(ParseStop) {
        let count = word.utf8CodeUnitCount
        let expected = word.utf8Start
        var k = 0
        while k < count {
            guard i + k < end else { throw endOfInput("expected '\(word)'") }
            guard bytes[i + k] == expected[k] else {
                i += k
                throw unexpected("'\(word)'")
            }
            k += 1
        }
        i += count
    }

    // MARK: Strings

    /// Reads the string at `i` (at its opening quote) with its escapes decoded.
    mutating func readString() throws(ParseStop) -> String {
        let start = i + 1
        let stop = ByteScanning.firstStringSpecial(in: bytes, from: start, to: end)
        if stop < end && bytes[stop] == ASCII.quote {
            i = stop + 1
            return String(decoding: UnsafeBufferPointer(start: bytes + start, count: stop - start), as: UTF8.self)
        }
        try scanString(decoding: true)
        return String(decoding: scratch, as: UTF8.self)
    }

    /// Moves past the string at `i` (at its opening quote), checking its escapes; when
    /// `decoding`, its content goes to `scratch`.
    mutating func scanString(decoding: Bool) throws(ParseStop) {
        if decoding { scratch.removeAll(keepingCapacity: true) }
        let open = i, openLine = line, openLineStart = lineStart   // raw line breaks inside move `line` on
        i += 1
        while true {
            let stop = ByteScanning.firstStringSpecial(in: bytes, from: i, to: end)
            if decoding { scratch.append(contentsOf: UnsafeBufferPointer(start: bytes + i, count: stop - i)) }
            i = stop
            guard i < end else {
                if isFinal {
                    throw .fatal(error(at: open, line: openLine, lineStart: openLineStart,
                                       "a string that does not end", "a closing '\"' before \(endName)"))
                }
                throw ParseStop.needMore
            }
            let byte = bytes[i]
            if byte == ASCII.quote {
                i += 1
                return
            }
            if byte == ASCII.backslash {
                try scanEscape(decoding: decoding)
            } else {
                // A raw control character: JSON wants it escaped. Keep it, and keep positions right.
                note(at: i, "a raw control character \(Self.describe(byte)) inside a string",
                     "control characters in strings must be escaped, as \\n, \\t or \\u00XX")
                if decoding { scratch.append(byte) }
                i += 1
                if byte == ASCII.lineFeed { line += 1; lineStart = offset + Int64(i) }
            }
        }
    }

    private mutating func scanEscape(decoding: Bool) throws(ParseStop) {
        let escape = i
        guard i + 1 < end else { throw endOfInput("an escape after '\\'") }
        let decoded: UInt8
        switch bytes[i + 1] {
        case ASCII.quote: decoded = ASCII.quote
        case ASCII.backslash: decoded = ASCII.backslash
        case UInt8(ascii: "/"): decoded = UInt8(ascii: "/")
        case UInt8(ascii: "b"): decoded = 0x08
        case UInt8(ascii: "f"): decoded = 0x0C
        case UInt8(ascii: "n"): decoded = ASCII.lineFeed
        case UInt8(ascii: "r"): decoded = ASCII.carriageReturn
        case UInt8(ascii: "t"): decoded = ASCII.tab
        case UInt8(ascii: "u"):
            let scalar = try scanUnicodeEscape()
            if decoding { appendUTF8(scalar) }
            return
        default:
            note(at: escape, "an invalid escape \\\(Self.describe(bytes[i + 1]).trimmingQuotes)",
                 "one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX; write a backslash as \\\\")
            i += 1   // the backslash; what follows is read as text
            return
        }
        if decoding { scratch.append(decoded) }
        i += 2
    }

    /// Reads `\uXXXX` at `i`, with the low half of a surrogate pair when one follows; a lone
    /// surrogate or a bad hex digit is noted and read as U+FFFD.
    private mutating func scanUnicodeEscape() throws(ParseStop) -> UInt32 {
        let escape = i
        guard let high = try hex4(at: i + 2) else {
            note(at: escape, "an invalid \\u escape", "\\u followed by four hex digits")
            i += 2
            return 0xFFFD
        }
        i += 6
        if high < 0xD800 || high > 0xDFFF { return high }
        if high >= 0xDC00 {
            note(at: escape, "an unpaired UTF-16 surrogate \\u\(String(high, radix: 16, uppercase: true))",
                 "a low surrogate (\\uDC00-\\uDFFF) only after a high one (\\uD800-\\uDBFF)")
            return 0xFFFD
        }
        // A high surrogate must be followed by a low one: \uD83D\uDE00 is one character.
        if i + 1 >= end && !isFinal { throw .needMore }
        if i + 1 < end && bytes[i] == ASCII.backslash && bytes[i + 1] == UInt8(ascii: "u"), let low = try hex4(at: i + 2), (0xDC00...0xDFFF).contains(low) {
            i += 6
            return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
        }
        note(at: escape, "an unpaired UTF-16 surrogate \\u\(String(high, radix: 16, uppercase: true))",
             "a high surrogate (\\uD800-\\uDBFF) followed by a low one (\\uDC00-\\uDFFF)")
        return 0xFFFD
    }

    /// The value of four hex digits at `index`, or nil when they are not hex digits.
    private func hex4(at index: Int) throws(ParseStop) -> UInt32? {
        var value: UInt32 = 0
        for k in 0..<4 {
            guard index + k < end else {
                if isFinal { return nil }
                throw ParseStop.needMore
            }
            let byte = bytes[index + k]
            let digit: UInt8
            switch byte {
            case ASCII.zero...ASCII.nine: digit = byte - ASCII.zero
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    // MARK: Numbers

    /// Moves past the number at `i`, checking it against the grammar
    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; a malformed number is noted
    /// and skipped (returning false).
    private mutating func scanNumber() throws(ParseStop) -> Bool {
        let start = i
        var valid = true
        if bytes[i] == ASCII.minus { i += 1 }
        if i < end && bytes[i] == ASCII.zero {
            i += 1
        } else if digits() == 0 {
            valid = false
        }
        if valid && i < end && bytes[i] == ASCII.dot {
            i += 1
            if digits() == 0 { valid = false }
        }
        if valid && i < end && (bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E")) {
            i += 1
            if i < end && (bytes[i] == ASCII.plus || bytes[i] == ASCII.minus) { i += 1 }
            if digits() == 0 { valid = false }
        }
        // Whatever number-like text follows belongs to this (then malformed) number: 01, 1.2.3, 1e.
        while i < end && Self.isNumberByte(bytes[i]) {
            valid = false
            i += 1
        }
        if i == end && !isFinal { throw .needMore }
        if !valid {
            let text = String(decoding: UnsafeBufferPointer(start: bytes + start, count: i - start), as: UTF8.self)
            note(at: start, "a malformed number \(text)",
                 "a JSON number such as 12, -0.5 or 1.5e3: no leading zeros, '+', or bare '.'")
        }
        return valid
    }

    @inline(__always)
    private mutating func digits() -> Int {
        let start = i
        while i < end && bytes[i] >= ASCII.zero && bytes[i] <= ASCII.nine { i += 1 }
        return i - start
    }

    @inline(__always)
    private static func isNumberByte(_ byte: UInt8) -> Bool {
        (byte >= ASCII.zero && byte <= ASCII.nine) || byte == ASCII.dot || byte == ASCII.minus || byte == ASCII.plus
            || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }

    /// `'x'` without its quotes.
    fileprivate var trimmingQuotes: String {
        hasPrefix("'") && hasSuffix("'") && count >= 3 ? String(dropFirst().dropLast()) : self
    }
}
