import Lade

/// A row's key values, or a relationship's destination keys: a list of attribute values that
/// holds one value inline, without an array.
///
/// Nearly every key is one attribute and nearly every link a to-one's single key; an array for
/// each of them was two of the allocations every mapped row made, and freed again, on the
/// reader's thread. Equal, and hashed, as the array of its values would be.
///
/// ```swift
/// let key = KeyList(.string("SKU-1"))        // no array
/// let tags: KeyList = [.string("new"), .string("sale")]
/// key.count == 1 && key.first == .string("SKU-1")
/// ```
package struct KeyList: RandomAccessCollection, Hashable, Sendable, ExpressibleByArrayLiteral {
    private enum Storage: Sendable {
        case one(AttributeValue)
        case list([AttributeValue])
    }

    private var storage: Storage

    /// No values.
    package init() { storage = .list([]) }

    /// One value, held inline.
    package init(_ value: AttributeValue) { storage = .one(value) }

    /// The values of `values`, in order (one of them held inline).
    package init(_ values: [AttributeValue]) {
        storage = values.count == 1 ? .one(values[0]) : .list(values)
    }

    package init(arrayLiteral values: AttributeValue...) { self.init(values) }

    package var startIndex: Int { 0 }

    package var endIndex: Int {
        switch storage {
        case .one: 1
        case .list(let values): values.count
        }
    }

    package subscript(position: Int) -> AttributeValue {
        switch storage {
        case .one(let value):
            precondition(position == 0, "KeyList index out of range")
            return value
        case .list(let values):
            return values[position]
        }
    }

    /// Adds `value` at the end: the first value is held inline, a second makes a list.
    package mutating func append(_ value: AttributeValue) {
        switch storage {
        case .one(let first):
            storage = .list([first, value])
        case .list(var values):
            guard !values.isEmpty else { storage = .one(value); return }
            storage = .list([])   // the array's only reference is `values` while it grows
            values.append(value)
            storage = .list(values)
        }
    }

    /// The values as an array.
    package var values: [AttributeValue] {
        switch storage {
        case .one(let value): [value]
        case .list(let values): values
        }
    }

    package static func == (lhs: KeyList, rhs: KeyList) -> Bool {
        lhs.count == rhs.count && lhs.elementsEqual(rhs)
    }

    /// As `[AttributeValue]` hashes: the count, then each value.
    package func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for value in self { hasher.combine(value) }
    }
}
