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

    @Option(help: ArgumentHelp("The stores' model.", valueName: "MODEL"))
    var model: String

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
        do {
            let destinationType = destinationType!
            let loaded = try modelOptions.load(model)
            let sourceURL = URL(fileURLWithPath: source)
            let destinationURL = URL(fileURLWithPath: destination)
            // No lade run may write to DEST while it is replaced.
            let lock = try FileManager.default.fileExists(atPath: destinationURL.deletingLastPathComponent().path) ? StoreLock(store: destinationURL) : nil
            defer { lock?.release() }
            if lock != nil {
                let removed = PersistentStoreCoordinator.removeInterruptedWrites(beside: destinationURL)
                if !removed.isEmpty {
                    FileHandle.standardError.write(Data("lade: removed \(removed.count) temporary file(s) an interrupted run left beside \(destination)\n".utf8))
                }
            }
            let sourceType = try PersistentStoreCoordinator.StoreType(detectingFileAt: sourceURL)
            let started = Date()
            let reporter = ProgressReporter(mode: ProgressReporter.mode(interval: progress), label: "convert", unit: "objects", output: ProgressReporter.standardError)
            let summary = try PersistentStoreCoordinator.migrateStore(
                at: sourceURL, ofType: sourceType, to: destinationURL, type: destinationType, model: loaded,
                options: StoreMigrationOptions(overwrite: overwrite, batchSize: batchSize) { copied in
                    reporter.update(rows: Int64(copied.objectCount), bytes: 0, totalBytes: nil)
                })
            reporter.finish()
            let seconds = Date().timeIntervalSince(started)
            print("converted \(source) (\(sourceType.rawValue)) to \(destination) (\(destinationType.rawValue)): \(summary.objectCount) objects, \(summary.relationshipLinks) to-many links, in \(String(format: "%.2f", seconds)) s")
            for name in summary.objects.keys.sorted() where summary.objects[name]! > 0 {
                print("  \(name): \(summary.objects[name]!)")
            }
        } catch {
            throw exitReporting(error)
        }
    }
}
