import Foundation

/// What the evaluator reads values from: a managed object, a plain value, a dictionary, or
/// anything else that answers key paths.
///
/// ```swift
/// struct Point: PredicateEvaluable {
///     var x: Int64
///     func predicateValue(forKeyPath path: [String]) -> PredicateValue { path == ["x"] ? .integer(x) : .null }
/// }
/// try FetchPredicate(format: "x > 2").evaluate(with: Point(x: 3))   // true
/// ```
public protocol PredicateEvaluable {
    /// The value at a key path: an attribute value, a related object's ID, nil, or (through
    /// to-many relationships) one flat collection of the values reached. The empty path is
    /// the object itself.
    func predicateValue(forKeyPath path: [String]) -> PredicateValue
    /// The objects at a key path that ends in a relationship (for `SUBQUERY` and `$x.path`),
    /// or nil when the path leads to values rather than objects.
    func predicateObjects(forKeyPath path: [String]) -> [any PredicateEvaluable]?
}

extension PredicateEvaluable {
    public func predicateObjects(forKeyPath path: [String]) -> [any PredicateEvaluable]? { nil }
}

/// A plain value evaluates as `SELF`: `try FetchPredicate(format: "SELF BEGINSWITH 'a'").evaluate(with: PredicateValue.string("abc"))`.
/// A composite value answers its elements' names (`address.city`, `address.geo.lat`); an
/// element without a value is nil.
extension PredicateValue: PredicateEvaluable {
    public func predicateValue(forKeyPath path: [String]) -> PredicateValue {
        guard let first = path.first else { return self }
        switch self {
        case .collection(let members): return .collection(members.map { $0.predicateValue(forKeyPath: path) })
        case .attribute(.composite(let elements)):
            return (elements[first].map { PredicateValue.attribute($0) } ?? .null).predicateValue(forKeyPath: Array(path.dropFirst()))
        default: return .null
        }
    }
}

/// A dictionary evaluates by key: `try FetchPredicate(format: "age > 30").evaluate(with: ["age": PredicateValue.integer(41)])`.
extension Dictionary: PredicateEvaluable where Key == String, Value == PredicateValue {
    public func predicateValue(forKeyPath path: [String]) -> PredicateValue {
        guard let first = path.first else { return .null }
        return (self[first] ?? .null).predicateValue(forKeyPath: Array(path.dropFirst()))
    }
}

extension FetchPredicate {
    /// Whether `object` satisfies the predicate, evaluated in memory.
    ///
    /// ```swift
    /// let cheap = try FetchPredicate(format: "price < 10")
    /// try cheap.evaluate(with: product)                                // a ManagedObject
    /// try cheap.evaluate(with: ["price": PredicateValue.integer(4)])    // true
    /// ```
    public func evaluate(with object: some PredicateEvaluable) throws -> Bool {
        try PredicateEvaluator.evaluate(self, on: object)
    }
}

/// Evaluates a predicate in memory, with the meaning the SQL compiler gives it:
/// nil equals only nil; `!=` against a value is true for nil; ordering comparisons and string
/// tests with nil, or between values of different kinds, are false; strings compare by UTF-8
/// bytes, or folded as `StringComparison` says for `[c]`/`[d]`; `ANY`/`ALL`/`NONE` over an
/// empty collection are false/true/true; `@sum` of nothing is 0, `@avg`/`@min`/`@max` of
/// nothing are nil, and all ignore nil members while `@count` counts them.
///
/// ```swift
/// let matches = try PredicateEvaluator.evaluate(predicate, on: product)
/// ```
package enum PredicateEvaluator {
    package static func evaluate(_ predicate: FetchPredicate, on object: some PredicateEvaluable) throws -> Bool {
        try evaluate(predicate, Scope(object: object, variables: [:]))
    }

    /// A member of a collection, or the value a subquery variable names.
    enum Member {
        case object(any PredicateEvaluable)
        case value(PredicateValue)

        func value(at path: [String]) -> PredicateValue {
            switch self {
            case .object(let object): object.predicateValue(forKeyPath: path)
            case .value(let value): value.predicateValue(forKeyPath: path)
            }
        }

        func objects(at path: [String]) -> [any PredicateEvaluable]? {
            switch self {
            case .object(let object): object.predicateObjects(forKeyPath: path)
            case .value: nil
            }
        }
    }

    struct Scope {
        var object: any PredicateEvaluable
        var variables: [String: Member]
    }

    static func evaluate(_ predicate: FetchPredicate, _ scope: Scope) throws -> Bool {
        switch predicate {
        case .true: return true
        case .false: return false
        case .and(let parts):
            for part in parts where try !evaluate(part, scope) { return false }
            return true
        case .or(let parts):
            for part in parts where try evaluate(part, scope) { return true }
            return false
        case .not(let inner): return try !evaluate(inner, scope)
        case .comparison(let comparison):
            let right = try value(comparison.right, scope)
            switch comparison.modifier {
            case .direct:
                return try compare(try value(comparison.left, scope), comparison.op, right, comparison.options)
            case .any, .all:
                let members = try elements(of: comparison.left, scope, "\(comparison.modifier.rawValue)")
                for member in members {
                    let satisfied = try compare(member.value(at: []), comparison.op, right, comparison.options)
                    if comparison.modifier == .any && satisfied { return true }
                    if comparison.modifier == .all && !satisfied { return false }
                }
                return comparison.modifier == .all
            }
        }
    }

    static func value(_ expression: FetchExpression, _ scope: Scope) throws -> PredicateValue {
        switch expression {
        case .constant(let value): return value
        case .keyPath(let path): return scope.object.predicateValue(forKeyPath: path)
        case .evaluatedObject: return scope.object.predicateValue(forKeyPath: [])
        case .variable(let name), .variableKeyPath(let name, _):
            guard let member = scope.variables[name] else { throw FetchPredicateError.missingVariable(name) }
            if case .variableKeyPath(_, let path) = expression { return member.value(at: path) }
            return member.value(at: [])
        case .aggregate(let members):
            return .collection(try members.map { try value($0, scope) })
        case .subquery:
            return .collection(try elements(of: expression, scope, "SUBQUERY").map { $0.value(at: []) })
        case .collectionOperator(let op, let collection, let path):
            let members = try elements(of: collection, scope, op.rawValue)
            if op == .count { return .integer(Int64(members.count)) }
            return try aggregate(op, members.flatMap { member -> [PredicateValue] in
                if case .collection(let nested) = member.value(at: path) { return nested }
                return [member.value(at: path)]
            })
        }
    }

    /// The members of a collection expression: objects where the collection holds objects.
    static func elements(of expression: FetchExpression, _ scope: Scope, _ user: String) throws -> [Member] {
        func members(from base: Member, _ path: [String]) throws -> [Member] {
            if let objects = base.objects(at: path) { return objects.map { .object($0) } }
            switch base.value(at: path) {
            case .collection(let values): return values.map { .value($0) }
            case .null: return []
            default: throw FetchPredicateError.notACollection(user)
            }
        }
        switch expression {
        case .keyPath(let path):
            return try members(from: .object(scope.object), path)
        case .variableKeyPath(let name, let path):
            guard let member = scope.variables[name] else { throw FetchPredicateError.missingVariable(name) }
            return try members(from: member, path)
        case .subquery(let collection, let variable, let predicate):
            var inner = scope
            return try elements(of: collection, scope, "SUBQUERY").filter { member in
                inner.variables[variable] = member
                return try evaluate(predicate, inner)
            }
        default:
            switch try value(expression, scope) {
            case .collection(let values): return values.map { .value($0) }
            case .null: return []
            default: throw FetchPredicateError.notACollection(user)
            }
        }
    }

    static func aggregate(_ op: CollectionOperator, _ values: [PredicateValue]) throws -> PredicateValue {
        var present: [AttributeValue] = []
        for value in values {
            switch value {
            case .null: continue
            case .attribute(let attribute): present.append(attribute)
            default: throw FetchPredicateError.unsupported("\(op.rawValue) over objects or nested collections")
            }
        }
        switch op {
        case .count:
            return .integer(Int64(values.count))
        case .sum, .avg:
            var exact: Int64? = 0
            var total = 0.0
            for value in present {
                guard case .number(let double, let whole) = ValueComparison.key(value) else {
                    throw FetchPredicateError.unsupported("\(op.rawValue) over values that are not numbers")
                }
                // As SQLite's sum(): an exact integer sum while every value is an integer, and
                // a double sum in member order beside it.
                if let sum = exact, let whole {
                    let (result, overflow) = sum.addingReportingOverflow(whole)
                    exact = overflow ? nil : result
                } else {
                    exact = nil
                }
                total += double
            }
            if op == .avg {
                return present.isEmpty ? .null : .double(total / Double(present.count))
            }
            return exact.map { .integer($0) } ?? .double(total)
        case .min, .max:
            var best: AttributeValue?
            for value in present {
                guard let current = best else { best = value; continue }
                guard let order = ValueComparison.compare(value, current) else {
                    throw FetchPredicateError.unsupported("\(op.rawValue) over values of different kinds")
                }
                if (op == .min && order < 0) || (op == .max && order > 0) { best = value }
            }
            return best.map { .attribute($0) } ?? .null
        }
    }

    static func compare(_ left: PredicateValue, _ op: ComparisonOperator, _ right: PredicateValue, _ options: ComparisonOptions) throws -> Bool {
        func refuseCollections(_ values: PredicateValue...) throws {
            for value in values {
                guard case .collection = value else { continue }
                throw FetchPredicateError.unsupported("a collection compared with \(op.rawValue); use ANY, ALL, NONE, IN, CONTAINS or a collection operator")
            }
        }
        switch op {
        case .equal, .notEqual:
            try refuseCollections(left, right)
            return equal(left, right, options) == (op == .equal)
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            try refuseCollections(left, right)
            guard case .attribute(let a) = left, case .attribute(let b) = right, let order = ValueComparison.compare(a, b, options) else { return false }
            switch op {
            case .lessThan: return order < 0
            case .lessThanOrEqual: return order <= 0
            case .greaterThan: return order > 0
            default: return order >= 0
            }
        case .in:
            return try containment(right, left, op, options)
        case .contains:
            return try containment(left, right, op, options)
        case .between:
            try refuseCollections(left)
            guard case .collection(let bounds) = right, bounds.count == 2 else { throw FetchPredicateError.unsupported("BETWEEN needs {low, high} on its right") }
            return try compare(left, .greaterThanOrEqual, bounds[0], options) && compare(left, .lessThanOrEqual, bounds[1], options)
        case .beginsWith, .endsWith, .like, .matches:
            try refuseCollections(left, right)
            guard let (text, pattern) = texts(left, right) else { return false }
            switch op {
            case .beginsWith: return StringComparison.beginsWith(text, pattern, options)
            case .endsWith: return StringComparison.endsWith(text, pattern, options)
            case .like: return StringComparison.like(text, pattern, options)
            default: return try StringComparison.matches(text, pattern, options)
            }
        }
    }

    /// `element IN container` and `container CONTAINS element`: membership when the container
    /// is a collection, a substring test when it is a string.
    private static func containment(_ container: PredicateValue, _ element: PredicateValue, _ op: ComparisonOperator, _ options: ComparisonOptions) throws -> Bool {
        switch container {
        case .collection(let items): return items.contains { equal(element, $0, options) }
        case .null: return false
        case .attribute(let text) where ValueComparison.kind(text) == .text:
            if case .collection = element {
                throw FetchPredicateError.unsupported("a collection compared with \(op.rawValue); use ANY, ALL, NONE, IN, CONTAINS or a collection operator")
            }
            guard let (text, part) = texts(container, element) else { return false }
            return StringComparison.contains(text, part, options)
        default:
            throw FetchPredicateError.unsupported("\(op.rawValue) with a \(op == .in ? "right" : "left") side that is neither a collection nor a string")
        }
    }

    /// Both sides as text (strings or URIs), or nil.
    private static func texts(_ left: PredicateValue, _ right: PredicateValue) -> (String, String)? {
        guard case .attribute(let a) = left, case .attribute(let b) = right,
              case .text(let x) = ValueComparison.key(a), case .text(let y) = ValueComparison.key(b) else { return nil }
        return (x, y)
    }

    static func equal(_ left: PredicateValue, _ right: PredicateValue, _ options: ComparisonOptions = []) -> Bool {
        switch (left, right) {
        case (.null, .null): return true
        case (.attribute(let a), .attribute(let b)): return ValueComparison.compare(a, b, options) == 0
        case (.object(let a), .object(let b)): return a == b
        default: return false
        }
    }
}
