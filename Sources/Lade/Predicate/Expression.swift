import Foundation

/// A value an expression can produce or a predicate can compare with: an attribute value, an
/// object (by ID), nil, or a collection.
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

/// The left or right side of a comparison (Apple's `NSExpression`).
///
/// Foundation has types named `Predicate`, `SortDescriptor` and `Expression` too; where a
/// file imports both and names the type, write `Lade.Predicate` (inferred uses such as
/// `request.predicate = .compare(…)` need no prefix).
///
/// ```swift
/// Expression.keyPath("category.name")      // category.name
/// Expression.constant(.string("Tools"))    // "Tools"
/// ```
public indirect enum Expression: Sendable, Hashable {
    /// A constant value.
    case constant(PredicateValue)
    /// A key path from the evaluated object: `name`, `category.name`.
    case keyPath([String])
    /// `SELF`: the evaluated object itself.
    case evaluatedObject
    /// `$NAME`: replaced by `Predicate.substituting(_:)` before evaluation.
    case variable(String)

    public static func keyPath(_ path: String) -> Expression {
        .keyPath(path.split(separator: ".").map(String.init))
    }
}
