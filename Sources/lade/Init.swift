import ArgumentParser
import Foundation
import Lade
import LadePipeline

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create an empty store for a model.",
        discussion: """
            The store is laid out as Core Data lays out its SQLite stores, with the metadata \
            Core Data writes. It is built beside STORE and moved into place only when complete.

            Examples:
              lade init out/catalog.sqlite --model samples/Catalog.xcdatamodeld
              lade init App.sqlite --model App.xcdatamodeld --momd App.momd   # Apple's version hashes
              lade init App.sqlite --model App.xcdatamodeld --history         # persistent history
              lade init 'postgresql://lade@db/catalog?schema=feed' --model samples/Catalog.xcdatamodeld

            STORE may be a PostgreSQL URL (postgresql://USER@HOST:PORT/DATABASE?schema=NAME): \
            the store's tables are made in that schema. The password comes from ~/.pgpass or \
            PGPASSWORD, never from the command line (docs/postgresql.md).

            With --history (SQLite or PostgreSQL), the store gets Core Data's persistent history tables, \
            and every write Lade makes to it records history (see lade history, docs/history.md).
            """)

    @Argument(help: ArgumentHelp("The store file to create (it must not exist), or a PostgreSQL URL.", valueName: "STORE"))
    var store: String

    @Option(help: ArgumentHelp("The model the store is for.", valueName: "MODEL"))
    var model: String

    @Option(help: ArgumentHelp("The store type: sqlite, xml, binary or postgresql (default: postgresql for a postgresql:// URL, else sqlite).", valueName: "TYPE"))
    var type: String?

    @Flag(help: "Give the store Core Data's persistent history tables (SQLite or PostgreSQL).")
    var history = false

    @OptionGroup var modelOptions: ModelOptions

    /// --type, else the type a URL names, else SQLite.
    var storeType: PersistentStoreCoordinator.StoreType? {
        type.map { PersistentStoreCoordinator.StoreType(name: $0) } ?? (StoreLocation.isServerURL(store) ? .postgresql : .sqlite)
    }

    func validate() throws {
        try StoreArgument.refusePassword(store)
        guard let storeType else {
            throw ValidationError("store type '\(type ?? "")' is not one of \(PersistentStoreCoordinator.StoreType.namedTypeNames)")
        }
        if (storeType == .postgresql) != StoreLocation.isServerURL(store) {
            throw ValidationError(storeType == .postgresql
                ? "a postgresql store is named by a URL (postgresql://USER@HOST:PORT/DATABASE?schema=NAME), not a file path"
                : "a postgresql:// URL names a postgresql store, not \(storeType.name); give --type postgresql or none")
        }
        if history && storeType != .sqlite && storeType != .postgresql {
            throw ValidationError("--history needs a SQLite or PostgreSQL store: Core Data keeps persistent history in SQLite stores only, Lade in PostgreSQL stores too")
        }
    }

    func run() throws {
        try reportingFailures {
            let loaded = try modelOptions.load(model)
            let location = try StoreArgument.location(store)
            let created = try PersistentStoreCoordinator.createStore(at: location.url, type: storeType!, model: loaded, history: history)
            print("created \(location.displayName): \(created.type) store for \(loaded.entities.count) entities, UUID \(created.identifier)\(history ? ", with persistent history" : "")")
        }
    }
}
