import ArgumentParser
import Foundation
import Lade
import LadePipeline

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a store for damage: SQLite's integrity check and Core Data's invariants.",
        discussion: """
            Opens the store read-only (its type is detected from the file) and looks for \
            what breaks Core Data's invariants for the model, each reported with a count and \
            the first place it was seen:
              integrity          SQLite's PRAGMA integrity_check (SQLite stores)
              keyCounter         Z_PRIMARYKEY without an entity's row, or a Z_MAX below a key in use (the history entities' too)
              unknownEntity      rows whose Z_ENT names no concrete entity of the model
              wrongType          values that cannot be their attribute's type (text in a number column, …)
              requiredMissing    required attributes and to-one relationships without a value
              danglingReference  to-one references to objects that are not in the store
              danglingLink       many-to-many links to objects that are not in the store
              notUnique          objects sharing the values of a uniqueness constraint
              inverseMismatch    relationships whose inverse does not point back
              missingIndex       indexes of the model's layout not in a SQLite file (a lade run \
            killed while loading a table leaves its fetch indexes out; running the job again builds them)
              missingTable       tables of the model's layout not in a PostgreSQL store's schema (dropped by hand)
              missingColumn      columns of the model's layout a PostgreSQL store's table lacks
              missingExternalFile  values kept as external binary data whose file is not in the \
            store's .NAME_SUPPORT/_EXTERNAL_DATA folder (the store moved without that folder)
              orphanExternalFile   files in that folder that no row names (a run killed while \
            writing them); --repair removes them

            Fetch, export and convert refuse a store with unknown Z_ENT rows, dangling \
            references or unreadable values rather than skip them or read them as nulls; \
            this command says where all of it is. An XML or binary store whose relationships \
            name objects that are not in the file does not open, and is reported as damaged.

            --repair removes, before the check, what can go without losing data: a SQLite \
            store's external binary data files that no row names. It opens the store for \
            writing and holds its write lock meanwhile (a run writing to the store waits). \
            Everything else found is reported, never changed.

            Examples:
              lade check out/catalog.sqlite --model samples/Catalog.xcdatamodeld
              lade check out/photos.sqlite --repair
              lade check catalog.binary --model samples/Catalog.xcdatamodeld --json

            Exit codes: 0 no damage; 1 damage found, or a store that cannot be checked (not a \
            store, another model); 64 usage error.
            """)

    @Argument(help: ArgumentHelp("The store file (SQLite, XML or binary) or PostgreSQL URL.", valueName: "STORE"))
    var store: String

    @Option(help: ArgumentHelp("The store's model (default: the model the store carries, its Z_MODELCACHE).", valueName: "MODEL"))
    var model: String?

    @Flag(help: "Print the result as JSON: {\"store\", \"damaged\", \"problems\": [{kind, place, count, example, problem}]}.")
    var json = false

    @Flag(help: "First remove a SQLite store's external binary data files that no row names (a run killed while writing them leaves such files).")
    var repair = false

    @OptionGroup var modelOptions: ModelOptions

    func validate() throws {
        try StoreArgument.refusePassword(store)
        if model == nil { try modelOptions.refuseWithoutModel() }
    }

    func run() throws {
        let report = try reportingFailures {
            let location = try StoreArgument.location(store)
            let model = try modelOptions.load(model, forStore: store)
            let removed = repair ? try CheckReport.repair(storeAt: location.url, model: model) : nil
            var report = try CheckReport(checkingStoreAt: location.url, model: model, path: location.displayName)
            report.removedFiles = removed
            return report
        }
        print(json ? try report.json() : report.text(), terminator: json ? "\n" : "")
        if report.damaged { throw ExitCode.failure }
    }
}
