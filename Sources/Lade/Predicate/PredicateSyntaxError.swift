import Foundation

/// A format string that is not a predicate: what was expected, and where.
///
/// ```swift
/// do { _ = try FetchPredicate(format: "name == 'Bolt' OR == 3") }
/// catch let error as PredicateSyntaxError {
///     print(error)   // expected a value before '==' at column 19
/// }
/// ```
public struct PredicateSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, without the position: "expected a value after '=='".
    public let message: String
    /// The 1-based column (in characters) of the token that could not be read; one past the
    /// last character when the format ended too early.
    public let column: Int
    /// The format string that was parsed.
    public let format: String

    package init(message: String, column: Int, format: String) {
        self.message = message
        self.column = column
        self.format = format
    }

    public var description: String { "\(message) at column \(column)" }
}

extension PredicateSyntaxError: LadeError {
    public var code: String { "predicate.syntax" }
}
