import Foundation

/// Who a commit is recorded as in a store's persistent history: Core Data's
/// `NSPersistentHistoryTransaction.author` and `.contextName`, set from the context's
/// `transactionAuthor` and `name` (a job's `transactionAuthor`). The bundle and process are the
/// running program's (`PersistentHistory.bundleID`, `.processID`). docs/history.md says what
/// each write records.
public struct HistoryAuthorship: Sendable, Equatable {
    public var author: String?
    public var contextName: String?

    public init(author: String? = nil, contextName: String? = nil) {
        self.author = author
        self.contextName = contextName
    }
}

/// Persistent history as Core Data keeps it in a SQLite store (the only store type that has it
/// in Core Data; Lade keeps it in the same tables in a PostgreSQL store too): what was
/// committed, when, by whom, and which objects it changed.
public enum PersistentHistory {
    /// What a change did to its object (`NSPersistentHistoryChangeType`).
    public enum ChangeType: Int, Sendable, Codable, CustomStringConvertible {
        case insert = 0
        case update = 1
        case delete = 2

        public var description: String {
            switch self {
            case .insert: "insert"
            case .update: "update"
            case .delete: "delete"
            }
        }
    }

    /// One changed object of a transaction (`NSPersistentHistoryChange`).
    public struct Change: Sendable, Equatable {
        /// `ACHANGE.Z_PK`.
        public var number: Int64
        public var type: ChangeType
        /// The entity by its `Z_ENT` and its name in `Z_PRIMARYKEY` (nil for a number the store
        /// does not list).
        public var entityNumber: Int64
        public var entityName: String?
        /// The object's `Z_PK`.
        public var primaryKey: Int64
        /// An update's `ZCOLUMNS` as stored: a bitmap of its changed properties (docs/history.md);
        /// nil when none was recorded (inserts, deletes).
        public var columns: Data?
    }

    /// One commit (`NSPersistentHistoryTransaction`); `number` is its token.
    public struct Transaction: Sendable, Equatable {
        /// `ATRANSACTION.Z_PK`: the history token Core Data hands out for it.
        public var number: Int64
        public var timestamp: Date
        public var author: String?
        public var bundleID: String?
        public var contextName: String?
        public var processID: String?
        public var changes: [Change]
    }

    /// Where a listing starts or a prune ends: a transaction's token (its number) or a date.
    public enum Bound: Sendable, Equatable {
        case token(Int64)
        case date(Date)
    }

    /// What a prune removed. The strings transactions name (`ATRANSACTIONSTRING`) are kept,
    /// as Core Data keeps them.
    public struct Pruned: Sendable, Equatable {
        public var transactions: Int
        public var changes: Int
    }

    /// Written as the bundle of every transaction Lade records: the main bundle's identifier,
    /// or, where there is none (a command-line tool, Linux), the process name (`lade`).
    public static var bundleID: String { Bundle.main.bundleIdentifier ?? processID }
    /// Written as the process of every transaction Lade records: the process name, as Core Data
    /// writes it (`xctest` in the evidence, not a number).
    public static var processID: String { ProcessInfo.processInfo.processName }
}

/// A history request that cannot be carried out.
public struct HistoryError: LadeError, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The store has no history tables (it was not made with history tracking).
        case notTracked
        /// The store type keeps no history (XML, binary, in-memory: Core Data's too).
        case unsupportedStoreType
    }

    public let kind: Kind
    public let path: String
    public let message: String

    package init(_ kind: Kind, path: String, _ message: String) {
        self.kind = kind
        self.path = path
        self.message = message
    }

    public var code: String {
        switch kind {
        case .notTracked: "history.notTracked"
        case .unsupportedStoreType: "history.unsupportedStoreType"
        }
    }

    public var description: String { "\(path): \(message)" }
}
