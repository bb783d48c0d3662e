import Foundation

/// Comparison operators of Core Data's predicate language.
///
/// ```swift
/// FetchPredicate.compare(.keyPath("name"), .beginsWith, .constant("Bo"), options: .caseInsensitive)   // name BEGINSWITH[c] "Bo"
/// ```
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case lessThan = "<"
    case lessThanOrEqual = "<="
    case greaterThan = ">"
    case greaterThanOrEqual = ">="
    /// Membership when the right side is a collection (`x IN {1, 2}`, `x IN tags.name`);
    /// substring when it is a string (`'ol' IN name`).
    case `in` = "IN"
    /// Membership when the left side is a collection (`tags CONTAINS %@`); substring when it
    /// is a string (`name CONTAINS 'ol'`).
    case contains = "CONTAINS"
    /// Right is a two-value collection; left lies between them, inclusive.
    case between = "BETWEEN"
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    /// A wildcard match of the whole string: `?` is one character, `*` any number of them;
    /// a backslash makes the next character literal.
    case like = "LIKE"
    /// An ICU regular expression matching the whole string.
    case matches = "MATCHES"
}

/// `[c]`, `[d]`, `[cd]`: case- and diacritic-insensitive string comparison. `[n]` is accepted
/// and means nothing more (Apple's "normalized" hint).
///
/// ```swift
/// let options: ComparisonOptions = [.caseInsensitive, .diacriticInsensitive]   // [cd]
/// ```
public struct ComparisonOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let caseInsensitive = ComparisonOptions(rawValue: 1)
    public static let diacriticInsensitive = ComparisonOptions(rawValue: 2)
}

/// How a comparison treats a collection on its left: `ANY`/`SOME` (some member satisfies it),
/// `ALL` (every member does; true for an empty collection). `NONE` is `NOT ANY`.
///
/// ```swift
/// FetchPredicate.compare(.keyPath("tags.name"), .equal, .constant("red"), modifier: .any)   // ANY tags.name == "red"
/// ```
public enum ComparisonModifier: String, Sendable, Hashable {
    case direct = ""
    case any = "ANY"
    case all = "ALL"
}

/// One comparison: `left op[options] right`, with an optional `ANY`/`ALL` modifier.
///
/// ```swift
/// let comparison = Comparison(.keyPath("price"), .lessThan, .constant(10))
/// let predicate = FetchPredicate.comparison(comparison)   // price < 10
/// ```
public struct Comparison: Sendable, Hashable {
    public var left: FetchExpression
    public var op: ComparisonOperator
    public var right: FetchExpression
    public var options: ComparisonOptions
    public var modifier: ComparisonModifier

    public init(_ left: FetchExpression, _ op: ComparisonOperator, _ right: FetchExpression, options: ComparisonOptions = [], modifier: ComparisonModifier = .direct) {
        self.left = left
        self.op = op
        self.right = right
        self.options = options
        self.modifier = modifier
    }
}

/// A condition on objects: Core Data's predicate language as one AST, evaluated in memory by
/// `PredicateEvaluator` and compiled to SQL by `SQLPredicateCompiler`; the two agree.
///
/// Parse it from Core Data's format strings (see `init(format:arguments:)`), or build it:
/// ```swift
/// let cheapTools = try FetchPredicate(format: "category.name == %@ AND price < %@", arguments: ["Tools", 10])
/// let same = FetchPredicate.and([
///     .compare(.keyPath("category.name"), .equal, .constant(.string("Tools"))),
///     .compare(.keyPath("price"), .lessThan, .constant(.integer(10))),
/// ])
/// ```
public indirect enum FetchPredicate: Sendable, Hashable {
    /// `TRUEPREDICATE`.
    case `true`
    /// `FALSEPREDICATE`.
    case `false`
    case comparison(Comparison)
    case and([FetchPredicate])
    case or([FetchPredicate])
    case not(FetchPredicate)

    public static func compare(
        _ left: FetchExpression, _ op: ComparisonOperator, _ right: FetchExpression,
        options: ComparisonOptions = [], modifier: ComparisonModifier = .direct
    ) -> FetchPredicate {
        .comparison(Comparison(left, op, right, options: options, modifier: modifier))
    }

    /// A copy with each `$VARIABLE` replaced; a variable missing from `values` is an error.
    /// Variables bound by a `SUBQUERY` inside are left alone; `$NAME.key` reads `key` from
    /// the value (nil unless the value is a collection, whose members it reads).
    ///
    /// ```swift
    /// let template = try FetchPredicate(format: "stock < $THRESHOLD")
    /// let low = try template.substituting(["THRESHOLD": 5])
    /// ```
    public func substituting(_ values: [String: PredicateValue]) throws -> FetchPredicate {
        try substituting { name, path in
            guard let value = values[name] else { throw FetchPredicateError.missingVariable(name) }
            return value.predicateValue(forKeyPath: path)
        }
    }

    /// A copy with each free variable (and each key path from one: `$FETCH_SOURCE.category`)
    /// replaced by the value `resolve` gives.
    func substituting(_ resolve: (String, [String]) throws -> PredicateValue) throws -> FetchPredicate {
        try rewritten(bound: []) { expression, bound in
            switch expression {
            case .variable(let name) where !bound.contains(name):
                return .constant(try resolve(name, []))
            case .variableKeyPath(let name, let path) where !bound.contains(name):
                return .constant(try resolve(name, path))
            default:
                return nil
            }
        }
    }

    /// The names of the free variables: `$NAME`s not bound by a `SUBQUERY`.
    public var variableNames: Set<String> {
        var names: Set<String> = []
        _ = try? rewritten(bound: []) { expression, bound in
            switch expression {
            case .variable(let name) where !bound.contains(name), .variableKeyPath(let name, _) where !bound.contains(name):
                names.insert(name)
            default: break
            }
            return nil
        }
        return names
    }

    /// Rebuilds the tree bottom-up, replacing each expression `change` returns a value for.
    /// `bound` holds the subquery variables in scope.
    func rewritten(bound: Set<String>, _ change: (FetchExpression, Set<String>) throws -> FetchExpression?) throws -> FetchPredicate {
        switch self {
        case .true, .false: return self
        case .comparison(var comparison):
            comparison.left = try comparison.left.rewritten(bound: bound, change)
            comparison.right = try comparison.right.rewritten(bound: bound, change)
            return .comparison(comparison)
        case .and(let parts): return .and(try parts.map { try $0.rewritten(bound: bound, change) })
        case .or(let parts): return .or(try parts.map { try $0.rewritten(bound: bound, change) })
        case .not(let inner): return .not(try inner.rewritten(bound: bound, change))
        }
    }
}

extension FetchExpression {
    func rewritten(bound: Set<String>, _ change: (FetchExpression, Set<String>) throws -> FetchExpression?) throws -> FetchExpression {
        if let replaced = try change(self, bound) { return replaced }
        switch self {
        case .constant, .keyPath, .evaluatedObject, .variable, .variableKeyPath: return self
        case .collectionOperator(let op, let collection, let path):
            return .collectionOperator(op, try collection.rewritten(bound: bound, change), path)
        case .aggregate(let members):
            return .aggregate(try members.map { try $0.rewritten(bound: bound, change) })
        case .subquery(let collection, let variable, let predicate):
            return .subquery(
                try collection.rewritten(bound: bound, change), variable: variable,
                try predicate.rewritten(bound: bound.union([variable]), change))
        }
    }
}

/// A predicate that cannot be evaluated or compiled as written.
public enum FetchPredicateError: Error, Sendable, Equatable, CustomStringConvertible {
    case missingVariable(String)
    case unknownKey(entity: String, key: String)
    case unsupported(String)
    /// `ANY`, `ALL`, `NONE`, `SUBQUERY` and collection operators need a collection.
    case notACollection(String)
    case invalidRegularExpression(pattern: String, reason: String)
    /// A fetch request template or fetched property the model does not have.
    case unknownTemplate(String)
    /// A template or fetched property whose predicate string does not parse.
    case invalidTemplate(name: String, reason: String)

    public var description: String {
        switch self {
        case .missingVariable(let name): "the predicate uses $\(name), which was given no value"
        case .unknownKey(let entity, let key): "'\(key)' is not a property of entity '\(entity)'"
        case .unsupported(let what): "not supported in a predicate: \(what)"
        case .notACollection(let what): "\(what) needs a collection (a to-many key path, an array or a SUBQUERY)"
        case .invalidRegularExpression(let pattern, let reason): "'\(pattern)' is not a valid regular expression: \(reason)"
        case .unknownTemplate(let name): "the model has no fetch request template or fetched property named '\(name)'"
        case .invalidTemplate(let name, let reason): "fetch request '\(name)': \(reason)"
        }
    }
}

extension FetchPredicateError: LadeError {
    public var code: String {
        switch self {
        case .missingVariable: "predicate.missingVariable"
        case .unknownKey: "predicate.unknownKey"
        case .unsupported: "predicate.unsupported"
        case .notACollection: "predicate.notACollection"
        case .invalidRegularExpression: "predicate.regex"
        case .unknownTemplate: "predicate.unknownTemplate"
        case .invalidTemplate: "predicate.invalidTemplate"
        }
    }
}
