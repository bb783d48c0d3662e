import ArgumentParser
import Foundation
import Lade
import LadePipeline

struct Meta: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read, set or delete a store's metadata keys (no model needed).",
        discussion: """
            Reads or writes only the metadata: SQLite's Z_METADATA row, an XML store's \
            <databaseInfo>, a binary store's metadata block. The store type is detected from \
            the file; a PostgreSQL store (a postgresql:// URL) keeps it in its Z_METADATA table. NSStoreType and NSStoreUUID belong to the stack: setting or deleting them \
            is refused and the file is left unchanged.

            Examples:
              lade meta get out/catalog.sqlite
              lade meta get out/catalog.sqlite NSStoreUUID --json
              lade meta set out/catalog.sqlite importedBy=nightly
              lade meta set out/catalog.xml batch=42 tags='["a","b"]' --json-values
              lade meta delete out/catalog.sqlite importedBy
              lade meta checkpoints out/catalog.sqlite
            """,
        subcommands: [MetaGet.self, MetaSet.self, MetaDelete.self, MetaCheckpoints.self])
}

struct MetaCheckpoints: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoints",
        abstract: "List the import checkpoints a store keeps (lade run's, one per entity and source).",
        discussion: """
            One line per checkpoint: entity, state (complete, or partial: a later run resumes \
            it), rows committed, when it was last written, and the source path. Finished \
            checkpoints beyond the job's 'checkpoints: { keep: N, maxAgeDays: D }' (default: the \
            newest 30 per entity) are dropped when a run commits; delete one by hand with \
            lade meta delete STORE 'lade.import:ENTITY:PATH' to import that source again.

            Exit codes: 0 listed (also when there are none); 1 no store or not a store; 64 usage error.
            """)

    @Argument(help: ArgumentHelp("The store file (SQLite, XML or binary) or PostgreSQL URL.", valueName: "STORE"))
    var store: String

    @Flag(help: "Print a JSON array.")
    var json = false

    func validate() throws { try StoreArgument.refusePassword(store) }

    func run() throws {
        do {
            let metadata = try StoreMetadataEditor.values(at: try StoreArgument.location(store).url)
            print(json ? try CheckpointListing.json(metadata) : CheckpointListing.text(metadata), terminator: "")
        } catch {
            throw exitReporting(error)
        }
    }
}

struct MetaGet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print a store's metadata, or some of its keys.",
        discussion: """
            Prints one 'KEY = value' line per key, sorted by key: strings in double quotes, \
            numbers and booleans as they are, data as <N bytes: base64>, dates in ISO 8601, \
            arrays as (a, b) and dictionaries as {key: value; …}. With --json, one JSON object \
            (keys sorted; data as base64 strings, dates as ISO 8601 strings).

            With KEYs, only those keys are printed; if any is missing, nothing is printed and \
            lade exits 1 naming the missing keys (with --json too).

            Exit codes: 0 printed; 1 no store, not a store, or a missing key; 64 usage error.
            """)

    @Argument(help: ArgumentHelp("The store file (SQLite, XML or binary) or PostgreSQL URL.", valueName: "STORE"))
    var store: String

    @Argument(help: ArgumentHelp("Keys to print (default: all).", valueName: "KEY"))
    var keys: [String] = []

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws { try StoreArgument.refusePassword(store) }

    func run() throws {
        do {
            let metadata = try StoreMetadataEditor.values(at: try StoreArgument.location(store).url, keys: keys)
            print(json ? try StoreMetadataEditor.json(metadata) : StoreMetadataEditor.text(metadata), terminator: "")
        } catch {
            throw exitReporting(error)
        }
    }
}

struct MetaSet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set metadata keys of a store, leaving the others as they are.",
        discussion: """
            Each VALUE is a string, or with --json-values JSON: whole numbers become integers, \
            other numbers reals, true/false booleans, arrays and objects arrays and \
            dictionaries; null is refused (use lade meta delete). Writes only the metadata, \
            holding the store's lock (<STORE>.lade-lock) meanwhile.

            Exit codes: 0 set; 1 no store, not a store, or NSStoreType/NSStoreUUID (refused, \
            nothing written); 64 usage error (a bad KEY=VALUE); 75 store locked by another run.
            """)

    @Argument(help: ArgumentHelp("The store file (SQLite, XML or binary) or PostgreSQL URL.", valueName: "STORE"))
    var store: String

    @Argument(help: ArgumentHelp("Keys and their values.", valueName: "KEY=VALUE"))
    var assignments: [String]

    @Flag(name: .customLong("json-values"), help: "Read each VALUE as JSON.")
    var jsonValues = false

    func validate() throws {
        try StoreArgument.refusePassword(store)
        guard !assignments.isEmpty else { throw ValidationError("give at least one KEY=VALUE") }
        for assignment in assignments {
            do {
                _ = try StoreMetadataEditor.assignment(assignment, json: jsonValues)
            } catch {
                throw ValidationError("\(error)")
            }
        }
    }

    func run() throws {
        do {
            var values: [String: PropertyListValue] = [:]
            for assignment in assignments {
                let (key, value) = try StoreMetadataEditor.assignment(assignment, json: jsonValues)
                values[key] = value
            }
            try StoreMetadataEditor.set(values, at: try StoreArgument.location(store).url)
        } catch {
            throw exitReporting(error)
        }
    }
}

struct MetaDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete metadata keys of a store.",
        discussion: """
            All the keys must be there: if one is missing, nothing is written and lade exits 1 \
            naming it. Holds the store's lock (<STORE>.lade-lock) while writing.

            Exit codes: 0 deleted; 1 no store, not a store, a missing key, or \
            NSStoreType/NSStoreUUID (refused, nothing written); 64 usage error; 75 store \
            locked by another run.
            """)

    @Argument(help: ArgumentHelp("The store file (SQLite, XML or binary) or PostgreSQL URL.", valueName: "STORE"))
    var store: String

    @Argument(help: ArgumentHelp("Keys to delete.", valueName: "KEY"))
    var keys: [String]

    func validate() throws {
        try StoreArgument.refusePassword(store)
        guard !keys.isEmpty else { throw ValidationError("give at least one KEY") }
    }

    func run() throws {
        do {
            try StoreMetadataEditor.delete(keys, at: try StoreArgument.location(store).url)
        } catch {
            throw exitReporting(error)
        }
    }
}
