import Foundation

/// Why objects may not be saved: every failure of one save, together. The rules are the
/// model's (checked by a context's save with `AttributeValidator`), and a store's own for a
/// value it cannot keep exactly (`.precision`): both raise it, so it lives with the model.
public struct ObjectValidationError: Error, Sendable, CustomStringConvertible {
    public enum Rule: String, Sendable {
        case required, minimum, maximum, pattern, minimumCount, maximumCount, deny
        /// A value the store cannot keep exactly (in SQLite, a Decimal of more than 15
        /// significant digits that no double reads back as).
        case precision
        /// A composite value with an element its composite lacks, or an element's value of
        /// another type than the element's.
        case compositeElement
    }

    public struct Failure: Sendable, CustomStringConvertible {
        public let objectID: ManagedObjectID
        public let property: String
        public let rule: Rule
        /// The offending value as text (nil when missing).
        public let value: String?
        public let message: String

        public var description: String {
            "\(objectID.entityName) \(objectID): \(property): \(message)" + (value.map { " (value: \($0))" } ?? "")
        }
    }

    public let failures: [Failure]

    public var description: String {
        failures.count == 1 ? failures[0].description
            : "\(failures.count) validation failures:\n" + failures.map { "  " + $0.description }.joined(separator: "\n")
    }
}

extension ObjectValidationError: LadeError {
    public var code: String { "validation" }
}
