import Foundation

/// One kind of damage found in a store: what breaks Core Data's invariants for the store's
/// model, where, how often, and the first place it was seen.
///
/// ```swift
/// for damage in try store.damage(thorough: true) { print(damage) }
/// // "ZITEM: 2 rows whose Z_ENT names no entity of the model (first: Z_PK 7, Z_ENT 99)"
/// ```
///
/// Readers never skip damage silently: what `damage(thorough: false)` finds (objects whose
/// entity is unknown, references to objects that are not there) is what a conversion or an
/// export would otherwise lose or turn into nulls, so they refuse a store that has it.
public struct StoreDamage: Sendable, Equatable, Codable, CustomStringConvertible {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// SQLite's own `PRAGMA integrity_check` found the file damaged.
        case integrity
        /// `Z_PRIMARYKEY` lacks an entity's row, or its `Z_MAX` is below a key in use (new
        /// objects would take keys that are already taken).
        case keyCounter
        /// Rows whose `Z_ENT` names no entity of the model (or an abstract one).
        case unknownEntity
        /// Values a column holds that cannot stand for the attribute's type.
        case wrongType
        /// Required attributes without a value.
        case requiredMissing
        /// To-one references to objects that are not in the store.
        case danglingReference
        /// Join-table rows (many-to-many links) naming an object that is not in the store.
        case danglingLink
        /// Objects sharing the values of a uniqueness constraint.
        case notUnique
        /// A relationship whose inverse does not point back.
        case inverseMismatch
        /// An index of the model's layout that a SQLite file lacks. `lade run` leaves a
        /// table's fetch indexes out while it loads the table and builds them at its last
        /// commit: a run killed before that leaves them missing (the next run builds them).
        /// The store's answers are the same without them, only slower.
        case missingIndex
        /// Derived attributes (`relationship.@count`) whose stored value is not what they
        /// derive from: Core Data's triggers keep them, so a write that got past them (or set
        /// one from a source) left it wrong, and every reader takes it as the truth.
        case derivedValue
        /// A table of the model's layout (an entity hierarchy's `Z<ENTITY>`, a many-to-many
        /// join table) that the store lacks: the objects it would hold cannot be read or written.
        case missingTable
        /// Columns of the model's layout that a table of the store lacks.
        case missingColumn
        /// A store that keeps persistent history lacks some of its tables (`ATRANSACTION`,
        /// `ACHANGE`, `ATRANSACTIONSTRING`): its writes would go unrecorded.
        case historyTables
        /// Values of an attribute kept as external binary data whose file (in the store's
        /// `.<name>_SUPPORT/_EXTERNAL_DATA` folder) is not there or cannot be read: the store
        /// was moved or copied without its folder.
        case missingExternalFile
        /// Files in a SQLite store's `_EXTERNAL_DATA` folder that no row names (a run killed
        /// between writing a file and committing, or after a commit and before removing a
        /// replaced value's file); `lade check --repair` removes them.
        case orphanExternalFile
    }

    public let kind: Kind
    /// Where: a table, `Entity.property`, or a join table.
    public let place: String
    /// How many rows, values or links.
    public let count: Int
    /// The first one seen, as a user finds it again (`Z_PK 7, Z_ENT 99`).
    public let example: String
    /// What is wrong, in words, without the count.
    public let problem: String

    package init(_ kind: Kind, place: String, count: Int, example: String, problem: String) {
        self.kind = kind
        self.place = place
        self.count = count
        self.example = example
        self.problem = problem
    }

    public var description: String {
        "\(place): \(count) \(problem) (first: \(example))"
    }

    /// One line for an error message that refuses a damaged store.
    package static func summary(_ damage: [StoreDamage], path: String) -> String {
        let shown = damage.prefix(3).map(\.description).joined(separator: "; ")
        let more = damage.count > 3 ? "; and \(damage.count - 3) more" : ""
        return "the store is damaged: \(shown)\(more)"
    }
}

extension StoreError {
    /// A store whose contents break Core Data's invariants, refused rather than read with
    /// the damage skipped or turned into nulls.
    package static func damaged(_ damage: [StoreDamage], path: String) -> StoreError {
        StoreError(.damaged(damage), path: path, StoreDamage.summary(damage, path: path))
    }
}
