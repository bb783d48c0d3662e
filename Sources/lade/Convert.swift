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
            sqlite; .xml: xml; .binary .ladebin: binary). The new store keeps SOURCE's metadata, its NSStoreUUID \
            included, with NSStoreType set to the new type. A SQLite to SQLite copy reads and \
            writes in batches and keeps memory flat; an XML or binary destination holds every \
            object in memory, as those store types always do.

            Examples:
              lade convert out/catalog.sqlite out/catalog.xml --model samples/Catalog.xcdatamodeld
              lade convert App.xml App.sqlite --model App.xcdatamodeld --momd App.momd
              lade convert out/catalog.binary /backup/catalog.sqlite --model samples/Catalog.xcdatamodeld --overwrite
            """)

    @Argument(help: ArgumentHelp("The store to copy; never changed.", valueName: "SOURCE"))
    var source: String

    @Argument(help: ArgumentHelp("The new store's file.", valueName: "DEST"))
    var destination: String

    @Option(help: ArgumentHelp("The stores' model (default: the model SOURCE carries, its Z_MODELCACHE).", valueName: "MODEL"))
    var model: String?

    @Option(help: ArgumentHelp("DEST's store type: sqlite, xml or binary (default: from DEST's extension).", valueName: "TYPE"))
    var type: String?

    @Flag(help: "Replace a store already at DEST (by default an existing DEST is refused).")
    var overwrite = false

    @Option(name: .customLong("batch-size"), help: ArgumentHelp("Objects read (and, into SQLite, written) at a time.", valueName: "N"))
    var batchSize = 5_000

    @Option(help: ArgumentHelp("Print a progress line every N seconds (default: a progress line kept up to date on a terminal, nothing otherwise).", valueName: "N"))
    var progress: Double?

    @OptionGroup var modelOptions: ModelOptions

    typealias StoreType = PersistentStoreCoordinator.StoreType

    /// DEST's type: --type, else its name's extension.
    var destinationType: StoreType? {
        type.map { StoreType(name: $0) } ?? StoreType(fileExtensionOf: URL(fileURLWithPath: destination))
    }

    func validate() throws {
        if model == nil { try modelOptions.refuseWithoutModel() }
        if let type, StoreType(name: type) == nil {
            throw ValidationError("store type '\(type)' is not one of \(StoreType.fileTypeNames)")
        }
        if destinationType == nil {
            throw ValidationError("cannot tell DEST's store type from its name '\(destination)'; give --type sqlite|xml|binary")
        }
        guard batchSize > 0 else { throw ValidationError("--batch-size must be at least 1") }
        if let progress, progress <= 0 { throw ValidationError("--progress takes a number of seconds above 0") }
    }

    func run() throws {
        try reportingFailures {
            var runner = ConvertRunner(
                source: URL(fileURLWithPath: source), destination: URL(fileURLWithPath: destination), type: destinationType!,
                model: try modelOptions.load(model, forStore: source),
                options: ConvertRunner.Options(overwrite: overwrite, batchSize: batchSize, progressInterval: progress,
                                               progressOutput: ProgressReporter.standardError),
                displaySource: source, displayDestination: destination)
            runner.onNote = LadeExit.printNote
            print(try runner.run().text(), terminator: "")
        }
    }
}
