import Foundation

/// Predicates written back as format strings (Core Data's `predicateFormat`). What the parser
/// made reads back to the same predicate, with two exceptions that have no literal syntax:
/// object IDs (written as their URI, for people) and floats (written as the double they equal).
///
/// ```swift
/// try FetchPredicate(format: "price < %@ AND name BEGINSWITH[cd] %@", arguments: [10, "bo"]).description
/// // price < 10 AND name BEGINSWITH[cd] "bo"
/// ```
extension FetchPredicate: CustomStringConvertible {
    public var description: String { format(parenthesised: false) }

    private func format(parenthesised: Bool) -> String {
        func wrap(_ text: String) -> String { parenthesised ? "(\(text))" : text }
        switch self {
        case .true: return "TRUEPREDICATE"
        case .false: return "FALSEPREDICATE"
        case .and(let parts) where parts.isEmpty: return "TRUEPREDICATE"
        case .or(let parts) where parts.isEmpty: return "FALSEPREDICATE"
        case .and(let parts): return wrap(parts.map { $0.format(parenthesised: $0.isCompound) }.joined(separator: " AND "))
        case .or(let parts): return wrap(parts.map { $0.format(parenthesised: $0.isCompound) }.joined(separator: " OR "))
        case .not(let inner): return "NOT " + inner.format(parenthesised: inner.isCompound)
        case .comparison(let comparison):
            let modifier = comparison.modifier == .direct ? "" : comparison.modifier.rawValue + " "
            var options = ""
            if comparison.options.contains(.caseInsensitive) { options += "c" }
            if comparison.options.contains(.diacriticInsensitive) { options += "d" }
            return "\(modifier)\(comparison.left) \(comparison.op.rawValue)\(options.isEmpty ? "" : "[\(options)]") \(comparison.right)"
        }
    }

    private var isCompound: Bool {
        switch self {
        case .and(let parts), .or(let parts): parts.count > 1
        default: false
        }
    }
}

extension FetchExpression: CustomStringConvertible {
    public var description: String {
        switch self {
        case .constant(let value): return value.formatted
        case .keyPath(let path): return Self.keys(path)
        case .evaluatedObject: return "SELF"
        case .variable(let name): return "$" + name
        case .variableKeyPath(let name, let path): return "$\(name).\(Self.keys(path))"
        case .collectionOperator(let op, let collection, let path):
            return "\(collection).\(op.rawValue)" + (path.isEmpty ? "" : "." + Self.keys(path))
        case .aggregate(let members): return "{" + members.map(\.description).joined(separator: ", ") + "}"
        case .subquery(let collection, let variable, let predicate): return "SUBQUERY(\(collection), $\(variable), \(predicate))"
        }
    }

    private static func keys(_ path: [String]) -> String {
        path.map { PredicateParser.reserved.contains($0.uppercased()) ? "#" + $0 : $0 }.joined(separator: ".")
    }
}

extension PredicateValue {
    /// The value as a format-string literal.
    var formatted: String {
        switch self {
        case .null: return "nil"
        case .object(let id): return "\"\(id)\""
        case .collection(let members): return "{" + members.map(\.formatted).joined(separator: ", ") + "}"
        case .attribute(let value):
            switch value {
            case .integer(let v): return String(v)
            case .double(let v): return Self.number(v)
            case .float(let v): return Self.number(Double(v))
            case .decimal(let v): return "CAST(\(Self.quoted(AttributeValue.decimal(v).canonicalText)), 'NSDecimalNumber')"
            case .string(let v): return Self.quoted(v)
            case .bool(let v): return v ? "TRUE" : "FALSE"
            case .date(let v): return "CAST(\(Self.number(v.timeIntervalSinceReferenceDate)), 'NSDate')"
            case .binary(let v): return "CAST(\(Self.quoted(v.base64EncodedString())), 'NSData')"
            case .uuid(let v): return "CAST(\(Self.quoted(v.uuidString)), 'NSUUID')"
            case .uri(let v): return "CAST(\(Self.quoted(v.absoluteString)), 'NSURL')"
            case .composite(let elements):
                // Core Data's format has no composite literal; a dictionary's is the nearest.
                return "{" + elements.sorted { $0.key < $1.key }.map { "\(Self.quoted($0.key)): \(PredicateValue.attribute($0.value).formatted)" }.joined(separator: ", ") + "}"
            }
        }
    }

    private static func number(_ value: Double) -> String {
        guard value.isFinite else { return "CAST(\(quoted(String(value))), 'NSNumber')" }
        let text = String(value)
        // "1.0" and "1e+20" read back as doubles; keep a point or exponent in every double.
        return text.contains(".") || text.contains("e") ? text : text + ".0"
    }

    private static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                result += "\\u" + String(format: "%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
