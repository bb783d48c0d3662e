import Foundation

/// The PostgreSQL side of a `BatchInsertSession`, with the SQLite one's outcomes
/// (`SQLiteBatchInsertTransaction`): one transaction on the store's connection from begin to
/// commit, each batch in a savepoint, and per batch a fixed number of statements whatever its
/// size:
/// 1. the batch's keys `COPY`ed into a temporary table and their stored rows read by one join;
/// 2. each row's outcome decided in Swift, in order, against those rows as the rows before it
///    left them (so a second row of one key sees the first's effect);
/// 3. the net result written: new rows `COPY`ed into a temporary table and inserted by one
///    `INSERT … SELECT … ON CONFLICT (key) DO UPDATE` (a row another writer inserted meanwhile
///    is updated instead, and counted as updated: the database decides between writers, the
///    last write wins, `Z_OPT` advances), changed rows by one `UPDATE … FROM` a temporary table
///    whose mask keeps the columns a row did not change.
///
/// A batch that breaks another uniqueness constraint is written again row by row, each row in
/// a savepoint, to refuse the rows that break it (as `PostgreSQLStore.save` names them); a
/// batch that meets a deadlock with another writer is written again (after the savepoint it
/// was in is rolled back, so the other writer has gone on). Keys come from the store's key
/// blocks (`takeKeys`), committed at once, so concurrent writers never collide on `Z_PK`.
final class PostgreSQLBatchInsertTransaction {
    let store: PostgreSQLStore
    private var open = true
    /// Per root entity number: rows this transaction inserted, and existing rows its rows found
    /// (a second row for one is a duplicate).
    private var inserted: [Int64: PrimaryKeySet] = [:]
    private var touched: [Int64: PrimaryKeySet] = [:]
    /// Per root entity number: existing rows this transaction updated (their `Z_OPT` advanced
    /// once, as a save advances it).
    private var updated: [Int64: PrimaryKeySet] = [:]
    /// Destinations whose to-many inverse gained or lost a member (`Z_OPT` advanced at commit).
    private var inverseChanged: [Int64: Set<Int64>] = [:]
    /// What was added to the sets above, so a savepoint undone takes its additions back.
    private var log: [(set: LoggedSet, root: Int64, key: Int64)] = []
    private enum LoggedSet { case inserted, touched, updated, inverse }
    /// Temporary tables made in this transaction (a savepoint undone takes those it made).
    private var tables: Set<String> = []
    /// Keys handed out, in order, so a batch undone gives its keys back to the store's block.
    private var keysTaken: [(root: Int64, keys: ClosedRange<Int64>)] = []
    private var depth = 0
    private var plansMade = 0
    /// What the caller of the `write` under way does while the server finishes a `COPY` of its
    /// rows (`whileStoreFinishes`); taken by the first such wait.
    private var serverWork: (() -> Void)?
    /// How often a batch that met a deadlock or serialization failure is written again: a
    /// deadlock within one batch's statements goes away; one with rows an earlier batch of this
    /// transaction holds does not (they are held until commit), so the batch fails soon.
    static let retries = 3

    init(store: PostgreSQLStore) throws {
        guard !store.isReadOnly else { throw StoreError(.readOnly, path: store.location.redacted, "the store was opened read-only") }
        try store.withConnection { connection in
            guard store.heldSaves == nil, !store.bulkInsertOpen else {
                throw StoreError(.transactionOpen, path: store.location.redacted, "a store transaction (saves held for one commit) or a batch insert session is open on this store: commit or roll it back before a batch insert session begins")
            }
            try connection.execute("BEGIN")
            store.bulkInsertOpen = true
        }
        self.store = store
    }

    deinit { rollback() }

    // MARK: Targets

    /// What `write` needs for one target, worked out once.
    final class Plan: BulkInsertPlan {
        let columns: BulkInsert.TargetColumns
        var entity: String { columns.entity }
        let attributeNames: [String]
        let policy: BulkInsert.ConflictPolicy
        let insertsMissing: Bool
        var mostlyExisting = false
        /// Per write-plan column, the value a new row takes where the target does not set it.
        let defaultRow: [PostgreSQLValue]
        /// Per target attribute, and per to-one, the write-plan column it fills.
        let attributeColumn: [Int]
        let toOneColumn: [Int]
        let toOneEntityColumn: [Int?]
        /// Temporary tables: the batch's keys, its new rows, its changed rows.
        let keysTable: String
        let newTable: String
        let changedTable: String
        /// The entity's table after the store's schema.
        let table: String

        init(columns: BulkInsert.TargetColumns, target: BulkInsert.TargetDescription, defaultRow: [PostgreSQLValue], number: Int, prefix: String) {
            self.columns = columns
            attributeNames = target.attributes
            policy = target.policy
            insertsMissing = target.insertsMissing
            self.defaultRow = defaultRow
            var attributeColumn = [Int](repeating: 0, count: target.attributes.count)
            var toOneColumn = [Int](repeating: 0, count: target.relationships.count)
            var toOneEntityColumn = [Int?](repeating: nil, count: target.relationships.count)
            for (index, source) in columns.sources.enumerated() {
                switch source {
                case .attribute(let position?, _): attributeColumn[position] = index
                case .toOne(let position?): toOneColumn[position] = index
                case .toOneEntity(let position?): toOneEntityColumn[position] = index
                default: break
                }
            }
            self.attributeColumn = attributeColumn
            self.toOneColumn = toOneColumn
            self.toOneEntityColumn = toOneEntityColumn
            keysTable = "pg_temp.lade_bulk_keys_\(number)"
            newTable = "pg_temp.lade_bulk_new_\(number)"
            changedTable = "pg_temp.lade_bulk_changed_\(number)"
            table = prefix + postgreSQLQuoted(columns.table)
        }

        var fieldCount: Int { attributeNames.count + columns.toOneColumns.count }

        /// The default a new row for `row` would take and the store cannot keep, if any.
        func refusedDefault(for row: BulkInsert.Row) -> (name: String, reason: String, value: String)? {
            for refused in columns.refusedDefaults {
                if let position = refused.position, case .some = row.values[position] { continue }
                return (refused.name, refused.reason, refused.value)
            }
            return nil
        }
    }

    func plan(_ target: BulkInsert.TargetDescription) throws -> Plan {
        try requireOpen()
        let columns = try BulkInsert.TargetColumns.resolve(target, model: store.model, schema: store.schema, writePlans: store.writePlans, refusal: PostgreSQLValueCoding.refusal)
        let layout = columns.write.layout
        let defaults = columns.sources.map { source -> PostgreSQLValue in
            guard case .attribute(_, let index) = source else { return .null }
            return PostgreSQLValueCoding.encode(layout.defaultValues[index])
        }
        plansMade += 1
        return Plan(columns: columns, target: target, defaultRow: defaults, number: plansMade, prefix: store.prefix)
    }

    /// Makes the plan's temporary tables, once per transaction, typed as the table's columns.
    private func makeTables(_ plan: Plan, _ connection: PostgreSQLConnection) throws {
        guard !tables.contains(plan.keysTable) else { return }
        let columns = plan.columns
        func select(_ list: [String]) -> String { list.joined(separator: ", ") }
        let keys = columns.keyColumns.map { "t.\(postgreSQLQuoted($0))" }
        try connection.execute("CREATE TEMPORARY TABLE \(plan.keysTable) ON COMMIT DROP AS SELECT 0::bigint AS lade_ord\(keys.isEmpty ? "" : ", " + select(keys)) FROM \(plan.table) t WITH NO DATA")
        let written = columns.write.columns.map { "t.\(postgreSQLQuoted($0.name))" }
        try connection.execute("CREATE TEMPORARY TABLE \(plan.newTable) ON COMMIT DROP AS SELECT t.\"Z_PK\", t.\"Z_ENT\", t.\"Z_OPT\"\(written.isEmpty ? "" : ", " + select(written)), ''::text AS lade_mask FROM \(plan.table) t WITH NO DATA")
        let changed = (columns.attributeColumns + columns.toOneColumns + columns.toOneEntityColumns.compactMap { $0 }).map { "t.\(postgreSQLQuoted($0))" }
        try connection.execute("CREATE TEMPORARY TABLE \(plan.changedTable) ON COMMIT DROP AS SELECT t.\"Z_PK\", t.\"Z_OPT\" AS lade_advance, ''::text AS lade_mask\(changed.isEmpty ? "" : ", " + select(changed)) FROM \(plan.table) t WITH NO DATA")
        tables.insert(plan.keysTable)
    }

    // MARK: Refusals

    /// Whether writing `rows` could end with more than `limit` of them refused or missing.
    func mayRefuse(_ rows: [BulkInsert.Row], plan: Plan, moreThan limit: Int) -> Bool {
        if rows.count <= limit { return false }
        if plan.columns.refusesAnyRow { return true }
        var possible = 0
        for row in rows {
            let mayMiss = !row.mayInsert || (!plan.columns.keyPositions.isEmpty && !plan.insertsMissing)
            if mayMiss || row.postgreSQLRefusal != nil || (!plan.columns.refusedDefaults.isEmpty && plan.refusedDefault(for: row) != nil) {
                possible += 1
                if possible > limit { return true }
            }
        }
        return false
    }

    // MARK: Writing

    func write(_ rows: [BulkInsert.Row], plan: Plan, undoable: Bool = true, whileStoreFinishes: (() -> Void)? = nil,
               accept: ([BulkInsert.Outcome]) -> Bool) throws -> [BulkInsert.Outcome]? {
        serverWork = whileStoreFinishes
        defer { serverWork = nil }
        return try savepoint(undoable: undoable) {
            try store.withConnection { connection -> [BulkInsert.Outcome]? in
                try makeTables(plan, connection)
                let outcomes = try writeBatch(rows, plan: plan, connection)
                var existing = 0
                for outcome in outcomes {
                    switch outcome {
                    case .inserted, .refused: break
                    default: existing += 1
                    }
                }
                plan.mostlyExisting = existing * 2 > rows.count
                return accept(outcomes) ? outcomes : nil
            }
        }
    }

    /// Writes one batch in a savepoint of its own, again row by row when it broke a
    /// uniqueness constraint, again whole when it met a deadlock.
    private func writeBatch(_ rows: [BulkInsert.Row], plan: Plan, _ connection: PostgreSQLConnection) throws -> [BulkInsert.Outcome] {
        let mark = log.count
        var keys = BatchKeys(root: plan.columns.rootNumber)
        defer { giveBack(&keys) }
        var rowByRow = false
        var attempts = 0
        // As SQLite's batch writer: when the last batch's rows were mostly new (a first import),
        // the rows are inserted first, straight into the table, with no lookup; a key already
        // there (ours, or another writer's) breaks its unique index, and the batch is written
        // again the usual way. Under either policy: rows inserted are the same, and a key
        // another writer has inserted but not committed makes the COPY wait for that commit as
        // it makes `ON CONFLICT` wait.
        var insertFirst = !plan.mostlyExisting && plan.insertsMissing && !plan.columns.keyPositions.isEmpty
        // Taken now: a staged store takes keys on this connection, which the COPY holds.
        if insertFirst { try takeAhead(&keys, count: rows.count) }
        while true {
            // Inserting first, the savepoint is made by the statement that starts the COPY
            // (one round trip less per batch, with the server idle); nothing before it throws.
            if !insertFirst { try connection.execute("SAVEPOINT lade_net") }
            do {
                let outcomes = try attempt(rows, plan: plan, rowByRow: rowByRow, insertFirst: insertFirst, keys: &keys, connection)
                try connection.execute("RELEASE SAVEPOINT lade_net")
                return outcomes
            } catch let error as PostgreSQLError where (error.isUniqueViolation && !rowByRow) || (error.isRetryable && attempts < Self.retries) {
                try connection.execute("ROLLBACK TO SAVEPOINT lade_net")
                try connection.execute("RELEASE SAVEPOINT lade_net")
                undoLog(to: mark)
                keys.used = 0
                if insertFirst {
                    insertFirst = false
                } else if error.isUniqueViolation {
                    rowByRow = true
                } else {
                    attempts += 1
                }
            } catch {
                if connection.isAlive {
                    _ = try? connection.execute("ROLLBACK TO SAVEPOINT lade_net")
                    _ = try? connection.execute("RELEASE SAVEPOINT lade_net")
                }
                undoLog(to: mark)
                throw error
            }
        }
    }

    /// Keys a batch hands out to its new rows: taken from the store's block as needed, the
    /// same again when the batch is written again, the unused given back at the end.
    private struct BatchKeys {
        let root: Int64
        var keys: [Int64] = []
        var used = 0
    }

    /// Takes from the store's block, now, the keys `count` more new rows would take, so none is
    /// taken while a `COPY` holds the connection (a staged store takes keys on it).
    private func takeAhead(_ keys: inout BatchKeys, count: Int) throws {
        let missing = count - (keys.keys.count - keys.used)
        guard missing > 0 else { return }
        // Called with the store's lock held (`withConnection`). A block for the next batches
        // too: a block is a round trip (on the key connection) with the server idle.
        let range = try store.takeKeys(root: keys.root, count: missing, block: missing * Self.batchesPerKeyBlock)
        keys.keys.append(contentsOf: range)
        keysTaken.append((keys.root, range))
    }

    private func nextKey(_ keys: inout BatchKeys, wanted: Int) throws -> Int64 {
        if keys.used == keys.keys.count {
            // Called with the store's lock held (`withConnection`).
            let range = try store.takeKeys(root: keys.root, count: max(1, wanted))
            keys.keys.append(contentsOf: range)
            keysTaken.append((keys.root, range))
        }
        keys.used += 1
        return keys.keys[keys.used - 1]
    }

    /// Gives the batch's unused keys back to the store's block when they are its last ones.
    private func giveBack(_ keys: inout BatchKeys) {
        guard keys.used < keys.keys.count, let last = keysTaken.last, last.root == keys.root, last.keys.upperBound == keys.keys.last else { return }
        let unused = keys.keys[keys.used]...keys.keys.last!
        guard last.keys.contains(unused.lowerBound) else { return }
        store.giveBackKeys(root: keys.root, unused)
        // The whole last block given back: it was not taken at all.
        if unused.lowerBound == last.keys.lowerBound {
            keysTaken.removeLast()
        } else {
            keysTaken[keysTaken.count - 1].keys = last.keys.lowerBound...(unused.lowerBound - 1)
        }
        keys.keys.removeLast(unused.count)
    }

    /// A stored row as the batch sees it: as found by its key, or as a row before it left it.
    private struct Current {
        let key: Int64
        let entity: Int64
        /// The target's attribute columns, and its to-one key columns.
        var values: [PostgreSQLValue]
        var destinations: [Int64?]
        /// Set when the batch inserts the row: its place among the new rows.
        var newRow: Int?
        /// Set when the batch changes the stored row: its place among the changes.
        var change: Int?
    }

    /// A row the batch inserts: its write-plan values, and which target fields a row gave.
    private struct NewRow {
        var key: Int64
        var values: [PostgreSQLValue]
        var given: [Bool]
        /// The rows whose outcome names it.
        var rows: [Int]
    }

    /// A stored row the batch changes: the target fields it changes and their values.
    private struct Change {
        let key: Int64
        var mask: [Bool]
        var values: [PostgreSQLValue]
        var destinations: [ManagedObjectID?]
        let advance: Int64
    }

    /// What one attempt at a batch works with: the stored rows of its keys as its rows leave
    /// them, what it will write, and its rows' outcomes.
    private struct Batch {
        var currents: [Current?]
        var newRows: [NewRow] = []
        var changes: [Change] = []
        var outcomes: [BulkInsert.Outcome] = []
        /// Each row's write at once, in a savepoint, so a row that breaks a uniqueness
        /// constraint is refused alone.
        let rowByRow: Bool
        /// How many rows may insert (the keys taken at once).
        let mayInsert: Int
    }

    /// One attempt at a batch: the stored rows of its keys read, outcomes decided, and the net
    /// result written (row by row: each row's write at once).
    private func attempt(_ rows: [BulkInsert.Row], plan: Plan, rowByRow: Bool, insertFirst: Bool = false, keys: inout BatchKeys, _ connection: PostgreSQLConnection) throws -> [BulkInsert.Outcome] {
        if insertFirst { return try insertingFirst(rows, plan: plan, keys: &keys, connection) }
        let refusals = rows.map(\.postgreSQLRefusal)
        let (slots, distinctKeys) = keySlots(rows, refusals: refusals, plan: plan)
        let currents = try lookup(distinctKeys, plan: plan, connection)
        var batch = Batch(currents: currents, rowByRow: rowByRow, mayInsert: rows.count - currents.reduce(0) { $0 + ($1 == nil ? 0 : 1) })
        batch.outcomes.reserveCapacity(rows.count)
        for offset in rows.indices {
            let row = rows[offset]
            let outcome: BulkInsert.Outcome
            if let (index, reason) = refusals[offset] {
                outcome = .refused(property: plan.attributeNames[index], message: reason, value: (row.values[index] ?? nil).map { "\($0)" })
            } else if let slot = slots[offset], batch.currents[slot] != nil {
                outcome = try writeFound(row, offset: offset, slot: slot, plan: plan, &batch, connection)
            } else {
                outcome = try insertMissing(row, offset: offset, slot: slots[offset], plan: plan, &batch, &keys, connection)
            }
            batch.outcomes.append(outcome)
        }
        if !rowByRow {
            try writeNew(batch.newRows, plan: plan, outcomes: &batch.outcomes, connection)
            try writeChanges(batch.changes, plan: plan, connection)
        }
        return batch.outcomes
    }

    /// Inserting first: every row taken to be new, no key looked up. Each new row is made and
    /// sent at once, in one `COPY` straight into the table, so that the server inserts rows
    /// while the next are made (a `COPY` after the whole batch was made left the server idle
    /// meanwhile, and this process idle while the server inserted). A key already stored
    /// breaks the table's unique index, and a key twice in the batch (the second row would be
    /// a duplicate or a change of the first) stops the attempt: either way the batch is
    /// written again the usual way.
    private func insertingFirst(_ rows: [BulkInsert.Row], plan: Plan, keys: inout BatchKeys, _ connection: PostgreSQLConnection) throws -> [BulkInsert.Outcome] {
        var outcomes: [BulkInsert.Outcome] = []
        outcomes.reserveCapacity(rows.count)
        // Keys by their hashes: two keys of one hash (as good as never) are taken for one key,
        // and the batch is written the usual way, which is right for any keys.
        var seen = Set<Int>(minimumCapacity: rows.count)
        var next = 0
        // A small first chunk, so the server starts on the batch at once.
        var chunk = Self.streamChunk / 16
        try streamNew(plan: plan, savepoint: "lade_net", connection) { buffer in
            defer { chunk = Self.streamChunk }
            while next < rows.count && buffer.count < chunk {
                let row = rows[next]
                if let (index, reason) = row.postgreSQLRefusal {
                    outcomes.append(.refused(property: plan.attributeNames[index], message: reason, value: (row.values[index] ?? nil).map { "\($0)" }))
                } else {
                    if let key = keyHash(of: row, plan: plan), !seen.insert(key).inserted {
                        throw PostgreSQLError(sqlState: "23505", message: "a key twice in one batch", location: store.location)
                    }
                    if let outcome = notInserted(row, plan: plan) {
                        outcomes.append(outcome)
                    } else {
                        // As insertMissing, the row encoded as it is (no NewRow made: three
                        // arrays a row, made and freed).
                        let key = try nextKey(&keys, wanted: rows.count)
                        markInserted(plan.columns.rootNumber, key)
                        markOwners(row, plan: plan)
                        encodeNew(row, key: key, plan: plan, to: &buffer)
                        outcomes.append(.inserted(objectID(plan.columns.entityNumber, key, plan)))
                    }
                }
                next += 1
            }
            return next < rows.count
        }
        return outcomes
    }

    /// Per row, its key's place among the batch's distinct keys (nil for a row with no key, or
    /// a key value not given or nil, which finds nothing); and those keys, encoded.
    private func keySlots(_ rows: [BulkInsert.Row], refusals: [(position: Int, reason: String)?], plan: Plan) -> ([Int?], [[PostgreSQLValue]]) {
        var slots = [Int?](repeating: nil, count: rows.count)
        var distinct: [[PostgreSQLValue]: Int] = [:]
        var distinctKeys: [[PostgreSQLValue]] = []
        guard !plan.columns.keyPositions.isEmpty else { return (slots, distinctKeys) }
        for offset in rows.indices where refusals[offset] == nil {
            guard let key = encodedKey(of: rows[offset], plan: plan) else { continue }
            if let slot = distinct[key] {
                slots[offset] = slot
            } else {
                slots[offset] = distinctKeys.count
                distinct[key] = distinctKeys.count
                distinctKeys.append(key)
            }
        }
        return (slots, distinctKeys)
    }

    /// The hash of the row's key values; nil when the target has no key or a key value is not
    /// given or nil (such a row finds nothing).
    private func keyHash(of row: BulkInsert.Row, plan: Plan) -> Int? {
        guard !plan.columns.keyPositions.isEmpty else { return nil }
        var hasher = Hasher()
        for position in plan.columns.keyPositions {
            guard case .some(.some(let value)) = row.values[position] else { return nil }
            hasher.combine(value)
        }
        return hasher.finalize()
    }

    /// The row's key values, encoded; nil when the target has no key or a key value is not
    /// given or nil (such a row finds nothing).
    private func encodedKey(of row: BulkInsert.Row, plan: Plan) -> [PostgreSQLValue]? {
        var key: [PostgreSQLValue] = []
        for position in plan.columns.keyPositions {
            guard case .some(.some(let value)) = row.values[position] else { return nil }
            key.append(PostgreSQLValueCoding.encode(value))
        }
        return key.isEmpty ? nil : key
    }

    private func objectID(_ entity: Int64, _ key: Int64, _ plan: Plan) -> ManagedObjectID {
        ManagedObjectID(entityName: store.schema.entityName(number: entity) ?? plan.entity, storeIdentifier: store.identifier, primaryKey: key)
    }

    /// Why a row whose key no stored row has is not inserted: missing (the target inserts no
    /// missing rows, or the row may not insert), or refused for a default the store cannot
    /// keep; nil when it is inserted.
    private func notInserted(_ row: BulkInsert.Row, plan: Plan) -> BulkInsert.Outcome? {
        let columns = plan.columns
        guard columns.keyPositions.isEmpty || plan.insertsMissing else { return .missing }
        // A new row would take a default the store cannot keep: refused where it would insert.
        let refusedDefault = columns.refusedDefaults.isEmpty ? nil : plan.refusedDefault(for: row)
        guard row.mayInsert && refusedDefault == nil else {
            guard let refusedDefault, row.mayInsert else { return .missing }
            return .refused(property: refusedDefault.name, message: refusedDefault.reason, value: refusedDefault.value)
        }
        return nil
    }

    /// A row whose key no stored row (nor a row before it) has: inserted, or missing, or
    /// refused for a default the store cannot keep.
    private func insertMissing(_ row: BulkInsert.Row, offset: Int, slot: Int?, plan: Plan, _ batch: inout Batch, _ keys: inout BatchKeys,
                               _ connection: PostgreSQLConnection) throws -> BulkInsert.Outcome {
        let columns = plan.columns
        if let outcome = notInserted(row, plan: plan) { return outcome }
        let key = try nextKey(&keys, wanted: batch.mayInsert)
        let new = newRow(row, plan: plan, key: key, offset: offset)
        if batch.rowByRow {
            switch try insertNow(new, plan: plan, connection) {
            case .refused(let outcome):
                keys.used -= 1   // the next new row takes the key, as on SQLite
                return outcome
            case .updatedInstead(let theirs, let entity):
                // Another writer inserted the key meanwhile: the row updated it.
                markTouched(columns.rootNumber, theirs)
                markUpdated(columns.rootNumber, theirs)
                if let slot { batch.currents[slot] = current(of: new, plan: plan, key: theirs, entity: entity, newRow: nil) }
                markOwners(row, plan: plan)
                return .updated(objectID(entity, theirs, plan))
            case .inserted:
                markInserted(columns.rootNumber, key)
                if let slot { batch.currents[slot] = current(of: new, plan: plan, key: key, entity: columns.entityNumber, newRow: nil) }
            }
        } else {
            markInserted(columns.rootNumber, key)
            if let slot { batch.currents[slot] = current(of: new, plan: plan, key: key, entity: columns.entityNumber, newRow: batch.newRows.count) }
            batch.newRows.append(new)
        }
        markOwners(row, plan: plan)
        return .inserted(objectID(columns.entityNumber, key, plan))
    }

    /// A row whose key a stored row (or a row before it) has: kept, unchanged, updated or a
    /// duplicate (seen before in this transaction), or refused.
    private func writeFound(_ row: BulkInsert.Row, offset: Int, slot: Int, plan: Plan, _ batch: inout Batch, _ connection: PostgreSQLConnection) throws -> BulkInsert.Outcome {
        let columns = plan.columns
        let found = batch.currents[slot]!
        guard columns.acceptedNumbers.contains(found.entity) else {
            let other = store.schema.entity(number: found.entity)?.name ?? "object of entity \(found.entity)"
            return .refused(property: columns.keyPositions.map { plan.attributeNames[$0] }.joined(separator: ", "), message: "a \(other) already has these values", value: nil)
        }
        let id = objectID(found.entity, found.key, plan)
        let seen = isInserted(columns.rootNumber, found.key) || (touched[columns.rootNumber]?.contains(found.key) ?? false)
        // Kept also when a row of this session inserted it: the first row for a key wins.
        if plan.policy == .keep {
            if let newRow = found.newRow { batch.newRows[newRow].rows.append(offset) }
            return .kept(id)
        }
        let (mask, owners) = try compare(row, with: found, plan: plan)
        guard let mask else {
            markTouched(columns.rootNumber, found.key)
            if let newRow = found.newRow { batch.newRows[newRow].rows.append(offset) }
            return seen ? .duplicate(id) : .unchanged(id)
        }
        var current = found
        if batch.rowByRow {
            if let refused = try updateNow(change(row, mask: mask, key: found.key, plan: plan), plan: plan, connection) { return refused }
        } else if let newRow = found.newRow {
            apply(row, mask: mask, to: &batch.newRows[newRow], plan: plan)
            batch.newRows[newRow].rows.append(offset)
        } else if let index = found.change {
            merge(row, mask: mask, into: &batch.changes[index], plan: plan)
        } else {
            current.change = batch.changes.count
            batch.changes.append(change(row, mask: mask, key: found.key, plan: plan))
        }
        set(row, mask: mask, on: &current, plan: plan)
        batch.currents[slot] = current
        if found.newRow == nil { markUpdated(columns.rootNumber, found.key) }
        markTouched(columns.rootNumber, found.key)
        for owner in owners { markInverseChanged(owner.root, owner.key) }
        return seen ? .duplicate(id) : .updated(id)
    }

    // MARK: Finding stored rows

    /// The stored rows of `keys` (by their place in `keys`): one `COPY` of the keys, one join.
    private func lookup(_ keys: [[PostgreSQLValue]], plan: Plan, _ connection: PostgreSQLConnection) throws -> [Current?] {
        var result = [Current?](repeating: nil, count: keys.count)
        guard !keys.isEmpty else { return result }
        let columns = plan.columns
        try connection.execute("TRUNCATE \(plan.keysTable)")
        let keyNames = columns.keyColumns.map(postgreSQLQuoted)
        try copy(into: plan.keysTable, columns: ["lade_ord"] + keyNames, count: keys.count, connection) { index, buffer in
            PostgreSQLCopyText.append(.integer(Int64(index)), to: &buffer)
            for value in keys[index] {
                buffer.append(9)
                PostgreSQLCopyText.append(value, to: &buffer)
            }
        }
        // A lookup per key through the key's unique index (LATERAL … LIMIT 1), never a scan of
        // the table: the planner knows nothing of the temporary table's rows.
        let selected = (["Z_PK", "Z_ENT"] + columns.attributeColumns + columns.toOneColumns).map { "s.\(postgreSQLQuoted($0))" }
        let matched = keyNames.map { "t.\($0) = k.\($0)" }.joined(separator: " AND ")
        let found = try connection.execute("""
            SELECT k.lade_ord, \(selected.joined(separator: ", ")) FROM \(plan.keysTable) k
            CROSS JOIN LATERAL (SELECT * FROM \(plan.table) t WHERE \(matched) LIMIT 1) s
            """)
        let attributes = columns.attributeColumns.count
        for index in 0..<found.count {
            guard let ord = found.integer(index, 0), let key = found.integer(index, 1), let entity = found.integer(index, 2) else {
                throw StoreError.damaged([StoreDamage(.unknownEntity, place: columns.table, count: 1, example: "a row with key values of this batch",
                                                      problem: "row whose Z_PK or Z_ENT is not a number")], path: store.location.redacted)
            }
            let values = (0..<attributes).map { found.value(index, 3 + $0) }
            let destinations = columns.toOneColumns.indices.map { found.integer(index, 3 + attributes + $0) }
            result[Int(ord)] = Current(key: key, entity: entity, values: values, destinations: destinations)
        }
        return result
    }

    /// Which target fields `row` changes on `current` (nil: none), and the destinations whose
    /// to-many inverse loses or gains it.
    private func compare(_ row: BulkInsert.Row, with current: Current, plan: Plan) throws -> (mask: [Bool]?, owners: [(root: Int64, key: Int64)]) {
        let columns = plan.columns
        var mask: [Bool]?
        var owners: [(root: Int64, key: Int64)] = []
        for index in row.values.indices {
            guard case .some(let given) = row.values[index] else { continue }
            let stored = current.values[index]
            if PostgreSQLValueCoding.encode(given) == stored { continue }
            let decoded: AttributeValue?
            do {
                decoded = try PostgreSQLValueCoding.decode(stored, as: columns.attributeTypes[index])
            } catch {
                throw StoreError.damaged([StoreDamage(.wrongType, place: "\(plan.entity).\(plan.attributeNames[index])", count: 1,
                                                      example: "Z_PK \(current.key) holds \(error.held) in \(columns.attributeColumns[index])",
                                                      problem: "value that cannot be \(columns.attributeTypes[index].rawValue) (the attribute's type)")], path: store.location.redacted)
            }
            if decoded == given { continue }
            if mask == nil { mask = [Bool](repeating: false, count: plan.fieldCount) }
            mask![index] = true
        }
        for (index, destination) in row.destinations.enumerated() {
            guard case .some(let given) = destination else { continue }
            let stored = current.destinations[index]
            guard stored != given?.primaryKey else { continue }
            if mask == nil { mask = [Bool](repeating: false, count: plan.fieldCount) }
            mask![row.values.count + index] = true
            if let root = columns.inverseRoots[index] {
                if let stored { owners.append((root, stored)) }
                if let key = given?.primaryKey { owners.append((root, key)) }
            }
        }
        return (mask, owners)
    }

    // MARK: Rows in memory

    private func entityNumber(_ id: ManagedObjectID?) -> PostgreSQLValue {
        guard let id, let number = store.schema.entity(named: id.entityName)?.number else { return .null }
        return .integer(number)
    }

    private func newRow(_ row: BulkInsert.Row, plan: Plan, key: Int64, offset: Int) -> NewRow {
        let values = plan.columns.sources.indices.map { newValue(row, column: $0, plan: plan) }
        var given = [Bool](repeating: false, count: plan.fieldCount)
        for (index, value) in row.values.enumerated() { if case .some = value { given[index] = true } }
        for (index, destination) in row.destinations.enumerated() { if case .some = destination { given[row.values.count + index] = true } }
        return NewRow(key: key, values: values, given: given, rows: [offset])
    }

    /// What a new row made of `row` holds in write-plan column `column`: the value the row gives
    /// (an attribute, a to-one's key or its entity number), else the column's default.
    private func newValue(_ row: BulkInsert.Row, column: Int, plan: Plan) -> PostgreSQLValue {
        switch plan.columns.sources[column] {
        case .attribute(let position?, _):
            if case .some(let value) = row.values[position] { return PostgreSQLValueCoding.encode(value) }
        case .toOne(let position?):
            if case .some(let id) = row.destinations[position] { return id?.primaryKey.map { .integer($0) } ?? .null }
        case .toOneEntity(let position?):
            if case .some(let id) = row.destinations[position] { return entityNumber(id) }
        default:
            break
        }
        return plan.defaultRow[column]
    }

    private func current(of new: NewRow, plan: Plan, key: Int64, entity: Int64, newRow: Int?) -> Current {
        Current(key: key, entity: entity, values: plan.attributeColumn.map { new.values[$0] },
                destinations: plan.toOneColumn.map { column in if case .integer(let key) = new.values[column] { key } else { nil } },
                newRow: newRow)
    }

    private func apply(_ row: BulkInsert.Row, mask: [Bool], to new: inout NewRow, plan: Plan) {
        let attributes = row.values.count
        for index in mask.indices where mask[index] {
            new.given[index] = true
            if index < attributes {
                new.values[plan.attributeColumn[index]] = PostgreSQLValueCoding.encode(row.values[index] ?? nil)
            } else {
                let id = row.destinations[index - attributes] ?? nil
                new.values[plan.toOneColumn[index - attributes]] = id?.primaryKey.map { .integer($0) } ?? .null
                if let column = plan.toOneEntityColumn[index - attributes] { new.values[column] = entityNumber(id) }
            }
        }
    }

    private func change(_ row: BulkInsert.Row, mask: [Bool], key: Int64, plan: Plan) -> Change {
        var change = Change(key: key, mask: [Bool](repeating: false, count: plan.fieldCount),
                            values: [PostgreSQLValue](repeating: .null, count: row.values.count),
                            destinations: [ManagedObjectID?](repeating: nil, count: row.destinations.count),
                            advance: hasAdvanced(plan.columns.rootNumber, key) ? 0 : 1)
        merge(row, mask: mask, into: &change, plan: plan)
        return change
    }

    private func merge(_ row: BulkInsert.Row, mask: [Bool], into change: inout Change, plan: Plan) {
        let attributes = row.values.count
        for index in mask.indices where mask[index] {
            change.mask[index] = true
            if index < attributes {
                change.values[index] = PostgreSQLValueCoding.encode(row.values[index] ?? nil)
            } else {
                change.destinations[index - attributes] = row.destinations[index - attributes] ?? nil
            }
        }
    }

    private func set(_ row: BulkInsert.Row, mask: [Bool], on current: inout Current, plan: Plan) {
        let attributes = row.values.count
        for index in mask.indices where mask[index] {
            if index < attributes {
                current.values[index] = PostgreSQLValueCoding.encode(row.values[index] ?? nil)
            } else {
                current.destinations[index - attributes] = (row.destinations[index - attributes] ?? nil)?.primaryKey
            }
        }
    }

    private func markOwners(_ row: BulkInsert.Row, plan: Plan) {
        for (index, root) in plan.columns.inverseRoots.enumerated() {
            if let root, let destination = (row.destinations[index] ?? nil)?.primaryKey { markInverseChanged(root, destination) }
        }
    }

    // MARK: Writing the net result

    private static func maskText(_ mask: [Bool]) -> String { String(mask.map { $0 ? "1" : "0" }) }

    /// `COPY`s `count` rows into `table`, each written by `row` (fields separated by tabs).
    private func copy(into table: String, columns: [String], count: Int, _ connection: PostgreSQLConnection, _ row: (Int, inout [UInt8]) -> Void) throws {
        var next = 0
        _ = try connection.copyIn("COPY \(table) (\(columns.joined(separator: ", "))) FROM STDIN") { buffer in
            while next < count && buffer.count < 1 << 20 {
                row(next, &buffer)
                buffer.append(10)
                next += 1
            }
            return next < count
        }
    }

    /// Bytes of rows handed to the server at a time while a batch streams: the server inserts
    /// them while the next are made (the batch's `COPY` overlaps making its rows, rather than
    /// following it).
    static let streamChunk = 64 << 10
    /// How many batches' new rows a key block taken for inserting first is made for.
    static let batchesPerKeyBlock = 4

    /// One `COPY` straight into the plan's table of the rows `produce` encodes (`encodeNew`)
    /// into the buffer, until it returns false: a key already there fails it with a unique
    /// violation. The savepoint is made first, in the same round trip.
    private func streamNew(plan: Plan, savepoint: String, _ connection: PostgreSQLConnection, _ produce: (inout [UInt8]) throws -> Bool) throws {
        let names = (["Z_PK", "Z_ENT", "Z_OPT"] + plan.columns.write.columns.map(\.name)).map(postgreSQLQuoted)
        let work = serverWork
        serverWork = nil
        _ = try connection.copyIn("SAVEPOINT \(savepoint); COPY \(plan.table) (\(names.joined(separator: ", "))) FROM STDIN", whileFinishing: work, produce)
    }

    /// A row inserted first as a line of `COPY`'s text format: the values `newRow` would make,
    /// written column by column with no row made.
    private func encodeNew(_ row: BulkInsert.Row, key: Int64, plan: Plan, to buffer: inout [UInt8]) {
        PostgreSQLCopyText.append(.integer(key), to: &buffer)
        buffer.append(9)
        PostgreSQLCopyText.append(.integer(plan.columns.entityNumber), to: &buffer)
        buffer.append(contentsOf: [9, UInt8(ascii: "1")])
        for column in plan.columns.sources.indices {
            buffer.append(9)
            PostgreSQLCopyText.append(newValue(row, column: column, plan: plan), to: &buffer)
        }
        buffer.append(10)
    }

    /// Inserts the batch's new rows: `COPY` then one `INSERT … SELECT … ON CONFLICT (key) DO
    /// UPDATE` per set of given fields (one, when the rows give the same attributes). A row
    /// another writer inserted meanwhile is updated instead: its rows' outcomes then name it.
    /// Under `.keep` it is left as it is (`ON CONFLICT DO NOTHING`), and its rows are kept: no
    /// change, and no row lock held to the commit, which made every other writer that met the
    /// row (several workers creating the same destinations) wait for this one's commit.
    private func writeNew(_ newRows: [NewRow], plan: Plan, outcomes: inout [BulkInsert.Outcome], _ connection: PostgreSQLConnection) throws {
        guard !newRows.isEmpty else { return }
        let columns = plan.columns
        let names = (["Z_PK", "Z_ENT", "Z_OPT"] + columns.write.columns.map(\.name)).map(postgreSQLQuoted)
        try connection.execute("TRUNCATE \(plan.newTable)")
        let rows = newRows
        let masks = rows.map { Self.maskText($0.given) }
        let entity = PostgreSQLValue.integer(columns.entityNumber)
        try copy(into: plan.newTable, columns: names + ["lade_mask"], count: rows.count, connection) { index, buffer in
            PostgreSQLCopyText.append(.integer(rows[index].key), to: &buffer)
            buffer.append(9)
            PostgreSQLCopyText.append(entity, to: &buffer)
            buffer.append(contentsOf: [9, UInt8(ascii: "1")])
            for value in rows[index].values {
                buffer.append(9)
                PostgreSQLCopyText.append(value, to: &buffer)
            }
            buffer.append(9)
            buffer.append(contentsOf: masks[index].utf8)
        }
        let list = names.joined(separator: ", ")
        guard !columns.keyColumns.isEmpty else {
            try connection.execute("INSERT INTO \(plan.table) (\(list)) SELECT \(list) FROM \(plan.newTable)")
            return
        }
        let distinctMasks = Set(masks)
        let keyList = columns.keyColumns.map(postgreSQLQuoted).joined(separator: ", ")
        let keeps = plan.policy == .keep
        var returned: [Int64] = []
        for mask in distinctMasks.sorted() {
            var assignments: [String] = []
            for (index, given) in mask.enumerated() where given == "1" {
                if index < plan.attributeNames.count {
                    guard !columns.keyPositions.contains(index) else { continue }
                    let column = postgreSQLQuoted(columns.attributeColumns[index])
                    assignments.append("\(column) = EXCLUDED.\(column)")
                } else {
                    let position = index - plan.attributeNames.count
                    for name in [columns.toOneColumns[position], columns.toOneEntityColumns[position]].compactMap({ $0 }) {
                        assignments.append("\(postgreSQLQuoted(name)) = EXCLUDED.\(postgreSQLQuoted(name))")
                    }
                }
            }
            assignments.append("\"Z_OPT\" = t.\"Z_OPT\" + 1")
            let only = distinctMasks.count > 1 ? " WHERE lade_mask = $1" : ""
            let conflict = keeps ? "DO NOTHING" : "DO UPDATE SET \(assignments.joined(separator: ", "))"
            // In the key's order, the same for every writer, so two writers of one key wait
            // for each other rather than deadlock.
            let result = try connection.execute("""
                INSERT INTO \(plan.table) AS t (\(list)) SELECT \(list) FROM \(plan.newTable)\(only) ORDER BY \(keyList)
                ON CONFLICT (\(keyList)) \(conflict) RETURNING t."Z_PK"
                """, distinctMasks.count > 1 ? [.text(mask)] : [])
            for index in 0..<result.count { if let key = result.integer(index, 0) { returned.append(key) } }
        }
        let ours = Set(rows.map(\.key))
        // Updated, a row returns the other writer's key; left alone, it returns nothing.
        guard keeps ? returned.count < rows.count : returned.contains(where: { !ours.contains($0) }) else { return }
        // Some keys were inserted by another writer meanwhile: find whose.
        let matched = columns.keyColumns.map { "t.\(postgreSQLQuoted($0)) = n.\(postgreSQLQuoted($0))" }.joined(separator: " AND ")
        let others = try connection.execute("SELECT n.\"Z_PK\", t.\"Z_PK\", t.\"Z_ENT\" FROM \(plan.newTable) n JOIN \(plan.table) t ON \(matched) WHERE t.\"Z_PK\" <> n.\"Z_PK\"")
        let byKey = Dictionary(uniqueKeysWithValues: rows.map { ($0.key, $0.rows) })
        let root = columns.rootNumber
        for index in 0..<others.count {
            guard let mine = others.integer(index, 0), let theirs = others.integer(index, 1), let number = others.integer(index, 2), let offsets = byKey[mine] else { continue }
            let theirID = ManagedObjectID(entityName: store.schema.entityName(number: number) ?? plan.entity, storeIdentifier: store.identifier, primaryKey: theirs)
            for offset in offsets {
                switch outcomes[offset] {
                case .inserted: outcomes[offset] = keeps ? .kept(theirID) : .updated(theirID)
                case .duplicate: outcomes[offset] = .duplicate(theirID)
                case .kept: outcomes[offset] = .kept(theirID)
                default: break
                }
            }
            markTouched(root, theirs)
            if !keeps { markUpdated(root, theirs) }
        }
    }

    /// Writes the batch's changed rows: `COPY` then one `UPDATE … FROM`; a column a row did
    /// not change keeps its value (the row's mask).
    private func writeChanges(_ changes: [Change], plan: Plan, _ connection: PostgreSQLConnection) throws {
        guard !changes.isEmpty else { return }
        let columns = plan.columns
        // In key order (as for new rows, so writers lock rows alike).
        let order = changes.indices.sorted { changes[$0].key < changes[$1].key }
        let attributes = plan.attributeNames.count
        let entityColumns = columns.toOneEntityColumns.compactMap { $0 }
        let names = ["\"Z_PK\"", "lade_advance", "lade_mask"] + (columns.attributeColumns + columns.toOneColumns + entityColumns).map(postgreSQLQuoted)
        try connection.execute("TRUNCATE \(plan.changedTable)")
        try copy(into: plan.changedTable, columns: names, count: order.count, connection) { index, buffer in
            let change = changes[order[index]]
            PostgreSQLCopyText.append(.integer(change.key), to: &buffer)
            buffer.append(9)
            PostgreSQLCopyText.append(.integer(change.advance), to: &buffer)
            buffer.append(9)
            buffer.append(contentsOf: Self.maskText(change.mask).utf8)
            for value in change.values {
                buffer.append(9)
                PostgreSQLCopyText.append(value, to: &buffer)
            }
            for id in change.destinations {
                buffer.append(9)
                PostgreSQLCopyText.append(id?.primaryKey.map { .integer($0) } ?? .null, to: &buffer)
            }
            for (position, column) in columns.toOneEntityColumns.enumerated() where column != nil {
                buffer.append(9)
                PostgreSQLCopyText.append(entityNumber(change.destinations[position]), to: &buffer)
            }
        }
        var assignments: [String] = []
        func assign(_ column: String, field: Int) {
            let name = postgreSQLQuoted(column)
            assignments.append("\(name) = CASE WHEN substr(c.lade_mask, \(field + 1), 1) = '1' THEN c.\(name) ELSE t.\(name) END")
        }
        for (index, column) in columns.attributeColumns.enumerated() { assign(column, field: index) }
        for (index, column) in columns.toOneColumns.enumerated() {
            assign(column, field: attributes + index)
            if let entityColumn = columns.toOneEntityColumns[index] { assign(entityColumn, field: attributes + index) }
        }
        assignments.append("\"Z_OPT\" = t.\"Z_OPT\" + c.lade_advance")
        // The keys as an array too, so the table is reached by its primary key index whatever
        // the planner guesses of the temporary table.
        let keys = "{" + order.map { String(changes[$0].key) }.joined(separator: ",") + "}"
        try connection.execute("""
            UPDATE \(plan.table) AS t SET \(assignments.joined(separator: ", ")) FROM \(plan.changedTable) c
            WHERE t."Z_PK" = c."Z_PK" AND t."Z_PK" = ANY($1::bigint[])
            """, [.text(keys)])
    }

    // MARK: Row by row

    private enum Inserted {
        case inserted
        case updatedInstead(Int64, entity: Int64)
        case refused(BulkInsert.Outcome)
    }

    /// Inserts one row at once, in a savepoint: refused when it breaks a uniqueness constraint.
    private func insertNow(_ new: NewRow, plan: Plan, _ connection: PostgreSQLConnection) throws -> Inserted {
        let columns = plan.columns
        let names = (["Z_PK", "Z_ENT", "Z_OPT"] + columns.write.columns.map(\.name)).map(postgreSQLQuoted)
        let values: [PostgreSQLValue] = [.integer(new.key), .integer(columns.entityNumber), .integer(1)] + new.values
        var sql = "INSERT INTO \(plan.table) AS t (\(names.joined(separator: ", "))) VALUES (\((1...values.count).map { "$\($0)" }.joined(separator: ", ")))"
        if !columns.keyColumns.isEmpty {
            var assignments: [String] = []
            for (index, given) in new.given.enumerated() where given {
                let names = index < plan.attributeNames.count
                    ? (columns.keyPositions.contains(index) ? [] : [columns.attributeColumns[index]])
                    : [columns.toOneColumns[index - plan.attributeNames.count], columns.toOneEntityColumns[index - plan.attributeNames.count]].compactMap { $0 }
                for name in names { assignments.append("\(postgreSQLQuoted(name)) = EXCLUDED.\(postgreSQLQuoted(name))") }
            }
            assignments.append("\"Z_OPT\" = t.\"Z_OPT\" + 1")
            sql += " ON CONFLICT (\(columns.keyColumns.map(postgreSQLQuoted).joined(separator: ", "))) DO UPDATE SET \(assignments.joined(separator: ", "))"
        }
        sql += " RETURNING t.\"Z_PK\", t.\"Z_ENT\""
        return try inSavepoint(plan: plan, connection) {
            let result = try connection.execute(sql, values)
            guard let key = result.integer(0, 0), key != new.key else { return .inserted }
            return .updatedInstead(key, entity: result.integer(0, 1) ?? columns.entityNumber)
        } refused: { .refused($0) }
    }

    /// Updates one row at once, in a savepoint: the refusal when it breaks a uniqueness
    /// constraint.
    private func updateNow(_ change: Change, plan: Plan, _ connection: PostgreSQLConnection) throws -> BulkInsert.Outcome? {
        let columns = plan.columns
        var assignments: [String] = []
        var values: [PostgreSQLValue] = []
        for (index, changed) in change.mask.enumerated() where changed {
            if index < plan.attributeNames.count {
                values.append(change.values[index])
                assignments.append("\(postgreSQLQuoted(columns.attributeColumns[index])) = $\(values.count)")
            } else {
                let position = index - plan.attributeNames.count
                let id = change.destinations[position]
                values.append(id?.primaryKey.map { .integer($0) } ?? .null)
                assignments.append("\(postgreSQLQuoted(columns.toOneColumns[position])) = $\(values.count)")
                if let entityColumn = columns.toOneEntityColumns[position] {
                    values.append(entityNumber(id))
                    assignments.append("\(postgreSQLQuoted(entityColumn)) = $\(values.count)")
                }
            }
        }
        assignments.append("\"Z_OPT\" = \"Z_OPT\" + \(change.advance)")
        values.append(.integer(change.key))
        let sql = "UPDATE \(plan.table) SET \(assignments.joined(separator: ", ")) WHERE \"Z_PK\" = $\(values.count)"
        return try inSavepoint(plan: plan, connection) {
            try connection.execute(sql, values)
            return nil
        } refused: { $0 }
    }

    private func inSavepoint<T>(plan: Plan, _ connection: PostgreSQLConnection, _ body: () throws -> T, refused: (BulkInsert.Outcome) -> T) throws -> T {
        try connection.execute("SAVEPOINT lade_row")
        do {
            let result = try body()
            try connection.execute("RELEASE SAVEPOINT lade_row")
            return result
        } catch let error as PostgreSQLError where error.isUniqueViolation {
            try connection.execute("ROLLBACK TO SAVEPOINT lade_row")
            try connection.execute("RELEASE SAVEPOINT lade_row")
            let properties = store.uniquenessProperties(in: error, entity: plan.entity)
            return refused(.refused(property: properties.joined(separator: ", "), message: "another \(plan.entity) already has the same \(properties.joined(separator: ", ")) (uniqueness constraint)", value: nil))
        }
    }

    // MARK: What the transaction did

    private func markInserted(_ root: Int64, _ key: Int64) {
        if inserted[root, default: PrimaryKeySet()].insert(key) { log.append((.inserted, root, key)) }
    }

    private func markTouched(_ root: Int64, _ key: Int64) {
        guard !isInserted(root, key) else { return }
        if touched[root, default: PrimaryKeySet()].insert(key) { log.append((.touched, root, key)) }
    }

    private func markUpdated(_ root: Int64, _ key: Int64) {
        guard !hasAdvanced(root, key) else { return }
        if updated[root, default: PrimaryKeySet()].insert(key) { log.append((.updated, root, key)) }
    }

    private func markInverseChanged(_ root: Int64, _ key: Int64) {
        if inverseChanged[root, default: []].insert(key).inserted { log.append((.inverse, root, key)) }
    }

    private func isInserted(_ root: Int64, _ key: Int64) -> Bool { inserted[root]?.contains(key) ?? false }

    /// Whether this transaction has set the row's `Z_OPT` already (inserted or updated it).
    private func hasAdvanced(_ root: Int64, _ key: Int64) -> Bool {
        isInserted(root, key) || (updated[root]?.contains(key) ?? false)
    }

    private func undoLog(to mark: Int) {
        while log.count > mark {
            let entry = log.removeLast()
            switch entry.set {
            case .inserted: inserted[entry.root]?.remove(entry.key)
            case .touched: touched[entry.root]?.remove(entry.key)
            case .updated: updated[entry.root]?.remove(entry.key)
            case .inverse: inverseChanged[entry.root]?.remove(entry.key)
            }
        }
    }

    // MARK: Savepoints

    /// Runs `body` in a savepoint: what it wrote is undone when it returns nil or throws.
    /// Not `undoable`: when the body returns nil or throws, the whole transaction is rolled
    /// back, as on SQLite (a batch written again after a deadlock still has a savepoint).
    func savepoint<T>(undoable: Bool = true, _ body: () throws -> T?) throws -> T? {
        try requireTransaction()
        if !undoable {
            let result: T?
            do {
                result = try body()
            } catch {
                rollback()
                throw error
            }
            guard let result else {
                rollback()
                throw BulkInsert.Unsupported(reason: "a batch written with undoable: false was refused; everything since the last commit was rolled back (write it undoable, or check it with mayRefuse first)")
            }
            if depth == 0 { log.removeAll(keepingCapacity: true) }
            return result
        }
        try store.withConnection { try $0.execute("SAVEPOINT lade_batch") }
        let mark = log.count, madeTables = tables, keysMark = keysTaken.count
        depth += 1
        defer { depth -= 1 }
        func undo() throws {
            try store.withConnection { connection in
                try connection.execute("ROLLBACK TO SAVEPOINT lade_batch")
                try connection.execute("RELEASE SAVEPOINT lade_batch")
                while keysTaken.count > keysMark {
                    let taken = keysTaken.removeLast()
                    store.giveBackKeys(root: taken.root, taken.keys)
                }
            }
            undoLog(to: mark)
            tables = madeTables
        }
        let result: T?
        do {
            result = try body()
        } catch {
            try? undo()
            throw error
        }
        guard let result else {
            try undo()
            return nil
        }
        try store.withConnection { try $0.execute("RELEASE SAVEPOINT lade_batch") }
        if depth == 1 { log.removeAll(keepingCapacity: true) }
        return result
    }

    // MARK: Finding

    /// The objects of `entity` (or below) whose `attribute` is one of `values`, by value.
    func objectIDs(entity: String, attribute: String, values: [AttributeValue]) throws -> [AttributeValue: ManagedObjectID] {
        try requireOpen()
        let model = store.model, schema = store.schema
        guard let mapped = schema.entity(named: entity) else { throw UnknownEntityError(entity, in: model) }
        guard let attributeDescription = model.attribute(attribute, of: entity), let declaring = TableLayout.declaringEntity(of: attribute, from: entity, in: model),
              let column = schema.columnName(for: .attribute(entity: declaring, name: attribute)) else {
            throw BulkInsert.UnknownProperty(entity: entity, name: attribute)
        }
        let numbers = model.hierarchy(from: entity).compactMap { schema.entity(named: $0.name)?.number }.map(String.init).joined(separator: ", ")
        let quoted = postgreSQLQuoted(column)
        var result: [AttributeValue: ManagedObjectID] = [:]
        try store.withConnection { connection in
            var start = 0
            while start < values.count {
                let chunk = values[start..<min(values.count, start + 1_000)]
                start += chunk.count
                let parameters = chunk.map { PostgreSQLValueCoding.encode($0) }
                let sql = "SELECT \"Z_PK\", \"Z_ENT\", \(quoted) FROM \(store.prefix)\(postgreSQLQuoted(mapped.tableName)) WHERE \(quoted) IN (\((1...parameters.count).map { "$\($0)" }.joined(separator: ", "))) AND \"Z_ENT\" IN (\(numbers)) ORDER BY \"Z_PK\""
                let rows = try connection.execute(sql, parameters)
                for row in 0..<rows.count {
                    guard let key = rows.integer(row, 0), let number = rows.integer(row, 1), let found = schema.entity(number: number),
                          let value = try? PostgreSQLValueCoding.decode(rows.value(row, 2), as: attributeDescription.type) else { continue }
                    if result[value] == nil { result[value] = ManagedObjectID(entityName: found.name, storeIdentifier: store.identifier, primaryKey: key) }
                }
            }
        }
        return result
    }

    // MARK: Ending

    private func requireOpen() throws {
        guard open else {
            throw BulkInsert.Unsupported(reason: "the batch insert session is over: it was committed or rolled back (an error rolls it back); begin another")
        }
    }

    /// `requireOpen`, and the connection still stands: a transaction on a connection the
    /// server dropped is gone with it.
    private func requireTransaction() throws {
        try requireOpen()
        guard try store.withConnection({ $0.isAlive }) else {
            rollback()
            throw StoreError(.connection, path: store.location.redacted, "the connection to the server was lost during the batch insert session; every batch since it began is gone: begin another when the server is back")
        }
    }

    func commit(metadata: [String: PropertyListValue]?) throws {
        try requireTransaction()
        if let metadata {
            let current = store.metadata
            for key in StoreMetadata.reservedKeys where metadata[key] != nil && metadata[key] != current[key] {
                throw StoreError(.reservedMetadataKey, path: store.location.redacted, "metadata key '\(key)' belongs to the store; it cannot be changed")
            }
        }
        try store.withConnection { connection in
            do {
                // The metadata first: the rows below (destinations every writer of the store
                // advances) stay locked from their update to the commit, so that is kept short.
                if let metadata { try store.writeMetadata(metadata, connection) }
                for (root, keys) in inverseChanged.sorted(by: { $0.key < $1.key }) {
                    guard let table = store.schema.entity(number: root)?.tableName else { continue }
                    // Rows inserted or updated here have had their one advance.
                    let owners = keys.sorted().filter { !hasAdvanced(root, $0) }
                    guard !owners.isEmpty else { continue }
                    try connection.execute("UPDATE \(store.prefix)\(postgreSQLQuoted(table)) SET \"Z_OPT\" = \"Z_OPT\" + 1 WHERE \"Z_PK\" = ANY($1::bigint[])",
                                           [.text("{" + owners.map(String.init).joined(separator: ",") + "}")])
                }
                try store.recordHistory(connection)
                try connection.execute("COMMIT")
            } catch {
                if connection.isAlive { _ = try? connection.execute("ROLLBACK") }
                store.bulkInsertOpen = false
                open = false
                throw error
            }
            store.bulkInsertOpen = false
        }
        open = false
        if let metadata { store.metadataCommitted(metadata) }
    }

    func rollback() {
        guard open else { return }
        open = false
        try? store.withConnection { connection in
            if connection.isAlive { _ = try? connection.execute("ROLLBACK") }
            store.bulkInsertOpen = false
        }
    }
}

extension PostgreSQLBatchInsertTransaction: BulkInsertTransaction {
    var persistentStore: PersistentStore { store }

    func plan(_ target: BulkInsert.TargetDescription) throws -> any BulkInsertPlan {
        let made: Plan = try plan(target)
        return made
    }

    func write(_ rows: [BulkInsert.Row], plan: any BulkInsertPlan, undoable: Bool, whileStoreFinishes: (() -> Void)?,
               accept: ([BulkInsert.Outcome]) -> Bool) throws -> [BulkInsert.Outcome]? {
        try write(rows, plan: plan as! Plan, undoable: undoable, whileStoreFinishes: whileStoreFinishes, accept: accept)
    }

    func mayRefuse(_ rows: [BulkInsert.Row], plan: any BulkInsertPlan, moreThan limit: Int) -> Bool {
        mayRefuse(rows, plan: plan as! Plan, moreThan: limit)
    }
}

extension PostgreSQLStore: BulkInserting {
    func beginBulkInsert(authorship: HistoryAuthorship) throws -> any BulkInsertTransaction {
        let transaction = try PostgreSQLBatchInsertTransaction(store: self)
        lock.withLock { noteAuthorship(authorship) }
        return transaction
    }
}
