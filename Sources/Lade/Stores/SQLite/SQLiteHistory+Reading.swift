import Foundation

/// Reading and pruning a store's persistent history without its model: the history names
/// entities by `Z_ENT`, and `Z_PRIMARYKEY` names them. The statements are shared by the SQLite
/// and PostgreSQL stores (`HistoryDatabase`).
extension SQLiteHistory {
    /// The transactions after `bound` of the SQLite store file at `url`.
    static func transactions(at url: URL, after bound: PersistentHistory.Bound?) throws -> [PersistentHistory.Transaction] {
        do {
            let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
            try requireStore(connection, url: url)
            return try transactions(in: connection, path: url.path, after: bound)
        } catch let error as SQLiteError {
            throw StoreError(path: url.path, sqlite: error)
        }
    }

    /// Deletes the transactions before `bound` of the SQLite store file at `url`.
    static func deleteTransactions(at url: URL, before bound: PersistentHistory.Bound) throws -> PersistentHistory.Pruned {
        do {
            let connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
            try requireStore(connection, url: url)
            let pruned = try deleteTransactions(in: connection, path: url.path, before: bound)
            _ = try? connection.rows("PRAGMA wal_checkpoint(TRUNCATE)")
            return pruned
        } catch let error as SQLiteError {
            throw StoreError(path: url.path, sqlite: error)
        }
    }

    /// The transactions after `bound` (every one when nil), oldest first, with their changes.
    /// A transaction is after a token when its number is larger, after a date when its
    /// timestamp is later (as `NSPersistentHistoryChangeRequest.fetchHistory(after:)`).
    static func transactions(in database: some HistoryDatabase, path: String, after bound: PersistentHistory.Bound?) throws -> [PersistentHistory.Transaction] {
        try requireTracked(database, path: path)
        let q = historyQuoted
        var names: [Int64: String] = [:]
        for row in try database.rows("SELECT \(q("Z_ENT")), \(q("Z_NAME")) FROM \(database.table("Z_PRIMARYKEY"))", []) {
            if case .integer(let number) = row[0], case .text(let name) = row[1] { names[number] = name }
        }
        var strings: [Int64: String] = [:]
        for row in try database.rows("SELECT \(q("Z_PK")), \(q("ZNAME")) FROM \(database.table("ATRANSACTIONSTRING"))", []) {
            if case .integer(let key) = row[0], case .text(let name) = row[1] { strings[key] = name }
        }
        let (condition, value) = where_(bound, after: true)
        // Each string by its key into ATRANSACTIONSTRING, else its VARCHAR twin.
        func string(_ key: SQLiteValue, _ twin: SQLiteValue) -> String? {
            if case .integer(let number) = key, let found = strings[number] { return found }
            if case .text(let text) = twin { return text }
            return nil
        }
        var transactions: [PersistentHistory.Transaction] = []
        var position: [Int64: Int] = [:]
        let columns = ["Z_PK", "ZTIMESTAMP", "ZAUTHORTS", "ZAUTHOR", "ZBUNDLEIDTS", "ZBUNDLEID", "ZCONTEXTNAMETS", "ZCONTEXTNAME", "ZPROCESSIDTS", "ZPROCESSID"].map(q).joined(separator: ", ")
        for row in try database.rows("SELECT \(columns) FROM \(database.table("ATRANSACTION")) \(condition) ORDER BY \(q("Z_PK"))", value.map { [$0] } ?? []) {
            guard case .integer(let number) = row[0] else { continue }
            var seconds = 0.0
            if case .real(let value) = row[1] { seconds = value } else if case .integer(let value) = row[1] { seconds = Double(value) }
            position[number] = transactions.count
            transactions.append(PersistentHistory.Transaction(
                number: number, timestamp: Date(timeIntervalSinceReferenceDate: seconds),
                author: string(row[2], row[3]), bundleID: string(row[4], row[5]),
                contextName: string(row[6], row[7]), processID: string(row[8], row[9]), changes: []))
        }
        guard let first = transactions.first?.number else { return [] }
        let changeColumns = ["Z_PK", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZTRANSACTIONID", "ZCOLUMNS"].map(q).joined(separator: ", ")
        for row in try database.rows("SELECT \(changeColumns) FROM \(database.table("ACHANGE")) WHERE \(q("ZTRANSACTIONID")) >= ? ORDER BY \(q("Z_PK"))", [.integer(first)]) {
            guard case .integer(let number) = row[0], case .integer(let type) = row[1], let changeType = PersistentHistory.ChangeType(rawValue: Int(type)),
                  case .integer(let entity) = row[2], case .integer(let key) = row[3], case .integer(let transaction) = row[4],
                  let index = position[transaction] else { continue }
            var columns: Data?
            if case .blob(let data) = row[5] { columns = data }
            transactions[index].changes.append(PersistentHistory.Change(
                number: number, type: changeType, entityNumber: entity, entityName: names[entity], primaryKey: key, columns: columns))
        }
        return transactions
    }

    /// Deletes the transactions before `bound` and their changes, in one transaction, as
    /// `NSPersistentHistoryChangeRequest.deleteHistory(before:)`: before a token, those whose
    /// number is smaller; before a date, those whose timestamp is earlier. The strings they
    /// named stay (Core Data keeps them too).
    static func deleteTransactions(in database: some HistoryDatabase, path: String, before bound: PersistentHistory.Bound) throws -> PersistentHistory.Pruned {
        try requireTracked(database, path: path)
        let q = historyQuoted
        let (condition, value) = where_(bound, after: false)
        let parameters = value.map { [$0] } ?? []
        return try database.inTransaction {
            let selected = "SELECT \(q("Z_PK")) FROM \(database.table("ATRANSACTION")) \(condition)"
            let changes = "FROM \(database.table("ACHANGE")) WHERE \(q("ZTRANSACTIONID")) IN (\(selected))"
            var counts: [Int] = []
            for sql in ["SELECT COUNT(*) FROM (\(selected)) AS selected", "SELECT COUNT(*) \(changes)"] {
                if case .integer(let count)? = try database.rows(sql, parameters).first?.first { counts.append(Int(count)) } else { counts.append(0) }
            }
            try database.run("DELETE \(changes)", parameters)
            try database.run("DELETE FROM \(database.table("ATRANSACTION")) \(condition)", parameters)
            return PersistentHistory.Pruned(transactions: counts[0], changes: counts[1])
        }
    }

    private static func requireStore(_ connection: SQLiteConnection, url: URL) throws {
        let tables = try connection.tableNames()
        guard tables.contains("Z_METADATA"), tables.contains("Z_PRIMARYKEY") else {
            throw StoreError(.notAStore, path: url.path, "this SQLite file has no Z_METADATA and Z_PRIMARYKEY tables: it is not a Core Data store")
        }
    }

    private static func requireTracked(_ database: some HistoryDatabase, path: String) throws {
        let tables = try database.tableNames()
        guard isTracked(tables: tables) else {
            let present = tables.intersection(Self.tables)
            guard present.isEmpty else {
                // Damage, not a store without history: say which table is gone.
                let missing = Self.tables.subtracting(present).sorted()
                throw HistoryError(.notTracked, path: path, "this store keeps persistent history, but its \(missing.joined(separator: " and ")) \(missing.count == 1 ? "table is" : "tables are") missing (it has \(present.sorted().joined(separator: ", "))): its history cannot be read; a check of the store reports it")
            }
            throw HistoryError(.notTracked, path: path, "this store keeps no persistent history (it has no ATRANSACTION, ACHANGE and ATRANSACTIONSTRING tables): only a store created with history tracking has it")
        }
    }

    /// The `WHERE` clause of transactions after (or before) `bound`, and its value.
    private static func where_(_ bound: PersistentHistory.Bound?, after: Bool) -> (String, SQLiteValue?) {
        let comparison = after ? ">" : "<"
        switch bound {
        case nil: return ("", nil)
        case .token(let number): return ("WHERE \(historyQuoted("Z_PK")) \(comparison) ?", .integer(number))
        case .date(let date): return ("WHERE \(historyQuoted("ZTIMESTAMP")) \(comparison) ?", .real(date.timeIntervalSinceReferenceDate))
        }
    }
}
