import Foundation

/// The types Core Data gives its own metadata keys, and the refusal of a store whose metadata
/// holds one of them as another type: such metadata was written by hand or by another tool,
/// and read as it is it would be taken for absent (no version hashes: nothing compared; an
/// identifier Z_UUID overrides), so the store would be read, converted and written into
/// without a word.
extension StoreMetadata {
    /// Each key the stack reads or writes, with the type Core Data keeps it as.
    static let keyTypes: [(key: String, type: ValueType)] = [
        (Key.storeType, .string), (Key.storeUUID, .string), (Key.versionHashes, .dictionaryOfData),
        (Key.versionHashesVersion, .integer), (Key.versionHashesDigest, .string), (Key.versionIdentifiers, .array),
        (Key.frameworkVersion, .integer), (Key.autoVacuumLevel, .string), (Key.ladeVersionHashKind, .string),
    ]

    enum ValueType {
        case string, integer, array, dictionaryOfData

        var name: String {
            switch self {
            case .string: "a string"
            case .integer: "an integer"
            case .array: "an array"
            case .dictionaryOfData: "a dictionary of data (entity name to version hash)"
            }
        }

        func holds(_ value: PropertyListValue) -> Bool {
            switch (self, value) {
            case (.string, .string), (.integer, .integer), (.array, .array), (.dictionaryOfData, .dictionary): true
            default: false
            }
        }
    }

    /// The first of the stack's keys `metadata` holds as another type than Core Data's, said as
    /// "KEY as FOUND, where Core Data keeps EXPECTED"; nil when every one has its type.
    package static func mistypedKey(in metadata: [String: PropertyListValue]) -> String? {
        for (key, type) in keyTypes {
            guard let value = metadata[key] else { continue }
            guard type.holds(value) else {
                return "\(key) as \(typeName(of: value)), where Core Data keeps \(type.name)"
            }
            if type == .dictionaryOfData, case .dictionary(let hashes) = value {
                for name in hashes.keys.sorted() {
                    if case .data = hashes[name]! { continue }
                    return "\(key)[\"\(name)\"] as \(typeName(of: hashes[name]!)), where Core Data keeps data (a version hash)"
                }
            }
        }
        return nil
    }

    /// Refuses metadata `mistypedKey(in:)` finds a key of the wrong type in; `place` says where
    /// the metadata was read (`Z_METADATA.Z_PLIST`, the file's metadata).
    package static func checkTypes(_ metadata: [String: PropertyListValue], path: String, place: String) throws {
        guard let problem = mistypedKey(in: metadata) else { return }
        throw StoreError(.notAStore, path: path,
                         "the store's metadata (\(place)) holds \(problem): it is damaged (written by hand or by another tool), and the store is not read with it; restore the store from a backup")
    }

    /// What a property list value is, in words.
    package static func typeName(of value: PropertyListValue) -> String { value.typeName }
}
