import Foundation
import Lade

/// A store's metadata and, per entity, the number of objects whose entity is exactly that one
/// (`lade inspect STORE --model MODEL`).
public struct StoreReport {
    public struct EntityCount: Sendable, Equatable {
        public let name: String
        public let count: Int
    }

    public let path: String
    public let storeType: String
    public let metadata: [String: PropertyListValue]
    public let entities: [EntityCount]
    /// Which version of the model wrote the store, when that was asked (see `StoreVersionMatch`).
    public var versionMatch: StoreVersionMatch?
    /// What the quick damage check found (rows of no entity, keys and links to missing
    /// objects): objects the counts above leave out; `lade check` tells everything.
    public var damage: [StoreDamage] = []
    /// Where the model the store was read with came from, when it is not a file the user
    /// named: `Z_MODELCACHE`, the store's own.
    public var modelOrigin: String?

    /// Reads a store of any type read-only (the type is detected from the file; the file, and
    /// a SQLite store's `-wal`, are left as they were), counting each entity's objects through
    /// the store: SQL for SQLite, the loaded objects for XML and binary stores.
    public init(storeAt url: URL, model: ManagedObjectModel) throws {
        let store = try ReadOnlyStore.open(url, model: model)
        path = StoreLocation.displayName(of: url)
        storeType = store.type
        metadata = store.metadata
        // Every type lists entities in the SQLite schema's order (each hierarchy together).
        let names = TableLayout(model: model).entities.map(\.name)
        entities = try names.map {
            EntityCount(name: $0, count: try store.count(StoreFetchRequest(entityName: $0, includesSubentities: false)))
        }
        damage = try store.damage(thorough: false)
    }

    /// `lade inspect STORE` with no model: the report of the store at `url`, read with the
    /// model it carries (`ManagedObjectModel(carriedByStoreAt:)`).
    public static func reading(storeAt url: URL) throws -> StoreReport {
        var report = try StoreReport(storeAt: url, model: try ManagedObjectModel(carriedByStoreAt: url))
        report.modelOrigin = "Z_MODELCACHE"
        return report
    }

    /// A store no version of the model matches: its metadata (read without a stack) and the
    /// match, no counts.
    package init(unmatchedStoreAt url: URL, match: StoreVersionMatch) throws {
        path = StoreLocation.displayName(of: url)
        metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
        storeType = metadata[StoreMetadata.Key.storeType]?.stringValue ?? "unknown"
        entities = []
        versionMatch = match
    }

    /// `lade inspect STORE --model MODEL`: the report of the store at `url`, read with the
    /// version of `model` that wrote it. `version` names the version to read with; without it,
    /// a model of one version is used as it is (the store's open check says whether it
    /// matches), and in a bundle of several the store's own word decides which
    /// (`StoreVersionMatch`: Apple's hashes with `compiledModel`, Lade's, else the tables and
    /// columns). A store no version matches gives its metadata and the match, no counts, and
    /// `mismatchError(path:)` says why. `onWarning` hears what the model reader accepted only
    /// as Apple's model compiler does.
    ///
    /// ```swift
    /// let report = try StoreReport.reading(storeAt: storeURL, modelAt: bundleURL)
    /// report.versionMatch?.version   // the version that wrote the store
    /// if let error = report.mismatchError() { throw error }
    /// ```
    public static func reading(storeAt url: URL, modelAt model: URL, version: String? = nil, compiledModel: URL? = nil,
                               onWarning: ((String) -> Void)? = nil) throws -> StoreReport {
        func load(_ version: String?) throws -> ManagedObjectModel {
            let loaded = try ManagedObjectModel(contentsOf: model, version: version, compiledModel: compiledModel)
            for warning in loaded.warnings { onWarning?(warning.description) }
            return loaded
        }
        if version != nil { return try StoreReport(storeAt: url, model: try load(version)) }
        // A single version: the store is read with it, without reading the store once more to decide.
        let versions = try ManagedObjectModel.versions(at: model)
        if versions.names.count == 1 {
            var report = try StoreReport(storeAt: url, model: try load(nil))
            report.versionMatch = StoreVersionMatch(only: versions.names[0])
            return report
        }
        // Which version wrote the store decides the model it is read with.
        let match = try StoreVersionMatch(storeAt: url, bundle: model, compiledModel: compiledModel)
        guard let found = match.version else { return try StoreReport(unmatchedStoreAt: url, match: match) }
        var report = try StoreReport(storeAt: url, model: try load(found))
        report.versionMatch = match
        return report
    }

    /// For a store no version of the model matches (`reading(storeAt:modelAt:)`), the failure
    /// that follows its report, naming `path` (default: the report's); nil otherwise.
    package func mismatchError(path: String? = nil) -> StoreError? {
        guard let match = versionMatch, match.version == nil else { return nil }
        var error = StoreError(.modelMismatch(entities: match.closest?.differingEntities ?? []), path: path ?? self.path, match.mismatchDescription)
        error.storeCarriesOtherModel = match.closest?.storeCarriesOtherModel ?? false
        return error
    }

    public func text() -> String {
        var out = ["Store \(path)", "Type: \(storeType)"]
        if modelOrigin != nil { out.append("Model: the store's own (its model cache, Z_MODELCACHE)") }
        if let match = versionMatch {
            if let version = match.version {
                let state = if let current = match.current {
                    match.needsMigration ? "the current version is \(current): migration needed" : "current"
                } else {
                    "the bundle names no current version: it has no .xccurrentversion"
                }
                out.append("Model version: \(version) (\(state))")
                if match.matching.count > 1 { out.append("  (the versions \(match.matching.joined(separator: ", ")) imply the same layout)") }
            } else {
                out.append("Model version: none matches: \(match.mismatchDescription)")
            }
        }
        out.append("Metadata:")
        for key in metadata.keys.sorted() {
            out.append("  \(key) = \(Self.describe(metadata[key]!))")
        }
        out.append("Objects (entity exactly; subentities under their own names):")
        // As wide as the longest name, and as "total".
        let width = max(entities.map(\.name.count).max() ?? 0, "total".count)
        for entity in entities {
            out.append("  " + entity.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  \(entity.count)")
        }
        out.append("  " + "total".padding(toLength: width, withPad: " ", startingAt: 0) + "  \(entities.reduce(0) { $0 + $1.count })")
        if !damage.isEmpty {
            out.append("Damage (not in the counts above; lade check \(path) --model MODEL tells everything):")
            for item in damage { out.append("  \(item)") }
        }
        return out.joined(separator: "\n") + "\n"
    }

    public func json() throws -> String {
        var object: [String: Any] = [
            "store": path,
            "type": storeType,
            "metadata": metadata.mapValues(Self.jsonValue),
            "entities": entities.map { ["name": $0.name, "count": $0.count] as [String: Any] },
        ]
        if let modelOrigin { object["model"] = modelOrigin }
        if !damage.isEmpty {
            // StoreDamage's own Codable form, as lade check --json writes it.
            object["damage"] = try JSONSerialization.jsonObject(with: JSONEncoder().encode(damage))
        }
        if let match = versionMatch {
            object["modelVersion"] = match.version ?? NSNull()
            object["currentModelVersion"] = match.current ?? NSNull()
            // Unknown (null) when the bundle names no current version to migrate to.
            object["migrationNeeded"] = match.current == nil ? NSNull() : match.needsMigration
            object["matchingModelVersions"] = match.matching
            if let closest = match.closest {
                object["closestModelVersion"] = ["version": closest.version, "differingEntities": closest.differingEntities, "detail": closest.detail] as [String: Any]
            }
        }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    /// Metadata as JSON: data as base64 strings, dates as ISO 8601.
    static func jsonValue(_ value: PropertyListValue) -> Any {
        switch value {
        case .string(let text): text
        case .integer(let number): number
        case .real(let number): number
        case .bool(let flag): flag
        case .date(let date): ISO8601DateFormatter().string(from: date)
        case .data(let data): data.base64EncodedString()
        case .array(let items): items.map(jsonValue)
        case .dictionary(let items): items.mapValues(jsonValue)
        }
    }

    static func describe(_ value: PropertyListValue) -> String {
        switch value {
        case .string(let text): "\"\(text)\""
        case .data(let data): "<\(data.count) bytes: \(data.base64EncodedString())>"
        case .array(let items): "(" + items.map(describe).joined(separator: ", ") + ")"
        case .dictionary(let items): "{" + items.keys.sorted().map { "\($0): \(describe(items[$0]!))" }.joined(separator: "; ") + "}"
        default: "\(jsonValue(value))"
        }
    }
}
