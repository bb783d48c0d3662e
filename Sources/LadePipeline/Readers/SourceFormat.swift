/// The format of a source: CSV, newline-delimited JSON, or one JSON array of objects.
///
/// ```swift
/// SourceFormat.inferred(fromPath: "feeds/products.ndjson.gz")   // (.ndjson, gzip: true)
/// SourceFormat.inferred(fromPath: "products.tsv")?.format        // .csv with a tab delimiter
/// ```
package enum SourceFormat: Sendable, Equatable {
    /// Comma-separated values (RFC 4180) in the given dialect.
    case csv(CSVDialect)
    /// One JSON object per line (<https://github.com/ndjson/ndjson-spec>), blank lines ignored.
    case ndjson
    /// A single JSON array whose elements are the records, read incrementally.
    case jsonArray

    /// True for CSV, whose header (or `columns:`) names the fields of every record; a JSON
    /// record may leave any key out.
    package var namesEveryField: Bool {
        if case .csv = self { true } else { false }
    }

    /// The format a path's extension names: `.csv`, `.tsv` (CSV with tabs), `.ndjson` or `.jsonl`,
    /// `.json` (a JSON array), each optionally followed by `.gz`; nil when the extension is unknown.
    /// Case does not matter.
    ///
    /// ```swift
    /// SourceFormat.inferred(fromPath: "in/Products.CSV.gz")   // (.csv(CSVDialect()), gzip: true)
    /// SourceFormat.inferred(fromPath: "notes.txt")             // nil
    /// ```
    package static func inferred(fromPath path: String) -> (format: SourceFormat, gzip: Bool)? {
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        var parts = name.lowercased().split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2 else { return nil }
        var gzip = false
        if parts.last == "gz" {
            gzip = true
            parts.removeLast()
            guard parts.count >= 2 else { return nil }
        }
        switch parts.last {
        case "csv": return (.csv(CSVDialect()), gzip)
        case "tsv": return (.csv(CSVDialect(delimiter: UInt8(ascii: "\t"))), gzip)
        case "ndjson", "jsonl": return (.ndjson, gzip)
        case "json": return (.jsonArray, gzip)
        default: return nil
        }
    }
}
