/// Damage in a source, positioned so a person can find it, and saying what to do about it.
///
/// Its ``description`` is one sentence: file, line and column, what was found, then (in
/// parentheses) what was expected or how to fix it:
///
/// ```text
/// products.csv:1042:17: unterminated quoted field (a field that opens with " must close with "; write a quote inside it as "")
/// feed.ndjson:7:12: invalid UTF-8: byte 0xE9 does not begin or continue a character (text in UTF-8; convert a Latin-1 or Windows-1252 file with `iconv -f WINDOWS-1252 -t UTF-8`)
/// products.json.gz: truncated gzip data: the compressed stream ends at byte 80211 before its end marker (the file was cut short, probably by an interrupted download or copy; fetch it again)
/// ```
///
/// Lines are 1-based and count line feeds (in CSV, a lone carriage return too). Columns are
/// 1-based and count **bytes** from the start of the line, as compilers such as clang do, so a
/// non-ASCII character before the error counts as its UTF-8 length.
public struct ReaderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of damage this is, for code that reacts to it.
    public enum Kind: Sendable, Equatable {
        /// CSV that breaks RFC 4180: an unterminated quoted field, text after a closing quote.
        case malformedCSV
        /// A CSV record with more or fewer fields than the header.
        case wrongFieldCount
        /// JSON that breaks RFC 8259 (syntax, a bad escape, a bad number).
        case malformedJSON
        /// Well-formed JSON of the wrong shape: a record that is not an object.
        case notAnObject
        /// Bytes that are not UTF-8.
        case invalidUTF8
        /// One record larger than ``RecordReader/maxRecordBytes``.
        case recordTooLong
        /// Corrupt or truncated gzip data.
        case gzip
        /// The file could not be opened or read.
        case io
        /// A resume point that does not fit the source (the source has probably changed).
        case resume
        /// The reader was asked for something it cannot do (unknown format, CSV without column names).
        case configuration
    }

    /// What kind of damage this is.
    public var kind: Kind
    /// The source's display name (its path as given, or "stdin").
    public var file: String
    /// The 1-based line, when the damage has a position in the text.
    public var line: Int?
    /// The 1-based column in bytes from the start of the line, when the damage has a position in the text.
    public var column: Int?
    /// What was found: "unterminated quoted field".
    public var found: String
    /// What was expected, or what to do: "a field that opens with \" must close with \"".
    public var expected: String

    /// An error; `line` and `column` are nil for damage that is not in the text (I/O, gzip).
    package init(_ kind: Kind, file: String, line: Int? = nil, column: Int? = nil, found: String, expected: String) {
        self.kind = kind
        self.file = file
        self.line = line
        self.column = column
        self.found = found
        self.expected = expected
    }

    /// `file:line:column: found (expected)`, with the position left out where there is none.
    public var description: String {
        var place = file
        if let line {
            place += ":\(line)"
            if let column { place += ":\(column)" }
        }
        return expected.isEmpty ? "\(place): \(found)" : "\(place): \(found) (\(expected))"
    }
}
