import ArgumentParser
import Foundation
import Lade
import LadePipeline

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Carry a store to another version of its model (lightweight, or by Xcode mapping models).",
        discussion: """
            Finds the version of MODEL (a .xcdatamodeld bundle) that wrote STORE, as lade \
            inspect does (Apple's hashes with --momd, Lade's, else the tables and columns), \
            and migrates the store in place to --to (default: the bundle's current version): \
            a SQLite store in one transaction, an XML or binary store written anew and renamed \
            over the old file; primary keys, Z_OPT and the store UUID kept, new \
            attributes filled with their defaults, removed ones dropped, tables rebuilt, the \
            new version's indexes and metadata. Entities and properties are matched by their \
            renaming identifiers (Xcode's Renaming ID), as Core Data's inferred mapping does.

            Between versions further apart, the store goes through every version in between, \
            in the bundle's order, one transaction per step; every step is planned, and any \
            refusal found, before the first one runs (a kill between steps leaves the store at \
            a version in between, and running again goes on from there).

            Entities renumbered by the new version (one added or renamed before others in \
            name order) and renamed many-to-many relationships are carried: Z_ENT, \
            Z_PRIMARYKEY and join tables follow. What this lightweight migration does not \
            carry yet (hierarchy changes, to-many → to-one, type changes other than Integer \
            widening; a to-one made to-many, and a to-many made ordered or unordered, are \
            carried) is refused before anything is written, naming the entity, property and \
            rule.

            With --mapping, the step between the versions a mapping model names runs that \
            mapping model (Xcode's .xcmappingmodel or a compiled .cdm) as Core Data's \
            NSMigrationManager does with the default policy: new objects from each entity \
            mapping's source objects, then their relationships, then validation; the new \
            store is built beside the old one, --batch-size objects at a time, and moved over \
            it only when complete (new primary keys; the store UUID kept). Several mapping \
            models for one step run as passes. A mapping model that needs the app's code (a \
            migration policy class, a FUNCTION on an app object, a CAST to an app class) is \
            refused before anything is written, naming the class and its entity mappings.

            Examples:
              lade migrate out/catalog.sqlite --model samples/Catalog.xcdatamodeld --dry-run
              lade migrate out/catalog.sqlite --model samples/Catalog.xcdatamodeld
              lade migrate moody.sqlite --model Moody.xcdatamodeld --to "Moody 3" --mapping "Moody 2-Moody 3.xcmappingmodel"

            Exit codes: 0 migrated, or already at the version; 1 refused or failed (the store \
            unchanged); 75 another run holds the store; 64 usage error.
            """)

    @Argument(help: ArgumentHelp("The store to migrate, in place (SQLite, XML or binary).", valueName: "STORE"))
    var store: String

    @Option(help: ArgumentHelp("The versioned model (.xcdatamodeld).", valueName: "MODEL"))
    var model: String

    @Option(help: ArgumentHelp("The version to migrate to (default: the bundle's current version).", valueName: "VERSION"))
    var to: String?

    @Option(help: ArgumentHelp("The version that wrote the store, when it cannot be told from the store.", valueName: "VERSION"))
    var from: String?

    @Option(name: .customLong("momd"), help: ArgumentHelp("A compiled .momd of the same model, for Apple's version hashes.", valueName: "DIR"))
    var compiledModel: String?

    @Option(name: .customLong("mapping"), help: ArgumentHelp("A mapping model (.xcmappingmodel or compiled .cdm) for the step between the versions it maps; give it again for another step, or for another pass of the same step.", valueName: "FILE"))
    var mappings: [String] = []

    @Option(name: .customLong("batch-size"), help: ArgumentHelp("With a mapping model: objects read, made and saved at a time.", valueName: "N"))
    var batchSize = 5_000

    @Flag(name: .customLong("dry-run"), help: "Print the plan (versions and, per entity, what changes) and write nothing.")
    var dryRun = false

    func run() throws {
        guard batchSize > 0 else { throw ValidationError("--batch-size must be at least 1") }
        try reportingFailures {
            let url = URL(fileURLWithPath: store)
            let bundle = URL(fileURLWithPath: model)
            let momd = compiledModel.map { URL(fileURLWithPath: $0) }
            let versions = try ManagedObjectModel.versions(at: bundle)
            let target = to ?? versions.current ?? versions.names.last!
            guard versions.names.contains(target) else {
                throw StoreError(.modelMismatch(entities: []), path: model, "the model has no version '\(target)'; its versions are \(versions.names.joined(separator: ", "))")
            }
            let lock = try StoreLock(store: url)
            defer { lock.release() }
            // A mapping migration killed while it built the new store beside this one left it.
            let removed = PersistentStoreCoordinator.removeInterruptedWrites(beside: url)
            if !removed.isEmpty {
                FileHandle.standardError.write(Data("lade: removed \(removed.count) temporary file(s) an interrupted run left beside \(store)\n".utf8))
            }
            let sourceVersion: String
            if let from {
                sourceVersion = from
            } else {
                let match = try StoreVersionMatch(storeAt: url, bundle: bundle, compiledModel: momd)
                guard let found = match.matching.contains(target) ? target : match.version else {
                    throw StoreError(.modelMismatch(entities: match.closest?.differingEntities ?? []), path: store,
                                     match.mismatchDescription + "; if you know the version that wrote it, give --from")
                }
                sourceVersion = found
            }
            if sourceVersion == target {
                print("\(store): already at \(target); nothing to do")
                return
            }
            // Staged: through every version between, in the bundle's order, each step planned
            // (and any refusal found) before the first one runs.
            guard let from = versions.names.firstIndex(of: sourceVersion), let to = versions.names.firstIndex(of: target) else {
                throw StoreError(.modelMismatch(entities: []), path: model, "the model has no version '\(sourceVersion)'; its versions are \(versions.names.joined(separator: ", "))")
            }
            let path = from < to ? Array(versions.names[from...to]) : Array(versions.names[to...from].reversed())
            var models: [ManagedObjectModel] = []
            for name in path { models.append(try ManagedObjectModel(contentsOf: bundle, version: name, compiledModel: momd)) }
            // Mapping models, each to the step between the versions it names (a compiled .cdm
            // names none: the one step it fits).
            var mapped: [Int: [MappingModel]] = [:]
            for file in mappings {
                let mapping = try MappingModel(contentsOf: URL(fileURLWithPath: file))
                let steps = Array(0..<(path.count - 1))
                let fitting: [Int]
                if let source = mapping.sourceVersionName, let destination = mapping.destinationVersionName {
                    fitting = steps.filter { path[$0] == source && path[$0 + 1] == destination }
                    guard !fitting.isEmpty else {
                        throw MappingModelError(file, "it maps \(source) → \(destination), which is not a step of this migration (\(path.joined(separator: " → ")))")
                    }
                } else {
                    fitting = steps.filter { (try? mapping.resolved(from: models[$0], to: models[$0 + 1])) != nil }
                    guard fitting.count == 1 else {
                        throw MappingModelError(file, fitting.isEmpty
                            ? "it fits no step of this migration (\(path.joined(separator: " → ")))"
                            : "it fits several steps of this migration (\(fitting.map { "\(path[$0]) → \(path[$0 + 1])" }.joined(separator: ", "))); give the .xcmappingmodel, which names its versions")
                    }
                }
                mapped[fitting[0], default: []].append(mapping)
            }
            var migrations: [MigrationStep] = []
            var refusals: [String] = []
            for index in 0..<(path.count - 1) {
                do {
                    if let passes = mapped[index] {
                        var manager = try MigrationManager(store: url, from: models[index], to: models[index + 1], mappings: passes)
                        manager.batchSize = batchSize
                        migrations.append(.mapping(manager))
                    } else {
                        migrations.append(.lightweight(try LightweightMigration(store: url, from: models[index], to: models[index + 1])))
                    }
                } catch let refusal as MigrationRefusal {
                    refusals += refusal.reasons.map { "\(path[index]) → \(path[index + 1]): \($0)" }
                }
            }
            guard refusals.isEmpty else { throw MigrationRefusal(store: store, reasons: refusals, mapping: !mapped.isEmpty) }
            for (index, migration) in migrations.enumerated() {
                print("\(store): \(path[index]) → \(path[index + 1]) (\(migration.kind))")
                for step in migration.steps { print("  \(step)") }
            }
            if dryRun {
                print("dry run: nothing was written")
                return
            }
            // On a terminal, a progress line kept up to date: which step, which table.
            let terminal = isatty(STDERR_FILENO) == 1
            for (index, migration) in migrations.enumerated() {
                let label = path[index] + " → " + path[index + 1]
                var progress: (@Sendable (String) -> Void)?
                if terminal {
                    progress = { text in FileHandle.standardError.write(Data("\r\u{1B}[2K\(label): \(text)".utf8)) }
                }
                try migration.run(progress: progress)
                if terminal { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
            }
            // Each step checks the store it starts from; the last result must open with the
            // target version and read as sound, and gives the summary per entity (objects whose
            // entity is exactly that one).
            let migrated = try ReadOnlyStore.open(url, model: models.last!)
            let damage = try migrated.damage(thorough: false)
            guard damage.isEmpty else { throw StoreError.damaged(damage, path: store) }
            print("migrated: \(store) is at \(target)" + (migrations.count > 1 ? " (\(migrations.count) steps)" : ""))
            for entity in models.last!.entities where !entity.isAbstract {
                print("  \(entity.name): \(try migrated.count(StoreFetchRequest(entityName: entity.name, includesSubentities: false)))")
            }
        }
    }
}

/// One step of a staged migration: lightweight (inferred, in place) or by mapping models.
enum MigrationStep {
    case lightweight(LightweightMigration)
    case mapping(MigrationManager)

    var kind: String {
        switch self {
        case .lightweight: "lightweight, in place"
        case .mapping(let manager): "mapping model" + (manager.mappings.count > 1 ? "s, \(manager.mappings.count) passes" : "") + ", the store rebuilt beside it"
        }
    }

    var steps: [String] {
        switch self {
        case .lightweight(let migration): migration.steps
        case .mapping(let manager): manager.steps
        }
    }

    func run(progress: (@Sendable (String) -> Void)?) throws {
        switch self {
        case .lightweight(let migration): try migration.run(progress: progress)
        case .mapping(let manager): try manager.run(progress: progress)
        }
    }
}
