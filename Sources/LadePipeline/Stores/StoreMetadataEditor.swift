import Foundation
import Lade

/// `lade meta`: read, set and delete a store file's metadata keys without a model or a stack
/// (`PersistentStoreCoordinator.metadataForPersistentStore(ofType:at:)` and
/// `setMetadata(_:forPersistentStoreOfType:at:)`: only the metadata is read or written, for
/// SQLite, XML and binary stores alike). Writes take the store's lock (`StoreLock`), so they
/// never interleave with a `lade run` or `lade seed`.
///
/// ```swift
/// try StoreMetadataEditor.set(["importedBy": .string("nightly")], at: url)
/// try StoreMetadataEditor.values(at: url, keys: ["importedBy"])   // ["importedBy": .string("nightly")]
/// try StoreMetadataEditor.delete(["importedBy"], at: url)
/// ```
public enum StoreMetadataEditor {
    /// Keys asked for that the metadata does not have.
    public struct MissingKeys: Error, Sendable, CustomStringConvertible {
        public let store: String
        public let keys: [String]
        public var description: String {
            "\(store): the metadata has no key\(keys.count == 1 ? "" : "s") \(keys.map { "'\($0)'" }.joined(separator: ", ")); lade meta get \(store) lists its keys"
        }
    }

    /// A `KEY=VALUE` argument that cannot be used.
    public struct AssignmentError: Error, Sendable, CustomStringConvertible {
        public let argument: String
        public let reason: String
        public var description: String {
            // A long argument (a deep or large JSON value) is shown by its start only.
            let shown = argument.count > 80 ? argument.prefix(77) + "…" : Substring(argument)
            return "'\(shown)': \(reason)"
        }
    }

    /// The store's metadata, or only `keys` (all must be there, or `MissingKeys` is thrown).
    public static func values(at url: URL, keys: [String] = []) throws -> [String: PropertyListValue] {
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
        guard !keys.isEmpty else { return metadata }
        let missing = keys.filter { metadata[$0] == nil }
        guard missing.isEmpty else { throw MissingKeys(store: StoreLocation.displayName(of: url), keys: missing) }
        return metadata.filter { keys.contains($0.key) }
    }

    /// Sets keys to values, leaving every other key as it was. `NSStoreType` and `NSStoreUUID`
    /// are refused (the store is not written).
    public static func set(_ values: [String: PropertyListValue], at url: URL) throws {
        try refuseReserved(Array(values.keys), at: url, action: "set")
        try StoreLock.whileHeld(store: url) {
            var metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
            metadata.merge(values) { _, new in new }
            try PersistentStoreCoordinator.setMetadata(metadata, at: url)
        }
    }

    /// Removes keys; a key the metadata lacks is refused (`MissingKeys`, nothing written), as
    /// are `NSStoreType` and `NSStoreUUID`.
    public static func delete(_ keys: [String], at url: URL) throws {
        try refuseReserved(keys, at: url, action: "removed")
        try StoreLock.whileHeld(store: url) {
            var metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
            let missing = keys.filter { metadata[$0] == nil }
            guard missing.isEmpty else { throw MissingKeys(store: StoreLocation.displayName(of: url), keys: missing) }
            for key in keys { metadata[key] = nil }
            try PersistentStoreCoordinator.setMetadata(metadata, at: url)
        }
    }

    /// Parses `KEY=VALUE`: the value as a string, or with `json` as JSON (integers, reals,
    /// true/false, strings, arrays and objects). JSON a property list cannot hold is refused
    /// saying so, apart from text that is not JSON: null (delete the key instead; inside a value,
    /// named by its path, `KEY.a[1]`), and nesting deeper than metadata is read back.
    public static func assignment(_ argument: String, json: Bool) throws -> (key: String, value: PropertyListValue) {
        guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
            throw AssignmentError(argument: argument, reason: "give KEY=VALUE")
        }
        let key = String(argument[..<equals])
        let text = String(argument[argument.index(after: equals)...])
        guard json else { return (key, .string(text)) }
        do {
            return (key, try JSONMetadataReader.value(text, key: key))
        } catch let error as JSONMetadataReader.Failure {
            guard !error.isJSON else { throw AssignmentError(argument: argument, reason: error.reason) }
            throw AssignmentError(argument: argument, reason: "the value is not JSON: \(error.reason) (write a string as \"text\" in quotes, or leave out --json-values)")
        }
    }

    /// Metadata as `KEY = value` lines, sorted by key (values as `lade inspect` shows them:
    /// strings quoted, data as its size and base64, dates ISO 8601).
    public static func text(_ metadata: [String: PropertyListValue]) -> String {
        metadata.keys.sorted().map { "\($0) = \(StoreReport.describe(metadata[$0]!))\n" }.joined()
    }

    /// Metadata as one JSON object, keys sorted (data as base64, dates ISO 8601).
    public static func json(_ metadata: [String: PropertyListValue]) throws -> String {
        let data = try JSONSerialization.data(
            withJSONObject: metadata.mapValues(StoreReport.jsonValue), options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    private static func refuseReserved(_ keys: [String], at url: URL, action: String) throws {
        guard let key = keys.sorted().first(where: StoreMetadata.reservedKeys.contains) else { return }
        // Read it first, so a missing or foreign file is reported as such.
        let current = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
        throw StoreError(
            .reservedMetadataKey, path: StoreLocation.displayName(of: url),
            "\(key) belongs to the stack and cannot be \(action) (it is \(current[key].map { StoreReport.describe($0) } ?? "absent")); change only other keys")
    }

}

/// A JSON text as a metadata value: numbers written with a fraction or an exponent (`1.0`,
/// `2e3`) are reals, others integers (reals when beyond 64 bits). Foundation's decoders do not
/// tell `1.0` from `1`, hence this small reader.
struct JSONMetadataReader {
    struct Failure: Error {
        let reason: String
        /// The text is JSON, but a value a property list cannot hold (null, nesting too deep).
        var isJSON = false
    }

    /// One step from the metadata key down to a value: a key of an object, or a place in an array.
    private enum Step {
        case key(String)
        case index(Int)
    }

    private let bytes: [UInt8]
    private var index = 0
    /// The metadata key the value goes under, and the steps from it to the value being read.
    private let key: String
    private var steps: [Step] = []

    static func value(_ text: String, key: String = "value") throws -> PropertyListValue {
        var reader = JSONMetadataReader(bytes: Array(text.utf8), key: key)
        // The metadata dictionary the value goes into is the first level.
        let value = try reader.value(depth: 1)
        reader.skipSpace()
        guard reader.index == reader.bytes.count else { throw Failure(reason: "text after the value at byte \(reader.index + 1)") }
        return value
    }

    private init(bytes: [UInt8], key: String) {
        self.bytes = bytes
        self.key = key
    }

    /// Where the value being read is, as JavaScript names it: `KEY.name[1]`, `KEY["a b"]`.
    private var path: String {
        steps.reduce(key) { path, step in
            switch step {
            case .index(let position): return path + "[\(position)]"
            case .key(let name):
                let isIdentifier = name.first.map { $0 == "_" || $0.isLetter } == true && name.allSatisfy { $0 == "_" || $0.isLetter || $0.isNumber }
                guard !isIdentifier else { return path + "." + name }
                let quoted = (try? JSONSerialization.data(withJSONObject: name, options: [.fragmentsAllowed, .withoutEscapingSlashes]))
                    .map { String(decoding: $0, as: UTF8.self) } ?? "\"\(name)\""
                return path + "[" + quoted + "]"
            }
        }
    }

    private mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private mutating func expect(_ word: String) throws {
        let utf8 = Array(word.utf8)
        guard bytes.count - index >= utf8.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
            throw Failure(reason: "not JSON at byte \(index + 1)")
        }
        index += utf8.count
    }

    /// `depth`: the arrays and objects around this value. Nothing deeper than metadata can hold
    /// (``PropertyListValue/maximumDepth``) is read, so nothing is written that cannot be read back.
    private mutating func value(depth: Int) throws -> PropertyListValue {
        skipSpace()
        guard index < bytes.count else { throw Failure(reason: "no value") }
        if bytes[index] == UInt8(ascii: "{") || bytes[index] == UInt8(ascii: "["), depth >= PropertyListValue.maximumDepth {
            throw Failure(reason: "arrays and objects nest deeper than \(PropertyListValue.maximumDepth - 1) levels at byte \(index + 1); metadata holds at most \(PropertyListValue.maximumDepth), its own dictionary included", isJSON: true)
        }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var items: [String: PropertyListValue] = [:]
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .dictionary(items) }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Failure(reason: "expected a key at byte \(index + 1)") }
                let key = try string()
                skipSpace()
                try expect(":")
                steps.append(.key(key))
                items[key] = try value(depth: depth + 1)
                steps.removeLast()
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                try expect("}")
                return .dictionary(items)
            }
        case UInt8(ascii: "["):
            index += 1
            var items: [PropertyListValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            while true {
                steps.append(.index(items.count))
                items.append(try value(depth: depth + 1))
                steps.removeLast()
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                try expect("]")
                return .array(items)
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            guard !steps.isEmpty else {
                throw Failure(reason: "null is not a metadata value (a property list has no null); use lade meta delete to remove a key", isJSON: true)
            }
            throw Failure(reason: "null at \(path) cannot be stored: the store's metadata is a property list, which has no null; leave that element out, or give it a value", isJSON: true)
        default:
            let start = index
            while index < bytes.count, "+-0123456789.eE".utf8.contains(bytes[index]) { index += 1 }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            let isReal = text.contains { $0 == "." || $0 == "e" || $0 == "E" }
            if !isReal, let number = Int64(text) { return .integer(number) }
            if let number = Double(text), number.isFinite, text.first != "+", text.first != "." { return .real(number) }
            throw Failure(reason: "not JSON at byte \(start + 1)")
        }
    }

    private mutating func string() throws -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush() { scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars); raw.removeAll() }
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                let simple: [UInt8: UInt8] = [0x22: 0x22, 0x5C: 0x5C, 0x2F: 0x2F, 0x62: 0x08, 0x66: 0x0C, 0x6E: 0x0A, 0x72: 0x0D, 0x74: 0x09]
                if let replacement = simple[escape] {
                    raw.append(replacement)
                } else if escape == UInt8(ascii: "u") {
                    let at = index - 1
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count, bytes[index] == 0x5C, bytes[index + 1] == UInt8(ascii: "u") {
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else {
                            throw Failure(reason: "a \\u escape at byte \(at) starts a surrogate pair that the next escape does not end")
                        }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    // An unpaired surrogate is no character: refused, not replaced.
                    guard let scalar = Unicode.Scalar(code) else {
                        throw Failure(reason: "the \\u escape at byte \(at) is half of a surrogate pair")
                    }
                    flush()
                    scalars.append(scalar)
                } else {
                    throw Failure(reason: "a bad escape in a string at byte \(index)")
                }
            default:
                raw.append(byte)
            }
        }
        throw Failure(reason: "a string without its closing quote")
    }

    private mutating func hex4() throws -> UInt32 {
        guard index + 4 <= bytes.count, let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
            throw Failure(reason: "a bad \\u escape at byte \(index)")
        }
        index += 4
        return code
    }
}
