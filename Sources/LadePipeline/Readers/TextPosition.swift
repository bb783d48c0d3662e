/// Line and column of a byte, found by counting line breaks forward from a known line start;
/// used only when something is wrong, so the fast paths never track columns.
enum TextPosition {
    /// The 1-based line and byte column of `index`, counting from `from`, which is on `line`,
    /// a line that starts at stream offset `lineStart`.
    static func locate(_ index: Int, in window: Window, from: Int, line: Int, lineStart: Int64,
                       countingLoneCarriageReturn: Bool) -> (line: Int, column: Int) {
        var line = line
        var lineStart = lineStart
        var i = from
        while i < index {
            let byte = window.bytes[i]
            if byte == ASCII.lineFeed
                || (countingLoneCarriageReturn && byte == ASCII.carriageReturn && (i + 1 >= window.count || window.bytes[i + 1] != ASCII.lineFeed)) {
                line += 1
                lineStart = window.offset + Int64(i + 1)
            }
            i += 1
        }
        return (line, Int(window.offset + Int64(index) - lineStart) + 1)
    }
}
