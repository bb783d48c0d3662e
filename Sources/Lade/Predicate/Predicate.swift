import Foundation

/// Comparison operators of Core Data's predicate language.
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case lessThan = "<"
    case lessThanOrEqual = "<="
    case greaterThan = ">"
    case greaterThanOrEqual = ">="
    /// The left value is one of the right collection's.
    case `in` = "IN"
    /// Right is a two-value collection; left lies between them, inclusive.
    case between = "BETWEEN"
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case contains = "CONTAINS"
}

/// `[c]`, `[d]`, `[cd]`: case- and diacritic-insensitive string comparison.
public struct ComparisonOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let caseInsensitive = ComparisonOptions(rawValue: 1)
    public static let diacriticInsensitive = ComparisonOptions(rawValue: 2)
}

/// A condition on objects: Core Data's predicate language as one AST, evaluated in memory by
/// `PredicateEvaluator` and compiled to SQL by `SQLPredicateCompiler`; the two agree.
///
/// ```swift
/// let cheapTools = Predicate.and([
///     .compare(.keyPath("category.name"), .equal, .constant(.string("Tools"))),
///     .compare(.keyPath("price"), .lessThan, .constant(.decimal(10))),
/// ])
/// let bySKU = Predicate.compare(.keyPath("sku"), .in, .constant(.collection(skus.map { .string($0) })))
/// ```
public indirect enum Predicate: Sendable, Hashable {
    case `true`
    case `false`
    case comparison(Expression, ComparisonOperator, Expression, ComparisonOptions)
    case and([Predicate])
    case or([Predicate])
    case not(Predicate)

    public static func compare(_ left: Expression, _ op: ComparisonOperator, _ right: Expression, options: ComparisonOptions = []) -> Predicate {
        .comparison(left, op, right, options)
    }

    /// A copy with each `$VARIABLE` replaced; a variable missing from `values` is an error.
    public func substituting(_ values: [String: PredicateValue]) throws -> Predicate {
        func expression(_ e: Expression) throws -> Expression {
            guard case .variable(let name) = e else { return e }
            guard let value = values[name] else { throw PredicateError.missingVariable(name) }
            return .constant(value)
        }
        switch self {
        case .true, .false: return self
        case .comparison(let left, let op, let right, let options):
            return .comparison(try expression(left), op, try expression(right), options)
        case .and(let parts): return .and(try parts.map { try $0.substituting(values) })
        case .or(let parts): return .or(try parts.map { try $0.substituting(values) })
        case .not(let inner): return .not(try inner.substituting(values))
        }
    }
}

/// A predicate that cannot be evaluated or compiled as written.
public enum PredicateError: Error, Sendable, Equatable, CustomStringConvertible {
    case missingVariable(String)
    case unknownKey(entity: String, key: String)
    case unsupported(String)

    public var description: String {
        switch self {
        case .missingVariable(let name): "the predicate uses $\(name), which was given no value"
        case .unknownKey(let entity, let key): "'\(key)' is not a property of entity '\(entity)'"
        case .unsupported(let what): "not supported in a predicate yet: \(what)"
        }
    }
}
