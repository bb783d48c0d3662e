/// A field the runner asks a reader for: a CSV column name, or a key path into JSON objects.
///
/// ```swift
/// let width: FieldPath = "dimensions.width"      // components ["dimensions", "width"]
/// let dotted = FieldPath(components: ["a.b"])    // one JSON key that contains a dot
/// ```
///
/// In CSV the whole path, joined with dots, is a column name (`"dimensions.width"` is the column
/// of that name). In JSON each component is a key one level deeper. When a path passes through
/// an array of objects, the value is an array of that key's values, one per element
/// (`"lines.sku"` on `{"lines": [{"sku": "A"}, {"sku": "B"}]}` is `.array([.string("A"), .string("B")])`).
package struct FieldPath: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The keys from the outermost object inwards.
    package var components: [String]

    /// A path from its keys.
    package init(components: [String]) {
        self.components = components
    }

    /// A path from dotted text: `"dimensions.width"` is `["dimensions", "width"]`.
    package init(_ dotted: String) {
        self.components = dotted.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    package init(stringLiteral value: String) {
        self.init(value)
    }

    /// The components joined with dots: the CSV column name this path asks for.
    package var description: String { components.joined(separator: ".") }
}
