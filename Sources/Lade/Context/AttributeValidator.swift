import Foundation

/// The rules one attribute's values must meet (required, minimum, maximum, pattern), ready to
/// check many values: the regular expression is compiled once. Saves check every changed
/// object with these; importers check rows with the same rules before they become objects.
///
/// ```swift
/// let sku = AttributeValidator(model.attribute("sku", of: "Product")!)
/// sku.violation(of: .string("a b"))    // .pattern: does not match the pattern /[A-Z0-9][A-Z0-9-]{2,31}/
/// ```
public struct AttributeValidator: @unchecked Sendable {
    // NSRegularExpression is immutable once made and safe to share between threads.
    public let attribute: AttributeDescription
    private let expression: NSRegularExpression?

    public init(_ attribute: AttributeDescription) {
        self.attribute = attribute
        expression = attribute.regularExpression.flatMap { try? NSRegularExpression(pattern: $0) }
    }

    /// One broken rule, in the words a save's `ValidationError` uses.
    public struct Violation: Sendable, Equatable, CustomStringConvertible {
        public let rule: ValidationError.Rule
        public let message: String
        public var description: String { message }
    }

    /// The first rule `value` breaks, or nil when it meets them all (nil meets the rules of an
    /// optional attribute).
    public func violation(of value: AttributeValue?) -> Violation? {
        guard let value else {
            return attribute.isOptional ? nil : Violation(rule: .required, message: "is required")
        }
        if attribute.minValue != nil || attribute.maxValue != nil {
            let measured: AttributeValue
            switch value {
            case .string(let text): measured = .integer(Int64(text.utf16.count))
            case .binary(let data): measured = .integer(Int64(data.count))
            default: measured = value
            }
            let what = (attribute.type == .string || attribute.type == .binary) ? "length" : "value"
            if let minimum = attribute.minValue, let order = ModelValidator.compare(measured, minimum) ?? ValueComparison.compare(measured, minimum), order < 0 {
                return Violation(rule: .minimum, message: "\(what) is below the minimum \(minimum.canonicalText)")
            }
            if let maximum = attribute.maxValue, let order = ModelValidator.compare(measured, maximum) ?? ValueComparison.compare(measured, maximum), order > 0 {
                return Violation(rule: .maximum, message: "\(what) is above the maximum \(maximum.canonicalText)")
            }
        }
        if let expression, case .string(let text) = value {
            let whole = NSRange(location: 0, length: text.utf16.count)
            if expression.firstMatch(in: text, options: [.anchored], range: whole)?.range != whole {
                return Violation(rule: .pattern, message: "does not match the pattern /\(attribute.regularExpression!)/")
            }
        }
        return nil
    }
}
