import Foundation
import Lade

/// One `ACHANGE` row as a test compares it: (type, entity number, key), with its transaction
/// and `ZCOLUMNS` in hex.
public struct RecordedChange: Hashable, Sendable, CustomStringConvertible {
    public var transaction: Int64
    public var type: Int64
    public var entity: Int64
    public var key: Int64
    public var columns: String?

    public init(transaction: Int64, type: Int64, entity: Int64, key: Int64, columns: String? = nil) {
        self.transaction = transaction
        self.type = type
        self.entity = entity
        self.key = key
        self.columns = columns
    }

    public var description: String { "t\(transaction) \(type) \(entity) \(key)\(columns.map { " cols \($0)" } ?? "")" }
}

/// Reads a store's history tables raw (SQLite), so the tests do not trust Lade's own reader.
public enum HistoryRows {
    public static func changes(_ url: URL, after transaction: Int64 = 0) throws -> [RecordedChange] {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        return try connection.rows("SELECT ZTRANSACTIONID, ZCHANGETYPE, ZENTITY, ZENTITYPK, hex(ZCOLUMNS) FROM ACHANGE WHERE ZTRANSACTIONID > ? ORDER BY Z_PK", [.integer(transaction)]).map { row in
            guard case .integer(let t) = row[0], case .integer(let type) = row[1], case .integer(let entity) = row[2], case .integer(let key) = row[3] else {
                return RecordedChange(transaction: 0, type: -1, entity: -1, key: -1)
            }
            var columns: String?
            if case .text(let hex) = row[4], !hex.isEmpty { columns = hex }
            return RecordedChange(transaction: t, type: type, entity: entity, key: key, columns: columns)
        }
    }

    /// Each transaction after `after`: its number and its four strings (author, bundle, context, process).
    public static func transactions(_ url: URL, after: Int64 = 0) throws -> [(number: Int64, author: String?, bundle: String?, context: String?, process: String?)] {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        let sql = """
            SELECT t.Z_PK, a.ZNAME, b.ZNAME, c.ZNAME, p.ZNAME FROM ATRANSACTION t
            LEFT JOIN ATRANSACTIONSTRING a ON a.Z_PK = t.ZAUTHORTS LEFT JOIN ATRANSACTIONSTRING b ON b.Z_PK = t.ZBUNDLEIDTS
            LEFT JOIN ATRANSACTIONSTRING c ON c.Z_PK = t.ZCONTEXTNAMETS LEFT JOIN ATRANSACTIONSTRING p ON p.Z_PK = t.ZPROCESSIDTS
            WHERE t.Z_PK > ? ORDER BY t.Z_PK
            """
        return try connection.rows(sql, [.integer(after)]).map { row in
            func text(_ value: SQLiteValue) -> String? { if case .text(let text) = value { return text } else { return nil } }
            guard case .integer(let number) = row[0] else { return (0, nil, nil, nil, nil) }
            return (number, text(row[1]), text(row[2]), text(row[3]), text(row[4]))
        }
    }

    public static func maxima(_ url: URL) throws -> [Int64: Int64] {
        var result: [Int64: Int64] = [:]
        for row in try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT Z_ENT, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT > 16000") {
            if case .integer(let number) = row[0], case .integer(let max) = row[1] { result[number] = max }
        }
        return result
    }

    public static func tables(_ url: URL) throws -> Set<String> {
        try SQLiteConnection(path: url.path, mode: .readOnly).tableNames()
    }
}

