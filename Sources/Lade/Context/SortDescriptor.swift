import Foundation

/// How to order fetched objects by one key path.
///
/// ```swift
/// SortDescriptor("name")                       // ascending, compare:
/// SortDescriptor("price", ascending: false)
/// ```
public struct SortDescriptor: Sendable, Hashable {
    /// `compare:` orders numbers numerically and strings by code point (SQLite's BINARY).
    public enum Comparator: String, Sendable, Hashable {
        case compare
        case caseInsensitiveCompare
        case localizedStandardCompare
    }

    public var keyPath: [String]
    public var ascending: Bool
    public var comparator: Comparator

    public init(_ keyPath: String, ascending: Bool = true, comparator: Comparator = .compare) {
        self.keyPath = keyPath.split(separator: ".").map(String.init)
        self.ascending = ascending
        self.comparator = comparator
    }
}
