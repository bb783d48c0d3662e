import Foundation

/// Batch inserts that stay open: any number of batches written straight to a SQLite or
/// PostgreSQL store in one transaction, committed together (with store metadata, such as an import's checkpoint,
/// in the same transaction). `lade run`'s batch writer is built on it; one
/// `BatchInsertRequest` is one batch committed at once.
///
/// A batch is an array of rows by position (the target's attributes, then its to-one
/// relationships), found by the target's key (a uniqueness constraint) and then inserted,
/// updated, left alone or refused, row by row, with no managed objects:
/// - **inserted**: no object has the key; a new row with the given values, the attributes'
///   defaults for the rest, `Z_OPT` 1, a `Z_PK` from `Z_PRIMARYKEY`.
/// - **updated** / **unchanged** (policy `.update`): the given values that differ from the
///   stored ones are written and `Z_OPT` advances (once per commit, however many rows change
///   the object, as a save advances it); when none differ nothing is written.
/// - **kept** (policy `.keep`): an object that has the key is left alone, whether it was there
///   before the session or an earlier row of the session inserted it (the first row for a key
///   wins, as in SQL's `INSERT … ON CONFLICT DO NOTHING`).
/// - **duplicate** (policy `.update`): an object an earlier row of this session inserted or
///   changed (the row is applied to it as an update).
/// - **missing** (`insertsMissing: false`, or a row that may not insert): no object has the
///   key; nothing is written.
/// - **refused**: another uniqueness constraint is broken, or a value cannot be stored exactly
///   (one the row gives, or the model's default a new row would take).
///
/// A destination whose to-many inverse gains or loses a member has its `Z_OPT` advanced once
/// at commit, as a context's save advances it, so a store written here equals one written
/// through managed objects with the same commits. Values are written as given: check them
/// with the model's rules first (`AttributeValidator`), as `lade run`'s mapper does.
///
/// ```swift
/// let session = try context.beginBatchInsert(entityName: "Product")
/// let target = try session.target(entityName: "Product", attributes: ["sku", "name"], key: ["sku"])
/// let outcomes = try session.write([.init(values: [.some(.string("A-1")), .some(.string("Bolt"))])], to: target)
/// try session.commit()
/// ```
public final class BatchInsertSession {
    /// What happens to a row whose key an existing object has (``BulkInsert/ConflictPolicy``).
    public typealias ConflictPolicy = BulkInsert.ConflictPolicy
    /// A row (``BulkInsert/Row``).
    public typealias Row = BulkInsert.Row
    /// What one row did (``BulkInsert/Outcome``).
    public typealias Outcome = BulkInsert.Outcome
    /// A batch insert cannot do this (``BulkInsert/Unsupported``).
    public typealias Unsupported = BulkInsert.Unsupported
    typealias TargetDescription = BulkInsert.TargetDescription

    /// Rows of one entity with a fixed set of attributes and to-one relationships, worked out
    /// once (statements, column positions) and used for every batch.
    public final class Target {
        let plan: any BulkInsertPlan
        init(plan: any BulkInsertPlan) { self.plan = plan }
        public var entityName: String { plan.entity }

        /// Whether most rows of the last batch written to this target were found in the store
        /// (set by every batch). Rows are then looked up before they are inserted (and a
        /// batch's rows found together), not inserted first. A new target starts with false;
        /// a writer that begins a session after another, on the same rows' source, may carry
        /// the last target's answer over, so the first batch of each commit does not guess.
        public var expectsExistingRows: Bool {
            get { plan.mostlyExisting }
            set { plan.mostlyExisting = newValue }
        }
    }

    let context: ManagedObjectContext
    let transaction: any BulkInsertTransaction

    init(context: ManagedObjectContext, transaction: any BulkInsertTransaction) {
        self.context = context
        self.transaction = transaction
    }

    /// The store the session writes to.
    public var store: PersistentStore { transaction.persistentStore }

    /// Describes rows of `entityName`: `attributes` and to-one `relationships` in row order,
    /// found by `key` (attributes among `attributes` forming a uniqueness constraint of the
    /// entity; empty: every row is a new object). Relationships whose inverse is a to-one or
    /// an ordered to-many are `Unsupported`.
    public func target(entityName: String, attributes: [String], relationships: [String] = [], key: [String],
                       onConflict policy: ConflictPolicy = .update, insertsMissing: Bool = true) throws -> Target {
        context.assertOnQueue()
        let entity = try context.model.requireEntity(entityName)
        guard !entity.isAbstract else { throw ContextError.abstractEntity(entityName) }
        let store = try context.coordinator().store(forEntity: entityName)
        guard store === transaction.persistentStore else {
            throw Unsupported(reason: "\(entityName) is kept in another store than the session's (\(transaction.persistentStore.url?.path ?? transaction.persistentStore.type))")
        }
        return Target(plan: try Self.reportingUnknownKeys {
            try transaction.plan(TargetDescription(entity: entityName, attributes: attributes, relationships: relationships,
                                                   key: key, policy: policy, insertsMissing: insertsMissing))
        })
    }

    /// Writes one batch in key order as given, in a savepoint: when `accept` says no to the
    /// outcomes, the batch is undone and nil returned.
    ///
    /// With `undoable: false` the batch is written without a savepoint, which saves SQLite a
    /// statement journal of every page the batch changes (a fifth of a large import's time,
    /// measured). Then there is nothing to undo the batch alone with: if `accept` says no or
    /// the write throws, the whole session is rolled back (everything since it began) and is
    /// over. Use it when `mayRefuse` says no more rows than `accept` allows can be refused.
    ///
    /// `whileStoreFinishes` is work of the caller's (the next batch made ready) that the store
    /// may run, at most once, on this thread, while it waits for a server to finish writing
    /// rows it has sent (PostgreSQL: the tail of a `COPY`), so the server is not idle while the
    /// caller prepares what comes next. It must not use the session or its store, and it runs
    /// before the batch's outcome is known. A store that does not wait (SQLite) never calls it.
    @discardableResult
    public func write(_ rows: [Row], to target: Target, undoable: Bool = true, accept: ([Outcome]) -> Bool = { _ in true },
                      whileStoreFinishes: (() -> Void)? = nil) throws -> [Outcome]? {
        context.assertOnQueue()
        return try transaction.write(rows, plan: target.plan, undoable: undoable, whileStoreFinishes: whileStoreFinishes, accept: accept)
    }

    /// Runs `body`, whose writes are undone together when it returns nil or throws (a
    /// savepoint; `write`s inside nest in it). With `undoable: false`, no savepoint: nil or a
    /// throw rolls the whole session back, as for `write(_:to:undoable:accept:)`.
    public func batch<T>(undoable: Bool = true, _ body: () throws -> T?) throws -> T? {
        context.assertOnQueue()
        return try transaction.savepoint(undoable: undoable, body)
    }

    /// Whether writing `rows` to `target` could end with more than `limit` of them refused or
    /// missing. It cannot when the key is the entity's only uniqueness constraint, its table
    /// holds no rows of entities outside it, and no more than `limit` rows may lack an object
    /// (a row that may not insert, or `insertsMissing: false`) or hold a value the store
    /// refuses. Then the batch can be written with `undoable: false`.
    public func mayRefuse(_ rows: [Row], to target: Target, moreThan limit: Int) -> Bool {
        context.assertOnQueue()
        return transaction.mayRefuse(rows, plan: target.plan, moreThan: limit)
    }

    /// The objects of `entityName` (and its subentities) whose `attribute` has one of `values`.
    public func objectIDs(entityName: String, attribute: String, values: [AttributeValue]) throws -> [AttributeValue: ManagedObjectID] {
        context.assertOnQueue()
        return try Self.reportingUnknownKeys { try transaction.objectIDs(entity: entityName, attribute: attribute, values: values) }
    }

    /// Runs `body`, a call into the store, reporting a name the store has no property for as
    /// a misuse of the session (`ContextError.unknownKey`), as a context reports it.
    private static func reportingUnknownKeys<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let unknown as BulkInsert.UnknownProperty {
            throw ContextError.unknownKey(entity: unknown.entity, key: unknown.name)
        }
    }

    /// Commits every batch written in one transaction, with the store metadata staged on the
    /// coordinator (`setMetadata(_:for:)`), as a save would. The session is over afterwards.
    public func commit() throws {
        context.assertOnQueue()
        try context.coordinator().withStagedMetadata(for: transaction.persistentStore) { metadata in
            try transaction.commit(metadata: metadata)
        }
    }

    /// Takes back every batch since the session began. The session is over afterwards.
    public func rollback() {
        transaction.rollback()
    }
}

extension ManagedObjectContext {
    /// Begins a batch insert session on the store that holds `entityName` (SQLite, PostgreSQL),
    /// taking its write lock until `commit` or `rollback`. See `BatchInsertSession`.
    public func beginBatchInsert(entityName: String) throws -> BatchInsertSession {
        assertOnQueue()
        _ = try requireModel().requireEntity(entityName)
        let store = try coordinator().store(forEntity: entityName)
        guard let bulk = store.bulkInserting else {
            throw BatchInsertSession.Unsupported(reason: "batch insert sessions write stores that take rows in bulk (SQLite, PostgreSQL); this store (\(store.type)) writes its whole file at each save")
        }
        return BatchInsertSession(context: self, transaction: try bulk.beginBulkInsert(authorship: historyAuthorship))
    }
}
