import Foundation
import Lade

/// `lade fetch`: the objects of an entity (subentities included, as Core Data fetches them)
/// that match a predicate, sorted, limited and offset in the store (SQL for SQLite stores),
/// as records of their attributes and to-one relationships (`RecordColumns`, to-one only).
///
/// ```swift
/// var query = StoreQuery(entity: "Product")
/// query.predicate = try StoreQuery.predicate("price > 10 AND name BEGINSWITH[c] 'b'")
/// query.sortDescriptors = [try StoreQuery.sortDescriptor("price:desc")]
/// query.limit = 5
/// print(try query.run(on: store).table())
/// ```
public struct StoreQuery: Sendable {
    public var entity: String
    public var predicate: FetchPredicate?
    public var sortDescriptors: [FetchSortDescriptor] = []
    /// At most this many objects; 0: all.
    public var limit = 0
    /// Skip this many objects first.
    public var offset = 0

    public init(entity: String) {
        self.entity = entity
    }

    /// Parses a predicate in Core Data's format-string language; a syntax error says what was
    /// expected and at which column.
    public static func predicate(_ format: String) throws(PredicateSyntaxError) -> FetchPredicate {
        try FetchPredicate(format: format, arguments: [])
    }

    /// `KEY`, `KEY:asc` or `KEY:desc` (KEY may be a key path through to-one relationships).
    public static func sortDescriptor(_ text: String) throws -> FetchSortDescriptor {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard let key = parts.first, !key.isEmpty, parts.count <= 2 else {
            throw SortSyntaxError(text: text)
        }
        switch parts.count == 2 ? parts[1].lowercased() : "asc" {
        case "asc": return FetchSortDescriptor(key, ascending: true)
        case "desc": return FetchSortDescriptor(key, ascending: false)
        default: throw SortSyntaxError(text: text)
        }
    }

    /// A `--sort` value that is not `KEY[:asc|:desc]`.
    public struct SortSyntaxError: Error, Sendable, CustomStringConvertible {
        public let text: String
        public var description: String { "'\(text)' is not a sort: give KEY, KEY:asc or KEY:desc" }
    }

    /// Runs the fetch in the store and reads the matching objects' records.
    public func run(on store: PersistentStore) throws -> StoreQueryResult {
        let columns = try RecordColumns(model: store.model, entity: entity, includesToMany: false)
        let request = StoreFetchRequest(
            entityName: entity, predicate: predicate, sortDescriptors: sortDescriptors,
            fetchLimit: max(0, limit), fetchOffset: max(0, offset))
        let rows = try store.fetch(request)
        return StoreQueryResult(columns: columns.names, records: try StoreRecordReader(store: store).records(of: rows, columns: columns))
    }
}

/// The records a `StoreQuery` found, printed as a table, JSON or CSV.
public struct StoreQueryResult: Sendable {
    public let columns: [String]
    public let records: [[RecordCell]]

    /// Aligned columns under a header, two spaces apart, then `(N objects)`. Null is an empty
    /// cell; newlines and tabs in values are shown as `\n`, `\r`, `\t`.
    public func table() -> String {
        let cells = records.map { $0.map { Self.visible($0.text) } }
        var widths = columns.map(\.count)
        for row in cells {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ fields: [String]) -> String {
            var text = ""
            for (index, field) in fields.enumerated() {
                text += index == fields.count - 1 ? field : field + String(repeating: " ", count: widths[index] - field.count + 2)
            }
            while text.hasSuffix(" ") { text.removeLast() }
            return text + "\n"
        }
        var out = line(columns)
        for row in cells { out += line(row) }
        return out + "(\(records.count) object\(records.count == 1 ? "" : "s"))\n"
    }

    /// A JSON array of objects, one object per line, keys in column order.
    public func json() -> String {
        guard !records.isEmpty else { return "[]\n" }
        let keys = columns.map { ExportText.jsonString($0) + ":" }
        let objects = records.map { record in
            "{" + record.enumerated().map { keys[$0.offset] + $0.element.json }.joined(separator: ",") + "}"
        }
        return "[\n" + objects.joined(separator: ",\n") + "\n]\n"
    }

    /// RFC 4180 CSV with a header row, CRLF line ends.
    public func csv() -> String {
        var out = columns.map(ExportText.csvField).joined(separator: ",") + "\r\n"
        for record in records { out += record.map(\.csv).joined(separator: ",") + "\r\n" }
        return out
    }

    private static func visible(_ text: String) -> String {
        guard text.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\t" || $0 == "\r\n" }) else { return text }
        return text.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\t", with: "\\t")
    }
}
