import ArgumentParser
import Foundation
import Lade

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

            With --history (SQLite only), the store gets Core Data's persistent history tables, \
            and every write Lade makes to it records history (see lade history, docs/history.md).
            """)

    @Argument(help: ArgumentHelp("The store file to create; it must not exist.", valueName: "STORE"))
    var store: String

    @Option(help: ArgumentHelp("The model the store is for.", valueName: "MODEL"))
    var model: String

    @Option(help: ArgumentHelp("The store type: sqlite, xml or binary.", valueName: "TYPE"))
    var type: String = "sqlite"

    @Flag(help: "Give the store Core Data's persistent history tables (SQLite only).")
    var history = false

    @OptionGroup var modelOptions: ModelOptions

    func validate() throws {
        guard PersistentStoreCoordinator.StoreType(name: type) != nil else {
            throw ValidationError("store type '\(type)' is not one of \(PersistentStoreCoordinator.StoreType.fileTypeNames)")
        }
        if history && PersistentStoreCoordinator.StoreType(name: type) != .sqlite {
            throw ValidationError("--history needs a SQLite store: Core Data keeps persistent history in SQLite stores only")
        }
    }

    func run() throws {
        try reportingFailures {
            let loaded = try modelOptions.load(model)
            let created = try PersistentStoreCoordinator.createStore(at: URL(fileURLWithPath: store), type: PersistentStoreCoordinator.StoreType(name: type)!, model: loaded, history: history)
            print("created \(store): \(created.type) store for \(loaded.entities.count) entities, UUID \(created.identifier)\(history ? ", with persistent history" : "")")
        }
    }
}
