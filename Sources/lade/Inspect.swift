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

    /// Loads the model; what it accepted only as Apple's model compiler does is printed as warnings.
    func load(_ path: String) throws -> ManagedObjectModel {
        let model = try ManagedObjectModel(
            contentsOf: URL(fileURLWithPath: path), version: modelVersion,
            compiledModel: compiledModel.map { URL(fileURLWithPath: $0) })
        for warning in model.warnings { LadeExit.printWarning(warning.description) }
        return model
    }
}

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a model, or a store's metadata and object counts.",
        discussion: """
            lade inspect MODEL prints a model: entities, properties, constraints, indexes, \
            templates and version hashes. MODEL is a .xcdatamodeld bundle, a .xcdatamodel \
            directory, a model 'contents' XML file, or a Lade JSON model.

            lade inspect STORE --model MODEL prints a store's metadata, the version of MODEL \
            that wrote it (by Apple's version hashes with --momd, by Lade's when Lade wrote it, \
            else by the tables and columns each version implies) and whether it needs \
            migrating to the current version, and, per entity, the number of objects whose \
            entity is exactly that one. STORE is a SQLite, XML or \
            binary store (the type is detected from the file); it is opened read-only and \
            never changed.

            Examples:
              lade inspect samples/Catalog.xcdatamodeld
              lade inspect samples/Catalog.xcdatamodeld --model-version Catalog
              lade inspect samples/Catalog.xcdatamodeld --json > catalog.json
              lade inspect out/catalog.sqlite --model samples/Catalog.xcdatamodeld --json
            """)

    @Argument(help: ArgumentHelp("The model to print, or with --model the store to inspect.", valueName: "MODEL|STORE"))
    var path: String

    @Option(help: ArgumentHelp("The store's model: PATH is then a store.", valueName: "MODEL"))
    var model: String?

    @Flag(help: "Print the model as JSON (Lade's JSON model format).")
    var json = false

    @Flag(name: .customLong("list-versions"), help: "List the versions in a .xcdatamodeld bundle and which one is current.")
    var listVersions = false

    @OptionGroup var modelOptions: ModelOptions

    func run() throws {
        try reportingFailures {
            if let model {
                let storeURL = URL(fileURLWithPath: path)
                guard modelOptions.modelVersion == nil else {
                    let report = try StoreReport(storeAt: storeURL, model: try modelOptions.load(model))
                    print(json ? try report.json() : report.text(), terminator: json ? "\n" : "")
                    return
                }
                // A single version: the store is read with it (its open check says whether it
                // matches), without reading the store once more to decide.
                let modelVersions = try ManagedObjectModel.versions(at: URL(fileURLWithPath: model))
                if modelVersions.names.count == 1 {
                    var report = try StoreReport(storeAt: storeURL, model: try modelOptions.load(model))
                    report.versionMatch = StoreVersionMatch(only: modelVersions.names[0])
                    print(json ? try report.json() : report.text(), terminator: json ? "\n" : "")
                    return
                }
                // Which version wrote the store decides the model it is read with.
                let match = try StoreVersionMatch(storeAt: storeURL, bundle: URL(fileURLWithPath: model),
                                                  compiledModel: modelOptions.compiledModel.map { URL(fileURLWithPath: $0) })
                guard let version = match.version else {
                    let report = try StoreReport(unmatchedStoreAt: storeURL, match: match)
                    print(json ? try report.json() : report.text(), terminator: json ? "\n" : "")
                    throw StoreError(.modelMismatch(entities: match.closest?.differingEntities ?? []), path: path, match.mismatchDescription)
                }
                var options = modelOptions
                options.modelVersion = version
                var report = try StoreReport(storeAt: storeURL, model: try options.load(model))
                report.versionMatch = match
                print(json ? try report.json() : report.text(), terminator: json ? "\n" : "")
                return
            }
            let url = URL(fileURLWithPath: path)
            let versions = try ManagedObjectModel.versions(at: url)
            if listVersions {
                for name in versions.names {
                    print(name == versions.current ? "\(name) (current)" : name)
                }
                return
            }
            let report = ModelReport(model: try modelOptions.load(path), source: path, versions: versions)
            print(json ? try report.json() : report.text(), terminator: json ? "\n" : "")
        }
    }
}
