import Foundation

/// The type of an attribute, spelled as Xcode spells it in a model's `contents` file
/// (`attributeType="Integer 16"`).
///
/// ```swift
/// AttributeType(rawValue: "Integer 64")   // .integer64
/// AttributeType.date.rawValue             // "Date"
/// ```
public enum AttributeType: String, Sendable, Hashable, CaseIterable, Codable {
    case integer16 = "Integer 16"
    case integer32 = "Integer 32"
    case integer64 = "Integer 64"
    case decimal = "Decimal"
    case double = "Double"
    case float = "Float"
    case string = "String"
    case boolean = "Boolean"
    case date = "Date"
    case binary = "Binary"
    case uuid = "UUID"
    case uri = "URI"
    /// Stored as opaque binary data: Lade has no value transformers to run.
    case transformable = "Transformable"
    /// Xcode's type for transient attributes that hold any object; never stored.
    case undefined = "Undefined"
    /// Xcode 15's composite attribute (`NSCompositeAttributeDescription`): a value of named
    /// elements, described by one of the model's `composites` (`compositeName`).
    case composite = "Composite"

    /// Whether values of this type are integers (and so compare and bound as integers).
    public var isInteger: Bool {
        self == .integer16 || self == .integer32 || self == .integer64
    }

    /// Whether values of this type are numbers of any kind.
    public var isNumeric: Bool {
        isInteger || self == .decimal || self == .double || self == .float
    }

    /// The range an integer attribute's values must fall in.
    public var integerRange: ClosedRange<Int64>? {
        switch self {
        case .integer16: Int64(Int16.min)...Int64(Int16.max)
        case .integer32: Int64(Int32.min)...Int64(Int32.max)
        case .integer64: Int64.min...Int64.max
        default: nil
        }
    }
}
