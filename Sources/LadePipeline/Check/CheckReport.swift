import Foundation
import Lade

/// `lade check`: what a thorough check of a store found (SQLite's integrity check and Core
/// Data's invariants: `PersistentStore.damage(thorough:)`), for people or as JSON
/// (`{"store", "damaged", "problems": [{kind, place, count, example, problem}]}`).
///
/// ```swift
/// let report = try CheckReport(checkingStoreAt: url, model: model)
/// print(report.text(), terminator: "")    // "catalog.sqlite: no damage found"
/// report.damaged                          // false
/// ```
public struct CheckReport: Encodable, Sendable, Equatable {
    /// The store's path as the user gave it.
    public let store: String
    public let damaged: Bool
    public let problems: [StoreDamage]
    /// The files a repair removed before the check (`repair(storeAt:model:)`); nil when none was asked.
    public var removedFiles: [String]?

    package init(store: String, problems: [StoreDamage]) {
        self.store = store
        self.damaged = !problems.isEmpty
        self.problems = problems
    }

    /// Opens the store at `url` read-only (its type detected from the file) and checks it
    /// thoroughly. A store too damaged to open is the answer (`store.damaged` from opening is
    /// reported, not thrown); any other failure to open it is thrown. `path` names the store
    /// in the report (default: `url.path`).
    public init(checkingStoreAt url: URL, model: ManagedObjectModel, path: String? = nil) throws {
        let problems: [StoreDamage]
        do {
            problems = try ReadOnlyStore.open(url, model: model).damage(thorough: true)
        } catch let error as StoreError {
            guard case .damaged(let found) = error.kind else { throw error }
            problems = found
        }
        self.init(store: path ?? StoreLocation.displayName(of: url), problems: problems)
    }

    /// Removes what can go without losing data: the external binary data files of a SQLite
    /// store that no row names (left by a run killed while writing them), with the store's
    /// write lock held. Returns their names; none for other store types.
    public static func repair(storeAt url: URL, model: ManagedObjectModel) throws -> [String] {
        guard url.isFileURL, (try? StoreType(detectingFileAt: url)) == .sqlite else { return [] }
        return try SQLiteStore(url: url, model: model).removeOrphanExternalFiles()
    }

    /// "STORE: no damage found", or "STORE: damaged (N problems)" and one line per problem.
    public func text() -> String {
        let removed = removedFiles.map { names in
            "\(store): removed \(names.count) external binary data file\(names.count == 1 ? "" : "s") that no row named\n"
        } ?? ""
        guard damaged else { return removed + "\(store): no damage found\n" }
        var out = [removed + "\(store): damaged (\(problems.count) problem\(problems.count == 1 ? "" : "s"))"]
        for item in problems { out.append("  \(item.kind.rawValue): \(item)") }
        return out.joined(separator: "\n") + "\n"
    }

    /// One line of JSON, keys sorted.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}
