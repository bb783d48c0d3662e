import Foundation

/// A JSON value as `lade export` writes it, numbers kept as their text and an object's keys in
/// their order, so a test can hold an export to what docs/export-format.md promises.
indirect enum ExportJSON: Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([ExportJSON])
    case object(keys: [String], values: [String: ExportJSON])

    subscript(key: String) -> ExportJSON? {
        if case .object(_, let values) = self { return values[key] }
        return nil
    }

    var keys: [String] {
        if case .object(let keys, _) = self { return keys }
        return []
    }

    var text: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// Numbers compared by value where their texts differ (`1e2` and `100.0`), everything else as it is.
    func sameValue(as other: ExportJSON) -> Bool {
        switch (self, other) {
        case (.number(let a), .number(let b)):
            if a == b { return true }
            if let x = Int64(a), let y = Int64(b) { return x == y }
            if let x = Double(a), let y = Double(b) { return x == y }
            return false
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.sameValue(as: $1) }
        case (.object(let ak, let av), .object(let bk, let bv)):
            return ak == bk && ak.allSatisfy { av[$0]!.sameValue(as: bv[$0]!) }
        default:
            return self == other
        }
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .number(let text): text
        case .string(let text): SourceText.json(text)
        case .array(let members): "[" + members.map(\.description).joined(separator: ",") + "]"
        case .object(let keys, let values): "{" + keys.map { SourceText.json($0) + ":" + values[$0]!.description }.joined(separator: ",") + "}"
        }
    }

    /// Parses one JSON text.
    static func parse(_ text: String) throws -> ExportJSON {
        var parser = Parser(bytes: Array(text.utf8))
        let value = try parser.value()
        parser.skipSpace()
        guard parser.at == parser.bytes.count else { throw parser.error("text after the value") }
        return value
    }

    /// The objects of one NDJSON file of `lade export`, in file order.
    static func lines(of url: URL) throws -> [ExportJSON] {
        let text = try String(contentsOf: url, encoding: .utf8)
        return try text.split(separator: "\n", omittingEmptySubsequences: true).map { try parse(String($0)) }
    }

    private struct Parser {
        let bytes: [UInt8]
        var at = 0

        func error(_ what: String) -> StoreReadingError { StoreReadingError("JSON: \(what) at byte \(at)") }

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[at]) { at += 1 }
        }

        mutating func literal(_ word: String, _ value: ExportJSON) throws -> ExportJSON {
            let expected = Array(word.utf8)
            guard bytes.count - at >= expected.count, Array(bytes[at..<at + expected.count]) == expected else { throw error("not \(word)") }
            at += expected.count
            return value
        }

        mutating func value() throws -> ExportJSON {
            skipSpace()
            guard at < bytes.count else { throw error("end of text") }
            switch bytes[at] {
            case UInt8(ascii: "{"):
                at += 1
                var keys: [String] = [], values: [String: ExportJSON] = [:]
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(keys: [], values: [:]) }
                while true {
                    skipSpace()
                    guard case .string(let key) = try value() else { throw error("a key that is not a string") }
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw error("no ':'") }
                    at += 1
                    guard values.updateValue(try value(), forKey: key) == nil else { throw error("the key \(key) twice") }
                    keys.append(key)
                    skipSpace()
                    guard at < bytes.count else { throw error("end of text in an object") }
                    at += 1
                    if bytes[at - 1] == UInt8(ascii: "}") { return .object(keys: keys, values: values) }
                    guard bytes[at - 1] == UInt8(ascii: ",") else { throw error("no ',' in an object") }
                }
            case UInt8(ascii: "["):
                at += 1
                var members: [ExportJSON] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array([]) }
                while true {
                    members.append(try value())
                    skipSpace()
                    guard at < bytes.count else { throw error("end of text in an array") }
                    at += 1
                    if bytes[at - 1] == UInt8(ascii: "]") { return .array(members) }
                    guard bytes[at - 1] == UInt8(ascii: ",") else { throw error("no ',' in an array") }
                }
            case UInt8(ascii: "\""):
                at += 1
                var out: [UInt8] = []
                while true {
                    guard at < bytes.count else { throw error("end of text in a string") }
                    let byte = bytes[at]
                    at += 1
                    if byte == UInt8(ascii: "\"") { break }
                    guard byte == UInt8(ascii: "\\") else { out.append(byte); continue }
                    guard at < bytes.count else { throw error("end of text in an escape") }
                    let escape = bytes[at]
                    at += 1
                    switch escape {
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard bytes.count - at >= 6, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else { throw error("a lone surrogate") }
                            at += 2
                            let low = try hex4()
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw error("a bad \\u escape") }
                        out.append(contentsOf: Array(String(Character(unicode)).utf8))
                    default: out.append(escape)
                    }
                }
                return .string(String(decoding: out, as: UTF8.self))
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default:
                let start = at
                while at < bytes.count, "-+.eE0123456789".utf8.contains(bytes[at]) { at += 1 }
                guard at > start else { throw error("an unexpected byte \(bytes[at])") }
                return .number(String(decoding: bytes[start..<at], as: UTF8.self))
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard bytes.count - at >= 4, let value = UInt32(String(decoding: bytes[at..<at + 4], as: UTF8.self), radix: 16) else { throw error("a bad \\u escape") }
            at += 4
            return value
        }
    }
}

/// `x-coredata://UUID/Entity/pN`, split.
struct ObjectURI: Hashable, CustomStringConvertible {
    var store: String
    var entity: String
    var primaryKey: Int64

    init?(_ text: String) {
        guard text.hasPrefix("x-coredata://") else { return nil }
        let parts = text.dropFirst("x-coredata://".count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].hasPrefix("p"), let key = Int64(parts[2].dropFirst()) else { return nil }
        store = String(parts[0]); entity = String(parts[1]); primaryKey = key
    }

    var description: String { "\(entity)/p\(primaryKey)" }
}
