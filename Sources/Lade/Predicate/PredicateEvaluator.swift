import Foundation

/// What the evaluator reads values from: a managed object, or anything that answers key paths.
public protocol PredicateEvaluable {
    /// The value at a key path: an attribute value, a related object's ID, nil, or (through a
    /// to-many relationship) a collection.
    func predicateValue(forKeyPath path: [String]) -> PredicateValue
}

/// Evaluates a predicate in memory, with the same meaning the SQL compiler gives it:
/// nil equals only nil; `!=` against a value is true for nil; ordering comparisons with nil
/// are false; strings compare by UTF-8 bytes.
///
/// ```swift
/// let matches = try PredicateEvaluator.evaluate(predicate, on: product)
/// ```
public enum PredicateEvaluator {
    public static func evaluate(_ predicate: Predicate, on object: some PredicateEvaluable) throws -> Bool {
        switch predicate {
        case .true: return true
        case .false: return false
        case .and(let parts):
            for part in parts where try !evaluate(part, on: object) { return false }
            return true
        case .or(let parts):
            for part in parts where try evaluate(part, on: object) { return true }
            return false
        case .not(let inner): return try !evaluate(inner, on: object)
        case .comparison(let left, let op, let right, let options):
            return try compare(value(left, object), op, value(right, object), options)
        }
    }

    static func value(_ expression: Expression, _ object: some PredicateEvaluable) throws -> PredicateValue {
        switch expression {
        case .constant(let value): return value
        case .keyPath(let path): return object.predicateValue(forKeyPath: path)
        case .evaluatedObject: return object.predicateValue(forKeyPath: [])
        case .variable(let name): throw PredicateError.missingVariable(name)
        }
    }

    static func compare(_ left: PredicateValue, _ op: ComparisonOperator, _ right: PredicateValue, _ options: ComparisonOptions) throws -> Bool {
        guard options.isEmpty else { throw PredicateError.unsupported("[c] and [d] options") }
        switch op {
        case .equal: return equal(left, right)
        case .notEqual: return !equal(left, right)
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            guard case .attribute(let a) = left, case .attribute(let b) = right, let order = ValueComparison.compare(a, b) else { return false }
            switch op {
            case .lessThan: return order < 0
            case .lessThanOrEqual: return order <= 0
            case .greaterThan: return order > 0
            default: return order >= 0
            }
        case .in:
            guard case .collection(let items) = right else { throw PredicateError.unsupported("IN needs a collection on its right") }
            return items.contains { equal(left, $0) }
        case .between:
            guard case .collection(let bounds) = right, bounds.count == 2 else { throw PredicateError.unsupported("BETWEEN needs {low, high}") }
            return try compare(left, .greaterThanOrEqual, bounds[0], options) && compare(left, .lessThanOrEqual, bounds[1], options)
        case .beginsWith, .endsWith, .contains:
            guard case .attribute(.string(let text)) = left, case .attribute(.string(let part)) = right else { return false }
            let haystack = Array(text.utf8), needle = Array(part.utf8)
            switch op {
            case .beginsWith: return haystack.starts(with: needle)
            case .endsWith: return haystack.reversed().starts(with: needle.reversed())
            default: return needle.isEmpty || haystack.firstRange(of: needle) != nil
            }
        }
    }

    static func equal(_ left: PredicateValue, _ right: PredicateValue) -> Bool {
        switch (left, right) {
        case (.null, .null): return true
        case (.attribute(let a), .attribute(let b)): return ValueComparison.compare(a, b) == 0
        case (.object(let a), .object(let b)): return a == b
        default: return false
        }
    }
}
