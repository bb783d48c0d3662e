import Foundation
import Lade

/// How a seed run (or check) ended.
public enum SeedStatus: Sendable, Equatable {
    /// This run inserted the seed's data and set its flag, in one commit.
    case seeded
    /// The store carries the flag already; nothing was changed.
    case alreadySeeded
    /// `--check` only: the store lacks the flag, or there is no store.
    case notSeeded
    /// A signal stopped the run before its commit: nothing was written; running again seeds.
    case interrupted(signal: Int32)
    /// A row was rejected, or the commit was refused: nothing was written.
    case aborted(reason: String)

    public var name: String {
        switch self {
        case .seeded: "seeded"
        case .alreadySeeded: "already-seeded"
        case .notSeeded: "not-seeded"
        case .interrupted: "interrupted"
        case .aborted: "aborted"
        }
    }
}

/// What a seed run did, for people and for `--report FILE` (JSON).
public struct SeedReport: Sendable {
    public var status: SeedStatus
    public var job: String
    public var store: String
    public var flag: String
    /// Whether the run was `--check` (it only read the store's metadata).
    public var checkOnly: Bool
    /// Whether this run created the store (it is removed again when the seed is not committed).
    public var storeCreated: Bool
    /// The store file exists (for `--check`).
    public var storeExists: Bool
    /// What each step did (this run's; empty when nothing was run).
    public var steps: [SeedFlag.Step]
    /// The flag's value in the store: the one this run wrote, or the one it found.
    public var flagValue: PropertyListValue?
    public var seconds: Double
    public var peakResidentBytes: Int64
    /// How the rows were written (as `lade run`'s report says), and why; nil when nothing ran.
    public var writer: ImportWriterChoice?
    public var writerReason: String?

    /// The flag's value, when `lade seed` wrote it.
    public var seedFlag: SeedFlag? { SeedFlag(flagValue) }

    public func json() throws -> Data {
        var object: [String: Any] = [
            "status": status.name, "job": job, "store": store, "flag": flag, "check": checkOnly,
            "storeCreated": storeCreated, "seconds": (seconds * 1000).rounded() / 1000, "peakRSSBytes": peakResidentBytes,
            "steps": steps.map { step -> [String: Any] in
                ["entity": step.entity, "source": step.source, "rows": step.rows, "inserted": step.inserted, "updated": step.updated,
                 "unchanged": step.unchanged, "createdDestinations": step.createdDestinations, "unresolved": step.unresolved]
            },
        ]
        if let seeded = seedFlag {
            object["seededAt"] = ISO8601Date.format(seeded.seededAt)
            object["seededBy"] = seeded.job
        }
        if let writer {
            object["writer"] = writer.rawValue
            object["writerReason"] = writerReason ?? ""
        }
        if case .aborted(let reason) = status { object["reason"] = reason }
        if case .interrupted(let signal) = status { object["signal"] = Int(signal) }
        return try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    }

    /// A few lines for a person.
    public func text() -> String {
        let when = seedFlag.map { " on \(ISO8601Date.format($0.seededAt)) by \($0.job)" } ?? ""
        switch status {
        case .alreadySeeded where checkOnly:
            return "\(store) is seeded: it carries \(flag)\(when)\n"
        case .alreadySeeded:
            return "\(store) is already seeded (\(flag)\(when)); nothing to do\n"
        case .notSeeded:
            return storeExists ? "\(store) is not seeded: its metadata has no \(flag)\n" : "\(store) is not seeded: there is no store\n"
        case .interrupted:
            return "stopped by a signal before the commit: nothing was written\(storeCreated ? " (the new store was removed)" : ""); run the job again to seed\n"
        case .aborted(let reason):
            return "not seeded: \(reason)\nnothing was written\(storeCreated ? " (the new store was removed)" : "")\n"
        case .seeded:
            var lines = ["seeded \(store)\(storeCreated ? " (created)" : "") and set \(flag), in one commit"]
            for (number, step) in steps.enumerated() {
                lines.append("step \(number + 1): \(step.source) → \(step.entity): rows \(step.rows), inserted \(step.inserted), updated \(step.updated), unchanged \(step.unchanged)"
                    + (step.createdDestinations > 0 ? ", related objects created \(step.createdDestinations)" : "")
                    + (step.unresolved > 0 ? ", unresolved \(step.unresolved)" : ""))
            }
            lines.append(String(format: "%.2f s, peak memory %.1f MiB", seconds, Double(peakResidentBytes) / 1_048_576))
            return lines.joined(separator: "\n") + "\n"
        }
    }
}
