import Foundation

/// The values a bulk insert exchanges with a store (`BulkInserting`): the rows given, what each
/// did, the policy for a key an object has, and what a store cannot do in bulk. Users meet them
/// as `BatchInsertSession.Row`, `.Outcome`, `.ConflictPolicy` and `.Unsupported`; they are
/// declared here so that a store answers without knowing the context's session.
public enum BulkInsert {
    /// What happens to a row whose key an existing object has.
    public enum ConflictPolicy: Sendable, Equatable {
        /// The row's given values are set (an import's upsert); nothing is written when they
        /// equal the stored ones.
        case update
        /// The object is left as it is, also when an earlier row of the session inserted it (an
        /// import's `mode: insert`).
        case keep
    }

    /// A row: per target attribute, `.none` for not given (a new object takes the default,
    /// an existing one keeps its value) or the value (nil clears); per target to-one
    /// relationship, the same with the destination's ID.
    public struct Row: Sendable {
        public var values: [AttributeValue??] {
            didSet { findRefusals() }
        }
        public var destinations: [ManagedObjectID??]
        /// False: the row may only change an existing object (it lacks what a new one needs);
        /// when none has its key the outcome is `.missing`.
        public var mayInsert: Bool
        /// The first given value a SQLite store cannot keep exactly (its position, and why: a
        /// Decimal, `SQLiteValueCoding.refusal`), and the first a PostgreSQL store cannot (text
        /// with NUL, `PostgreSQLValueCoding.refusal`): found in one pass when the values are
        /// set, since `mayRefuse` and `write` both ask for every row.
        private(set) var sqliteRefusal: (position: Int, reason: String)?
        private(set) var postgreSQLRefusal: (position: Int, reason: String)?

        public init(values: [AttributeValue??], destinations: [ManagedObjectID??] = [], mayInsert: Bool = true) {
            self.values = values
            self.destinations = destinations
            self.mayInsert = mayInsert
            findRefusals()
        }

        private mutating func findRefusals() {
            sqliteRefusal = nil
            postgreSQLRefusal = nil
            for index in values.indices {
                guard case .some(.some(let given)) = values[index] else { continue }
                switch given {
                case .decimal, .double, .float:
                    if sqliteRefusal == nil, let reason = SQLiteValueCoding.refusal(given) { sqliteRefusal = (index, reason) }
                case .string:
                    if postgreSQLRefusal == nil, let reason = PostgreSQLValueCoding.refusal(given) { postgreSQLRefusal = (index, reason) }
                default:
                    break
                }
            }
        }
    }

    /// What one row did.
    public enum Outcome: Sendable, Equatable {
        case inserted(ManagedObjectID)
        case updated(ManagedObjectID)
        case unchanged(ManagedObjectID)
        case duplicate(ManagedObjectID)
        case kept(ManagedObjectID)
        case missing
        case refused(property: String, message: String, value: String?)
    }

    /// A batch insert cannot do this (the object path can).
    public struct Unsupported: LadeError, CustomStringConvertible {
        public let reason: String
        public var code: String { "batch-insert-unsupported" }
        public var description: String { reason }
    }

    /// A name given for a target that is not a stored attribute or to-one relationship of its
    /// entity: the store's word for it, which `BatchInsertSession` reports to its user as
    /// `ContextError.unknownKey`.
    struct UnknownProperty: Error {
        let entity: String
        let name: String
    }

    /// The rows a target takes: `attributes` and to-one `relationships` in row order, found by
    /// `key`; what the store works out once for it is its `BulkInsertPlan`.
    struct TargetDescription: Sendable {
        let entity: String
        let attributes: [String]
        let relationships: [String]
        let key: [String]
        let policy: ConflictPolicy
        let insertsMissing: Bool
    }
}
