import Foundation

/// Core Data's persistent history tables in a SQLite store (docs/history.md): `ATRANSACTION`
/// (one row per commit), `ACHANGE` (one row per changed object), `ATRANSACTIONSTRING` (the
/// authors, bundles, context names and processes they name), numbered in `Z_PRIMARYKEY` as the
/// entities 16001 `CHANGE`, 16002 `TRANSACTION` and 16003 `TRANSACTIONSTRING`. The statements
/// are those of the stores Core Data wrote in the corpus (`SampleModel2_V1.sqlite`).
package enum SQLiteHistory {
    static let changeEntity: Int64 = 16001
    static let transactionEntity: Int64 = 16002
    static let stringEntity: Int64 = 16003
    static let tables: Set<String> = ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]
    static let primaryKeyRows: [(Int64, String)] = [(changeEntity, "CHANGE"), (transactionEntity, "TRANSACTION"), (stringEntity, "TRANSACTIONSTRING")]

    /// The table of a history entity of `primaryKeyRows` (`CHANGE`: `ACHANGE`).
    static func table(ofEntityNamed name: String) -> String { "A" + name }

    /// The largest `Z_PK` in use in each history table, by entity number (one query).
    static func largestKeys(in database: some HistoryDatabase) throws -> [Int64: Int64] {
        let q = historyQuoted
        let columns = primaryKeyRows.map { "(SELECT COALESCE(MAX(\(q("Z_PK"))), 0) FROM \(database.table(table(ofEntityNamed: $0.1))))" }
        let row = try database.rows("SELECT " + columns.joined(separator: ", "), []).first ?? []
        var largest: [Int64: Int64] = [:]
        for (index, (number, _)) in primaryKeyRows.enumerated() where index < row.count {
            if case .integer(let key) = row[index] { largest[number] = key }
        }
        return largest
    }

    /// History entities whose `Z_MAX` is below a key their table holds (set back by hand, or a
    /// `Z_PRIMARYKEY` restored from an older copy), as `keyCounter` damage naming the table.
    /// Writes take keys past the largest in use all the same (`HistoryWriter`).
    static func keyCounterDamage(in database: some HistoryDatabase) throws -> [StoreDamage] {
        let q = historyQuoted
        var counters: [Int64: Int64] = [:]
        for row in try database.rows("SELECT \(q("Z_ENT")), \(q("Z_MAX")) FROM \(database.table("Z_PRIMARYKEY")) WHERE \(q("Z_ENT")) IN (16001, 16002, 16003)", []) {
            if case .integer(let number) = row[0], case .integer(let max) = row[1] { counters[number] = max }
        }
        let largest = try largestKeys(in: database)
        return primaryKeyRows.compactMap { number, name in
            guard let counter = counters[number], let inUse = largest[number], counter < inUse else { return nil }
            return StoreDamage(.keyCounter, place: "Z_PRIMARYKEY", count: 1,
                               example: "Z_ENT \(number) (\(name)): Z_MAX is \(counter), \(table(ofEntityNamed: name)) holds Z_PK \(inUse)",
                               problem: "key counter below a key in use (the next write records its history with keys past the largest; nothing else to do)")
        }
    }

    /// Whether a `Z_PRIMARYKEY` row is one of the history entities' rather than the model's.
    static func isHistoryEntity(_ number: Int64, name: String) -> Bool {
        primaryKeyRows.contains { $0.0 == number && $0.1 == name }
    }

    /// Whether a store with these tables keeps history: all three are there.
    static func isTracked(tables: Set<String>) -> Bool { tables.isSuperset(of: Self.tables) }

    /// The damage of a store that keeps history (one of its tables, or a history entity's
    /// `Z_PRIMARYKEY` row, is there) but lacks some of its tables: writing it would record no
    /// history, silently, where Core Data's clients expect every change. Nil when it has all
    /// three or none.
    static func missingTablesDamage(tables: Set<String>, entityNumbers: some Collection<Int64>) -> StoreDamage? {
        let present = tables.intersection(Self.tables)
        let keeps = !present.isEmpty || entityNumbers.contains { primaryKeyRows.map(\.0).contains($0) }
        guard keeps, present != Self.tables else { return nil }
        let missing = Self.tables.subtracting(present).sorted()
        return StoreDamage(.historyTables, place: "persistent history", count: missing.count, example: missing.joined(separator: ", "),
                           problem: "history \(missing.count == 1 ? "table" : "tables") missing from a store that keeps history (\(present.isEmpty ? "its Z_PRIMARYKEY names the history entities" : "it has \(present.sorted().joined(separator: ", "))")): every write would go unrecorded. Restore the store from a copy, or convert it to a new store, which is made without history")
    }

    /// The tables' columns as Core Data declares them, `ACHANGE` with a `ZTOMBSTONE<n>` column
    /// per slot `model` needs (a PostgreSQL store types them from these, as its other columns).
    static func tableColumns(for model: ManagedObjectModel) -> [(table: String, columns: [(name: String, type: String)])] {
        tableColumns(tombstones: tombstoneSlots(of: model))
    }

    static func tableColumns(tombstones: Int) -> [(table: String, columns: [(name: String, type: String)])] {
        let key = [("Z_PK", "INTEGER PRIMARY KEY"), ("Z_ENT", "INTEGER"), ("Z_OPT", "INTEGER")]
        return [
            ("ACHANGE", key + [("ZCHANGETYPE", "INTEGER"), ("ZENTITY", "INTEGER"), ("ZENTITYPK", "INTEGER"), ("ZTRANSACTIONID", "INTEGER"), ("ZCOLUMNS", "BLOB")]
                + (0..<tombstones).map { ("ZTOMBSTONE\($0)", "BLOB") }),
            ("ATRANSACTION", key + [("ZAUTHORTS", "INTEGER"), ("ZBUNDLEIDTS", "INTEGER"), ("ZCONTEXTNAMETS", "INTEGER"), ("ZPROCESSIDTS", "INTEGER"), ("ZTIMESTAMP", "FLOAT"),
                                    ("ZAUTHOR", "VARCHAR"), ("ZBUNDLEID", "VARCHAR"), ("ZCONTEXTNAME", "VARCHAR"), ("ZPROCESSID", "VARCHAR"), ("ZQUERYGEN", "BLOB")]),
            ("ATRANSACTIONSTRING", key + [("ZNAME", "VARCHAR")]),
        ]
    }

    /// The tables' indexes: name, table, column, whether unique, whether `COLLATE BINARY ASC`.
    static let indexes: [(name: String, table: String, column: String, unique: Bool, collated: Bool)] = [
        ("ACHANGE_ZTRANSACTIONID_INDEX", "ACHANGE", "ZTRANSACTIONID", false, false),
        ("ATRANSACTION_ZAUTHORTS_INDEX", "ATRANSACTION", "ZAUTHORTS", false, false),
        ("ATRANSACTION_ZBUNDLEIDTS_INDEX", "ATRANSACTION", "ZBUNDLEIDTS", false, false),
        ("ATRANSACTION_ZCONTEXTNAMETS_INDEX", "ATRANSACTION", "ZCONTEXTNAMETS", false, false),
        ("ATRANSACTION_ZPROCESSIDTS_INDEX", "ATRANSACTION", "ZPROCESSIDTS", false, false),
        ("Z_TRANSACTIONSTRING_UNIQUE_NAME", "ATRANSACTIONSTRING", "ZNAME", true, true),
        ("Z_TRANSACTION_TransactionAuthorIndex", "ATRANSACTION", "ZAUTHOR", false, true),
        ("Z_TRANSACTION_TransactionTimestampIndex", "ATRANSACTION", "ZTIMESTAMP", false, true),
    ]

    /// The tables and indexes as SQLite statements, word for word Core Data's.
    static func createStatements(for model: ManagedObjectModel) -> [String] {
        tableColumns(for: model).map { table, columns in
            "CREATE TABLE \(table) ( \(columns.map { "\($0.name) \($0.type)" }.joined(separator: ", ")) )"
        } + indexes.map { index in
            "CREATE \(index.unique ? "UNIQUE " : "")INDEX \(index.name) ON \(index.table) (\(index.column)\(index.collated ? " COLLATE BINARY ASC" : ""))"
        }
    }

    /// Makes the tables and their `Z_PRIMARYKEY` rows on `connection` (in the caller's transaction).
    static func create(for model: ManagedObjectModel, _ connection: SQLiteConnection) throws {
        for statement in createStatements(for: model) { try connection.execute(statement) }
        let insert = try connection.prepare("INSERT OR IGNORE INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, 0, 0)")
        for (number, name) in primaryKeyRows { try insert.run([.integer(number), .text(name)]) }
    }

    /// Each entity's non-transient attributes and relationships in name order: bit `n` of an
    /// update's `ZCOLUMNS`, counted from the most significant bit of the first byte, is the
    /// `n`th (docs/history.md gives the evidence).
    static func columnProperties(of entity: String, in model: ManagedObjectModel) -> [String] {
        let attributes = model.attributes(of: entity).filter { !$0.isTransient }.map(\.name)
        let relationships = model.relationships(of: entity).filter { !$0.isTransient }.map(\.name)
        return (attributes + relationships).sorted()
    }

    /// Each entity's attributes kept after deletion (`preservesValueInHistoryOnDeletion`), in
    /// name order: the `n`th goes into `ZTOMBSTONE<n>`. Core Data keeps none stored outside
    /// the database (*Allows External Storage*), whose file goes with the row.
    static func tombstoneAttributes(of entity: String, in model: ManagedObjectModel) -> [String] {
        model.attributes(of: entity).filter { $0.preservesValueInHistoryOnDeletion && !$0.isTransient && !$0.isKeptExternally }.map(\.name).sorted()
    }

    static func tombstoneSlots(of model: ManagedObjectModel) -> Int {
        model.entities.map { tombstoneAttributes(of: $0.name, in: model).count }.max() ?? 0
    }

    /// After a migration renumbered entities (`numbers`: old `Z_ENT` to new), the history's
    /// changes name their entities by the new numbers; changes of entities the new version no
    /// longer has are deleted with them (their numbers may now be other entities'). Nothing is
    /// recorded for the migration itself. Does nothing in a store without history.
    static func renumberChanges(_ sql: some MigrationSQL, tables: Set<String>, numbers: [(old: Int64, new: Int64)]) throws {
        guard isTracked(tables: tables) else { return }
        let q = sql.quoted
        let cases = numbers.map { "WHEN \($0.old) THEN \($0.new)" }.joined(separator: " ")
        try sql.execute("UPDATE \(q("ACHANGE")) SET \(q("ZENTITY")) = \(cases.isEmpty ? "-1" : "CASE \(q("ZENTITY")) \(cases) ELSE -1 END")")
        try sql.execute("DELETE FROM \(q("ACHANGE")) WHERE \(q("ZENTITY")) = -1")
    }

    /// `ZCOLUMNS` for `changed` properties of an entity whose property list is `properties`.
    static func columnsBitmap(_ changed: Set<String>, properties: [String]) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: (properties.count + 7) / 8)
        for (index, name) in properties.enumerated() where changed.contains(name) {
            bytes[index / 8] |= 0x80 >> UInt8(index % 8)
        }
        return bytes
    }
}

/// Where the statements of persistent history run: a SQLite store's connection, or a
/// PostgreSQL store's (`PostgreSQLHistoryDatabase`, in the store's schema). The statements are
/// written once, here and in `SQLiteHistory+Reading.swift`: `?` parameters, identifiers in
/// double quotes; each database names its tables and writes many rows its own way.
protocol HistoryDatabase {
    /// A table's name as SQL (after the store's schema where it has one).
    func table(_ name: String) -> String
    func rows(_ sql: String, _ values: [SQLiteValue]) throws -> [[SQLiteValue]]
    /// The rows of a query one at a time (a commit's notes may be many).
    func forEachRow(_ sql: String, _ body: ([SQLiteValue]) throws -> Void) throws
    func run(_ sql: String, _ values: [SQLiteValue]) throws
    /// Inserts `rows` (values of `columns`) into `table` (a name `table(_:)` takes).
    func insert(into table: String, columns: [String], rows: [[SQLiteValue]]) throws
    func tableNames() throws -> Set<String>
    /// The columns `ACHANGE` has, and the type a `ZTOMBSTONE<n>` column added to it gets.
    func changeColumns() throws -> Set<String>
    var blobType: String { get }
    /// What follows the `SELECT` of the history entities' `Z_PRIMARYKEY` rows that a commit's
    /// history starts with, so that it holds them until it commits (nothing in SQLite, whose
    /// writer holds the file's write lock already).
    var lockingClause: String { get }
    /// The temporary table the commit's notes are in, and the column that orders one object's.
    var notesTable: String { get }
    var notesOrder: String { get }
    func inTransaction<T>(_ body: () throws -> T) throws -> T
}

/// An identifier of the history tables as the shared statements write it.
func historyQuoted(_ name: String) -> String { "\"\(name)\"" }

extension SQLiteConnection: HistoryDatabase {
    func table(_ name: String) -> String { historyQuoted(name) }

    func forEachRow(_ sql: String, _ body: ([SQLiteValue]) throws -> Void) throws {
        let statement = try prepare(sql)
        defer { statement.reset() }
        while try statement.step() { try body((0..<statement.columnCount).map(statement.value(at:))) }
    }
    func run(_ sql: String, _ values: [SQLiteValue]) throws { try prepare(sql).run(values) }

    func insert(into table: String, columns: [String], rows: [[SQLiteValue]]) throws {
        guard !rows.isEmpty else { return }
        let statement = try prepare("INSERT INTO \(self.table(table)) (\(columns.map(historyQuoted).joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))")
        for row in rows { try statement.run(row) }
    }

    func changeColumns() throws -> Set<String> {
        Set(try rows("PRAGMA table_info(ACHANGE)").compactMap { row -> String? in if case .text(let name) = row[1] { return name } else { return nil } })
    }

    var blobType: String { "BLOB" }
    var lockingClause: String { "" }
    var notesTable: String { "temp.lade_history_notes" }
    var notesOrder: String { "rowid" }
    func inTransaction<T>(_ body: () throws -> T) throws -> T { try transaction(body) }
}

/// What a store's triggers note of each changed row, worked out from its schema and model once
/// (the SQLite and PostgreSQL stores each make their triggers from it), and how a commit's notes
/// become its history.
///
/// The triggers note every inserted, updated and deleted row of the entity tables in a
/// temporary table, whatever wrote it: a context's save, a batch request, a batch insert
/// session, a trigger of Apple's. A savepoint or transaction rolled back takes its notes back
/// with it. Just before `COMMIT`, `record` turns the notes into one `ATRANSACTION` row and one
/// `ACHANGE` row per object (an object inserted and updated in one commit is an insert;
/// inserted and deleted, nothing).
final class HistoryRecorder {
    /// Per `Z_ENT`: the entity's `ZCOLUMNS` property list, and its table's columns (by their
    /// position in the trigger's note) that hold each property.
    private struct EntityInfo {
        var properties: [String]
        var propertyOfColumn: [Int: String]
        var tombstones: Int
    }

    /// One entity table as its triggers note it: the columns whose change is noted (by position
    /// in the table), and per tombstone slot the column each entity of the table keeps there.
    struct NotedTable {
        var table: TableLayout.Table
        var tracked: [(position: Int, column: TableLayout.Column)]
        var tombstones: [[(entity: Int64, column: TableLayout.Column)]]
    }

    private var entities: [Int64: EntityInfo] = [:]
    let slots: Int
    let tables: [NotedTable]
    /// Who the next commit is recorded as: the last write's (guarded by the store's lock).
    var authorship = HistoryAuthorship()

    init(schema: TableLayout, model: ManagedObjectModel) {
        slots = SQLiteHistory.tombstoneSlots(of: model)
        var tables: [NotedTable] = []
        for table in schema.tables {
            let tracked = table.columns.enumerated().filter { _, column in
                switch column.role {
                case .attribute, .toOne, .toOneEntity: true
                case .primaryKey, .entity, .optimisticLock, .orderKey, .toManyOwner: false
                }
            }.map { (position: $0.offset, column: $0.element) }
            var propertyOfColumn: [Int: String] = [:]
            for (position, column) in tracked {
                switch column.role {
                case .attribute(_, let name), .toOne(_, let name), .toOneEntity(_, let name): propertyOfColumn[position] = name
                default: break
                }
            }
            let hierarchy = model.hierarchy(from: table.rootEntity)
            for entity in hierarchy {
                guard let number = schema.entity(named: entity.name)?.number else { continue }
                entities[number] = EntityInfo(
                    properties: SQLiteHistory.columnProperties(of: entity.name, in: model), propertyOfColumn: propertyOfColumn,
                    tombstones: SQLiteHistory.tombstoneAttributes(of: entity.name, in: model).count)
            }
            // A tombstone slot holds, per entity of the table, that entity's nth kept attribute.
            let tombstones = (0..<slots).map { slot in
                hierarchy.compactMap { entity -> (entity: Int64, column: TableLayout.Column)? in
                    let kept = SQLiteHistory.tombstoneAttributes(of: entity.name, in: model)
                    guard slot < kept.count, let number = schema.entity(named: entity.name)?.number,
                          let declaring = TableLayout.declaringEntity(of: kept[slot], from: entity.name, in: model),
                          let column = table.columns.first(where: { $0.role == .attribute(entity: declaring, name: kept[slot]) }) else { return nil }
                    return (number, column)
                }
            }
            tables.append(NotedTable(table: table, tracked: tracked, tombstones: tombstones))
        }
        self.tables = tables
    }

    /// One object's notes in a commit, folded into the change history records.
    private struct Folded {
        var first: PersistentHistory.ChangeType
        var last: PersistentHistory.ChangeType
        var columns: Set<Int> = []
        var tombstones: [SQLiteValue] = []

        /// The change recorded, nil for none (inserted and deleted in one commit).
        var type: PersistentHistory.ChangeType? {
            switch (first, last) {
            case (.insert, .delete): nil
            case (.insert, _): .insert
            case (_, .delete): .delete
            // Deleted and inserted again under its key: the object is there, changed.
            default: .update
            }
        }
    }

    /// Writes the notes of the transaction open on `database` as one history transaction
    /// (inside the store's lock, just before `COMMIT`); writes nothing when no row changed.
    func record<Database: HistoryDatabase>(_ database: Database) throws {
        let q = historyQuoted
        let notes = "SELECT \(q("entity")), \(q("pk")), \(q("type")), \(q("columns"))\((0..<slots).map { ", t\($0)" }.joined()) FROM \(database.notesTable) ORDER BY \(q("entity")), \(q("pk")), \(database.notesOrder)"
        var writer: HistoryWriter<Database>?
        var current: (entity: Int64, pk: Int64, folded: Folded)?
        func flush() throws {
            guard let (entity, pk, folded) = current, let type = folded.type else { return }
            if writer == nil { writer = try HistoryWriter(database, authorship: authorship, slots: slots) }
            var columns: SQLiteValue = .null
            if type == .update, let info = entities[entity] {
                let changed = Set(folded.columns.compactMap { info.propertyOfColumn[$0] })
                if !changed.isEmpty { columns = .blob(Data(SQLiteHistory.columnsBitmap(changed, properties: info.properties))) }
            }
            let tombstones = type == .delete ? Array(folded.tombstones.prefix(entities[entity]?.tombstones ?? 0)) : []
            try writer!.change(type, entity: entity, pk: pk, columns: columns, tombstones: tombstones)
        }
        try database.forEachRow(notes) { note in
            guard case .integer(let entity) = note[0], case .integer(let pk) = note[1],
                  case .integer(let raw) = note[2], let type = PersistentHistory.ChangeType(rawValue: Int(raw)) else { return }
            if current == nil || current!.entity != entity || current!.pk != pk {
                try flush()
                current = (entity, pk, Folded(first: type, last: type))
            }
            current!.folded.last = type
            if case .text(let list) = note[3] {
                for part in list.split(separator: ",") { if let position = Int(part) { current!.folded.columns.insert(position) } }
            }
            if type == .delete { current!.folded.tombstones = Array(note[4...]) }
        }
        try flush()
        try database.run("DELETE FROM \(database.notesTable)", [])
        try writer?.finish()
        authorship = HistoryAuthorship()
    }

    /// Forgets the notes of a transaction that was rolled back outside the database's view of
    /// it (they went with the rollback already; this is for the authorship).
    func rolledBack() { authorship = HistoryAuthorship() }
}

/// Writes one history transaction: its strings, its `ATRANSACTION` row, its `ACHANGE` rows,
/// keys taken from `Z_PRIMARYKEY` as Core Data takes them. The history entities' rows are read
/// first, under `lockingClause`: in PostgreSQL they stay locked until the commit, so history
/// writers take their keys one after another, each after the one before committed, and a
/// transaction's number is its place in the commit order.
private struct HistoryWriter<Database: HistoryDatabase> {
    let database: Database
    let transaction: Int64
    var nextChange: Int64
    let tombstoneColumns: Int
    var pending: [[SQLiteValue]] = []
    let columns: [String]
    static var batch: Int { 5_000 }

    init(_ database: Database, authorship: HistoryAuthorship, slots: Int) throws {
        self.database = database
        let q = historyQuoted
        let primaryKeys = database.table("Z_PRIMARYKEY")
        var maxima: [Int64: Int64] = [:]
        for row in try database.rows("SELECT \(q("Z_ENT")), \(q("Z_MAX")) FROM \(primaryKeys) WHERE \(q("Z_ENT")) IN (16001, 16002, 16003) ORDER BY \(q("Z_ENT"))\(database.lockingClause)", []) {
            if case .integer(let number) = row[0], case .integer(let max) = row[1] { maxima[number] = max }
        }
        // Keys past the largest in use whatever the counters say: a counter set back (by hand,
        // or a Z_PRIMARYKEY restored from an older copy) would make this write fail on the
        // table's primary key (`lade check` reports it). A store whose Z_PRIMARYKEY lacks the
        // rows (made by hand) gets them, counted from the tables.
        for (number, largest) in try SQLiteHistory.largestKeys(in: database) {
            if maxima[number] == nil {
                let name = SQLiteHistory.primaryKeyRows.first { $0.0 == number }!.1
                try database.run("INSERT INTO \(primaryKeys) (\(q("Z_ENT")), \(q("Z_NAME")), \(q("Z_SUPER")), \(q("Z_MAX"))) VALUES (?, ?, 0, ?)", [.integer(number), .text(name), .integer(largest)])
            }
            maxima[number] = max(maxima[number] ?? 0, largest)
        }
        var nextString = maxima[SQLiteHistory.stringEntity] ?? 0
        let strings = database.table("ATRANSACTIONSTRING")
        func stringKey(_ text: String?) throws -> SQLiteValue {
            guard let text else { return .null }
            if case .integer(let key)? = try database.rows("SELECT \(q("Z_PK")) FROM \(strings) WHERE \(q("ZNAME")) = ?", [.text(text)]).first?.first { return .integer(key) }
            nextString += 1
            try database.run("INSERT INTO \(strings) (\(q("Z_PK")), \(q("Z_ENT")), \(q("Z_OPT")), \(q("ZNAME"))) VALUES (?, ?, NULL, ?)", [.integer(nextString), .integer(SQLiteHistory.stringEntity), .text(text)])
            return .integer(nextString)
        }
        let keys = [try stringKey(authorship.author), try stringKey(PersistentHistory.bundleID), try stringKey(authorship.contextName), try stringKey(PersistentHistory.processID)]
        try database.run("UPDATE \(primaryKeys) SET \(q("Z_MAX")) = ? WHERE \(q("Z_ENT")) = ?", [.integer(nextString), .integer(SQLiteHistory.stringEntity)])
        transaction = (maxima[SQLiteHistory.transactionEntity] ?? 0) + 1
        // As in the evidence: the strings by key only, their VARCHAR twins and ZQUERYGEN empty.
        try database.run("INSERT INTO \(database.table("ATRANSACTION")) (\(q("Z_PK")), \(q("Z_ENT")), \(q("Z_OPT")), \(q("ZAUTHORTS")), \(q("ZBUNDLEIDTS")), \(q("ZCONTEXTNAMETS")), \(q("ZPROCESSIDTS")), \(q("ZTIMESTAMP"))) VALUES (?, ?, NULL, ?, ?, ?, ?, ?)",
                         [.integer(transaction), .integer(SQLiteHistory.transactionEntity)] + keys + [.real(Date().timeIntervalSinceReferenceDate)])
        nextChange = maxima[SQLiteHistory.changeEntity] ?? 0
        // Tombstone columns the store lacks (a model that keeps more after deletion than the
        // one that made the tables) are added, as the slots are filled by name order.
        let present = try database.changeColumns()
        for slot in 0..<slots where !present.contains("ZTOMBSTONE\(slot)") {
            try database.run("ALTER TABLE \(database.table("ACHANGE")) ADD COLUMN \(q("ZTOMBSTONE\(slot)")) \(database.blobType)", [])
        }
        tombstoneColumns = slots
        columns = ["Z_PK", "Z_ENT", "Z_OPT", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZTRANSACTIONID", "ZCOLUMNS"] + (0..<slots).map { "ZTOMBSTONE\($0)" }
    }

    mutating func change(_ type: PersistentHistory.ChangeType, entity: Int64, pk: Int64, columns: SQLiteValue, tombstones: [SQLiteValue]) throws {
        nextChange += 1
        var values: [SQLiteValue] = [.integer(nextChange), .integer(SQLiteHistory.changeEntity), .null, .integer(Int64(type.rawValue)), .integer(entity), .integer(pk), .integer(transaction), columns]
        values += (0..<tombstoneColumns).map { $0 < tombstones.count ? tombstones[$0] : .null }
        pending.append(values)
        if pending.count >= Self.batch { try flush() }
    }

    private mutating func flush() throws {
        try database.insert(into: "ACHANGE", columns: columns, rows: pending)
        pending.removeAll(keepingCapacity: true)
    }

    mutating func finish() throws {
        try flush()
        let q = historyQuoted
        let primaryKeys = database.table("Z_PRIMARYKEY")
        try database.run("UPDATE \(primaryKeys) SET \(q("Z_MAX")) = ? WHERE \(q("Z_ENT")) = ?", [.integer(nextChange), .integer(SQLiteHistory.changeEntity)])
        try database.run("UPDATE \(primaryKeys) SET \(q("Z_MAX")) = ? WHERE \(q("Z_ENT")) = ?", [.integer(transaction), .integer(SQLiteHistory.transactionEntity)])
    }
}

/// The SQLite store's notes: temporary triggers on its own connection (never written into the
/// file), a temporary table.
extension HistoryRecorder {
    /// Sets the recorder up on `connection` for `schema`, when the store has history tables.
    static func attach(to connection: SQLiteConnection, schema: TableLayout, model: ManagedObjectModel, tables: Set<String>) throws -> HistoryRecorder? {
        guard SQLiteHistory.isTracked(tables: tables) else { return nil }
        let recorder = HistoryRecorder(schema: schema, model: model)
        let tombstoneColumns = (0..<recorder.slots).map { ", t\($0)" }.joined()
        try connection.execute("CREATE TEMP TABLE IF NOT EXISTS lade_history_notes (type INTEGER, entity INTEGER, pk INTEGER, columns TEXT\(tombstoneColumns))")
        for noted in recorder.tables {
            let name = TableLayout.quoted(noted.table.name)
            let trigger = "lade_history_\(noted.table.name)"
            let changed = noted.tracked.isEmpty ? "''" : noted.tracked.map { position, column in
                let quoted = TableLayout.quoted(column.name)
                return "(CASE WHEN OLD.\(quoted) IS NOT NEW.\(quoted) THEN '\(position),' ELSE '' END)"
            }.joined(separator: " || ")
            let tombstoneValues = noted.tombstones.map { cases in
                cases.isEmpty ? ", NULL" : ", CASE OLD.Z_ENT \(cases.map { "WHEN \($0.entity) THEN OLD.\(TableLayout.quoted($0.column.name))" }.joined(separator: " ")) END"
            }.joined()
            try connection.execute("DROP TRIGGER IF EXISTS temp.\(trigger)_insert")
            try connection.execute("DROP TRIGGER IF EXISTS temp.\(trigger)_update")
            try connection.execute("DROP TRIGGER IF EXISTS temp.\(trigger)_delete")
            try connection.execute("CREATE TEMP TRIGGER \(trigger)_insert AFTER INSERT ON main.\(name) BEGIN INSERT INTO lade_history_notes (type, entity, pk) VALUES (0, NEW.Z_ENT, NEW.Z_PK); END")
            try connection.execute("CREATE TEMP TRIGGER \(trigger)_update AFTER UPDATE ON main.\(name) BEGIN INSERT INTO lade_history_notes (type, entity, pk, columns) VALUES (1, NEW.Z_ENT, NEW.Z_PK, \(changed)); END")
            try connection.execute("CREATE TEMP TRIGGER \(trigger)_delete AFTER DELETE ON main.\(name) BEGIN INSERT INTO lade_history_notes (type, entity, pk\(tombstoneColumns)) VALUES (2, OLD.Z_ENT, OLD.Z_PK\(tombstoneValues)); END")
        }
        return recorder
    }
}

extension SQLiteStore {
    /// Records the history of the transaction open on `connection`, when the store keeps
    /// history (inside `withConnection`, just before `COMMIT`).
    func recordHistory(_ connection: SQLiteConnection) throws {
        try history?.record(connection)
    }

    /// Sets who the commit the next write goes into is recorded as (inside `withConnection`).
    func noteAuthorship(_ authorship: HistoryAuthorship) {
        history?.authorship = authorship
    }

    /// Whether this store keeps persistent history (it has Core Data's history tables).
    package var keepsHistory: Bool { history != nil }
}
