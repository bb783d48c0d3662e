import Foundation

/// A value an expression can produce or a predicate can compare with: an attribute value, an
/// object (by ID), nil, or a collection.
///
/// Literals make arguments easy to write: `FetchPredicate(format: "price < %@ AND name == %@", arguments: [10, "Bolt"])`.
/// ```swift
/// let values: [PredicateValue] = [10, 2.5, "Bolt", true, nil, [1, 2, 3], .date(Date()), .object(product.objectID)]
/// ```
public enum PredicateValue: Sendable, Hashable {
    case null
    case attribute(AttributeValue)
    case object(ManagedObjectID)
    case collection([PredicateValue])

    public static func string(_ text: String) -> PredicateValue { .attribute(.string(text)) }
    public static func integer(_ number: Int64) -> PredicateValue { .attribute(.integer(number)) }
    public static func double(_ number: Double) -> PredicateValue { .attribute(.double(number)) }
    public static func decimal(_ number: Decimal) -> PredicateValue { .attribute(.decimal(number)) }
    public static func bool(_ flag: Bool) -> PredicateValue { .attribute(.bool(flag)) }
    public static func date(_ date: Date) -> PredicateValue { .attribute(.date(date)) }
    public static func uuid(_ uuid: UUID) -> PredicateValue { .attribute(.uuid(uuid)) }
    public static func uri(_ url: URL) -> PredicateValue { .attribute(.uri(url)) }
    public static func data(_ data: Data) -> PredicateValue { .attribute(.binary(data)) }
}

extension PredicateValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: PredicateValue...) { self = .collection(elements) }
}

/// Collection operators of key paths: `items.@count`, `items.@sum.price`.
///
/// ```swift
/// FetchExpression.collectionOperator(.avg, .keyPath("items"), ["price"])   // items.@avg.price
/// ```
public enum CollectionOperator: String, Sendable, Hashable, CaseIterable {
    case count = "@count"
    case sum = "@sum"
    case avg = "@avg"
    case min = "@min"
    case max = "@max"
}

/// The left or right side of a comparison (Apple's `NSExpression`).
///
/// Named `FetchExpression` (and `FetchPredicate`, `FetchSortDescriptor`) because Foundation
/// has an `Expression`, a `Predicate` and a `SortDescriptor` of its own: a file that imports
/// both Foundation and Lade names Lade's types without qualifying them.
///
/// ```swift
/// FetchExpression.keyPath("category.name")                            // category.name
/// FetchExpression.constant(.string("Tools"))                          // "Tools"
/// FetchExpression.collectionOperator(.sum, .keyPath("items"), ["price"]) // items.@sum.price
/// ```
public indirect enum FetchExpression: Sendable, Hashable {
    /// A constant value.
    case constant(PredicateValue)
    /// A key path from the evaluated object: `name`, `category.name`, `tags.name` (to-many).
    case keyPath([String])
    /// `SELF`: the evaluated object itself.
    case evaluatedObject
    /// `$NAME`: a substitution variable, or the variable of an enclosing `SUBQUERY`.
    case variable(String)
    /// A key path from a variable: `$x.price` inside `SUBQUERY(items, $x, $x.price > 5)`.
    case variableKeyPath(String, [String])
    /// `collection.@op.path`: an aggregate over a collection (`items.@count`,
    /// `items.@avg.price`, `SUBQUERY(…).@count`); `path` is read on each element.
    case collectionOperator(CollectionOperator, FetchExpression, [String])
    /// `{a, b, c}` with members that are not all constants (`{$LOW, $HIGH}`, `{price, cost}`).
    case aggregate([FetchExpression])
    /// `SUBQUERY(collection, $variable, predicate)`: the members of a collection for which the
    /// predicate holds, with `$variable` naming each member.
    case subquery(FetchExpression, variable: String, FetchPredicate)

    public static func keyPath(_ path: String) -> FetchExpression {
        .keyPath(path.split(separator: ".").map(String.init))
    }

    var isCollectionOperator: Bool {
        if case .collectionOperator = self { return true }
        return false
    }
}
