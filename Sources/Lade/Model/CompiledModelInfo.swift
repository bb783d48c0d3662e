import Foundation

/// What Lade reads from a compiled model (`.momd`) that Xcode built: the
/// `VersionInfo.plist` with Apple's per-entity version hashes for each model version.
package struct CompiledModelInfo: Sendable {
    /// Version name → entity name → 32-byte version hash.
    package let versionHashes: [String: [String: Data]]
    /// `NSManagedObjectModel_CurrentVersionName`.
    package let currentVersionName: String?
    let file: String

    static let currentVersionKey = "NSManagedObjectModel_CurrentVersionName"
    static let versionHashesKey = "NSManagedObjectModel_VersionHashes"
    /// What to do about a `VersionInfo.plist` that cannot be read.
    static let advice = "rebuild the .momd with Xcode, or put back the VersionInfo.plist it wrote"

    /// Reads `VersionInfo.plist` from a `.momd` directory.
    package init(momd: URL) throws {
        let (file, plist) = try Self.versionInfo(momd: momd)
        self.file = file
        currentVersionName = try Self.currentVersionName(in: plist, file: file)
        guard let versions = plist[Self.versionHashesKey] else {
            throw ModelError(file: file, "has no \(Self.versionHashesKey) dictionary")
        }
        guard case .dictionary(let byVersion) = versions else {
            throw ModelError(file: file, "\(Self.versionHashesKey) is \(versions.typeName), not a dictionary; \(Self.advice)")
        }
        var hashes: [String: [String: Data]] = [:]
        for (version, value) in byVersion {
            guard case .dictionary(let entities) = value else {
                throw ModelError(file: file, "version '\(version)' does not map entity names to hashes")
            }
            var byEntity: [String: Data] = [:]
            for (entity, hash) in entities {
                guard case .data(let hash) = hash else {
                    throw ModelError(file: file, entity: entity, "version '\(version)': the hash is not data")
                }
                byEntity[entity] = hash
            }
            hashes[version] = byEntity
        }
        versionHashes = hashes
    }

    /// The current version a `.momd`'s `VersionInfo.plist` names; nil when the bundle has no
    /// `VersionInfo.plist` or it names none. A file that is there and cannot be read is an
    /// error naming what is wrong with it, not a bundle without a current version.
    package static func currentVersionName(momd: URL) throws -> String? {
        guard FileManager.default.fileExists(atPath: momd.appendingPathComponent("VersionInfo.plist").path) else { return nil }
        let (file, plist) = try versionInfo(momd: momd)
        return try currentVersionName(in: plist, file: file)
    }

    /// The path of a `.momd`'s `VersionInfo.plist` and the dictionary it holds.
    private static func versionInfo(momd: URL) throws -> (String, [String: PropertyListValue]) {
        let file = momd.appendingPathComponent("VersionInfo.plist").path
        let data: Data
        switch FileSystem.readRegularFile(URL(fileURLWithPath: file), limit: ModelLoader.maximumFileSize) {
        case .success(let read): data = read
        case .failure(let refusal): throw ModelError(file: file, "cannot be read (\(refusal)); give the .momd directory Xcode compiled")
        }
        let plist: PropertyListValue
        do {
            plist = try PropertyListValue.decode(data)
        } catch {
            let what = data.isEmpty ? "the file is empty" : "its bytes are neither a binary nor an XML property list"
            throw ModelError(file: file, "is not a property list (\(what)); \(advice)")
        }
        guard case .dictionary(let dictionary) = plist else {
            throw ModelError(file: file, "is \(plist.typeName), not a dictionary; \(advice)")
        }
        return (file, dictionary)
    }

    private static func currentVersionName(in plist: [String: PropertyListValue], file: String) throws -> String? {
        guard let value = plist[currentVersionKey] else { return nil }
        guard case .string(let name) = value else {
            throw ModelError(file: file, "\(currentVersionKey) is \(value.typeName), not a string; \(advice)")
        }
        return name
    }

    /// The entity hashes of one model version.
    package func versionHashes(for version: String) throws -> [String: Data] {
        guard let hashes = versionHashes[version] else {
            throw ModelError(file: file, "has no hashes for model version '\(version)'; it has \(versionHashes.keys.sorted().joined(separator: ", "))")
        }
        return hashes
    }
}
