import Foundation

/// How to order fetched objects by one key path (an attribute, possibly through to-one
/// relationships: `category.name`).
///
/// ```swift
/// FetchSortDescriptor("name")                                             // ascending, compare:
/// FetchSortDescriptor("price", ascending: false)
/// FetchSortDescriptor("title", comparator: .localizedStandardCompare)    // "file2" before "file10"
/// ```
///
/// The order is the same whether the SQLite store sorts (`ORDER BY`, with collations that run
/// `compare(_:_:)`'s code) or the context sorts in memory (when unsaved changes take part):
/// nil comes first ascending and last descending, as in Core Data's SQLite stores; numbers,
/// dates and booleans compare numerically, binary data and UUIDs bytewise, and strings as the
/// comparator says.
public struct FetchSortDescriptor: Sendable, Hashable {
    public enum Comparator: String, Sendable, Hashable {
        /// Strings by their UTF-8 bytes (code point order; SQLite's BINARY collation).
        case compare
        /// Strings by their case folds (`[c]` of predicates); strings that fold alike tie.
        case caseInsensitiveCompare
        /// Finder-like and the same on every machine: case and diacritics ignored, digit runs
        /// compared as numbers; only equal strings tie.
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

    /// Orders two values as this descriptor does: -1, 0 or 1, `ascending` taken into account.
    ///
    /// ```swift
    /// FetchSortDescriptor("name", comparator: .caseInsensitiveCompare).compare(.string("a"), .string("B"))   // -1
    /// ```
    public func compare(_ a: PredicateValue, _ b: PredicateValue) -> Int {
        let order = Self.ascendingOrder(a, b, comparator)
        return ascending ? order : -order
    }

    /// Orders two objects by this descriptor's key path.
    public func compare(_ a: some PredicateEvaluable, _ b: some PredicateEvaluable) -> Int {
        compare(a.predicateValue(forKeyPath: keyPath), b.predicateValue(forKeyPath: keyPath))
    }

    /// Orders two objects by a list of descriptors: the first that tells them apart decides.
    package static func compare(_ a: some PredicateEvaluable, _ b: some PredicateEvaluable, by descriptors: [FetchSortDescriptor]) -> Int {
        for descriptor in descriptors {
            let order = descriptor.compare(a, b)
            if order != 0 { return order }
        }
        return 0
    }

    /// Nil first; then, between values of different kinds (which one attribute never holds),
    /// SQLite's order of storage classes: numbers, text, bytes; objects and collections last.
    static func ascendingOrder(_ a: PredicateValue, _ b: PredicateValue, _ comparator: Comparator) -> Int {
        switch (a, b) {
        case (.null, .null): return 0
        case (.null, _): return -1
        case (_, .null): return 1
        case (.attribute(let x), .attribute(let y)):
            if case .text(let left) = ValueComparison.key(x), case .text(let right) = ValueComparison.key(y) {
                switch comparator {
                case .compare: return StringComparison.compare(left, right, [])
                case .caseInsensitiveCompare: return StringComparison.caseInsensitiveCompare(left, right)
                case .localizedStandardCompare: return StringComparison.localizedStandardCompare(left, right)
                }
            }
            if let order = ValueComparison.compare(x, y) { return order }
            let rank: (AttributeValue) -> Int = { ValueComparison.kind($0) == .number ? 0 : ValueComparison.kind($0) == .text ? 1 : 2 }
            return rank(x) < rank(y) ? -1 : 1
        case (.attribute, _): return -1
        case (_, .attribute): return 1
        default: return 0
        }
    }

    /// Refuses a key path that is not a stored attribute reached through to-one relationships:
    /// neither the store nor the context sorts by relationships, to-many paths or transient values.
    /// A composite attribute is sorted by one of its elements (`address.city`), not as a whole.
    func check(on entity: String, in model: ManagedObjectModel) throws {
        var current = entity
        let path = keyPath.joined(separator: ".")
        for (position, key) in keyPath.enumerated() {
            let last = position == keyPath.count - 1
            if let attribute = model.attribute(key, of: current) {
                if attribute.type == .composite, !attribute.isTransient {
                    var element = attribute
                    for name in keyPath[(position + 1)...] {
                        guard let next = model.elements(of: element).first(where: { $0.name == name }) else {
                            throw FetchPredicateError.unsupported("sorting by '\(path)': composite '\(element.compositeName ?? element.name)' has no element '\(name)'")
                        }
                        element = next
                    }
                    guard element.type != .composite else { throw FetchPredicateError.unsupported("sorting by composite '\(path)'; sort by one of its elements") }
                    return
                }
                guard last else { throw FetchPredicateError.unsupported("sorting by '\(path)', a key path through attribute '\(key)'") }
                guard !attribute.isTransient else { throw FetchPredicateError.unsupported("sorting by transient attribute '\(key)'") }
                return
            }
            guard let relationship = model.relationship(key, of: current) else {
                throw FetchPredicateError.unknownKey(entity: current, key: key)
            }
            guard !relationship.isToMany, !last else {
                throw FetchPredicateError.unsupported("sorting by '\(path)': sort by an attribute reached through to-one relationships")
            }
            current = relationship.destinationEntityName
        }
        throw FetchPredicateError.unsupported("sorting by an empty key path")
    }
}
