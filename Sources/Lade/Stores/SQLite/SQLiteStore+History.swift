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

    /// Whether a `Z_PRIMARYKEY` row is one of the history entities' rather than the model's.
    static func isHistoryEntity(_ number: Int64, name: String) -> Bool {
        primaryKeyRows.contains { $0.0 == number && $0.1 == name }
    }

    /// Whether a store with these tables keeps history: all three are there.
    static func isTracked(tables: Set<String>) -> Bool { tables.isSuperset(of: Self.tables) }

    /// The tables and indexes, `ACHANGE` with a `ZTOMBSTONE<n>` column per slot `model` needs.
    static func createStatements(for model: ManagedObjectModel) -> [String] {
        let tombstones = (0..<tombstoneSlots(of: model)).map { ", ZTOMBSTONE\($0) BLOB" }.joined()
        return [
            "CREATE TABLE ACHANGE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER, ZENTITY INTEGER, ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB\(tombstones) )",
            "CREATE TABLE ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB )",
            "CREATE TABLE ATRANSACTIONSTRING ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR )",
            "CREATE INDEX ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID)",
            "CREATE INDEX ATRANSACTION_ZAUTHORTS_INDEX ON ATRANSACTION (ZAUTHORTS)",
            "CREATE INDEX ATRANSACTION_ZBUNDLEIDTS_INDEX ON ATRANSACTION (ZBUNDLEIDTS)",
            "CREATE INDEX ATRANSACTION_ZCONTEXTNAMETS_INDEX ON ATRANSACTION (ZCONTEXTNAMETS)",
            "CREATE INDEX ATRANSACTION_ZPROCESSIDTS_INDEX ON ATRANSACTION (ZPROCESSIDTS)",
            "CREATE UNIQUE INDEX Z_TRANSACTIONSTRING_UNIQUE_NAME ON ATRANSACTIONSTRING (ZNAME COLLATE BINARY ASC)",
            "CREATE INDEX Z_TRANSACTION_TransactionAuthorIndex ON ATRANSACTION (ZAUTHOR COLLATE BINARY ASC)",
            "CREATE INDEX Z_TRANSACTION_TransactionTimestampIndex ON ATRANSACTION (ZTIMESTAMP COLLATE BINARY ASC)",
        ]
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
    /// name order: the `n`th goes into `ZTOMBSTONE<n>`.
    static func tombstoneAttributes(of entity: String, in model: ManagedObjectModel) -> [String] {
        model.attributes(of: entity).filter { $0.preservesValueInHistoryOnDeletion && !$0.isTransient }.map(\.name).sorted()
    }

    static func tombstoneSlots(of model: ManagedObjectModel) -> Int {
        model.entities.map { tombstoneAttributes(of: $0.name, in: model).count }.max() ?? 0
    }

    /// After a migration renumbered entities (`numbers`: old `Z_ENT` to new), the history's
    /// changes name their entities by the new numbers; changes of entities the new version no
    /// longer has are deleted with them (their numbers may now be other entities'). Nothing is
    /// recorded for the migration itself. Does nothing in a store without history.
    static func renumberChanges(_ connection: SQLiteConnection, tables: Set<String>, numbers: [(old: Int64, new: Int64)]) throws {
        guard isTracked(tables: tables) else { return }
        let cases = numbers.map { "WHEN \($0.old) THEN \($0.new)" }.joined(separator: " ")
        try connection.execute("UPDATE ACHANGE SET ZENTITY = \(cases.isEmpty ? "-1" : "CASE ZENTITY \(cases) ELSE -1 END")")
        try connection.execute("DELETE FROM ACHANGE WHERE ZENTITY = -1")
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

/// Records what each commit of a store with history tables changed, in the commit itself.
///
/// Temporary triggers (on the store's own connection, never written into the file) note every
/// inserted, updated and deleted row of the entity tables in a temporary table, whatever wrote
/// it: a context's save, a batch request, a batch insert session, a trigger of Apple's. A
/// savepoint or transaction rolled back takes its notes back with it. Just before `COMMIT`,
/// `record` turns the notes into one `ATRANSACTION` row and one `ACHANGE` row per object (an
/// object inserted and updated in one commit is an insert; inserted and deleted, nothing).
final class SQLiteHistoryRecorder {
    /// Per `Z_ENT`: the entity's `ZCOLUMNS` property list, and its table's columns (by their
    /// position in the trigger's note) that hold each property.
    private struct EntityInfo {
        var properties: [String]
        var propertyOfColumn: [Int: String]
        var tombstones: Int
    }

    private var entities: [Int64: EntityInfo] = [:]
    private let slots: Int
    /// Who the next commit is recorded as: the last write's (guarded by the store's lock).
    var authorship = HistoryAuthorship()

    /// Sets the recorder up on `connection` for `schema`, when the store has history tables.
    static func attach(to connection: SQLiteConnection, schema: SQLiteSchema, model: ManagedObjectModel, tables: Set<String>) throws -> SQLiteHistoryRecorder? {
        guard SQLiteHistory.isTracked(tables: tables) else { return nil }
        return try SQLiteHistoryRecorder(connection: connection, schema: schema, model: model)
    }

    private init(connection: SQLiteConnection, schema: SQLiteSchema, model: ManagedObjectModel) throws {
        slots = SQLiteHistory.tombstoneSlots(of: model)
        let tombstoneColumns = (0..<slots).map { ", t\($0)" }.joined()
        try connection.execute("CREATE TEMP TABLE IF NOT EXISTS lade_history_notes (type INTEGER, entity INTEGER, pk INTEGER, columns TEXT\(tombstoneColumns))")
        for table in schema.tables {
            let tracked = table.columns.enumerated().filter { _, column in
                switch column.role {
                case .attribute, .toOne, .toOneEntity: true
                case .primaryKey, .entity, .optimisticLock, .orderKey: false
                }
            }
            let hierarchy = model.hierarchy(from: table.rootEntity)
            for entity in hierarchy {
                guard let number = schema.entity(named: entity.name)?.number else { continue }
                var propertyOfColumn: [Int: String] = [:]
                for (position, column) in tracked {
                    switch column.role {
                    case .attribute(_, let name), .toOne(_, let name), .toOneEntity(_, let name): propertyOfColumn[position] = name
                    default: break
                    }
                }
                entities[number] = EntityInfo(
                    properties: SQLiteHistory.columnProperties(of: entity.name, in: model), propertyOfColumn: propertyOfColumn,
                    tombstones: SQLiteHistory.tombstoneAttributes(of: entity.name, in: model).count)
            }
            let name = SQLiteSchema.quoted(table.name)
            let trigger = "lade_history_\(table.name)"
            let changed = tracked.isEmpty ? "''" : tracked.map { position, column in
                let quoted = SQLiteSchema.quoted(column.name)
                return "(CASE WHEN OLD.\(quoted) IS NOT NEW.\(quoted) THEN '\(position),' ELSE '' END)"
            }.joined(separator: " || ")
            // A tombstone slot holds, per entity of the table, that entity's nth kept attribute.
            var tombstoneValues = ""
            for slot in 0..<slots {
                let cases = hierarchy.compactMap { entity -> String? in
                    let kept = SQLiteHistory.tombstoneAttributes(of: entity.name, in: model)
                    guard slot < kept.count, let number = schema.entity(named: entity.name)?.number,
                          let declaring = SQLiteSchema.declaringEntity(of: kept[slot], from: entity.name, in: model),
                          let column = schema.columnName(for: .attribute(entity: declaring, name: kept[slot])) else { return nil }
                    return "WHEN \(number) THEN OLD.\(SQLiteSchema.quoted(column))"
                }
                tombstoneValues += cases.isEmpty ? ", NULL" : ", CASE OLD.Z_ENT \(cases.joined(separator: " ")) END"
            }
            try connection.execute("DROP TRIGGER IF EXISTS temp.\(trigger)_insert")
            try connection.execute("DROP TRIGGER IF EXISTS temp.\(trigger)_update")
            try connection.execute("DROP TRIGGER IF EXISTS temp.\(trigger)_delete")
            try connection.execute("CREATE TEMP TRIGGER \(trigger)_insert AFTER INSERT ON main.\(name) BEGIN INSERT INTO lade_history_notes (type, entity, pk) VALUES (0, NEW.Z_ENT, NEW.Z_PK); END")
            try connection.execute("CREATE TEMP TRIGGER \(trigger)_update AFTER UPDATE ON main.\(name) BEGIN INSERT INTO lade_history_notes (type, entity, pk, columns) VALUES (1, NEW.Z_ENT, NEW.Z_PK, \(changed)); END")
            try connection.execute("CREATE TEMP TRIGGER \(trigger)_delete AFTER DELETE ON main.\(name) BEGIN INSERT INTO lade_history_notes (type, entity, pk\(tombstoneColumns)) VALUES (2, OLD.Z_ENT, OLD.Z_PK\(tombstoneValues)); END")
        }
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

    /// Writes the notes of the transaction open on `connection` as one history transaction
    /// (inside the store's lock, just before `COMMIT`); writes nothing when no row changed.
    func record(_ connection: SQLiteConnection) throws {
        let notes = try connection.prepare("SELECT entity, pk, type, columns\((0..<slots).map { ", t\($0)" }.joined()) FROM lade_history_notes ORDER BY entity, pk, rowid")
        var writer: HistoryWriter?
        var current: (entity: Int64, pk: Int64, folded: Folded)?
        func flush() throws {
            guard let (entity, pk, folded) = current, let type = folded.type else { return }
            if writer == nil { writer = try HistoryWriter(connection, authorship: authorship, slots: slots) }
            var columns: SQLiteValue = .null
            if type == .update, let info = entities[entity] {
                let changed = Set(folded.columns.compactMap { info.propertyOfColumn[$0] })
                if !changed.isEmpty { columns = .blob(Data(SQLiteHistory.columnsBitmap(changed, properties: info.properties))) }
            }
            let tombstones = type == .delete ? Array(folded.tombstones.prefix(entities[entity]?.tombstones ?? 0)) : []
            try writer!.change(type, entity: entity, pk: pk, columns: columns, tombstones: tombstones)
        }
        while try notes.step() {
            guard case .integer(let entity) = notes.value(at: 0), case .integer(let pk) = notes.value(at: 1),
                  case .integer(let raw) = notes.value(at: 2), let type = PersistentHistory.ChangeType(rawValue: Int(raw)) else { continue }
            if current == nil || current!.entity != entity || current!.pk != pk {
                try flush()
                current = (entity, pk, Folded(first: type, last: type))
            }
            current!.folded.last = type
            if case .text(let list) = notes.value(at: 3) {
                for part in list.split(separator: ",") { if let position = Int(part) { current!.folded.columns.insert(position) } }
            }
            if type == .delete { current!.folded.tombstones = (0..<slots).map { notes.value(at: 4 + $0) } }
        }
        notes.reset()
        try flush()
        try connection.execute("DELETE FROM lade_history_notes")
        try writer?.finish()
        authorship = HistoryAuthorship()
    }

    /// Forgets the notes of a transaction that was rolled back outside SQLite's view of it
    /// (they went with the rollback already; this is for the authorship).
    func rolledBack() { authorship = HistoryAuthorship() }
}

/// Writes one history transaction: its strings, its `ATRANSACTION` row, its `ACHANGE` rows,
/// keys taken from `Z_PRIMARYKEY` as Core Data takes them.
private struct HistoryWriter {
    let connection: SQLiteConnection
    let transaction: Int64
    var nextChange: Int64
    let insertChange: SQLiteStatement
    let tombstoneColumns: Int

    init(_ connection: SQLiteConnection, authorship: HistoryAuthorship, slots: Int) throws {
        self.connection = connection
        var maxima: [Int64: Int64] = [:]
        for row in try connection.rows("SELECT Z_ENT, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT IN (16001, 16002, 16003)") {
            if case .integer(let number) = row[0], case .integer(let max) = row[1] { maxima[number] = max }
        }
        // A store whose Z_PRIMARYKEY lacks the rows (made by hand): counted from the tables.
        for (number, name) in SQLiteHistory.primaryKeyRows where maxima[number] == nil {
            let table = ["CHANGE": "ACHANGE", "TRANSACTION": "ATRANSACTION", "TRANSACTIONSTRING": "ATRANSACTIONSTRING"][name]!
            guard case .integer(let largest)? = try connection.rows("SELECT IFNULL(MAX(Z_PK), 0) FROM \(table)").first?.first else { continue }
            try connection.prepare("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, 0, ?)").run([.integer(number), .text(name), .integer(largest)])
            maxima[number] = largest
        }
        var nextString = maxima[SQLiteHistory.stringEntity] ?? 0
        func stringKey(_ text: String?) throws -> SQLiteValue {
            guard let text else { return .null }
            if case .integer(let key)? = try connection.rows("SELECT Z_PK FROM ATRANSACTIONSTRING WHERE ZNAME = ?", [.text(text)]).first?.first { return .integer(key) }
            nextString += 1
            try connection.prepare("INSERT INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, ?, NULL, ?)").run([.integer(nextString), .integer(SQLiteHistory.stringEntity), .text(text)])
            return .integer(nextString)
        }
        let keys = [try stringKey(authorship.author), try stringKey(PersistentHistory.bundleID), try stringKey(authorship.contextName), try stringKey(PersistentHistory.processID)]
        try connection.prepare("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?").run([.integer(nextString), .integer(SQLiteHistory.stringEntity)])
        transaction = (maxima[SQLiteHistory.transactionEntity] ?? 0) + 1
        // As in the evidence: the strings by key only, their VARCHAR twins and ZQUERYGEN empty.
        try connection.prepare("INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZTIMESTAMP) VALUES (?, ?, NULL, ?, ?, ?, ?, ?)")
            .run([.integer(transaction), .integer(SQLiteHistory.transactionEntity)] + keys + [.real(Date().timeIntervalSinceReferenceDate)])
        nextChange = maxima[SQLiteHistory.changeEntity] ?? 0
        // Tombstone columns the store lacks (a model that keeps more after deletion than the
        // one that made the tables) are added, as the slots are filled by name order.
        let present = Set(try connection.rows("PRAGMA table_info(ACHANGE)").compactMap { row -> String? in
            if case .text(let name) = row[1] { return name } else { return nil } })
        var columns = 0
        for slot in 0..<slots {
            if !present.contains("ZTOMBSTONE\(slot)") { try connection.execute("ALTER TABLE ACHANGE ADD COLUMN ZTOMBSTONE\(slot) BLOB") }
            columns += 1
        }
        tombstoneColumns = columns
        let tombstones = (0..<columns).map { ", ZTOMBSTONE\($0)" }.joined()
        insertChange = try connection.prepare("INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS\(tombstones)) VALUES (?, \(SQLiteHistory.changeEntity), NULL, ?, ?, ?, ?, ?\(String(repeating: ", ?", count: columns)))")
    }

    mutating func change(_ type: PersistentHistory.ChangeType, entity: Int64, pk: Int64, columns: SQLiteValue, tombstones: [SQLiteValue]) throws {
        nextChange += 1
        var values: [SQLiteValue] = [.integer(nextChange), .integer(Int64(type.rawValue)), .integer(entity), .integer(pk), .integer(transaction), columns]
        values += (0..<tombstoneColumns).map { $0 < tombstones.count ? tombstones[$0] : .null }
        try insertChange.run(values)
    }

    func finish() throws {
        try connection.prepare("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?").run([.integer(nextChange), .integer(SQLiteHistory.changeEntity)])
        try connection.prepare("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?").run([.integer(transaction), .integer(SQLiteHistory.transactionEntity)])
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
