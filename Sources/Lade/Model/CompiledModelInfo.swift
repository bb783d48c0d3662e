import Foundation

/// What Lade reads from a compiled model (`.momd`) that Xcode built: the
/// `VersionInfo.plist` with Apple's per-entity version hashes for each model version.
package struct CompiledModelInfo: Sendable {
    /// Version name → entity name → 32-byte version hash.
    package let versionHashes: [String: [String: Data]]
    /// `NSManagedObjectModel_CurrentVersionName`.
    package let currentVersionName: String?
    let file: String

    /// Reads `VersionInfo.plist` from a `.momd` directory.
    package init(momd: URL) throws {
        let plistURL = momd.appendingPathComponent("VersionInfo.plist")
        file = plistURL.path
        guard let data = try? Data(contentsOf: plistURL) else {
            throw ModelError(file: file, "cannot read VersionInfo.plist; give the .momd directory Xcode compiled")
        }
        guard let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
            throw ModelError(file: file, "is not a property list")
        }
        guard let versions = plist["NSManagedObjectModel_VersionHashes"] as? [String: Any] else {
            throw ModelError(file: file, "has no NSManagedObjectModel_VersionHashes dictionary")
        }
        var hashes: [String: [String: Data]] = [:]
        for (version, value) in versions {
            guard let entities = value as? [String: Any] else {
                throw ModelError(file: file, "version '\(version)' does not map entity names to hashes")
            }
            var byEntity: [String: Data] = [:]
            for (entity, hash) in entities {
                guard let hash = hash as? Data else {
                    throw ModelError(file: file, entity: entity, "version '\(version)': the hash is not data")
                }
                byEntity[entity] = hash
            }
            hashes[version] = byEntity
        }
        versionHashes = hashes
        currentVersionName = plist["NSManagedObjectModel_CurrentVersionName"] as? String
    }

    /// The entity hashes of one model version.
    package func versionHashes(for version: String) throws -> [String: Data] {
        guard let hashes = versionHashes[version] else {
            throw ModelError(file: file, "has no hashes for model version '\(version)'; it has \(versionHashes.keys.sorted().joined(separator: ", "))")
        }
        return hashes
    }
}
