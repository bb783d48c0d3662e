import ArgumentParser
import Foundation
import Lade
import LadePipeline

struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a store into a new store of another type or at another place.",
        discussion: """
            Reads every object of SOURCE (its type detected from the file) and writes them, with \
            their relationships, into a new store at DEST: what Core Data's \
            migratePersistentStore does. SOURCE is opened read-only and never changed; a SQLite \
            source is read as one snapshot, its -wal included. DEST is built beside its final \
            path and moved into place only when complete: a run killed at any moment leaves no \
            DEST (or, with --overwrite, the file that was there), never a part of one. A DEST \
            that is a symbolic link is written through (the file it names is replaced, beside \
            it; the link stays); with --overwrite, a DEST lade may not write (no write \
            permission, even for root) is refused with store.readOnly.

            DEST's type is --type, or told from its extension (.sqlite .sqlite3 .db .store: \
            sqlite; .xml: xml; .binary .ladebin: binary); a postgresql:// URL is a PostgreSQL \
            store. Either side may be a PostgreSQL URL \
            (postgresql://USER@HOST:PORT/DATABASE?schema=NAME): the destination schema must not \
            hold a store (or --overwrite), and is written in one transaction. The new store keeps SOURCE's metadata, its NSStoreUUID \
            included, with NSStoreType set to the new type. A SQLite to SQLite copy reads and \
            writes in batches and keeps memory flat; an XML or binary destination holds every \
            object in memory, as those store types always do.

            Examples:
              lade convert out/catalog.sqlite out/catalog.xml --model samples/Catalog.xcdatamodeld
              lade convert App.xml App.sqlite --model App.xcdatamodeld --momd App.momd
              lade convert out/catalog.binary /backup/catalog.sqlite --model samples/Catalog.xcdatamodeld --overwrite
              lade convert out/catalog.sqlite 'postgresql://lade@db/catalog?schema=feed'
            """)

    @Argument(help: ArgumentHelp("The store to copy; never changed.", valueName: "SOURCE"))
    var source: String

    @Argument(help: ArgumentHelp("The new store's file, or a PostgreSQL URL.", valueName: "DEST"))
    var destination: String

    @Option(help: ArgumentHelp("The stores' model (default: the model SOURCE carries, its Z_MODELCACHE).", valueName: "MODEL"))
    var model: String?

    @Option(help: ArgumentHelp("DEST's store type: sqlite, xml, binary or postgresql (default: from DEST's extension, or its postgresql:// URL).", valueName: "TYPE"))
    var type: String?

    @Flag(help: "Replace a store already at DEST (by default an existing DEST is refused).")
    var overwrite = false

    @Option(name: .customLong("batch-size"), help: ArgumentHelp("Objects read (and, into SQLite, written) at a time.", valueName: "N"))
    var batchSize = 5_000

    @Option(help: ArgumentHelp("Print a progress line every N seconds (default: a progress line kept up to date on a terminal, nothing otherwise).", valueName: "N"))
    var progress: Double?

    @OptionGroup var modelOptions: ModelOptions

    typealias StoreType = PersistentStoreCoordinator.StoreType

    /// DEST's type: --type, else the type its URL names, else its name's extension.
    var destinationType: StoreType? {
        if let type { return StoreType(name: type) }
        if StoreLocation.isServerURL(destination) { return .postgresql }
        return StoreType(fileExtensionOf: URL(fileURLWithPath: destination))
    }

    func validate() throws {
        try StoreArgument.refusePassword(source, role: "SOURCE")
        try StoreArgument.refusePassword(destination, role: "DEST")
        if model == nil { try modelOptions.refuseWithoutModel() }
        if let type, StoreType(name: type) == nil {
            throw ValidationError("store type '\(type)' is not one of \(StoreType.namedTypeNames)")
        }
        guard let destinationType else {
            throw ValidationError("cannot tell DEST's store type from its name '\(destination)'; give --type sqlite|xml|binary")
        }
        if (destinationType == .postgresql) != StoreLocation.isServerURL(destination) {
            throw ValidationError(destinationType == .postgresql
                ? "a postgresql store is named by a URL (postgresql://USER@HOST:PORT/DATABASE?schema=NAME), not a file path: give DEST as one"
                : "DEST is a postgresql:// URL, which names a postgresql store, not \(destinationType.name); give --type postgresql or none")
        }
        guard batchSize > 0 else { throw ValidationError("--batch-size must be at least 1") }
        if let progress, progress <= 0 { throw ValidationError("--progress takes a number of seconds above 0") }
    }

    func run() throws {
        try reportingFailures {
            let (from, to) = (try StoreArgument.location(source), try StoreArgument.location(destination))
            var runner = ConvertRunner(
                source: from.url, destination: to.url, type: destinationType!,
                model: try modelOptions.load(model, forStore: source),
                options: ConvertRunner.Options(overwrite: overwrite, batchSize: batchSize, progressInterval: progress,
                                               progressOutput: ProgressReporter.standardError),
                displaySource: from.displayName, displayDestination: to.displayName)
            runner.onNote = LadeExit.printNote
            print(try runner.run().text(), terminator: "")
        }
    }
}
