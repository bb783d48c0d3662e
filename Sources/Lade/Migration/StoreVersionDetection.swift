import Foundation

/// Which version of a versioned model (`.xcdatamodeld`) wrote a store.
///
/// Decided as a store is checked when it opens, version by version: by Apple's entity version
/// hashes when the versions carry them (a compiled `.momd` given), by Lade's own hashes when
/// Lade wrote the store, else by the layout each version implies (a SQLite store's tables,
/// columns, join tables and `Z_PRIMARYKEY` entity names, through renaming identifiers).
/// `NSStoreModelVersionIdentifiers` never decides: real stores carry stale ones.
///
/// ```swift
/// let found = try StoreVersionMatch(storeAt: url, bundle: bundleURL)
/// found.version          // "Catalog"
/// found.needsMigration   // true: the bundle's current version is "Catalog 2"
/// ```
public struct StoreVersionMatch: Sendable, Equatable {
    /// The version that wrote the store: the current one when it matches, else the newest
    /// matching one (versions that match all imply the same layout); nil when none matches.
    public let version: String?
    /// The bundle's current version.
    public let current: String?
    /// Every version the store matches, in the bundle's order.
    public let matching: [String]
    /// When none matches: the version whose check found the fewest differing entities, and
    /// what its check said.
    public let closest: Closest?

    public struct Closest: Sendable, Equatable {
        public let version: String
        public let differingEntities: [String]
        public let detail: String
        /// The store carries the model it was written with, and this version is another
        /// model's (`StoreError.storeCarriesOtherModel`).
        package var storeCarriesOtherModel = false
    }

    /// What the match rests on, for messages: "its version hashes match" or "its tables and
    /// columns match".
    public let evidence: String
    /// The store's hashes are an earlier Lade's, which leave out inputs the current hashes
    /// have (uniqueness constraints), and versions that differ only in those all match it; the
    /// store cannot tell which of them wrote it, so `version` is the first of them: migrating
    /// from there applies what the later ones add (a constraint's values are checked).
    public let isAmbiguousEarlierScheme: Bool

    /// Whether the store must be migrated to open with the current version.
    public var needsMigration: Bool { version != nil && version != current }

    /// Checks the store at `url` against every version of the bundle at `bundle` (a single
    /// `.xcdatamodel`, `contents` or JSON model counts as one version). The store is opened
    /// read-only, never changed.
    public init(storeAt url: URL, bundle: URL, compiledModel: URL? = nil) throws {
        let versions = try ManagedObjectModel.versions(at: bundle)
        current = versions.current
        var matching: [String] = []
        var closest: Closest?
        // XML and binary stores (no table layout to compare) are checked by their hashes alone, from the metadata, when the
        // hashes can be compared: loading every object once per version would be wasted.
        let type = try PersistentStoreCoordinator.StoreType(locationOf: url) ?? PersistentStoreCoordinator.StoreType(detectingFileAt: url)
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(ofType: type, at: url)
        var byHashes = false
        var currentHashes: [String: [String: Data]] = [:]
        for name in versions.names {
            let model = try ManagedObjectModel(contentsOf: bundle, version: versions.names.count > 1 ? name : nil, compiledModel: compiledModel)
            currentHashes[name] = model.versionHashes
            let differing = StoreMetadata.entitiesWithDifferentHashes(in: metadata, model: model)
            byHashes = byHashes || differing != nil
            if !type.keepsTableLayout, let differing {
                if differing.isEmpty {
                    matching.append(name)
                } else if closest == nil || differing.count < closest!.differingEntities.count {
                    let names = differing.sorted()
                    closest = Closest(version: name, differingEntities: names, detail: "version hashes differ for \(names.joined(separator: ", "))")
                }
                continue
            }
            do {
                _ = try PersistentStoreCoordinator.openStore(type: nil, at: url, model: model, readOnly: true)
                matching.append(name)
            } catch let error as StoreError {
                guard case .modelMismatch(let entities) = error.kind else { throw error }
                if closest == nil || entities.count < closest!.differingEntities.count {
                    closest = Closest(version: name, differingEntities: entities, detail: error.message,
                                      storeCarriesOtherModel: error.storeCarriesOtherModel)
                }
            }
        }
        self.matching = matching
        evidence = byHashes ? "its version hashes match" : "its tables and columns match"
        isAmbiguousEarlierScheme = StoreMetadata.hasEarlierLadeHashes(metadata)
            && Set(matching.compactMap { currentHashes[$0] }).count > 1
        if isAmbiguousEarlierScheme {
            version = matching.first
        } else if let current, matching.contains(current) {
            version = current
        } else {
            version = matching.last
        }
        self.closest = matching.isEmpty ? closest : nil
    }

    /// The match of a store known to open with `version`, the model's only one.
    package init(only version: String) {
        self.version = version
        current = version
        matching = [version]
        closest = nil
        evidence = "the model has one version"
        isAmbiguousEarlierScheme = false
    }

    /// Why no version matches, for an error message.
    public var mismatchDescription: String {
        guard let closest else { return "no version of the model matches the store" }
        return "no version of the model matches the store; the closest is \(closest.version), which differs for \(closest.differingEntities.joined(separator: ", ")) (\(closest.detail))"
    }
}
