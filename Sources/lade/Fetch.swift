import ArgumentParser
import Foundation
import Lade
import LadePipeline

struct Fetch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the objects of an entity that match a predicate, as a table, JSON or CSV.",
        discussion: """
            Opens the store read-only (its type is detected from the file) and fetches the \
            entity's objects, subentities included, that match --where (Core Data's predicate \
            format: name BEGINSWITH[c] 'b' AND price > 10, category.name == 'Tools', …), sorted \
            by each --sort in turn, then --offset and --limit applied, all in the store (SQL for \
            SQLite stores). Without --sort, the order is the store's (primary key order).

            Each object is printed with _uri (its x-coredata:// URI), its attributes and its \
            to-one relationships, values written as lade export writes them (see lade help \
            export): a to-one is the destination's unique key when its entity has a \
            single-attribute uniqueness constraint, else its URI.
              table  aligned columns under a header, then '(N objects)'; null is an empty cell
              json   an array of objects, one per line
              csv    RFC 4180 with a header row, CRLF line ends; null is an empty field, an \
            empty string ""

            Examples:
              lade fetch out/catalog.sqlite --model samples/Catalog.xcdatamodeld --entity Product \\
                --where "price > 10" --sort price:desc --sort name --limit 5
              lade fetch catalog.xml --model samples/Catalog.xcdatamodeld --entity Category --format json

            Exit codes: 0 printed; 1 failure (no store, a store that does not match the model, \
            an unknown entity or key); 64 usage error (a predicate or sort that does not parse).
            """)

    @Argument(help: ArgumentHelp("The store file (SQLite, XML or binary) or PostgreSQL URL.", valueName: "STORE"))
    var store: String

    @Option(help: ArgumentHelp("The store's model (default: the model the store carries, its Z_MODELCACHE).", valueName: "MODEL"))
    var model: String?

    @Option(help: ArgumentHelp("The entity to fetch.", valueName: "ENTITY"))
    var entity: String

    @Option(name: .customLong("where"), help: ArgumentHelp(
        "A predicate, in Core Data's format; @FILE reads it from FILE (for predicates longer than a command line holds), @- from standard input.",
        valueName: "PREDICATE"))
    var predicate: String?

    @Option(help: ArgumentHelp("Sort by KEY, ascending or (:desc) descending; repeat for ties.", valueName: "KEY[:desc]"))
    var sort: [String] = []

    @Option(help: ArgumentHelp("Print at most N objects.", valueName: "N"))
    var limit: Int?

    @Option(help: ArgumentHelp("Skip the first N objects.", valueName: "N"))
    var offset: Int?

    @Option(help: ArgumentHelp("table, json or csv.", valueName: "FORMAT"))
    var format: String = "table"

    @OptionGroup var modelOptions: ModelOptions

    func validate() throws {
        try StoreArgument.refusePassword(store)
        if model == nil { try modelOptions.refuseWithoutModel() }
        guard ["table", "json", "csv"].contains(format) else {
            throw ValidationError("format '\(format)' is not one of table, json, csv")
        }
        if let limit, limit < 1 { throw ValidationError("--limit takes a number above 0") }
        if let offset, offset < 0 { throw ValidationError("--offset takes a number of 0 or more") }
        for text in sort {
            do { _ = try StoreQuery.sortDescriptor(text) } catch { throw ValidationError("--sort: \(error)") }
        }
    }

    /// The predicate's text: as given, or read from `@FILE` / `@-` (a trailing line break dropped).
    func predicateText() throws -> String? {
        guard let predicate, predicate.hasPrefix("@") else { return predicate }
        let path = String(predicate.dropFirst())
        let data: Data
        do {
            data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw exitReporting(StoreError(.notFound, path: path, "cannot read the predicate file (--where @\(path)): \(error.localizedDescription)"))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw exitReporting(StoreError(.io, path: path, "the predicate file is not UTF-8 text"))
        }
        return text.hasSuffix("\n") ? String(text.dropLast()) : text
    }

    func run() throws {
        var query = StoreQuery(entity: entity)
        if let predicate = try predicateText() {
            do {
                query.predicate = try StoreQuery.predicate(predicate)
            } catch {
                // The predicate and a caret under the column, so the mistake is easy to see.
                let caret = String(repeating: " ", count: max(0, error.column - 1)) + "^"
                FileHandle.standardError.write(Data("lade: error: --where: \(error)\n  \(predicate)\n  \(caret)\n".utf8))
                throw ExitCode(LadeExit.usage)
            }
        }
        do {
            query.sortDescriptors = try sort.map(StoreQuery.sortDescriptor)
            query.limit = limit ?? 0
            query.offset = offset ?? 0
            let opened = try ReadOnlyStore.open(try StoreArgument.location(store).url, model: try modelOptions.load(model, forStore: store))
            let result = try query.run(on: opened)
            switch format {
            case "json": print(result.json(), terminator: "")
            case "csv": print(result.csv(), terminator: "")
            default: print(result.table(), terminator: "")
            }
        } catch {
            throw exitReporting(error)
        }
    }
}
