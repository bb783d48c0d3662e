import ArgumentParser
import Foundation
import Lade
import LadePipeline

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List or prune a SQLite or PostgreSQL store's persistent history (no model needed).",
        discussion: """
            Stores made with persistent history tracking (Core Data's NSPersistentHistoryTrackingKey, \
            lade init --history, a job's store: { history: true }) record each commit: a \
            transaction (token, time, author, context, bundle, process) and its changes (insert, \
            update, delete; entity; key). Lade records history in every write to such a store; \
            see docs/history.md.

            Examples:
              lade history App.sqlite
              lade history App.sqlite --after 41 --json          # after token 41
              lade history App.sqlite --after 2026-11-28T02:00:00Z
              lade history delete App.sqlite --before 41         # prune older transactions
              lade history 'postgresql://app@db/catalog?schema=feed' --after 41

            Exit codes: 0 done; 1 no store, not a store, or no history tables; 64 usage error.
            """,
        subcommands: [HistoryList.self, HistoryDelete.self],
        defaultSubcommand: HistoryList.self)
}

/// A token or an ISO 8601 date, as `--after` and `--before` take them. Both options read the
/// next argument as their value even when it starts with `-`, so `--before -1` is refused for
/// what it says, not as a missing value.
private func parseBound(_ text: String, option: String) throws -> PersistentHistory.Bound {
    if let number = Int64(text), number < 0 {
        throw ValidationError("\(option) takes a transaction token (a whole number, 0 or more: the first transaction's is 1) or an ISO 8601 date, not '\(text)': a negative token names no transaction; see the tokens with lade history STORE")
    }
    guard let bound = HistoryListing.bound(text) else {
        throw ValidationError("\(option) takes a transaction token (a whole number) or an ISO 8601 date, not '\(text)'")
    }
    return bound
}

struct HistoryList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the transactions (after a token or date) and their changes.")

    @Argument(help: ArgumentHelp("The SQLite store file, or a PostgreSQL store URL.", valueName: "STORE"))
    var store: String

    @Option(parsing: .unconditional, help: ArgumentHelp("Only transactions after this token (a number) or date (ISO 8601).", valueName: "TOKEN|DATE"))
    var after: String?

    @Flag(help: "Print a JSON array.")
    var json = false

    func validate() throws {
        try StoreArgument.refusePassword(store)
        if let after { _ = try parseBound(after, option: "--after") }
    }

    func run() throws {
        try reportingFailures {
            let transactions = try PersistentStoreCoordinator.history(ofStoreAt: try StoreArgument.location(store).url, after: try after.map { try parseBound($0, option: "--after") })
            print(json ? try HistoryListing.json(transactions) : HistoryListing.text(transactions), terminator: "")
        }
    }
}

struct HistoryDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete the transactions before a token or date, with their changes.",
        discussion: """
            As Core Data's NSPersistentHistoryChangeRequest.deleteHistory(before:): transactions \
            older than the token's (a smaller token) or the date are deleted with their changes, \
            in one transaction; the strings they named (authors, bundles, …) stay. On a store \
            file it takes the store's lock: while another run writes the store, it exits 75.
            """)

    @Argument(help: ArgumentHelp("The SQLite store file, or a PostgreSQL store URL.", valueName: "STORE"))
    var store: String

    @Option(parsing: .unconditional, help: ArgumentHelp("Delete transactions before this token (a number) or date (ISO 8601).", valueName: "TOKEN|DATE"))
    var before: String

    func validate() throws {
        try StoreArgument.refusePassword(store)
        _ = try parseBound(before, option: "--before")
    }

    func run() throws {
        try reportingFailures {
            let pruned = try HistoryListing.deleteHistory(ofStoreAt: try StoreArgument.location(store).url, before: try parseBound(before, option: "--before"))
            print(HistoryListing.text(pruned), terminator: "")
        }
    }
}
