import Foundation

/// A job file Lade cannot run as written: where (file, line, column, the field's path in the
/// job) and what to do about it.
///
/// ```
/// jobs/products.yaml:9:10: batch.size: expected a whole number above 0, found 'many'
/// ```
public struct JobError: Error, Sendable, Equatable, CustomStringConvertible {
    public let file: String
    public let line: Int?
    public let column: Int?
    /// The field's path in the job, such as `fields.createdAt.date` (empty for the whole file).
    public let field: String
    public let message: String

    package init(file: String, line: Int? = nil, column: Int? = nil, field: String = "", _ message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.field = field
        self.message = message
    }

    public var description: String {
        var place = file
        if let line {
            place += ":\(line)"
            if let column { place += ":\(column)" }
        }
        return field.isEmpty ? "\(place): \(message)" : "\(place): \(field): \(message)"
    }
}
