import Foundation
import Lade

/// `lade history`: a store's persistent history as text or JSON, the bounds users give, and
/// pruning it.
package enum HistoryListing {
    /// Deletes the transactions before `bound` (`PersistentStoreCoordinator.deleteHistory`),
    /// holding the store's lock as every command that writes a store does (`StoreLock.whileHeld`).
    package static func deleteHistory(ofStoreAt url: URL, before bound: PersistentHistory.Bound) throws -> PersistentHistory.Pruned {
        try StoreLock.whileHeld(store: url) { try PersistentStoreCoordinator.deleteHistory(ofStoreAt: url, before: bound) }
    }

    /// A bound as given on the command line: a whole number is a token (a transaction's number),
    /// anything else an ISO 8601 date (`2026-11-28`, `2026-11-28T02:00:00Z`); nil when neither.
    package static func bound(_ text: String) -> PersistentHistory.Bound? {
        if let number = Int64(text), number >= 0 { return .token(number) }
        if let date = ISO8601Date.parse(text) { return .date(date) }
        if let day = ISO8601Date.parse(text + "T00:00:00Z") { return .date(day) }
        return nil
    }

    /// One block per transaction, then one line per change:
    ///
    /// ```
    /// transaction 2  2026-11-28T02:10:04.125Z  author importer  context lade import  bundle lade  process lade  (2 changes)
    ///   insert  Feedback  445
    ///   update  Feedback  12  columns 10
    /// ```
    package static func text(_ transactions: [PersistentHistory.Transaction]) -> String {
        guard !transactions.isEmpty else { return "no transactions\n" }
        var out = ""
        for transaction in transactions {
            var line = "transaction \(transaction.number)  \(ISO8601Date.format(transaction.timestamp, fractionalSeconds: true))"
            for (label, value) in [("author", transaction.author), ("context", transaction.contextName), ("bundle", transaction.bundleID), ("process", transaction.processID)] {
                if let value { line += "  \(label) \(value)" }
            }
            out += line + "  (\(transaction.changes.count) change\(transaction.changes.count == 1 ? "" : "s"))\n"
            for change in transaction.changes {
                out += "  \(change.type)  \(change.entityName ?? "entity \(change.entityNumber)")  \(change.primaryKey)"
                if let columns = change.columns { out += "  columns \(hex(columns))" }
                out += "\n"
            }
        }
        return out
    }

    /// A JSON array of `{token, timestamp, author, bundleID, contextName, processID, changes:
    /// [{type, entity, entityNumber, key, columns}]}`, oldest first.
    package static func json(_ transactions: [PersistentHistory.Transaction]) throws -> String {
        let objects: [[String: Any]] = transactions.map { transaction in
            var object: [String: Any] = [
                "token": transaction.number, "timestamp": ISO8601Date.format(transaction.timestamp, fractionalSeconds: true),
                "changes": transaction.changes.map { change -> [String: Any] in
                    var entry: [String: Any] = ["type": change.type.description, "entityNumber": change.entityNumber, "key": change.primaryKey]
                    if let name = change.entityName { entry["entity"] = name }
                    if let columns = change.columns { entry["columns"] = hex(columns) }
                    return entry
                },
            ]
            for (key, value) in [("author", transaction.author), ("bundleID", transaction.bundleID), ("contextName", transaction.contextName), ("processID", transaction.processID)] {
                if let value { object[key] = value }
            }
            return object
        }
        let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// What a prune removed, one line.
    package static func text(_ pruned: PersistentHistory.Pruned) -> String {
        "deleted \(pruned.transactions) transaction\(pruned.transactions == 1 ? "" : "s") and \(pruned.changes) change\(pruned.changes == 1 ? "" : "s")\n"
    }

    private static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }
}
