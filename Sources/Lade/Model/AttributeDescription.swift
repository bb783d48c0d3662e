import Foundation

/// An attribute of an entity: its type, optionality, default and the rules a value must meet.
///
/// ```swift
/// var sku = AttributeDescription(name: "sku", type: .string)
/// sku.isOptional = false
/// sku.regularExpression = "[A-Z]{3}-[0-9]{4}"
/// ```
public struct AttributeDescription: Sendable, Hashable {
    public var name: String
    public var type: AttributeType
    public var isOptional: Bool
    /// Transient attributes live on objects only and are never stored.
    public var isTransient: Bool
    public var defaultValue: AttributeValue?
    /// Lower bound: the value for numbers and dates, the length for strings and binary data.
    public var minValue: AttributeValue?
    /// Upper bound: the value for numbers and dates, the length for strings and binary data.
    public var maxValue: AttributeValue?
    /// A regular expression every string value must match in full.
    public var regularExpression: String?
    public var valueTransformerName: String?
    public var customClassName: String?
    public var allowsExternalBinaryDataStorage: Bool
    /// Xcode's legacy per-attribute "Indexed" flag (`indexed="YES"`).
    public var isIndexed: Bool
    /// Kept in persistent history after the object is deleted (`preserveAfterDeletion`).
    public var preservesValueInHistoryOnDeletion: Bool
    /// The name this attribute had in an earlier model version (Xcode's "Renaming ID").
    public var renamingIdentifier: String?
    public var versionHashModifier: String?
    /// Set for derived attributes: the expression Core Data computes the value from.
    public var derivationExpression: String?
    public var userInfo: [String: String]
    /// For a `.composite` attribute, the name of the model's composite that describes its
    /// elements (Xcode's `composite="…"`; `ManagedObjectModel.elements(of:)`).
    public var compositeName: String?

    public init(
        name: String, type: AttributeType, isOptional: Bool = true, isTransient: Bool = false,
        defaultValue: AttributeValue? = nil, minValue: AttributeValue? = nil, maxValue: AttributeValue? = nil,
        regularExpression: String? = nil, valueTransformerName: String? = nil, customClassName: String? = nil,
        allowsExternalBinaryDataStorage: Bool = false, isIndexed: Bool = false,
        preservesValueInHistoryOnDeletion: Bool = false, renamingIdentifier: String? = nil,
        versionHashModifier: String? = nil, derivationExpression: String? = nil, userInfo: [String: String] = [:]
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.defaultValue = defaultValue
        self.minValue = minValue
        self.maxValue = maxValue
        self.regularExpression = regularExpression
        self.valueTransformerName = valueTransformerName
        self.customClassName = customClassName
        self.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        self.isIndexed = isIndexed
        self.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.derivationExpression = derivationExpression
        self.userInfo = userInfo
    }

    /// Whether a SQLite store keeps this attribute's values as Core Data's external binary
    /// data (a marker byte first, long values in files beside the store; `SQLiteExternalData`):
    /// a stored Binary or Transformable attribute that allows external storage.
    package var isKeptExternally: Bool {
        allowsExternalBinaryDataStorage && !isTransient && (type == .binary || type == .transformable)
    }

    /// The type min/max bounds are written in: the attribute's own type for numbers and dates,
    /// a length (Integer 64) for strings and binary data; nil where bounds do not apply.
    package var boundType: AttributeType? {
        switch type {
        case .string, .binary, .transformable: .integer64
        case .date: .date
        case _ where type.isNumeric: type
        default: nil
        }
    }
}
