import ArgumentParser
import Foundation
import Lade
import LadePipeline

/// Options every command that reads a model shares.
struct ModelOptions: ParsableArguments {
    @Option(name: .customLong("model-version"), help: ArgumentHelp("The version to read from a .xcdatamodeld bundle (default: its current version).", valueName: "NAME"))
    var modelVersion: String?

    @Option(name: .customLong("momd"), help: ArgumentHelp("A compiled .momd of the same model: take Apple's entity version hashes from its VersionInfo.plist.", valueName: "DIR"))
    var compiledModel: String?

    /// `--momd`'s directory.
    var compiledModelURL: URL? { compiledModel.map { URL(fileURLWithPath: $0) } }

    /// The model of the store at `store`: the one at `path` when given (see ``load(_:)``), else
    /// the one the store carries (its `Z_MODELCACHE`).
    func load(_ path: String?, forStore store: String) throws -> ManagedObjectModel {
        if let path { return try load(path) }
        try refuseWithoutModel()
        return try ManagedObjectModel(carriedByStoreAt: try StoreArgument.location(store).url)
    }

    /// --model-version and --momd qualify a model named with --model.
    func refuseWithoutModel() throws {
        guard modelVersion == nil, compiledModel == nil else {
            throw ValidationError("--model-version and --momd choose from the model given with --model; without --model the store's own model is read")
        }
    }

    /// Loads the model; what it accepted only as Apple's model compiler does is printed as warnings.
    func load(_ path: String) throws -> ManagedObjectModel {
        let model = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: path), version: modelVersion, compiledModel: compiledModelURL)
        for warning in model.warnings { LadeExit.printWarning(warning.description) }
        return model
    }
}

struct Inspect: ParsableCommand {
    /// Whether `path` names a store (a PostgreSQL URL, or a SQLite, XML or binary file told
    /// from its first bytes) rather than a model.
    static func isStore(_ path: String) -> Bool {
        StoreLocation.isServerURL(path) || (try? PersistentStoreCoordinator.StoreType(detectingFileAt: URL(fileURLWithPath: path))) != nil
    }

    static let configuration = CommandConfiguration(
        abstract: "Print a model, or a store's metadata and object counts.",
        discussion: """
            lade inspect MODEL prints a model: entities, properties, constraints, indexes, \
            templates and version hashes. MODEL is a .xcdatamodeld bundle, a .xcdatamodel \
            directory, a model 'contents' XML file, a compiled .momd directory or .mom file, \
            or a Lade JSON model.

            lade inspect STORE prints a store's metadata and object counts read with the \
            model the store carries (Core Data's SQLite stores keep it in Z_MODELCACHE since \
            iOS 11 and macOS 10.13, and so does every SQLite store Lade writes).

            lade inspect STORE --model MODEL prints a store's metadata, the version of MODEL \
            that wrote it (by Apple's version hashes with --momd, by Lade's when Lade wrote it, \
            else by the tables and columns each version implies) and whether it needs \
            migrating to the current version, and, per entity, the number of objects whose \
            entity is exactly that one. STORE is a SQLite, XML or \
            binary store (the type is detected from the file); it is opened read-only and \
            never changed. STORE may also be a PostgreSQL URL \
            (postgresql://USER@HOST:PORT/DATABASE?schema=NAME; docs/postgresql.md).

            lade inspect STORE --write-model DIR.xcdatamodel writes the model the store \
            carries as an Xcode model folder: DIR.xcdatamodel holding a 'contents' file in the \
            XML Xcode's model editor writes (entities in name order), which Xcode opens and \
            every lade command takes as --model. So a store whose only model is its \
            Z_MODELCACHE converts to XML or binary and back (XML and binary stores carry no \
            model). lade inspect MODEL --write-model DIR.xcdatamodel does the same for any \
            model lade reads (a Lade JSON model, a .mom or .momd). What Xcode's XML cannot say \
            is refused, never dropped (a control character in a name or value, more than one \
            version identifier). Apple's version hashes, which a .momd's VersionInfo.plist or \
            a store's metadata holds, have no place in a 'contents' file: Xcode computes them \
            again when it compiles the model, and lade computes its own from the folder. An \
            existing DIR is refused unless --overwrite, which replaces its 'contents' file \
            alone (atomically); a new DIR is built beside its path and renamed into place. \
            Nothing is written over the store or the model read.

            Examples:
              lade inspect samples/Catalog.xcdatamodeld
              lade inspect samples/Catalog.xcdatamodeld --model-version Catalog
              lade inspect samples/Catalog.xcdatamodeld --json > catalog.json
              lade inspect out/catalog.sqlite --model samples/Catalog.xcdatamodeld --json
              lade inspect App.sqlite --json
              lade inspect App.sqlite --write-model App.xcdatamodel
              lade inspect catalog.json --write-model Catalog.xcdatamodel --overwrite
            """)

    @Argument(help: ArgumentHelp("The model to print, or the store to inspect.", valueName: "MODEL|STORE"))
    var path: String

    @Option(help: ArgumentHelp("The store's model: PATH is then a store.", valueName: "MODEL"))
    var model: String?

    @Flag(help: "Print the model as JSON (Lade's JSON model format).")
    var json = false

    @Flag(name: .customLong("list-versions"), help: "List the versions in a .xcdatamodeld bundle and which one is current.")
    var listVersions = false

    @Option(name: .customLong("write-model"), help: ArgumentHelp("Write the model (the one MODEL holds, or the one STORE carries) as an Xcode model folder: DIR.xcdatamodel with its contents file.", valueName: "DIR.xcdatamodel"))
    var writeModel: String?

    @Flag(help: "With --write-model, replace the contents file of a model folder already there (by default an existing DIR is refused).")
    var overwrite = false

    @OptionGroup var modelOptions: ModelOptions

    func validate() throws {
        try StoreArgument.refusePassword(path)
        if model == nil && Inspect.isStore(path) { try modelOptions.refuseWithoutModel() }
        if overwrite && writeModel == nil { throw ValidationError("--overwrite applies to --write-model's folder") }
        if let writeModel {
            guard URL(fileURLWithPath: writeModel).pathExtension == "xcdatamodel" else {
                throw ValidationError("--write-model names the model folder to make, which Xcode reads only with the .xcdatamodel extension: give DIR.xcdatamodel")
            }
            if model != nil {
                throw ValidationError("--write-model writes the model PATH holds or carries; to write a model file in Xcode's form, give it as PATH (lade inspect MODEL --write-model DIR.xcdatamodel)")
            }
            if json || listVersions { throw ValidationError("--write-model writes a model folder and prints no model; leave out \(json ? "--json" : "--list-versions")") }
        }
    }

    func run() throws {
        try reportingFailures {
            if let writeModel {
                try write(to: writeModel)
                return
            }
            if let model {
                let store = try StoreArgument.location(path)
                let report = try StoreReport.reading(
                    storeAt: store.url, modelAt: URL(fileURLWithPath: model), version: modelOptions.modelVersion,
                    compiledModel: modelOptions.compiledModelURL, onWarning: LadeExit.printWarning)
                print(json ? try report.json() : report.text(), terminator: json ? "\n" : "")
                if let mismatch = report.mismatchError(path: store.displayName) { throw mismatch }
                return
            }
            if Self.isStore(path) {
                let report = try StoreReport.reading(storeAt: try StoreArgument.location(path).url)
                print(json ? try report.json() : report.text(), terminator: json ? "\n" : "")
                return
            }
            let versions = try ManagedObjectModel.versions(at: URL(fileURLWithPath: path))
            if listVersions {
                print(ModelReport.text(listing: versions), terminator: "")
                return
            }
            let report = ModelReport(model: try modelOptions.load(path), source: path, versions: versions)
            print(json ? try report.json() : report.text(), terminator: json ? "\n" : "")
        }
    }
}

extension Inspect {
    /// `--write-model`: the model PATH holds, or the model the store at PATH carries, as an
    /// Xcode model folder; never written over the store or the model it was read from.
    func write(to folder: String) throws {
        let model: ManagedObjectModel
        var reads: [OutputFile.Read]
        let what: String
        if Self.isStore(path) {
            let store = try StoreArgument.location(path)
            model = try ManagedObjectModel(carriedByStoreAt: store.url)
            reads = OutputFile.storeFiles(store.url)
            what = "the model \(store.displayName) carries"
        } else {
            model = try modelOptions.load(path)
            reads = [OutputFile.Read(URL(fileURLWithPath: path), "the model")]
            if let momd = modelOptions.compiledModelURL { reads.append(OutputFile.Read(momd, "the compiled model (--momd)")) }
            what = "the model \(path)\(model.versionName.map { " (version \($0))" } ?? "")"
        }
        try XcodeModelFolder.write(model, to: URL(fileURLWithPath: folder), overwrite: overwrite, role: "--write-model", reads: reads)
        print("Wrote \(what) (\(model.entities.count) entit\(model.entities.count == 1 ? "y" : "ies")) to \((folder as NSString).appendingPathComponent("contents"))")
        if model.entities.contains(where: { $0.appleVersionHash != nil }) {
            LadeExit.printNote("Apple's version hashes (from \(Self.isStore(path) ? "the store's metadata" : "the compiled model")) are not part of an Xcode model's contents: Xcode computes them again when it compiles the model, and Lade, reading the folder, computes its own")
        }
    }
}
