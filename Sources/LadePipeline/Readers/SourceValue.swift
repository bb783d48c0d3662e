/// A value read from a source record, before it is mapped to an attribute type.
///
/// Readers never convert: a CSV field is always a ``string(_:)``, a JSON number keeps its
/// literal text so a decimal such as `19.90` survives exactly, and the mapper decides what
/// each value becomes.
///
/// ```swift
/// // {"sku": "A-1", "price": 19.90, "tags": ["new", "sale"], "note": null}
/// record.values == [.string("A-1"), .number("19.90"), .array([.string("new"), .string("sale")]), .null, .missing]
/// ```
package enum SourceValue: Sendable, Equatable {
    /// The key or column is absent from this record (a JSON key not present, a CSV column not in the header).
    case missing
    /// JSON `null`. CSV never yields it; the mapper applies the job's `nulls` list to strings.
    case null
    /// A CSV field, or a JSON string with its escapes decoded.
    case string(String)
    /// A JSON number as its exact literal text, validated against the JSON grammar (`-0.50`, `1e3`).
    case number(String)
    /// JSON `true` or `false`.
    case bool(Bool)
    /// A JSON array (for example the keys of a to-many relationship); objects inside it read as ``object``.
    case array([SourceValue])
    /// A JSON object found where a value was asked for; the mapper reports it.
    case object
}
