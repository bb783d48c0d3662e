import ArgumentParser
import Foundation
import Lade
import LadePipeline

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write every object of a store to NDJSON or CSV files, one per entity.",
        discussion: """
            Opens the store read-only (its type is detected from the file) and writes \
            DIR/<Entity>.ndjson (or .csv) for every non-abstract entity: the objects whose \
            entity is exactly that one, in primary key order, read a batch at a time. DIR is \
            created when missing; each file is written under a temporary name and renamed over \
            any old one (through a symbolic link, over the file it names). The same store contents give byte-identical files. Full \
            specification: docs/export-format.md.

            Fields, in order: _uri (x-coredata://<NSStoreUUID>/<Entity>/p<N>); every \
            non-transient attribute in model order (inherited ones first); every non-transient \
            relationship. A relationship holds its destinations' unique keys when the \
            destination entity (or an ancestor) has a single-attribute uniqueness constraint, \
            else their URIs; a to-one is one value (null when empty), a to-many an array, in \
            the relationship's order when it is ordered, else in destination primary key order.

            Values: null; strings; integers; doubles and floats in their shortest exact text \
            (0.1; NaN and infinities as the strings "NaN", "Infinity", "-Infinity"); decimals as \
            strings of their exact text ("9.99"); booleans (true/false); dates as ISO 8601 UTC \
            strings, to the microsecond, with only the fractional digits needed \
            ("2024-01-02T03:04:05.123456Z", "2024-01-02T03:04:05Z"); binary and transformable \
            data as base64; UUIDs and URIs as strings.

            ndjson  one JSON object per line (no spaces, keys in field order), LF line ends.
            csv     RFC 4180, a header row of field names, CRLF line ends; fields quoted when \
            they hold a comma, quote, CR or LF; null an empty field, an empty string ""; \
            to-many arrays as their JSON text in one field.

            Examples:
              lade export out/catalog.sqlite --model samples/Catalog.xcdatamodeld --format ndjson --out out/export
              lade export catalog.xml --model samples/Catalog.xcdatamodeld --format csv --out out/csv

            Exit codes: 0 exported; 1 failure (no store, a store that does not match the \
            model, a file that cannot be written); 64 usage error.
            """)

    @Argument(help: ArgumentHelp("The store file (SQLite, XML or binary) or PostgreSQL URL.", valueName: "STORE"))
    var store: String

    @Option(help: ArgumentHelp("The store's model (default: the model the store carries, its Z_MODELCACHE).", valueName: "MODEL"))
    var model: String?

    @Option(help: ArgumentHelp("ndjson or csv.", valueName: "FORMAT"))
    var format: String

    @Option(help: ArgumentHelp("The directory to write the files into.", valueName: "DIR"))
    var out: String

    @Option(name: .customLong("batch-size"), help: ArgumentHelp("Objects read at a time.", valueName: "N"))
    var batchSize = 1000

    @OptionGroup var modelOptions: ModelOptions

    func validate() throws {
        try StoreArgument.refusePassword(store)
        if model == nil { try modelOptions.refuseWithoutModel() }
        guard StoreExporter.Format(rawValue: format) != nil else {
            throw ValidationError("format '\(format)' is not one of ndjson, csv")
        }
        guard batchSize > 0 else { throw ValidationError("--batch-size takes a number above 0") }
    }

    func run() throws {
        do {
            let opened = try ReadOnlyStore.open(try StoreArgument.location(store).url, model: try modelOptions.load(model, forStore: store))
            let files = try StoreExporter(store: opened, batchSize: batchSize)
                .export(format: StoreExporter.Format(rawValue: format)!, to: URL(fileURLWithPath: out))
            print(StoreExporter.text(files, directory: out), terminator: "")
        } catch {
            throw exitReporting(error)
        }
    }
}
