import Foundation

/// A store's persistent history as rows, so that a conversion between the stores that keep it
/// (SQLite and PostgreSQL) carries it as it is: every row of the three tables, their
/// `ZTOMBSTONE` columns, and the history entities' `Z_MAX`. A conversion keeps objects' keys
/// and entity numbers, so the changes still name the objects they named.
struct HistoryTableRows {
    struct Table {
        var name: String
        var columns: [String]
        var rows: [[SQLiteValue]]
    }

    var tables: [Table]
    var maxima: [(number: Int64, name: String, max: Int64)]
    var tombstones: Int

    /// The history of the store on `database`; nil when it keeps none.
    static func read(_ database: some HistoryDatabase) throws -> HistoryTableRows? {
        guard SQLiteHistory.isTracked(tables: try database.tableNames()) else { return nil }
        let present = try database.changeColumns()
        var tombstones = 0
        while present.contains("ZTOMBSTONE\(tombstones)") { tombstones += 1 }
        var tables: [Table] = []
        for (name, declared) in SQLiteHistory.tableColumns(tombstones: tombstones) {
            let columns = declared.map(\.name)
            let rows = try database.rows("SELECT \(columns.map(historyQuoted).joined(separator: ", ")) FROM \(database.table(name)) ORDER BY \(historyQuoted("Z_PK"))", [])
            tables.append(Table(name: name, columns: columns, rows: rows))
        }
        var maxima: [(Int64, String, Int64)] = []
        let q = historyQuoted
        for row in try database.rows("SELECT \(q("Z_ENT")), \(q("Z_NAME")), \(q("Z_MAX")) FROM \(database.table("Z_PRIMARYKEY")) WHERE \(q("Z_ENT")) IN (16001, 16002, 16003) ORDER BY \(q("Z_ENT"))", []) {
            if case .integer(let number) = row[0], case .text(let name) = row[1], case .integer(let max) = row[2] { maxima.append((number, name, max)) }
        }
        return HistoryTableRows(tables: tables, maxima: maxima, tombstones: tombstones)
    }

    /// The rows with each `ACHANGE` row's tombstones passed through `transform` (given the
    /// change's `ZENTITY` and the tombstone's slot): a store that keeps tombstones in another
    /// form than SQLite's (PostgreSQL: bytes) converts them on the way in and out.
    func mappingTombstones(_ transform: (SQLiteValue, _ entity: Int64?, _ slot: Int) -> SQLiteValue) -> HistoryTableRows {
        var copy = self
        for index in copy.tables.indices where copy.tables[index].name == "ACHANGE" {
            let columns = copy.tables[index].columns
            let entityColumn = columns.firstIndex(of: "ZENTITY")
            let slots = (0..<tombstones).compactMap { slot in columns.firstIndex(of: "ZTOMBSTONE\(slot)").map { (slot, $0) } }
            for row in copy.tables[index].rows.indices {
                var values = copy.tables[index].rows[row]
                let entity: Int64? = entityColumn.flatMap { if case .integer(let number) = values[$0] { number } else { nil } }
                for (slot, column) in slots where values[column] != .null { values[column] = transform(values[column], entity, slot) }
                copy.tables[index].rows[row] = values
            }
        }
        return copy
    }

    /// Writes the rows into the (empty) tables on `database`, and the history entities'
    /// `Z_PRIMARYKEY` rows with their `Z_MAX` (in the caller's transaction).
    func write(into database: some HistoryDatabase) throws {
        let present = try database.changeColumns()
        for slot in 0..<tombstones where !present.contains("ZTOMBSTONE\(slot)") {
            try database.run("ALTER TABLE \(database.table("ACHANGE")) ADD COLUMN \(historyQuoted("ZTOMBSTONE\(slot)")) \(database.blobType)", [])
        }
        for table in tables {
            var start = 0
            while start < table.rows.count {
                let end = min(start + 5_000, table.rows.count)
                try database.insert(into: table.name, columns: table.columns, rows: Array(table.rows[start..<end]))
                start = end
            }
        }
        let q = historyQuoted
        for (number, name, max) in maxima {
            try database.run("DELETE FROM \(database.table("Z_PRIMARYKEY")) WHERE \(q("Z_ENT")) = ?", [.integer(number)])
            try database.run("INSERT INTO \(database.table("Z_PRIMARYKEY")) (\(q("Z_ENT")), \(q("Z_NAME")), \(q("Z_SUPER")), \(q("Z_MAX"))) VALUES (?, ?, 0, ?)", [.integer(number), .text(name), .integer(max)])
        }
    }
}

extension SQLiteStore: HistoryKeeping {
    /// The store's history as rows, for a conversion (nil when it keeps none).
    func historyTableRows() throws -> HistoryTableRows? {
        try withConnection { try HistoryTableRows.read($0) }
    }

    /// Gives the store (a conversion's new one, made without history) the history tables and
    /// `rows`, in one transaction.
    func writeHistoryTableRows(_ rows: HistoryTableRows) throws {
        try withConnection { connection in
            try connection.transaction {
                for statement in SQLiteHistory.createStatements(for: model) { try connection.execute(statement) }
                try rows.write(into: connection)
            }
        }
    }
}

extension PostgreSQLStore: HistoryKeeping {
    /// The store's history as rows, for a conversion (nil when it keeps none): its tombstones,
    /// bytes here, as SQLite keeps them (`PostgreSQLTombstone.sqliteValue`).
    func historyTableRows() throws -> HistoryTableRows? {
        guard let rows = try withConnection({ try HistoryTableRows.read(PostgreSQLHistoryDatabase(connection: $0)) }) else { return nil }
        // Per entity number, per slot, the declared type of the column its tombstone comes from.
        var declared: [Int64: [Int: String]] = [:]
        for table in (history ?? HistoryRecorder(schema: schema, model: model)).tables {
            for (slot, cases) in table.tombstones.enumerated() {
                for (entity, column) in cases { declared[entity, default: [:]][slot] = column.declaredType }
            }
        }
        return rows.mappingTombstones { value, entity, slot in
            PostgreSQLTombstone.sqliteValue(value, declaredType: entity.flatMap { declared[$0]?[slot] })
        }
    }
}
