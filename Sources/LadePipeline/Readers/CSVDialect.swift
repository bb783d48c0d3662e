/// How a CSV source is written: its delimiter and where its column names come from.
///
/// ```swift
/// var dialect = CSVDialect()                  // comma, header row
/// dialect.delimiter = UInt8(ascii: "\t")      // tab-separated
/// dialect.hasHeader = false
/// dialect.columns = ["sku", "name", "price"]  // names for a file without a header row
/// ```
///
/// Quoting follows RFC 4180 (<https://www.rfc-editor.org/rfc/rfc4180>): a field may be enclosed in
/// `"`; inside, `""` stands for one quote, and delimiters and line breaks are data.
package struct CSVDialect: Sendable, Equatable {
    /// The byte between fields: `,` by default, often `\t` or `;`. It must be an ASCII byte other than `"`, CR or LF.
    package var delimiter: UInt8 = UInt8(ascii: ",")
    /// Whether the first record names the columns.
    package var hasHeader = true
    /// Explicit column names: required when there is no header row; with a header row, they rename
    /// its columns (then both must have the same number of columns).
    package var columns: [String]?

    /// A dialect; the defaults are RFC 4180's: comma-separated with a header row.
    package init(delimiter: UInt8 = UInt8(ascii: ","), hasHeader: Bool = true, columns: [String]? = nil) {
        self.delimiter = delimiter
        self.hasHeader = hasHeader
        self.columns = columns
    }
}
