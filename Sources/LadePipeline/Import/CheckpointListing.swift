import Foundation
import Lade

/// `lade meta checkpoints`: the import checkpoints a store's metadata holds, one line each.
package enum CheckpointListing {
    /// A table, oldest first per entity:
    ///
    /// ```
    /// ENTITY   STATE     ROWS  UPDATED               SOURCE
    /// Product  complete  3000  2026-11-24T02:30:12Z  /srv/feeds/products-2026-11-24.csv
    /// ```
    package static func text(_ metadata: [String: PropertyListValue]) -> String {
        let entries = Checkpoint.all(in: metadata)
        guard !entries.isEmpty else { return "no import checkpoints\n" }
        let rows = [["ENTITY", "STATE", "ROWS", "UPDATED", "SOURCE"]] + entries.map {
            [$0.entity, $0.checkpoint.complete ? "complete" : "partial", String($0.checkpoint.resume.recordIndex),
             ISO8601Date.format($0.checkpoint.updatedAt), $0.source]
        }
        let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            (0..<4).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ") + "  " + row[4]
        }.joined(separator: "\n") + "\n"
    }

    /// A JSON array of `{entity, source, key, complete, rows, line, updatedAt}`, in the order of `text`.
    package static func json(_ metadata: [String: PropertyListValue]) throws -> String {
        let objects: [[String: Any]] = Checkpoint.all(in: metadata).map {
            ["entity": $0.entity, "source": $0.source, "key": $0.key, "complete": $0.checkpoint.complete,
             "rows": $0.checkpoint.resume.recordIndex, "line": $0.checkpoint.resume.line,
             "updatedAt": ISO8601Date.format($0.checkpoint.updatedAt)]
        }
        let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
