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
        public var description: String { "'\(argument)': \(reason)" }
    }

    /// The store's metadata, or only `keys` (all must be there, or `MissingKeys` is thrown).
    public static func values(at url: URL, keys: [String] = []) throws -> [String: PropertyListValue] {
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
        guard !keys.isEmpty else { return metadata }
        let missing = keys.filter { metadata[$0] == nil }
        guard missing.isEmpty else { throw MissingKeys(store: url.path, keys: missing) }
        return metadata.filter { keys.contains($0.key) }
    }

    /// Sets keys to values, leaving every other key as it was. `NSStoreType` and `NSStoreUUID`
    /// are refused (the store is not written).
    public static func set(_ values: [String: PropertyListValue], at url: URL) throws {
        try refuseReserved(Array(values.keys), at: url, action: "set")
        try withLock(url) {
            var metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
            metadata.merge(values) { _, new in new }
            try PersistentStoreCoordinator.setMetadata(metadata, at: url)
        }
    }

    /// Removes keys; a key the metadata lacks is refused (`MissingKeys`, nothing written), as
    /// are `NSStoreType` and `NSStoreUUID`.
    public static func delete(_ keys: [String], at url: URL) throws {
        try refuseReserved(keys, at: url, action: "removed")
        try withLock(url) {
            var metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
            let missing = keys.filter { metadata[$0] == nil }
            guard missing.isEmpty else { throw MissingKeys(store: url.path, keys: missing) }
            for key in keys { metadata[key] = nil }
            try PersistentStoreCoordinator.setMetadata(metadata, at: url)
        }
    }

    /// Parses `KEY=VALUE`: the value as a string, or with `json` as JSON (integers, reals,
    /// true/false, strings, arrays and objects; null is refused: delete the key instead).
    public static func assignment(_ argument: String, json: Bool) throws -> (key: String, value: PropertyListValue) {
        guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
            throw AssignmentError(argument: argument, reason: "give KEY=VALUE")
        }
        let key = String(argument[..<equals])
        let text = String(argument[argument.index(after: equals)...])
        guard json else { return (key, .string(text)) }
        do {
            let value = try JSONDecoder().decode(JSONMetadataValue.self, from: Data(text.utf8))
            return (key, value.value)
        } catch let error as AssignmentError {
            throw AssignmentError(argument: argument, reason: error.reason)
        } catch {
            throw AssignmentError(argument: argument, reason: "the value is not JSON (write a string as \"\\\"text\\\"\", or leave out --json-values)")
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
            .reservedMetadataKey, path: url.path,
            "\(key) belongs to the stack and cannot be \(action) (it is \(current[key].map { StoreReport.describe($0) } ?? "absent")); change only other keys")
    }

    private static func withLock(_ url: URL, _ body: () throws -> Void) throws {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError(.notFound, path: url.path, "no store here; check the path")
        }
        let lock = try StoreLock(store: url)
        defer { lock.release() }
        try body()
    }
}

/// A JSON value as metadata: numbers that are whole are integers, others reals.
private struct JSONMetadataValue: Decodable {
    let value: PropertyListValue

    init(from decoder: Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var items: [PropertyListValue] = []
            while !array.isAtEnd { items.append(try array.decode(JSONMetadataValue.self).value) }
            value = .array(items)
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            var items: [String: PropertyListValue] = [:]
            for key in object.allKeys { items[key.stringValue] = try object.decode(JSONMetadataValue.self, forKey: key).value }
            value = .dictionary(items)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            throw StoreMetadataEditor.AssignmentError(argument: "", reason: "null is not a metadata value; use lade meta delete to remove a key")
        } else if let flag = try? single.decode(Bool.self) {
            value = .bool(flag)
        } else if let number = try? single.decode(Int64.self) {
            value = .integer(number)
        } else if let number = try? single.decode(Double.self) {
            value = .real(number)
        } else {
            value = .string(try single.decode(String.self))
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
