import Foundation

/// The form of a derived attribute's expression (`NSDerivedAttributeDescription`'s
/// `derivationExpression`), as Apple's documentation lists them: what a store must do to keep
/// the value (see docs/derived-attributes.md for what Lade does with each, and why).
///
/// ```swift
/// DerivationForm(parsing: "pages.@count")       // .count(relationship: "pages")
/// DerivationForm(parsing: "lowercase:(name)")   // .function(name: "lowercase", keyPath: ["name"])
/// ```
public enum DerivationForm: Sendable, Hashable, CustomStringConvertible {
    /// `pages.@count` (or `count:(pages)`): how many objects a to-many relationship holds.
    case count(relationship: String)
    /// `pages.@sum.number` (also `@min`, `@max`, `@avg`; or `sum:(pages.number)`): an aggregate
    /// of an attribute over a to-many relationship.
    case aggregate(function: String, relationship: String, attribute: String)
    /// `name` or `author.name`: a value copied from the object or from a to-one destination.
    case keyPath([String])
    /// `lowercase:(name)`, `uppercase:(name)`, `canonical:(name)`: a function of one value.
    case function(name: String, keyPath: [String])
    /// `now()`: the time of the last save that changed the object.
    case now

    /// The form of `expression`; nil for text that is none of them.
    public init?(parsing expression: String) {
        let text = expression.trimmingCharacters(in: .whitespacesAndNewlines)
        if text == "now()" { self = .now; return }
        if text.hasSuffix(")"), let open = text.range(of: ":(") {
            let name = String(text[..<open.lowerBound])
            let argument = String(text[open.upperBound..<text.index(before: text.endIndex)]).trimmingCharacters(in: .whitespaces)
            guard Self.isName(name), let path = Self.keyPath(argument) else { return nil }
            switch name {
            case "count" where path.count == 1: self = .count(relationship: path[0])
            case "sum" where path.count == 2, "min" where path.count == 2, "max" where path.count == 2, "average" where path.count == 2:
                self = .aggregate(function: name == "average" ? "avg" : name, relationship: path[0], attribute: path[1])
            default: self = .function(name: name, keyPath: path)
            }
            return
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if parts.count == 2, parts[1] == "@count", Self.isName(parts[0]) { self = .count(relationship: parts[0]); return }
        if parts.count == 3, ["@sum", "@min", "@max", "@avg"].contains(parts[1]), Self.isName(parts[0]), Self.isName(parts[2]) {
            self = .aggregate(function: String(parts[1].dropFirst()), relationship: parts[0], attribute: parts[2])
            return
        }
        guard let path = Self.keyPath(text) else { return nil }
        self = .keyPath(path)
    }

    /// The form in words, for messages: "a to-many count (pages.@count)".
    public var description: String {
        switch self {
        case .count(let relationship): "a to-many count (\(relationship).@count)"
        case .aggregate(let function, let relationship, let attribute): "a to-many aggregate (\(relationship).@\(function).\(attribute))"
        case .keyPath(let path) where path.count == 1: "a copy of an attribute (\(path[0]))"
        case .keyPath(let path): "a key path through a to-one relationship (\(path.joined(separator: ".")))"
        case .function(let name, let path): "a function of a value (\(name):(\(path.joined(separator: "."))))"
        case .now: "the time of the last change (now())"
        }
    }

    private static func keyPath(_ text: String) -> [String]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return parts.allSatisfy(isName) ? parts : nil
    }

    private static func isName(_ text: String) -> Bool {
        guard let first = text.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return text.utf8.allSatisfy(ModelValidator.isIdentifierByte)
    }
}

/// One derived attribute of a model, with its form resolved against the model.
package struct DerivedAttribute: Sendable, Hashable {
    /// The entity that declares the attribute.
    package let entity: String
    package let attribute: AttributeDescription
    /// The expression's form; nil when it is none Lade knows.
    package let form: DerivationForm?

    /// The to-many relationship of a `.count` over a one-to-many relationship, whose inverse is
    /// a to-one or that has none (the forms whose triggers Core Data's stores show: over the
    /// inverse's key column, or over the owner column of a to-many without an inverse); nil
    /// for anything else.
    package func countedRelationship(in model: ManagedObjectModel) -> RelationshipDescription? {
        guard case .count(let name)? = form, let relationship = model.relationship(name, of: entity), relationship.isToMany,
              !relationship.isTransient, !(model.inverse(of: relationship)?.isToMany ?? false) else { return nil }
        return relationship
    }
}


/// A derived attribute a store cannot keep: its form is one Lade does not compute for that
/// store type. Refused when the store is created or opened for writing, never by writing
/// a wrong value.
public struct DerivedAttributeError: LadeError, Sendable, Equatable {
    public let entity: String
    public let attribute: String
    public let expression: String
    /// The store type, as `NSStoreType` names it.
    public let storeType: String
    public let reason: String

    package init(entity: String, attribute: String, expression: String, storeType: String, reason: String) {
        self.entity = entity
        self.attribute = attribute
        self.expression = expression
        self.storeType = storeType
        self.reason = reason
    }

    public var code: String { "model.derivedAttribute" }

    public var description: String {
        "entity '\(entity)', property '\(attribute)': the derived attribute's expression '\(expression)' cannot be kept in a \(storeType) store: \(reason); make it a plain attribute the app sets, or use a form Lade keeps (a to-many count, relationship.@count; see docs/derived-attributes.md)"
    }
}
