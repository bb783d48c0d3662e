import Foundation
import Lade
import LadePipeline

/// What to do next about a library error, in lade's own terms. The libraries state the fact
/// (what, where) and a stable code; the command line, which knows its commands and flags,
/// adds the next step from the code, so no library message names a `lade` command.
enum Hint {
    /// The hint for `error` met while running `arguments` (`CommandLine.arguments`), or nil.
    static func text(for error: LadeError, arguments: [String] = CommandLine.arguments) -> String? {
        let command = arguments.dropFirst().first ?? ""
        switch error.code {
        case "store.damaged":
            guard let store = error as? StoreError else { return nil }
            return "`lade check \(shown(store.path)) --model MODEL` lists every problem"
        case "store.modelMismatch":
            // A version the bundle lacks (`--to`, `--from`, `--model-version`) names the bundle,
            // whose message lists its versions: no other step to give.
            guard let store = error as? StoreError, !store.path.isEmpty, !isModel(store.path) else { return nil }
            // The store's own model is what reading it needs; migrate needs the bundle to go to.
            if store.storeCarriesOtherModel && command != "migrate" {
                return command == "run" || command == "seed" || command == "validate"
                    ? "leave `model:` out of the job to use the model the store carries"
                    : "run without `--model` to use the model the store carries"
            }
            if StoreLocation.isServerURL(store.path) {
                // No lade migrate: a PostgreSQL store is not migrated in place yet.
                return "`lade inspect \(shown(store.path)) --model BUNDLE` says which version wrote it"
            }
            let path = FileManager.default.fileExists(atPath: store.path) ? store.path : "STORE"
            return command == "migrate"
                ? "`lade inspect \(path) --model BUNDLE` says which version wrote the store; `--from VERSION` names it for a store that cannot tell"
                : "`lade inspect \(path) --model BUNDLE` says which version wrote it; `lade migrate \(path) --model BUNDLE` carries it to the bundle's current version"
        case "store.notFound":
            // Only for the store a reading command was given: a missing directory or predicate
            // file is also `store.notFound`, and `convert` never creates its source.
            guard let store = error as? StoreError, ["inspect", "fetch", "export", "check", "meta", "migrate"].contains(command),
                  arguments.dropFirst(2).contains(where: { sameFile($0, store.path) }) else { return nil }
            if StoreLocation.isServerURL(store.path) { return "`lade init \(shown(store.path)) --model MODEL` creates a store in that schema" }
            return "`lade init \(store.path) --model MODEL` creates a SQLite store"
        case "store.noModel":
            return command == "run" || command == "seed" || command == "validate"
                ? "name the model in the job: `model: PATH` (a .xcdatamodeld, .xcdatamodel, .momd, .mom or Lade JSON model)"
                : "name its model with `--model MODEL` (a .xcdatamodeld, .xcdatamodel, .momd, .mom or Lade JSON model)"
        case "store.readOnly":
            return "lade fetch, inspect, export, check and migrate --dry-run read it without writing"
        case "store.alreadyExists":
            // Only for a file that is there and may be replaced: not when --overwrite was given,
            // nor for a destination that is the source itself, a device, pipe or socket.
            guard command == "convert", !arguments.contains("--overwrite"), let store = error as? StoreError,
                  let source = arguments.dropFirst(2).first, !sameFile(source, store.path),
                  (try? FileManager.default.attributesOfItem(atPath: store.path)[.type] as? FileAttributeType) == .typeRegular else { return nil }
            return "`--overwrite` replaces it"
        case "migration.storeChanged":
            return "run `lade migrate` again while nothing else writes to the store"
        case "history.notTracked":
            return "`lade init NEW.sqlite --model MODEL --history` makes a store that records history; a job's `store: { history: true }` does the same for the store it creates"
        case "migration.noCurrentVersion":
            return "name the version to migrate to with `--to VERSION`"
        default:
            return nil
        }
    }

    /// A store as a command names it: a server URL in single quotes (its `?` and `&` are the
    /// shell's), a path as it is.
    private static func shown(_ store: String) -> String {
        StoreLocation.isServerURL(store) ? "'\(store)'" : store
    }

    /// Whether two paths name one file (links followed), or the same path when neither exists.
    private static func sameFile(_ a: String, _ b: String) -> Bool {
        if StoreLocation.isServerURL(a) || StoreLocation.isServerURL(b) { return a == b }
        func resolved(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path }
        return resolved(a) == resolved(b)
    }

    private static func isModel(_ path: String) -> Bool {
        ["xcdatamodeld", "xcdatamodel", "momd", "json"].contains(URL(fileURLWithPath: path).pathExtension)
    }
}
