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
            over the old file (through a symbolic link, over the file it names: the link stays, \
            and the lock is that file's); primary keys, Z_OPT and the store UUID kept, new \
            attributes filled with their defaults, removed ones dropped, tables rebuilt, the \
            new version's indexes and metadata. Entities and properties are matched by their \
            renaming identifiers (Xcode's Renaming ID), as Core Data's inferred mapping does.

            Which version wrote STORE is the store's own word (its hashes, else its tables); \
            --from is for a store that cannot tell, and one the store contradicts is refused. \
            A bundle without .xccurrentversion needs --to. A uniqueness constraint the new \
            version adds is built, or the migration refused (naming the entity and the shared \
            values) when objects share its values.

            Between versions further apart, the store is carried in one step inferred directly \
            between the two, as Core Data infers it, following the renames each version in \
            between declares: an attribute a version in between dropped and the target has \
            again keeps its values. Only when that cannot be inferred does it go through every \
            version in between, one transaction per step, and only if that drops nothing both \
            ends have. Every step is planned, and any refusal found, before the first one runs \
            (a kill between steps leaves the store at a version in between, and running again \
            goes on from there).

            Entities renumbered by the new version (one added or renamed before others in \
            name order) and renamed many-to-many relationships are carried: Z_ENT, \
            Z_PRIMARYKEY and join tables follow; so are hierarchy changes (new parents or \
            children, entities leaving a hierarchy, attributes and to-ones moving up or down), \
            a to-one made to-many, and a to-many made ordered or unordered. What this \
            lightweight migration does not carry (merging two hierarchies, a to-many moving \
            within its hierarchy, to-many → to-one, type changes other than Integer widening or \
            Integer → Decimal) \
            is refused before anything is written, naming the entity, property and rule.

            With --mapping, the step between the versions a mapping model names runs that \
            mapping model (Xcode's .xcmappingmodel or a compiled .cdm) as Core Data's \
            NSMigrationManager does with the default policy: new objects from each entity \
            mapping's source objects, then their relationships, then validation; the new \
            store is built beside the old one, --batch-size objects at a time, and moved over \
            it only when complete (new primary keys; the store UUID kept). Several mapping \
            models for one step run as passes. A mapping model that needs the app's code (a \
            migration policy class, a FUNCTION on an app object, a CAST to an app class) is \
            refused before anything is written, naming the class and its entity mappings; \
            so is one that names a key, entity, property or entity mapping its versions lack \
            (in a filter, as lade fetch --where refuses it, or in a value expression's key \
            path), naming the file, the entity mapping, the property and the key.

            Examples:
              lade migrate out/catalog.sqlite --model samples/Catalog.xcdatamodeld --dry-run
              lade migrate out/catalog.sqlite --model samples/Catalog.xcdatamodeld
              lade migrate moody.sqlite --model Moody.xcdatamodeld --to "Moody 3" --mapping "Moody 2-Moody 3.xcmappingmodel"

            A store lade may not write (no write permission, a 0444 file even for root, or a \
            directory it cannot write) is refused with store.readOnly before anything is made. \
            --dry-run only reads: it makes no lock file and removes nothing, so it works there.

            Exit codes: 0 migrated, or already at the version; 1 refused or failed (the store \
            unchanged); 75 another run holds the store; 64 usage error.
            """)

    @Argument(help: ArgumentHelp("The store to migrate, in place: a SQLite, XML or binary file, or a PostgreSQL URL.", valueName: "STORE"))
    var store: String

    @Option(help: ArgumentHelp("The versioned model (.xcdatamodeld).", valueName: "MODEL"))
    var model: String

    @Option(help: ArgumentHelp("The version to migrate to (default: the bundle's current version; needed when the bundle has no .xccurrentversion).", valueName: "VERSION"))
    var to: String?

    @Option(help: ArgumentHelp("The version that wrote the store, for a store that cannot tell (one whose hashes or tables say otherwise is refused).", valueName: "VERSION"))
    var from: String?

    @Option(name: .customLong("momd"), help: ArgumentHelp("A compiled .momd of the same model, for Apple's version hashes.", valueName: "DIR"))
    var compiledModel: String?

    @Option(name: .customLong("mapping"), help: ArgumentHelp("A mapping model (.xcmappingmodel or compiled .cdm) for the step between the versions it maps; give it again for another step, or for another pass of the same step.", valueName: "FILE"))
    var mappings: [String] = []

    @Option(name: .customLong("batch-size"), help: ArgumentHelp("With a mapping model: objects read, made and saved at a time.", valueName: "N"))
    var batchSize = 5_000

    @Flag(name: .customLong("dry-run"), help: "Print the plan (versions and, per entity, what changes) and write nothing, not even the lock file.")
    var dryRun = false

    func validate() throws {
        try StoreArgument.refusePassword(store)
    }

    func run() throws {
        guard batchSize > 0 else { throw ValidationError("--batch-size must be at least 1") }
        try reportingFailures {
            let location = try StoreArgument.location(store)
            var runner = MigrateRunner(
                store: location.url, bundle: URL(fileURLWithPath: model),
                options: MigrateRunner.Options(target: to, source: from, compiledModel: compiledModel.map { URL(fileURLWithPath: $0) },
                                               mappingModels: mappings.map { URL(fileURLWithPath: $0) }, batchSize: batchSize, dryRun: dryRun),
                displayPath: location.displayName)
            runner.onNote = LadeExit.printNote
            let plan = try runner.plan()
            print(plan.text(), terminator: "")
            // On a terminal, a progress line kept up to date (which step, which table), cleared after.
            let terminal = isatty(STDERR_FILENO) == 1
            var progress: (@Sendable (String) -> Void)?
            if terminal { progress = { text in FileHandle.standardError.write(Data("\r\u{1B}[2K\(text)".utf8)) } }
            guard let report = try plan.run(progress: progress) else { return }
            if terminal { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
            print(report.text(), terminator: "")
        }
    }
}
