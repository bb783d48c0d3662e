import Foundation

/// The versions inside a model bundle (`.xcdatamodeld`), and which one is current.
public struct ModelVersions: Sendable, Equatable {
    /// Version names without the `.xcdatamodel` extension, in Xcode's (numeric-aware) order.
    public var names: [String]
    /// The current version, from the bundle's `.xccurrentversion`.
    public var current: String?
}

extension ManagedObjectModel {
    /// Loads a model from any of the forms Lade reads:
    /// - a `.xcdatamodeld` bundle (the current version, or `version`),
    /// - a `.xcdatamodel` directory, or a bare `contents` XML file of that format, whatever its name,
    /// - a JSON model (`docs/model-format.md`),
    /// - a compiled model: a `.momd` directory (the version its `VersionInfo.plist` names
    ///   current, or `version`) or a `.mom` file; a `.mom` inside a `.momd` carries Apple's
    ///   version hashes from the bundle's `VersionInfo.plist`.
    ///
    /// Given `compiledModel`, a `.momd` directory Xcode built from the same source, the
    /// entities take Apple's version hashes from its `VersionInfo.plist`.
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(
    ///     contentsOf: URL(fileURLWithPath: "Model.xcdatamodeld"), version: "Model 2",
    ///     compiledModel: URL(fileURLWithPath: "Model.momd"))
    /// ```
    public init(contentsOf url: URL, version: String? = nil, compiledModel: URL? = nil) throws {
        var model = try ModelLoader.load(url, version: version)
        if let compiledModel {
            let versionName = model.versionName ?? url.deletingPathExtension().lastPathComponent
            let hashes = try CompiledModelInfo(momd: compiledModel).versionHashes(for: versionName)
            model = try model.withAppleVersionHashes(hashes, source: compiledModel.appendingPathComponent("VersionInfo.plist").path)
        }
        self = model
    }

    /// The versions in a model bundle; a single `.xcdatamodel` or file is one unnamed version.
    public static func versions(at url: URL) throws -> ModelVersions {
        if url.pathExtension == "momd" { return try ModelLoader.compiledBundleVersions(url) }
        if url.pathExtension == "mom" {
            let name = url.deletingPathExtension().lastPathComponent
            return ModelVersions(names: [name], current: name)
        }
        guard ModelLoader.isDirectory(url), ModelLoader.contentsKind(of: url) == nil else {
            return ModelVersions(names: [ModelLoader.versionName(of: url)], current: ModelLoader.versionName(of: url))
        }
        return try ModelLoader.bundleVersions(url)
    }
}

enum ModelLoader {
    static let legacyAdvice = "it is a legacy Xcode 3 model (a binary 'elements' file instead of 'contents'), which Lade cannot read. Open the model in a current Xcode and save it (Xcode rewrites it in the 'contents' XML format), then try again"

    enum ContentsKind { case contents, legacyElements }

    static func load(_ url: URL, version: String?) throws -> ManagedObjectModel {
        let path = url.path
        guard FileManager.default.fileExists(atPath: path) else {
            throw ModelError(file: path, "no such file or directory")
        }
        guard isDirectory(url) else {
            if version != nil {
                throw ModelError(file: path, "--model-version applies to a .xcdatamodeld bundle, and this is a single model file")
            }
            return try loadFile(url, versionName: nil)
        }
        if url.pathExtension == "momd" { return try loadCompiledBundle(url, version: version) }
        switch contentsKind(of: url) {
        case .contents:
            if let version, version != versionName(of: url) {
                throw ModelError(file: path, "this .xcdatamodel is version '\(versionName(of: url))', not '\(version)'")
            }
            return try loadFile(url.appendingPathComponent("contents"), versionName: versionName(of: url))
        case .legacyElements:
            throw ModelError(file: path, legacyAdvice)
        case nil:
            let versions = try bundleVersions(url)
            guard let chosen = version.map(stripModelExtension) ?? versions.current else {
                throw ModelError(file: path, "the bundle has \(versions.names.count) versions and no .xccurrentversion saying which is current; choose one with --model-version (\(versions.names.joined(separator: ", ")))")
            }
            guard versions.names.contains(chosen) else {
                throw ModelError(file: path, "the bundle has no version '\(chosen)'; its versions are \(versions.names.joined(separator: ", "))")
            }
            return try load(url.appendingPathComponent(chosen + ".xcdatamodel"), version: nil)
        }
    }

    /// How to name a store's model, for the message that a store was given as a model.
    static let namingAdvice = "--model (the .xcdatamodeld, .xcdatamodel, .momd or .mom the app was built with)"

    /// The largest model file read (Xcode's models are kilobytes; the corpus' largest is under 1 MiB).
    static let maximumFileSize = 256 << 20

    /// A compiled model bundle (`.momd`): the current version's `.mom` (from `VersionInfo.plist`'s
    /// `NSManagedObjectModel_CurrentVersionName`) or `version`, with Apple's version hashes.
    static func loadCompiledBundle(_ url: URL, version: String?) throws -> ManagedObjectModel {
        let versions = try compiledBundleVersions(url)
        guard let chosen = version.map(stripModelExtension) ?? versions.current else {
            throw ModelError(file: url.path, "the compiled model has \(versions.names.count) versions and its VersionInfo.plist names no current one; choose one with --model-version (\(versions.names.joined(separator: ", ")))")
        }
        guard versions.names.contains(chosen) else {
            throw ModelError(file: url.path, "the compiled model has no version '\(chosen)'; its versions are \(versions.names.joined(separator: ", "))")
        }
        return try loadFile(url.appendingPathComponent(chosen + ".mom"), versionName: chosen)
    }

    /// The `.mom` versions of a `.momd`, and the current one its `VersionInfo.plist` names.
    static func compiledBundleVersions(_ url: URL) throws -> ModelVersions {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        let names = entries.filter { $0.hasSuffix(".mom") }.map { String($0.dropLast(4)) }
            .sorted { $0.compare($1, options: [.numeric]) == .orderedAscending }
        guard !names.isEmpty else {
            throw ModelError(file: url.path, "a compiled model (.momd) needs .mom files inside, and this one has none")
        }
        var current = try CompiledModelInfo.currentVersionName(momd: url)
        if current == nil, names.count == 1 { current = names[0] }
        return ModelVersions(names: names, current: current)
    }

    /// Apple's version hashes for a `.mom` inside a `.momd`, from the bundle's `VersionInfo.plist`
    /// (nil for a `.mom` elsewhere, or a bundle without hashes for it).
    static func compiledHashes(forMom url: URL, versionName: String) -> (hashes: [String: Data], source: String)? {
        let bundle = url.deletingLastPathComponent()
        guard bundle.pathExtension == "momd", let info = try? CompiledModelInfo(momd: bundle),
              let hashes = try? info.versionHashes(for: versionName) else { return nil }
        return (hashes, bundle.appendingPathComponent("VersionInfo.plist").path)
    }

    static func loadFile(_ url: URL, versionName: String?) throws -> ManagedObjectModel {
        let data: Data
        switch FileSystem.readRegularFile(url, limit: maximumFileSize) {
        case .success(let read): data = read
        case .failure(let refusal): throw ModelError(file: url.path, "\(refusal)")
        }
        let head = data.prefix(64)
        // A compiled model is a keyed archive in a property list: binary as Xcode writes it, or
        // XML after `plutil -convert xml1` (not a model's `contents` XML, whose root is `model`).
        if head.starts(with: Array("bplist".utf8)) || PropertyListValue.isXMLPropertyList(data) {
            if url.lastPathComponent == "elements" { throw ModelError(file: url.path, legacyAdvice) }
            let name = versionName ?? (url.pathExtension == "mom" ? url.deletingPathExtension().lastPathComponent : nil)
            let model = try CompiledModelReader.read(data, origin: url.path, versionName: name)
            guard let name, let apple = compiledHashes(forMom: url, versionName: name) else { return model }
            return try model.withAppleVersionHashes(apple.hashes, source: apple.source)
        }
        if head.starts(with: Array("SQLite format 3\0".utf8)) {
            throw ModelError(file: url.path, "this is a SQLite store, not a model. Lade reads the model a store carries (its Z_MODELCACHE) when no model is named; a store without one needs its model named with \(namingAdvice)")
        }
        if head.starts(with: [0x89, 0x4C, 0x41, 0x44, 0x45, 0x0D, 0x0A, 0x1A]) {
            throw ModelError(file: url.path, "this is a Lade binary store, not a model: name the store's model with \(namingAdvice)")
        }
        switch head.first(where: { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }) {
        case UInt8(ascii: "{"):
            return try ManagedObjectModel(jsonData: data, file: url.path)
        case UInt8(ascii: "<"):
            return try XcodeModelReader.read(data, file: url.path, versionName: versionName)
        default:
            // A .mom is a compiled model whatever else the bytes might be taken for.
            if url.pathExtension == "mom" {
                let reason = data.isEmpty ? "the file is empty" : "it is not a binary property list (a compiled model starts with 'bplist')"
                throw ModelError(file: url.path, "this is not a compiled model: \(reason); give the .mom Xcode compiled, found in the app's .momd")
            }
            throw ModelError(file: url.path, "this is neither a Core Data model's contents XML nor a Lade JSON model" + (data.isEmpty ? ": the file is empty" : ""))
        }
    }

    static func contentsKind(of directory: URL) -> ContentsKind? {
        let manager = FileManager.default
        if manager.fileExists(atPath: directory.appendingPathComponent("contents").path) { return .contents }
        if manager.fileExists(atPath: directory.appendingPathComponent("elements").path) { return .legacyElements }
        return nil
    }

    static func bundleVersions(_ url: URL) throws -> ModelVersions {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        let names = entries.filter { $0.hasSuffix(".xcdatamodel") }.map(stripModelExtension)
            .sorted { $0.compare($1, options: [.numeric]) == .orderedAscending }
        guard !names.isEmpty else {
            throw ModelError(file: url.path, "not a Core Data model: a directory needs a 'contents' file (.xcdatamodel) or .xcdatamodel versions inside (.xcdatamodeld)")
        }
        var current: String?
        let marker = url.appendingPathComponent(".xccurrentversion")
        if let data = try? Data(contentsOf: marker), !data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            guard let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
                throw ModelError(file: marker.path, "is not a property list; it should name the current version in _XCCurrentVersionName")
            }
            if let name = plist["_XCCurrentVersionName"] as? String {
                current = stripModelExtension(name)
                guard names.contains(current!) else {
                    throw ModelError(file: marker.path, "names current version '\(name)', which is not in the bundle (\(names.joined(separator: ", ")))")
                }
            }
        }
        // No current version recorded (no marker, or an empty one): Xcode's original version
        // carries the bundle's own name; a bundle of one version has no choice to make.
        if current == nil {
            let bundleName = url.deletingPathExtension().lastPathComponent
            current = names.contains(bundleName) ? bundleName : (names.count == 1 ? names[0] : nil)
        }
        return ModelVersions(names: names, current: current)
    }

    static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    static func versionName(of url: URL) -> String {
        stripModelExtension(url.lastPathComponent)
    }

    static func stripModelExtension(_ name: String) -> String {
        name.hasSuffix(".xcdatamodel") ? String(name.dropLast(".xcdatamodel".count)) : name
    }
}
