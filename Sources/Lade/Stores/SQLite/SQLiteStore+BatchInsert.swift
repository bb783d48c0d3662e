import CSQLite
import Foundation

/// The SQLite side of a `BatchInsertSession`: one write transaction (`BEGIN IMMEDIATE` …
/// `COMMIT`) holding any number of batches, each in a savepoint of its own, with prepared
/// statements per target and `Z_PK`s taken from `Z_PRIMARYKEY` as the context's saves take
/// them. Used from one queue at a time (the session's context's).
final class SQLiteBatchInsertTransaction {
    let store: SQLiteStore
    private var open = true
    /// Per root table: the largest `Z_PK` handed out (written to `Z_PRIMARYKEY` at commit).
    private var largestKeys: [Int64: Int64] = [:]
    private var startingKeys: [Int64: Int64] = [:]
    /// Per root entity number: existing rows found by this transaction's rows (a second row
    /// for one is a duplicate). Rows it inserted are those above `startingKeys`.
    private var touched: [Int64: PrimaryKeySet] = [:]
    /// Per root entity number: existing rows this transaction updated. Their `Z_OPT` advanced
    /// once (as a save advances it, however often the object changed), and so did that of
    /// the rows it inserted (which start at 1).
    private var updated: [Int64: PrimaryKeySet] = [:]
    /// Destinations whose to-many inverse gained or lost a member (their `Z_OPT` advances once
    /// at commit, as a context's save advances it for an object whose relationship changed).
    private var inverseChanged: [Int64: Set<Int64>] = [:]
    /// What was added to `touched` and `inverseChanged` since the transaction began, so a
    /// savepoint undone takes its additions back without copying the sets.
    private var log: [(set: LoggedSet, root: Int64, key: Int64)] = []
    private enum LoggedSet { case touched, updated, inverse }
    /// Savepoints open now.
    private var depth = 0

    init(store: SQLiteStore, authorship: HistoryAuthorship = HistoryAuthorship()) throws {
        guard !store.isReadOnly else { throw StoreError(.readOnly, path: store.fileURL.path, "the store was opened read-only") }
        // Before any property is set: an initializer that throws after that runs `deinit`,
        // whose ROLLBACK would end the transaction that is open.
        try store.withConnection { connection in
            guard !connection.isInTransaction else {
                throw StoreError(.transactionOpen, path: store.fileURL.path, "a store transaction (saves held for one commit) is open on this store: commit or roll it back before a batch insert session begins")
            }
            try store.beginWrite(connection)
            store.noteAuthorship(authorship)
        }
        self.store = store
    }

    deinit {
        if open {
            try? store.withConnection { try $0.execute("ROLLBACK") }
            store.externalData?.rolledBack()
        }
    }

    // MARK: Targets

    /// What `write` needs for one target, worked out once.
    final class Plan: BulkInsertPlan {
        let entity: String
        let entityNumber: Int64
        let rootNumber: Int64
        let table: String
        let write: TableWritePlan
        /// Layout positions of the target's attributes, and their types.
        let attributePositions: [Int]
        let attributeTypes: [AttributeType]
        let attributeNames: [String]
        /// Layout positions of the target's to-one relationships.
        let toOnePositions: [Int]
        let toOneNames: [String]
        /// Per to-one: the root entity number of its destination when its inverse is a
        /// to-many (whose owner's `Z_OPT` then advances), else nil.
        let inverseRoots: [Int64?]
        /// Entity numbers a found row may have to be updated (the entity and its subentities).
        let acceptedNumbers: Set<Int64>
        /// The key's positions among the target's attributes.
        let keyPositions: [Int]
        let policy: BulkInsert.ConflictPolicy
        let insertsMissing: Bool
        /// For every column of the write plan: what fills it (a target attribute or to-one, or
        /// the layout default / NULL).
        enum Source { case attribute(Int, default: SQLiteValue), toOne(Int), toOneEntity(Int), fixed(SQLiteValue) }
        let insertSources: [Source]
        let insertSQL: String
        let insertFirstSQL: String?
        let lookupSQL: String?
        /// Column names, for UPDATE statements.
        let attributeColumns: [String]
        let toOneColumns: [String]
        let toOneEntityColumns: [String?]
        var insertStatement: SQLiteStatement?
        var insertFirstStatement: SQLiteStatement?
        var lookupStatement: SQLiteStatement?
        /// Finds up to `prefetchChunk` rows by a one-column key at once (`… WHERE key IN (?, …)`);
        /// nil for a compound key or none.
        let prefetchSQL: String?
        var prefetchStatement: SQLiteStatement?
        /// The stored rows with `Z_PK` in a range (`… WHERE Z_PK BETWEEN ? AND ?`), in order: where
        /// `prefetch` looks first for a batch's rows when the last batch's lay together.
        let rangeSQL: String?
        var rangeStatement: SQLiteStatement?
        /// Where the next batch's stored rows are expected to begin: just after the last
        /// batch's, when those lay together; nil when they did not (or were not looked for).
        var nextRowsFrom: Int64?
        var updateStatements: [[Bool]: SQLiteStatement] = [:]
        /// Per target attribute: whether it is kept as external binary data (its value
        /// written in Core Data's form, `SQLiteExternalData`); empty when none is.
        var externalAttributes: [Bool] = []
        /// Whether the store may refuse any row whatever its values: the entity has another
        /// uniqueness constraint than the key, or its table holds rows of entities outside it
        /// (a row of one of those found by the key is refused).
        let refusesAnyRow: Bool
        /// Model defaults a new row would take that the store cannot keep exactly (a Decimal
        /// default of more than 15 significant digits that no double reads back as): `position`
        /// among the target's attributes (taken when the row gives none), nil when the target
        /// does not set it.
        let refusedDefaults: [(position: Int?, name: String, reason: String, value: String)]

        /// The default a new row for `row` would take and the store cannot keep, if any.
        func refusedDefault(for row: BulkInsert.Row) -> (name: String, reason: String, value: String)? {
            for refused in refusedDefaults {
                if let position = refused.position, case .some = row.values[position] { continue }
                return (refused.name, refused.reason, refused.value)
            }
            return nil
        }
        /// Whether the last batch found most of its rows in the store (then rows are looked
        /// up before being inserted, not inserted first).
        var mostlyExisting = false
        /// Whether each row is looked up before anything is inserted for it: most rows are
        /// expected to exist, or none is inserted.
        var looksUpFirst: Bool { mostlyExisting || !insertsMissing }

        init(entity: String, number: Int64, rootNumber: Int64, table: String, write: TableWritePlan, attributePositions: [Int], attributeTypes: [AttributeType],
             attributeNames: [String], toOnePositions: [Int], toOneNames: [String], inverseRoots: [Int64?], acceptedNumbers: Set<Int64>, keyPositions: [Int],
             policy: BulkInsert.ConflictPolicy, insertsMissing: Bool, insertSources: [Source], insertSQL: String,
             insertFirstSQL: String?, lookupSQL: String?, prefetchSQL: String?, rangeSQL: String?, attributeColumns: [String], toOneColumns: [String], toOneEntityColumns: [String?],
             refusesAnyRow: Bool, refusedDefaults: [(position: Int?, name: String, reason: String, value: String)]) {
            self.entity = entity
            self.entityNumber = number
            self.rootNumber = rootNumber
            self.table = table
            self.write = write
            self.attributePositions = attributePositions
            self.attributeTypes = attributeTypes
            self.attributeNames = attributeNames
            self.toOnePositions = toOnePositions
            self.toOneNames = toOneNames
            self.inverseRoots = inverseRoots
            self.acceptedNumbers = acceptedNumbers
            self.keyPositions = keyPositions
            self.policy = policy
            self.insertsMissing = insertsMissing
            self.insertSources = insertSources
            self.insertSQL = insertSQL
            self.insertFirstSQL = insertFirstSQL
            self.lookupSQL = lookupSQL
            self.prefetchSQL = prefetchSQL
            self.rangeSQL = rangeSQL
            self.attributeColumns = attributeColumns
            self.toOneColumns = toOneColumns
            self.toOneEntityColumns = toOneEntityColumns
            self.refusesAnyRow = refusesAnyRow
            self.refusedDefaults = refusedDefaults
        }
    }

    func plan(_ target: BulkInsert.TargetDescription) throws -> Plan {
        let columns = try BulkInsert.TargetColumns.resolve(target, model: store.model, schema: store.schema, writePlans: store.writePlans, refusal: SQLiteValueCoding.refusal)
        let write = columns.write, layout = write.layout
        let attributeColumns = columns.attributeColumns, keyColumns = columns.keyColumns
        // One source per column of the write plan, in its order.
        let sources: [Plan.Source] = columns.sources.enumerated().map { offset, source in
            switch source {
            case .attribute(let position, let index):
                let defaultValue = store.externalData != nil && write.columns[offset].external
                    ? SQLiteExternalData.inlineColumn(for: layout.defaultValues[index], marked: store.externalData!.marked)
                    : SQLiteValueCoding.encode(layout.defaultValues[index])
                return position.map { .attribute($0, default: defaultValue) } ?? .fixed(defaultValue)
            case .toOne(let position): return position.map { .toOne($0) } ?? .fixed(.null)
            case .toOneEntity(let position): return position.map { .toOneEntity($0) } ?? .fixed(.null)
            }
        }
        let lookupColumns = ["Z_PK", "Z_ENT", "Z_OPT"] + attributeColumns + columns.toOneColumns
        let prefetchSQL = keyColumns.count != 1 || ![.string, .integer16, .integer32, .integer64].contains(columns.attributeTypes[columns.keyPositions[0]]) ? nil : "SELECT \(lookupColumns.joined(separator: ", ")) FROM \(columns.table) WHERE \(keyColumns[0]) IN (\(Array(repeating: "?", count: Self.prefetchChunk).joined(separator: ", "))) ORDER BY \(keyColumns[0])"
        let external = store.externalData == nil ? [] : target.attributes.map { store.model.attribute($0, of: target.entity)?.isKeptExternally ?? false }
        if let key = columns.keyPositions.first(where: { external.indices.contains($0) && external[$0] }) {
            throw BulkInsert.Unsupported(reason: "\(target.entity).\(target.attributes[key]) is kept as external binary data (allowsExternalBinaryDataStorage), which a SQLite store cannot find objects by: choose another key")
        }
        let plan = Plan(
            entity: target.entity, number: columns.entityNumber, rootNumber: columns.rootNumber, table: columns.table, write: write,
            attributePositions: columns.attributePositions, attributeTypes: columns.attributeTypes, attributeNames: target.attributes,
            toOnePositions: columns.toOnePositions, toOneNames: target.relationships, inverseRoots: columns.inverseRoots, acceptedNumbers: columns.acceptedNumbers, keyPositions: columns.keyPositions,
            policy: target.policy, insertsMissing: target.insertsMissing,
            insertSources: sources, insertSQL: write.insertSQL,
            insertFirstSQL: keyColumns.isEmpty ? nil : write.insertSQL + " ON CONFLICT (\(keyColumns.joined(separator: ", "))) DO NOTHING",
            lookupSQL: keyColumns.isEmpty ? nil : "SELECT \(lookupColumns.joined(separator: ", ")) FROM \(columns.table) WHERE " + keyColumns.map { "\($0) = ?" }.joined(separator: " AND "),
            prefetchSQL: prefetchSQL,
            rangeSQL: prefetchSQL == nil ? nil : "SELECT \(lookupColumns.joined(separator: ", ")) FROM \(columns.table) WHERE Z_PK BETWEEN ? AND ?",
            attributeColumns: attributeColumns, toOneColumns: columns.toOneColumns, toOneEntityColumns: columns.toOneEntityColumns,
            refusesAnyRow: columns.refusesAnyRow, refusedDefaults: columns.refusedDefaults)
        plan.externalAttributes = external.contains(true) ? external : []
        return plan
    }

    /// The column for the value of the target's attribute `index`: Core Data's form for an
    /// attribute kept as external binary data (its file written first), else `SQLiteValueCoding`'s.
    private func encoded(_ value: AttributeValue?, attribute index: Int, plan: Plan) throws -> SQLiteValue {
        guard !plan.externalAttributes.isEmpty, plan.externalAttributes[index], let externalData = store.externalData else { return SQLiteValueCoding.encode(value) }
        return try externalData.column(for: value)
    }

    // MARK: Writing

    /// Whether writing `rows` could end with more than `limit` of them refused or missing.
    func mayRefuse(_ rows: [BulkInsert.Row], plan: Plan, moreThan limit: Int) -> Bool {
        if rows.count <= limit { return false }
        if plan.refusesAnyRow { return true }
        var possible = 0
        for row in rows {
            let mayMiss = !row.mayInsert || (!plan.keyPositions.isEmpty && !plan.insertsMissing)
            if mayMiss || row.sqliteRefusal != nil || (!plan.refusedDefaults.isEmpty && plan.refusedDefault(for: row) != nil) {
                possible += 1
                if possible > limit { return true }
            }
        }
        return false
    }

    func write(_ rows: [BulkInsert.Row], plan: Plan, undoable: Bool = true, accept: ([BulkInsert.Outcome]) -> Bool) throws -> [BulkInsert.Outcome]? {
        try savepoint(undoable: undoable) {
            try store.withConnection { connection -> [BulkInsert.Outcome]? in
                var outcomes: [BulkInsert.Outcome] = []
                outcomes.reserveCapacity(rows.count)
                var existing = 0
                // Rows are looked up one by one only where the batch's rows were not found
                // together first (`prefetch`).
                var prefetched = try prefetch(rows, plan: plan, connection)
                for offset in rows.indices {
                    // Rows read in place and found rows moved out (`take`): a copy retained their arrays.
                    let outcome = try write(rows[offset], plan: plan, found: prefetched.isEmpty ? nil : prefetched[offset].take(), connection)
                    switch outcome {
                    case .inserted, .refused: break
                    default: existing += 1
                    }
                    outcomes.append(outcome)
                }
                plan.mostlyExisting = existing * 2 > rows.count
                return accept(outcomes) ? outcomes : nil
            }
        }
    }

    /// Runs `body` in a savepoint: what it wrote is undone when it returns nil or throws.
    /// Not `undoable`: no savepoint (SQLite then keeps no statement journal of the pages the
    /// body changes); when the body returns nil or throws, the whole transaction is rolled
    /// back, so nothing of a half-written batch can be committed.
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
        let keys = largestKeys, mark = log.count, files = store.externalData?.mark
        depth += 1
        defer { depth -= 1 }
        func undo() throws {
            try store.withConnection { connection in
                try connection.execute("ROLLBACK TO lade_batch")
                try connection.execute("RELEASE lade_batch")
            }
            if let files { store.externalData?.rollBack(to: files) }
            largestKeys = keys
            while log.count > mark {
                let entry = log.removeLast()
                switch entry.set {
                case .touched: touched[entry.root]?.remove(entry.key)
                case .updated: updated[entry.root]?.remove(entry.key)
                case .inverse: inverseChanged[entry.root]?.remove(entry.key)
                }
            }
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
        try store.withConnection { try $0.execute("RELEASE lade_batch") }
        // Once the outermost savepoint is released its additions can no longer be undone
        // alone (only with the whole transaction): the log need not hold them.
        if depth == 1 { log.removeAll(keepingCapacity: true) }
        return result
    }

    private func nextKey(root: Int64, _ connection: SQLiteConnection) throws -> Int64 {
        if let largest = largestKeys[root] { return largest + 1 }
        return try startingKey(root: root, connection) + 1
    }

    /// `Z_MAX` of a hierarchy when the transaction began: rows above it were inserted here.
    private func startingKey(root: Int64, _ connection: SQLiteConnection) throws -> Int64 {
        if let start = startingKeys[root] { return start }
        let stored = try store.cachedStatement("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", connection).rows([.integer(root)]).first?.first
        guard case .integer(let current) = stored ?? .integer(0) else {
            throw StoreError.damaged([StoreDamage(.keyCounter, place: "Z_PRIMARYKEY", count: 1, example: "Z_ENT \(root)", problem: "Z_MAX that is not a number")], path: store.fileURL.path)
        }
        largestKeys[root] = current
        startingKeys[root] = current
        return current
    }

    /// Writes one row; `found` is its stored row when the batch's rows were found together.
    fileprivate func write(_ row: BulkInsert.Row, plan: Plan, found prefetched: Found?, _ connection: SQLiteConnection) throws -> BulkInsert.Outcome {
        if let (index, reason) = row.sqliteRefusal {
            return .refused(property: plan.attributeNames[index], message: reason, value: (row.values[index] ?? nil).map { "\($0)" })
        }
        // A new row would take a default the store cannot keep: the row may only change an
        // existing one, and is refused where it would insert.
        let refusedDefault = plan.refusedDefaults.isEmpty ? nil : plan.refusedDefault(for: row)
        let mayInsert = row.mayInsert && refusedDefault == nil
        func notInserted() -> BulkInsert.Outcome {
            guard let refusedDefault, row.mayInsert else { return .missing }
            return .refused(property: refusedDefault.name, message: refusedDefault.reason, value: refusedDefault.value)
        }
        if plan.keyPositions.isEmpty {
            guard mayInsert else { return notInserted() }
            return try insert(row, plan: plan, conflictFree: false, connection) ?? .refused(property: "", message: "the row could not be inserted", value: nil)
        }
        if !plan.looksUpFirst && mayInsert {
            if let inserted = try insert(row, plan: plan, conflictFree: true, connection) { return inserted }
        }
        guard let found = try prefetched ?? lookup(row, plan: plan, connection) else {
            guard plan.insertsMissing else { return .missing }
            guard mayInsert else { return notInserted() }
            return try insert(row, plan: plan, conflictFree: false, connection) ?? .refused(property: "", message: "the row could not be inserted", value: nil)
        }
        guard plan.acceptedNumbers.contains(found.entity) else {
            let other = store.schema.entity(number: found.entity)?.name ?? "object of entity \(found.entity)"
            return .refused(property: plan.keyPositions.map { plan.attributeNames[$0] }.joined(separator: ", "), message: "a \(other) already has these values", value: nil)
        }
        let id = ManagedObjectID(entityName: store.schema.entityName(number: found.entity) ?? plan.entity, storeIdentifier: store.identifier, primaryKey: found.key)
        let start = try startingKey(root: plan.rootNumber, connection)
        let seen = found.key > start || (touched[plan.rootNumber]?.contains(found.key) ?? false)
        // Kept also when a row of this session inserted it: the first row for a key wins.
        if plan.policy == .keep { return .kept(id) }
        if let damage = found.damage { throw damage }
        guard let changed = found.changed else {
            markTouched(root: plan.rootNumber, found.key)
            return seen ? .duplicate(id) : .unchanged(id)
        }
        if let refused = try update(found.key, row: row, changed: changed, plan: plan, connection) { return refused }
        markTouched(root: plan.rootNumber, found.key)
        for owner in found.owners { markInverseChanged(root: owner.root, owner.key) }
        return seen ? .duplicate(id) : .updated(id)
    }

    private func markTouched(root: Int64, _ key: Int64) {
        guard let start = startingKeys[root], key <= start else { return }   // inserted here: known by its key
        if touched[root, default: PrimaryKeySet()].insert(key) { log.append((.touched, root, key)) }
    }

    private func markInverseChanged(root: Int64, _ key: Int64) {
        if inverseChanged[root, default: []].insert(key).inserted { log.append((.inverse, root, key)) }
    }

    /// Whether this transaction has set the row's `Z_OPT` already (inserted or updated it).
    private func hasAdvanced(root: Int64, _ key: Int64) -> Bool {
        key > (startingKeys[root] ?? .max) || (updated[root]?.contains(key) ?? false)
    }

    /// A row's stored counterpart, found by its key, and how the row's values differ from it.
    fileprivate struct Found {
        let key: Int64
        let entity: Int64
        /// Per target attribute, then per to-one: whether the given value differs from the
        /// stored one (false where the row gives none); nil when none differs.
        var changed: [Bool]?
        /// Destinations whose to-many inverse loses or gains this row when it is written.
        var owners: [(root: Int64, key: Int64)] = []
        /// A stored value that cannot be the attribute's type: thrown when the row is written
        /// over it (not for a row kept or refused before that).
        var damage: StoreError?

        mutating func markChanged(_ index: Int, of count: Int) {
            if changed == nil { changed = [Bool](repeating: false, count: count) }
            changed![index] = true
        }
    }

    /// Compares `row` with the stored row `statement` is on (its columns `plan.lookupSQL`'s:
    /// `Z_PK`, `Z_ENT`, `Z_OPT`, the target's attribute columns, its to-one key columns).
    /// A given value whose stored form the column holds exactly (same storage class, same
    /// bytes) is unchanged without being read back; any other is decoded and compared as
    /// an attribute value, so a value stored in another form (an integer in a double column)
    /// still counts as unchanged when it reads back equal.
    private func compare(_ row: BulkInsert.Row, storedIn statement: SQLiteStatement, plan: Plan) throws -> Found {
        guard case .integer(let key) = statement.value(at: 0), case .integer(let entity) = statement.value(at: 1) else {
            throw StoreError.damaged([StoreDamage(.unknownEntity, place: plan.table, count: 1, example: "a row with key values of this batch",
                                                  problem: "row whose Z_PK or Z_ENT is not a number")], path: store.fileURL.path)
        }
        var found = Found(key: key, entity: entity)
        let attributeCount = plan.attributeNames.count
        let values = row.values
        for index in values.indices {
            guard case .some(let given) = values[index] else { continue }
            let column = 3 + index
            if let given, Self.holdsStoredForm(of: given, as: plan.attributeTypes[index], statement, at: column) { continue }
            let stored: AttributeValue?
            do {
                if !plan.externalAttributes.isEmpty, plan.externalAttributes[index], let externalData = store.externalData {
                    do {
                        stored = try externalData.value(of: statement.value(at: column), as: plan.attributeTypes[index])
                    } catch let missing as SQLiteExternalData.MissingFile {
                        found.damage = StoreError.damaged([StoreDamage(.missingExternalFile, place: "\(plan.entity).\(plan.attributeNames[index])", count: 1,
                                                                       example: "Z_PK \(key) names \(missing.path): \(missing.reason)",
                                                                       problem: "value kept in a file that cannot be read (copy or move the store's _SUPPORT folder with it)")], path: store.fileURL.path)
                        return found
                    }
                } else {
                    stored = try SQLiteValueCoding.decode(statement.value(at: column), as: plan.attributeTypes[index])
                }
            } catch let error as SQLiteValueCoding.Unreadable {
                found.damage = StoreError.damaged([StoreDamage(.wrongType, place: "\(plan.entity).\(plan.attributeNames[index])", count: 1,
                                                               example: "Z_PK \(key) holds \(error.held) in \(plan.attributeColumns[index])",
                                                               problem: "value that cannot be \(plan.attributeTypes[index].rawValue) (the attribute's type)")], path: store.fileURL.path)
                return found
            }
            if stored != given { found.markChanged(index, of: attributeCount + plan.toOneNames.count) }
        }
        for (index, destination) in row.destinations.enumerated() {
            guard case .some(let given) = destination else { continue }
            let stored: Int64? = if case .integer(let key) = statement.value(at: 3 + attributeCount + index) { key } else { nil }
            guard stored != given?.primaryKey else { continue }
            found.markChanged(attributeCount + index, of: attributeCount + plan.toOneNames.count)
            if let root = plan.inverseRoots[index] {
                if let stored { found.owners.append((root, stored)) }
                if let key = given?.primaryKey { found.owners.append((root, key)) }
            }
        }
        return found
    }

    /// Whether the column holds exactly the stored form of `value` (same storage class, same
    /// bytes) for the types whose stored form reads back as the value itself: text, integers,
    /// booleans, doubles and dates that are numbers, and decimals of up to 15 digits as their
    /// nearest double. False says nothing: the column is then decoded and compared.
    private static func holdsStoredForm(of value: AttributeValue, as type: AttributeType, _ statement: SQLiteStatement, at column: Int) -> Bool {
        switch (type, value) {
        case (.string, .string(let text)): return statement.holds(text: text, at: column)
        case (.integer64, .integer(let number)): return statement.holds(integer: number, at: column)
        case (.integer32, .integer(let number)) where Int32(exactly: number) != nil: return statement.holds(integer: number, at: column)
        case (.integer16, .integer(let number)) where Int16(exactly: number) != nil: return statement.holds(integer: number, at: column)
        case (.boolean, .bool(let flag)): return statement.holds(integer: flag ? 1 : 0, at: column)
        case (.double, .double(let number)) where !number.isNaN: return statement.holds(real: number, at: column)
        case (.date, .date(let date)) where !date.timeIntervalSinceReferenceDate.isNaN: return statement.holds(real: date.timeIntervalSinceReferenceDate, at: column)
        // A decimal column holds the double SQLite makes of the decimal's text: the nearest one.
        case (.decimal, .decimal(let decimal)): return DecimalText.nearestDouble(decimal).map { statement.holds(real: $0, at: column) } ?? false
        default: return false
        }
    }

    private func lookup(_ row: BulkInsert.Row, plan: Plan, _ connection: SQLiteConnection) throws -> Found? {
        let statement: SQLiteStatement
        if let prepared = plan.lookupStatement { statement = prepared } else {
            statement = try connection.prepare(plan.lookupSQL!)
            plan.lookupStatement = statement
        }
        statement.reset()
        defer { statement.reset() }
        for (offset, position) in plan.keyPositions.enumerated() {
            guard case .some(.some(let value)) = row.values[position] else { return nil }
            statement.bind(SQLiteValueCoding.encode(value), at: Int32(offset + 1))
        }
        guard try statement.step() else { return nil }
        return try compare(row, storedIn: statement, plan: plan)
    }

    static let prefetchChunk = 200
    /// Fewer rows with keys than this are looked up one by one.
    static let fewestFoundTogether = 8
    /// Whether batches whose rows would each be looked up find them together first; off
    /// only in tests, which compare the two.
    var findsRowsTogether = true
    /// Rows whose stored row `prefetch` found so far (for tests).
    private(set) var rowsFoundTogether = 0

    /// The stored rows of `rows`, by row position; empty when they are to be looked up one by
    /// one. Done when each row would be looked up anyway (most of the last batch's rows
    /// existed, or rows are never inserted), the key is one column (integer or text), and the
    /// rows come in the key's order, as `lade run` gives them. Two ways, both matching a stored
    /// row to a row only by the key's exact bytes (and storage class):
    /// - **By the rows' place** (`scan`): when the last batch's stored rows lay together (their
    ///   `Z_PK`s within twice the batch's size, as a load writes a batch), the next batch's are
    ///   expected just after them, as in a re-run of the source the store was loaded from; that
    ///   stretch of the table is read in order (`Z_PK BETWEEN …`), with no index seek at all.
    ///   Rows it does not find (a source changed or reordered) are found by key next.
    /// - **By key**, `prefetchChunk` keys at a time (`key IN (…) ORDER BY key`): SQLite opens its
    ///   cursors once per chunk, not once per row (measured with SQLite alone, 1M random text
    ///   keys in batches of 5,000 through a 16 MiB cache: 3.4 s one by one, 2.5 s in chunks of
    ///   100 or 500), and the found rows, in the key's order too, are matched to the rows by
    ///   walking both.
    /// Only the first row with a key gets its stored row: a second one (a duplicate), and any
    /// row that was not matched, is looked up on its own when it is written, so it sees what
    /// the rows before it wrote. Nothing the batch writes changes another key's stored row (an
    /// update finds its row by the key; an insert makes a row with its own key), so a stored
    /// row found before the batch is still the row its first row finds when it is written.
    private func prefetch(_ rows: [BulkInsert.Row], plan: Plan, _ connection: SQLiteConnection) throws -> [Found?] {
        guard findsRowsTogether, plan.prefetchSQL != nil, plan.looksUpFirst, rows.count >= Self.fewestFoundTogether else { return [] }
        // Set again below from where this batch's rows are found; not when they are not looked for.
        let expectedFrom = plan.nextRowsFrom
        plan.nextRowsFrom = nil
        let keyPosition = plan.keyPositions[0]
        // Rows with a key, and the key as bound; nothing when the keys are out of order.
        var keyed: [(offset: Int, key: SQLiteValue)] = []
        keyed.reserveCapacity(rows.count)
        for offset in rows.indices where rows[offset].sqliteRefusal == nil {
            guard case .some(.some(let value)) = rows[offset].values[keyPosition] else { continue }
            let key = SQLiteValueCoding.encode(value)
            if let last = keyed.last {
                guard let order = Self.binaryOrder(last.key, key), order <= 0 else { return [] }
                // A second row with a key (a duplicate) is looked up when it is written, after
                // the first was: left out here, also from a later chunk.
                if order == 0 { continue }
            }
            keyed.append((offset, key))
        }
        guard keyed.count >= Self.fewestFoundTogether else { return [] }
        // Text keys' bytes, one after another (bound where they are, and hashed for the scan):
        // `textEnds[i]` is where key `i`'s bytes end.
        var textBytes: [UInt8] = []
        var textEnds: [Int] = []
        if case .text = keyed[0].key {
            textEnds.reserveCapacity(keyed.count)
            for entry in keyed {
                if case .text(let text) = entry.key { textBytes.append(contentsOf: text.utf8) }
                textEnds.append(textBytes.count)
            }
        }
        var result = [Found?](repeating: nil, count: rows.count)
        try textBytes.withUnsafeBufferPointer { bytes in
            let keys = KeyBytes(keyed: keyed, bytes: bytes, ends: textEnds)
            var rest = Array(keyed.indices)
            if let from = expectedFrom {
                // The batch's rows and an eighth more: a few rows rejected or added shift them.
                let span = Int64(keyed.count + keyed.count / 8)
                let (through, overflow) = from.addingReportingOverflow(span - 1)
                try scan(keys, range: from...(overflow ? .max : through), rows: rows, plan: plan, connection, into: &result)
                rest.removeAll { result[keyed[$0].offset] != nil }
            }
            if !rest.isEmpty { try findByKey(keys, rest, rows: rows, plan: plan, connection, into: &result) }
        }
        // Where the next batch's rows are expected: after these, when they lay together.
        var lowest = Int64.max, highest = Int64.min, found = 0
        for entry in keyed {
            guard let key = result[entry.offset]?.key else { continue }
            lowest = min(lowest, key)
            highest = max(highest, key)
            found += 1
        }
        let (width, overflow) = highest.subtractingReportingOverflow(lowest)
        plan.nextRowsFrom = found * 2 >= keyed.count && !overflow && width < Int64(2 * keyed.count) && highest < .max ? highest + 1 : nil
        return result
    }

    /// A batch's keys as `prefetch` binds and hashes them: text keys' bytes in one buffer.
    private struct KeyBytes {
        let keyed: [(offset: Int, key: SQLiteValue)]
        let bytes: UnsafeBufferPointer<UInt8>
        /// Where each text key's bytes end in `bytes`; empty for integer keys.
        let ends: [Int]

        func text(_ index: Int) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(rebasing: bytes[(index == 0 ? 0 : ends[index - 1])..<ends[index]])
        }

        func hash(_ index: Int) -> Int {
            if ends.isEmpty, case .integer(let number) = keyed[index].key { return Self.hash(integer: number) }
            return Self.hash(text: text(index))
        }

        /// Whether key `index` is the stored integer key.
        func isKey(_ index: Int, integer: Int64) -> Bool {
            if case .integer(let number) = keyed[index].key { return number == integer }
            return false
        }

        /// Whether key `index` has the stored text key's bytes.
        func isKey(_ index: Int, text stored: UnsafeBufferPointer<UInt8>) -> Bool {
            !ends.isEmpty && text(index).hasSameBytes(as: stored)
        }

        static func hash(text: UnsafeBufferPointer<UInt8>) -> Int {
            var hasher = Hasher()
            hasher.combine(bytes: UnsafeRawBufferPointer(text))
            return hasher.finalize()
        }

        static func hash(integer: Int64) -> Int {
            var hasher = Hasher()
            hasher.combine(integer)
            return hasher.finalize()
        }
    }

    /// Stored rows found by their place so far (for tests).
    private(set) var rowsFoundInPlace = 0

    /// Reads the stored rows whose `Z_PK` is in `range`, in order, and gives each row of
    /// `keys` the stored row with its key (the first, should a damaged table hold two).
    private func scan(_ keys: KeyBytes, range: ClosedRange<Int64>, rows: [BulkInsert.Row], plan: Plan, _ connection: SQLiteConnection,
                      into result: inout [Found?]) throws {
        // The keys by hash, open addressing: a slot holds an index into `keys.keyed`, or -1.
        var capacity = 16
        while capacity < keys.keyed.count * 2 { capacity *= 2 }
        let mask = capacity - 1
        var slots = [Int](repeating: -1, count: capacity)
        for index in keys.keyed.indices {
            var slot = keys.hash(index) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = index
        }
        let statement: SQLiteStatement
        if let prepared = plan.rangeStatement { statement = prepared } else {
            statement = try connection.prepare(plan.rangeSQL!)
            plan.rangeStatement = statement
        }
        defer { statement.reset() }
        statement.reset()
        statement.bind(.integer(range.lowerBound), at: 1)
        statement.bind(.integer(range.upperBound), at: 2)
        let column = 3 + plan.keyPositions[0]
        while try statement.step() {
            // The stored key: an integer or text as the batch's keys are, else no row of theirs.
            var number: Int64 = 0
            var text = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
            if keys.ends.isEmpty {
                guard let stored = statement.integer(at: column) else { continue }
                number = stored
            } else {
                guard let stored = statement.textBytes(at: column) else { continue }
                text = stored
            }
            var slot = (keys.ends.isEmpty ? KeyBytes.hash(integer: number) : KeyBytes.hash(text: text)) & mask
            while slots[slot] >= 0 {
                let index = slots[slot]
                if keys.ends.isEmpty ? keys.isKey(index, integer: number) : keys.isKey(index, text: text) {
                    let offset = keys.keyed[index].offset
                    if result[offset] == nil {
                        result[offset] = try compare(rows[offset], storedIn: statement, plan: plan)
                        rowsFoundTogether += 1
                        rowsFoundInPlace += 1
                    }
                    break
                }
                slot = (slot + 1) & mask
            }
        }
    }

    /// Finds the stored rows of `keys.keyed[wanted]` (in the key's order) by key,
    /// `prefetchChunk` keys to a query, and matches them to the rows by walking both.
    private func findByKey(_ keys: KeyBytes, _ wanted: [Int], rows: [BulkInsert.Row], plan: Plan, _ connection: SQLiteConnection,
                           into result: inout [Found?]) throws {
        let statement: SQLiteStatement
        if let prepared = plan.prefetchStatement { statement = prepared } else {
            statement = try connection.prepare(plan.prefetchSQL!)
            plan.prefetchStatement = statement
        }
        // Not left on a row when a damaged row throws (the batch's savepoint is rolled back
        // next), nor holding pointers into the keys' bytes once this returns.
        defer {
            statement.reset()
            statement.clearBindings()
        }
        let column = 3 + plan.keyPositions[0]
        var start = 0
        while start < wanted.count {
            let end = min(wanted.count, start + Self.prefetchChunk)
            statement.reset()
            // The last chunk repeats its last key to fill the statement's parameters. Text is
            // bound where it is (SQLite copied each key bound by value).
            for parameter in 0..<Self.prefetchChunk {
                let index = wanted[min(start + parameter, end - 1)]
                if keys.ends.isEmpty {
                    statement.bind(keys.keyed[index].key, at: Int32(parameter + 1))
                } else {
                    statement.bind(unownedText: keys.text(index), at: Int32(parameter + 1))
                }
            }
            var next = start
            while try statement.step() {
                // Rows up to the one this stored row belongs to found nothing (or follow a
                // duplicate): they are looked up on their own.
                while next < end && !statement.holds(keys.keyed[wanted[next]].key, at: column) { next += 1 }
                guard next < end else { break }
                let offset = keys.keyed[wanted[next]].offset
                result[offset] = try compare(rows[offset], storedIn: statement, plan: plan)
                rowsFoundTogether += 1
                next += 1
            }
            statement.reset()
            start = end
        }
    }

    /// How `a` and `b` compare in a BINARY index (negative: `a` first, 0: the same key):
    /// integers by value, text by its bytes (memcmp, then length); nil for anything else,
    /// whose rows are then looked up one by one.
    private static func binaryOrder(_ a: SQLiteValue, _ b: SQLiteValue) -> Int? {
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.text(let x), .text(let y)): return AttributeValue.byteOrder(x, y)
        default: return nil
        }
    }

    /// Inserts a new row; with `conflictFree`, nil when a row with the key is there already.
    private func insert(_ row: BulkInsert.Row, plan: Plan, conflictFree: Bool, _ connection: SQLiteConnection) throws -> BulkInsert.Outcome? {
        /// A new statement has what every row binds alike bound once (`Z_ENT`, `Z_OPT`, the
        /// columns the rows do not give); bindings stay through `reset`.
        func prepared(_ sql: String) throws -> SQLiteStatement {
            let statement = try connection.prepare(sql)
            statement.bind(.integer(plan.entityNumber), at: 2)
            statement.bind(.integer(1), at: 3)
            for (offset, source) in plan.insertSources.enumerated() {
                if case .fixed(let value) = source { statement.bind(value, at: Int32(offset + 4)) }
            }
            return statement
        }
        let statement: SQLiteStatement
        if conflictFree {
            if let prepared = plan.insertFirstStatement { statement = prepared } else {
                statement = try prepared(plan.insertFirstSQL!)
                plan.insertFirstStatement = statement
            }
        } else if let prepared = plan.insertStatement { statement = prepared } else {
            statement = try prepared(plan.insertSQL)
            plan.insertStatement = statement
        }
        let key = try nextKey(root: plan.rootNumber, connection)
        // Files written for a row that is then not inserted (its key taken, a constraint) go with it.
        let files = plan.externalAttributes.isEmpty ? nil : store.externalData?.mark
        statement.reset()
        statement.bind(.integer(key), at: 1)
        var position: Int32 = 4
        for source in plan.insertSources {
            switch source {
            case .fixed: break
            case .attribute(let index, let defaultValue):
                switch row.values[index] {
                case .none: statement.bind(defaultValue, at: position)
                case .some(let value): statement.bind(try encoded(value, attribute: index, plan: plan), at: position)
                }
            case .toOne(let index): statement.bind((row.destinations[index] ?? nil)?.primaryKey.map { .integer($0) } ?? .null, at: position)
            case .toOneEntity(let index):
                let number = (row.destinations[index] ?? nil).flatMap { store.schema.entity(named: $0.entityName)?.number }
                statement.bind(number.map { .integer($0) } ?? .null, at: position)
            }
            position += 1
        }
        do {
            while try statement.step() {}
        } catch let error as SQLiteError where error.code == SQLiteError.constraintUnique || error.code == SQLiteError.constraintPrimaryKey {
            if let files { store.externalData?.rollBack(to: files) }
            let properties = store.uniquenessProperties(in: error.message, entity: plan.entity)
            return .refused(property: properties.joined(separator: ", "), message: "another \(plan.entity) already has the same \(properties.joined(separator: ", ")) (uniqueness constraint)", value: nil)
        }
        if conflictFree && connection.changes == 0 {
            if let files { store.externalData?.rollBack(to: files) }
            return nil
        }
        largestKeys[plan.rootNumber] = key
        for (index, root) in plan.inverseRoots.enumerated() {
            if let root, let destination = (row.destinations[index] ?? nil)?.primaryKey { markInverseChanged(root: root, destination) }
        }
        return .inserted(ManagedObjectID(entityName: plan.entity, storeIdentifier: store.identifier, primaryKey: key))
    }

    /// Writes the changed values; the refusal when another row has the new values of a
    /// uniqueness constraint.
    private func update(_ key: Int64, row: BulkInsert.Row, changed: [Bool], plan: Plan, _ connection: SQLiteConnection) throws -> BulkInsert.Outcome? {
        let statement: SQLiteStatement
        if let prepared = plan.updateStatements[changed] { statement = prepared } else {
            var assignments: [String] = []
            for (index, column) in plan.attributeColumns.enumerated() where changed[index] { assignments.append("\(column) = ?") }
            for (index, column) in plan.toOneColumns.enumerated() where changed[plan.attributeColumns.count + index] {
                assignments.append("\(column) = ?")
                if let entityColumn = plan.toOneEntityColumns[index] { assignments.append("\(entityColumn) = ?") }
            }
            assignments.append("Z_OPT = Z_OPT + ?")
            statement = try connection.prepare("UPDATE \(plan.table) SET \(assignments.joined(separator: ", ")) WHERE Z_PK = ?")
            plan.updateStatements[changed] = statement
        }
        // The files of the external values this update replaces: released once it is written.
        let replaced = plan.externalAttributes.isEmpty ? [] : try store.storedExternalValues(of: key, in: plan.write, connection) { column in
            guard case .attribute(let name, _) = column.kind, let index = plan.attributeNames.firstIndex(of: name) else { return false }
            return changed[index]
        }
        let files = plan.externalAttributes.isEmpty ? nil : store.externalData?.mark
        statement.reset()
        var position: Int32 = 1
        for (index, value) in row.values.enumerated() where changed[index] {
            statement.bind(try encoded(value ?? nil, attribute: index, plan: plan), at: position)
            position += 1
        }
        for (index, destination) in row.destinations.enumerated() where changed[plan.attributeNames.count + index] {
            let id = destination ?? nil
            statement.bind(id?.primaryKey.map { .integer($0) } ?? .null, at: position)
            position += 1
            if plan.toOneEntityColumns[index] != nil {
                statement.bind((id.flatMap { store.schema.entity(named: $0.entityName)?.number }).map { .integer($0) } ?? .null, at: position)
                position += 1
            }
        }
        statement.bind(.integer(hasAdvanced(root: plan.rootNumber, key) ? 0 : 1), at: position)
        statement.bind(.integer(key), at: position + 1)
        do {
            while try statement.step() {}
        } catch let error as SQLiteError where error.code == SQLiteError.constraintUnique {
            if let files { store.externalData?.rollBack(to: files) }
            let properties = store.uniquenessProperties(in: error.message, entity: plan.entity)
            return .refused(property: properties.joined(separator: ", "), message: "another \(plan.entity) already has the same \(properties.joined(separator: ", ")) (uniqueness constraint)", value: nil)
        }
        if !hasAdvanced(root: plan.rootNumber, key), updated[plan.rootNumber, default: PrimaryKeySet()].insert(key) { log.append((.updated, plan.rootNumber, key)) }
        replaced.forEach { store.externalData?.release($0) }
        return nil
    }

    // MARK: Finding

    /// The objects of `entity` (or below) whose `attribute` is one of `values`, by value.
    func objectIDs(entity: String, attribute: String, values: [AttributeValue]) throws -> [AttributeValue: ManagedObjectID] {
        let model = store.model, schema = store.schema
        guard let mapped = schema.entity(named: entity) else { throw UnknownEntityError(entity, in: model) }
        guard let attributeDescription = model.attribute(attribute, of: entity), let declaring = TableLayout.declaringEntity(of: attribute, from: entity, in: model),
              let column = schema.columnName(for: .attribute(entity: declaring, name: attribute)) else {
            throw BulkInsert.UnknownProperty(entity: entity, name: attribute)
        }
        if attributeDescription.isKeptExternally, store.externalData != nil {
            throw BulkInsert.Unsupported(reason: "\(entity).\(attribute) is kept as external binary data (allowsExternalBinaryDataStorage), which a SQLite store cannot find objects by: choose another key")
        }
        let numbers = model.hierarchy(from: entity).compactMap { schema.entity(named: $0.name)?.number }.map(String.init).joined(separator: ", ")
        var result: [AttributeValue: ManagedObjectID] = [:]
        try store.withConnection { connection in
            var start = 0
            while start < values.count {
                let chunk = values[start..<min(values.count, start + 500)]
                start += chunk.count
                let sql = "SELECT Z_PK, Z_ENT, \(column) FROM \(mapped.tableName) WHERE \(column) IN (\(Array(repeating: "?", count: chunk.count).joined(separator: ", "))) AND Z_ENT IN (\(numbers))"
                let statement = try store.cachedStatement(sql, connection)
                try statement.bind(chunk.map { SQLiteValueCoding.encode($0) })
                while try statement.step() {
                    guard case .integer(let key) = statement.value(at: 0), case .integer(let number) = statement.value(at: 1),
                          let found = schema.entity(number: number),
                          let value = try? SQLiteValueCoding.decode(statement.value(at: 2), as: attributeDescription.type) else { continue }
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

    /// `requireOpen`, and SQLite still holds the transaction. SQLite rolls a transaction back
    /// on its own after some errors (a full disk, an I/O error); a write after that would run
    /// in autocommit mode (a savepoint opens a transaction of its own) and be committed alone,
    /// without the batches before it or the metadata. The session ends instead.
    private func requireTransaction() throws {
        try requireOpen()
        guard try store.withConnection({ $0.isInTransaction }) else {
            open = false
            throw StoreError(.io, path: store.fileURL.path, "SQLite rolled the batch insert session's transaction back after an earlier error; every batch since it began is gone: begin another")
        }
    }

    func commit(metadata: [String: PropertyListValue]?) throws {
        try requireTransaction()
        if let metadata { try store.checkReservedKeys(metadata) }
        try store.withConnection { connection in
            for (root, largest) in largestKeys where largest != startingKeys[root] {
                try store.cachedStatement("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?", connection).run([.integer(largest), .integer(root)])
            }
            for (root, keys) in inverseChanged {
                guard let table = store.schema.entity(number: root)?.tableName else { continue }
                let statement = try store.cachedStatement("UPDATE \(table) SET Z_OPT = Z_OPT + 1 WHERE Z_PK = ?", connection)
                // Rows inserted or updated here have had their one advance.
                for key in keys.sorted() where !hasAdvanced(root: root, key) { try statement.run([.integer(key)]) }
            }
            try store.commitWrite(connection, metadata: metadata)
        }
        open = false
        if let metadata { store.metadataCommitted(metadata) }
    }

    func rollback() {
        guard open else { return }
        open = false
        try? store.withConnection { try $0.execute("ROLLBACK") }
        store.externalData?.rolledBack()
    }
}

/// Primary keys of one table, in pages of 4,096 consecutive keys made as keys arrive: a page
/// lists its first few keys (2 bytes each) and becomes bits (512 bytes) once it has more. A
/// re-run touches every row, and a set of its keys takes megabytes (hundreds of thousands in a
/// commit of 2 s); a bitmap of the whole table would grow with the table (1.25 MB at 10 million
/// rows, however few were touched). Memory follows the keys: rows touched together (a re-run in the table's order)
/// take a page per 4,096, and keys scattered in a sparse or damaged table (`Z_PK`s far apart,
/// up to `Int64.max`) a list entry each; nothing is sized by the largest key.
struct PrimaryKeySet {
    /// 4,096 keys a page.
    private static let pageShift: Int64 = 12
    /// A page's keys, listed while at most 32 (64 bytes), as bits past that.
    private static let listedKeys = 32

    private struct Page {
        /// The keys' offsets in the page while few; empty once `bits` holds them.
        var offsets: [UInt16] = []
        var bits: [UInt64] = []

        func contains(_ offset: UInt16) -> Bool {
            bits.isEmpty ? offsets.contains(offset) : bits[Int(offset >> 6)] & (1 << UInt64(offset & 63)) != 0
        }

        mutating func insert(_ offset: UInt16) -> Bool {
            if contains(offset) { return false }
            if bits.isEmpty {
                if offsets.count < PrimaryKeySet.listedKeys {
                    offsets.append(offset)
                    return true
                }
                bits = [UInt64](repeating: 0, count: 1 << (PrimaryKeySet.pageShift - 6))
                for listed in offsets { bits[Int(listed >> 6)] |= 1 << UInt64(listed & 63) }
                offsets = []
            }
            bits[Int(offset >> 6)] |= 1 << UInt64(offset & 63)
            return true
        }

        mutating func remove(_ offset: UInt16) {
            if bits.isEmpty {
                offsets.removeAll { $0 == offset }
            } else {
                bits[Int(offset >> 6)] &= ~(1 << UInt64(offset & 63))
            }
        }
    }

    private var pages: [Int64: Page] = [:]

    func contains(_ key: Int64) -> Bool {
        pages[key >> Self.pageShift]?.contains(Self.offset(key)) ?? false
    }

    /// Adds `key`; false when it was there already.
    @discardableResult
    mutating func insert(_ key: Int64) -> Bool {
        pages[key >> Self.pageShift, default: Page()].insert(Self.offset(key))
    }

    mutating func remove(_ key: Int64) {
        pages[key >> Self.pageShift]?.remove(Self.offset(key))
    }

    /// Bytes the pages' keys take, lists and bits (for tests of memory).
    var pageBytes: Int { pages.values.reduce(0) { $0 + $1.offsets.count * 2 + $1.bits.count * 8 } }

    /// A key's place in its page (arithmetic shift: a negative key has a page too).
    private static func offset(_ key: Int64) -> UInt16 { UInt16(key & ((1 << pageShift) - 1)) }
}

extension SQLiteBatchInsertTransaction: BulkInsertTransaction {
    var persistentStore: PersistentStore { store }

    func plan(_ target: BulkInsert.TargetDescription) throws -> any BulkInsertPlan {
        let made: Plan = try plan(target)
        return made
    }

    /// SQLite writes in this process and never waits for a server: `whileStoreFinishes` is
    /// not called.
    func write(_ rows: [BulkInsert.Row], plan: any BulkInsertPlan, undoable: Bool, whileStoreFinishes: (() -> Void)?,
               accept: ([BulkInsert.Outcome]) -> Bool) throws -> [BulkInsert.Outcome]? {
        try write(rows, plan: plan as! Plan, undoable: undoable, accept: accept)
    }

    func mayRefuse(_ rows: [BulkInsert.Row], plan: any BulkInsertPlan, moreThan limit: Int) -> Bool {
        mayRefuse(rows, plan: plan as! Plan, moreThan: limit)
    }
}

extension SQLiteStore: BulkInserting {
    func beginBulkInsert(authorship: HistoryAuthorship) throws -> any BulkInsertTransaction {
        try SQLiteBatchInsertTransaction(store: self, authorship: authorship)
    }
}
