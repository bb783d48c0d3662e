import Foundation
import Lade

/// How an import run ended.
public enum ImportStatus: Sendable, Equatable {
    /// Every row was imported.
    case completed
    /// The source was read to the end; some rows were rejected (see the rejects file).
    case completedWithRejects
    /// The store says this unchanged source was imported already; nothing was done.
    case alreadyImported
    /// A signal stopped the run after a committed batch; running again resumes.
    case interrupted(signal: Int32)
    /// A row could not be imported (`policy: abort`, or more rejects than `maxErrors`); every
    /// batch before it is committed.
    case aborted(reason: String)

    public var name: String {
        switch self {
        case .completed: "completed"
        case .completedWithRejects: "completed-with-rejects"
        case .alreadyImported: "already-imported"
        case .interrupted: "interrupted"
        case .aborted: "aborted"
        }
    }
}

/// What a run did, for people and for `--report FILE` (JSON).
public struct ImportReport: Sendable {
    public var status: ImportStatus
    public var job: String
    public var source: String
    public var store: String
    public var entity: String
    /// Counts for this run only.
    public var counts: ImportCounts
    /// Source records read by this run.
    public var rows: Int64
    /// The line this run started at when it resumed an earlier one.
    public var resumedAtLine: Int?
    public var batches: Int
    /// Of `batches`, those prepared while the store finished the batch before (a PostgreSQL
    /// store's batch writer); for tests, not reported.
    package var batchesPreparedAhead = 0
    public var commits: Int
    public var resets: Int
    public var seconds: Double
    public var peakResidentBytes: Int64
    public var rejectsFile: String?
    /// The source is a stream (standard input, a pipe, a FIFO, a device): read once, it has no
    /// checkpoint to resume from, and a killed run starts over.
    public var sourceIsStream = false
    /// Which writer ran (`batch` or `objects`), and why.
    public var writer: ImportWriterChoice = .objects
    public var writerReason = ""
    /// Fetch indexes of the entity's table left out while this run loaded it and built at its
    /// last commit (the table was empty, or a killed run had left them out).
    public var deferredIndexes: [String] = []

    public var rowsPerSecond: Double { seconds > 0 ? Double(rows) / seconds : 0 }

    public func json() throws -> Data {
        var object: [String: Any] = [
            "status": status.name, "job": job, "source": source, "store": store, "entity": entity,
            "rows": rows, "inserted": counts.inserted, "updated": counts.updated, "unchanged": counts.unchanged,
            "duplicates": counts.duplicates, "existing": counts.existing, "rejected": counts.rejected,
            "unresolved": counts.unresolved, "createdDestinations": counts.createdDestinations,
            "batches": batches, "commits": commits, "resets": resets,
            "seconds": (seconds * 1000).rounded() / 1000, "rowsPerSecond": rowsPerSecond.rounded(),
            "peakRSSBytes": peakResidentBytes,
        ]
        if let resumedAtLine { object["resumedAtLine"] = resumedAtLine }
        object["resumable"] = !sourceIsStream
        object["writer"] = writer.rawValue
        object["writerReason"] = writerReason
        object["deferredIndexes"] = deferredIndexes
        if let rejectsFile { object["rejectsFile"] = rejectsFile }
        if case .aborted(let reason) = status { object["reason"] = reason }
        if case .interrupted(let signal) = status { object["signal"] = Int(signal) }
        return try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    }

    /// A few lines for a person.
    public func text() -> String {
        var lines: [String] = []
        switch status {
        case .alreadyImported:
            return "\(source) was imported into \(store) already and has not changed since; nothing to do (--force imports it again)\n"
        case .completed, .completedWithRejects: lines.append("imported \(source) into \(store) (\(entity))")
        case .interrupted: lines.append("stopped by a signal after a committed batch; run the job again to resume")
        case .aborted(let reason): lines.append("stopped: \(reason)")
        }
        if let resumedAtLine { lines.append("resumed at line \(resumedAtLine)") }
        let c = counts
        lines.append("rows \(rows): inserted \(c.inserted), updated \(c.updated), unchanged \(c.unchanged), duplicates \(c.duplicates), existing \(c.existing), rejected \(c.rejected), unresolved \(c.unresolved)"
            + (c.createdDestinations > 0 ? ", related objects created \(c.createdDestinations)" : ""))
        lines.append(String(format: "%d batches, %d commits, %d resets, %.2f s, %.0f rows/s, peak memory %.1f MiB",
                            batches, commits, resets, seconds, rowsPerSecond, Double(peakResidentBytes) / 1_048_576))
        lines.append("writer: \(writer.rawValue) (\(writerReason))")
        if !deferredIndexes.isEmpty {
            lines.append("fetch indexes built after loading: \(deferredIndexes.joined(separator: ", "))")
        }
        if c.rejected > 0, let rejectsFile { lines.append("rejected rows: \(rejectsFile)") }
        if sourceIsStream { lines.append("\(source) is a stream (standard input, a pipe or a device): it was read once and cannot be resumed; a stopped run starts over") }
        return lines.joined(separator: "\n") + "\n"
    }
}
