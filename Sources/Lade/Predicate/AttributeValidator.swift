import Foundation

/// The rules one attribute's values must meet (required, minimum, maximum, pattern), ready to
/// check many values: the regular expression is compiled once. Saves check every changed
/// object with these; importers check rows with the same rules before they become objects.
/// It lives with the predicates: Core Data keeps these rules as an attribute's validation
/// predicates, and a bound compares values as a predicate does (`ValueComparison`).
///
/// ```swift
/// let sku = AttributeValidator(model.attribute("sku", of: "Product")!)
/// sku.violation(of: .string("a b"))    // .pattern: does not match the pattern /[A-Z0-9][A-Z0-9-]{2,31}/
/// ```
///
/// A value the regular expression cannot be decided for (ICU, matching a pattern outside the
/// linear-time engine's subset, gives up on it after 10 million steps) breaks no rule: neither a
/// match nor a mismatch is known, so it is accepted, never refused as a mismatch. ``verdict(of:)``
/// says so, for an importer to warn:
///
/// ```swift
/// code.verdict(of: .string(String(repeating: "a", count: 30) + "b"))
/// // .undecided("could not be decided against the pattern /(?=a)((a+)+c|a+b)/: ICU, …")
/// code.violation(of: .string(String(repeating: "a", count: 30) + "b"))   // nil
/// ```
public final class AttributeValidator: Sendable {
    public let attribute: AttributeDescription
    // The rules, taken out of the description once: a validator is used for every value of
    // every saved object, and reading a few fields beats copying the description each time.
    private let isOptional: Bool
    private let minValue: AttributeValue?
    private let maxValue: AttributeValue?
    private let measuresLength: Bool
    private let expression: RegularExpression?
    private let pattern: String
    /// For a composite attribute validated with its model: each element's rules, by name.
    private let elements: [String: AttributeValidator]?

    /// The rules of `attribute`; with `model`, a composite attribute's value is checked
    /// element by element too (names, types and each element's own rules).
    public init(_ attribute: AttributeDescription, in model: ManagedObjectModel? = nil) {
        self.attribute = attribute
        isOptional = attribute.isOptional
        minValue = attribute.minValue
        maxValue = attribute.maxValue
        measuresLength = attribute.type == .string || attribute.type == .binary
        expression = attribute.regularExpression.flatMap { try? RegularExpression($0) }
        pattern = attribute.regularExpression ?? ""
        // The model's rules bound the nesting (64 levels), so this recursion is shallow.
        elements = attribute.type == .composite ? model.map { model in
            Dictionary(model.elements(of: attribute).map { ($0.name, AttributeValidator($0, in: model)) }, uniquingKeysWith: { first, _ in first })
        } : nil
    }

    /// Whether any value can break a rule: false for an optional attribute with no minimum,
    /// maximum or pattern (a save need not ask about its values).
    public var hasRules: Bool { !isOptional || minValue != nil || maxValue != nil || expression != nil || elements != nil }

    /// One broken rule, in the words a save's `ObjectValidationError` uses.
    public struct Violation: Sendable, Equatable, CustomStringConvertible {
        public let rule: ObjectValidationError.Rule
        public let message: String
        public var description: String { message }
    }

    /// What `value` comes to against the rules.
    public enum Verdict: Sendable, Equatable {
        case meets
        case breaks(Violation)
        /// The value breaks no rule it could be checked against, and the pattern could not be
        /// decided for it (why): it is accepted.
        case undecided(String)
    }

    /// The first rule `value` breaks, or nil when it meets them all (nil meets the rules of an
    /// optional attribute). A value the pattern could not be decided for meets them.
    public func violation(of value: AttributeValue?) -> Violation? {
        if case .breaks(let violation) = verdict(of: value) { return violation }
        return nil
    }

    /// Whether `value` meets the rules, breaks one (the first), or could not be decided against
    /// the pattern (and is then accepted).
    public func verdict(of value: AttributeValue?) -> Verdict {
        guard let value else {
            return isOptional ? .meets : .breaks(Violation(rule: .required, message: "is required"))
        }
        if minValue != nil || maxValue != nil {
            let measured: AttributeValue
            switch value {
            case .string(let text): measured = .integer(Int64(text.utf16.count))
            case .binary(let data): measured = .integer(Int64(data.count))
            default: measured = value
            }
            // Core Data counts a string's length in UTF-16 code units (NSString's length), so
            // an emoji counts 2: the message says so, or "too long" at 50 characters reads wrong.
            // Written only for a value that breaks a rule (every value set is checked).
            func what() -> String {
                switch (value, measured) {
                case (.string, .integer(let length)): "length (\(length) UTF-16 code units, as Core Data counts)"
                case (.binary, .integer(let length)): "length (\(length) bytes)"
                default: measuresLength ? "length" : "value"
                }
            }
            if let minimum = minValue, let order = ModelValidator.compare(measured, minimum) ?? ValueComparison.compare(measured, minimum), order < 0 {
                return .breaks(Violation(rule: .minimum, message: "\(what()) is below the minimum \(minimum.canonicalText)"))
            }
            if let maximum = maxValue, let order = ModelValidator.compare(measured, maximum) ?? ValueComparison.compare(measured, maximum), order > 0 {
                return .breaks(Violation(rule: .maximum, message: "\(what()) is above the maximum \(maximum.canonicalText)"))
            }
        }
        // The whole value must match, as NSPredicate's MATCHES (ICU's matches()) decides it.
        // The expression used where it is stored (`expression?.`): `if let` copied it per value.
        var undecided: String?
        if case .string(let text) = value, let expression {
            do {
                if try !expression.matchesWholeExactly(text) {
                    return .breaks(Violation(rule: .pattern, message: "does not match the pattern /\(pattern)/"))
                }
            } catch {
                // Neither a match nor a mismatch: accepted, and said to be undecided.
                let why = (error as? RegularExpressionError)?.reason ?? "\(error)"
                undecided = "could not be decided against the pattern /\(pattern)/: \(why)"
            }
        }
        if let elements, case .composite(let values) = value {
            let verdict = elementVerdict(values, elements)
            if case .breaks = verdict { return verdict }
            if case .undecided = verdict, undecided == nil { return verdict }
        }
        return undecided.map { .undecided($0) } ?? .meets
    }

    /// The first element of a composite value that breaks a rule, named in the message; else
    /// the first the pattern could not be decided for.
    private func elementVerdict(_ values: [String: AttributeValue], _ elements: [String: AttributeValidator]) -> Verdict {
        for name in values.keys.sorted() where elements[name] == nil {
            let known = elements.keys.sorted().joined(separator: ", ")
            return .breaks(Violation(rule: .compositeElement, message: "has element '\(name)', which composite '\(attribute.compositeName ?? "")' does not have (it has \(known.isEmpty ? "none" : known))"))
        }
        var undecided: String?
        for name in elements.keys.sorted() {
            let element = elements[name]!
            if let value = values[name], !value.fits(element.attribute.type) {
                return .breaks(Violation(rule: .compositeElement, message: "element '\(name)' holds \(value.canonicalText), not a \(element.attribute.type.rawValue) value"))
            }
            switch element.verdict(of: values[name]) {
            case .meets: break
            case .breaks(let violation): return .breaks(Violation(rule: violation.rule, message: "element '\(name)' \(violation.message)"))
            case .undecided(let why): undecided = undecided ?? "element '\(name)' \(why)"
            }
        }
        return undecided.map { .undecided($0) } ?? .meets
    }
}
