import Foundation

/// Archived `NSPredicate`s and `NSExpression`s of a compiled model (fetch request templates,
/// fetched properties, validation rules, derivation expressions), written back as the format
/// strings the model types hold: what Xcode keeps in the `.xcdatamodel` the model was compiled
/// from (`predicateString`, `derivationExpression`), in `NSPredicate.predicateFormat`'s syntax.
///
/// Only the shape is read; nothing is evaluated. A form with no format-string spelling Lade
/// knows (a block, a custom selector, a subquery…) is an error naming its class.
enum ArchivedPredicate {
    /// Operator types (`NSPredicateOperatorType`) and how the format spells them.
    static let operators: [Int64: String] = [
        0: "<", 1: "<=", 2: ">", 3: ">=", 4: "==", 5: "!=", 6: "MATCHES", 7: "LIKE",
        8: "BEGINSWITH", 9: "ENDSWITH", 10: "IN", 99: "CONTAINS", 100: "BETWEEN",
    ]

    /// One comparison, kept apart so that validation rules can be read as bounds.
    struct ComparisonParts {
        var left: String
        var operatorType: Int64
        var right: PropertyListValue?
        var rightExpression: String
    }

    /// The predicate's format string; nil for `$null`.
    static func format(_ field: PropertyListValue?, in archive: KeyedArchive, depth: Int = 0) throws -> String? {
        try checkDepth(depth, archive)
        guard let object = try archive.object(field) else { return nil }
        switch object.className {
        case "NSTruePredicate": return "TRUEPREDICATE"
        case "NSFalsePredicate": return "FALSEPREDICATE"
        case "NSCompoundPredicate":
            let type = try archive.integer(object.fields["NSCompoundPredicateType"]) ?? -1
            let parts = try archive.members(object.fields["NSSubpredicates"]).map { member -> String in
                guard let text = try format(member, in: archive, depth: depth + 1) else {
                    throw archive.fail("a compound predicate has a missing subpredicate")
                }
                // predicateFormat brackets a compound inside a compound.
                if case .dictionary? = try archive.value(member), try archive.object(member)?.className == "NSCompoundPredicate" {
                    return "(" + text + ")"
                }
                return text
            }
            switch type {
            case 0:
                guard parts.count == 1 else { throw archive.fail("a NOT predicate has \(parts.count) subpredicates") }
                return "NOT " + parts[0]
            case 1, 2:
                guard !parts.isEmpty else { return type == 1 ? "TRUEPREDICATE" : "FALSEPREDICATE" }
                return parts.joined(separator: type == 1 ? " AND " : " OR ")
            default: throw archive.fail("a compound predicate of type \(type), which is not NOT, AND or OR")
            }
        case "NSComparisonPredicate":
            return try comparison(object, in: archive, depth: depth).text
        default:
            throw archive.fail("a predicate of class \(object.className), which Lade cannot write as a format string")
        }
    }

    /// The parts of an archived `NSComparisonPredicate`, and its format.
    static func comparison(_ object: KeyedArchive.Object, in archive: KeyedArchive, depth: Int) throws -> (text: String, parts: ComparisonParts) {
        guard let left = try expression(object.fields["NSLeftExpression"], in: archive, depth: depth + 1),
              let right = try expression(object.fields["NSRightExpression"], in: archive, depth: depth + 1),
              let predicateOperator = try archive.object(object.fields["NSPredicateOperator"]) else {
            throw archive.fail("a comparison predicate lacks an expression or its operator")
        }
        let type = try archive.integer(predicateOperator.fields["NSOperatorType"]) ?? -1
        guard var spelled = operators[type] else {
            throw archive.fail("a comparison predicate with operator type \(type) (\(predicateOperator.className)), which Lade cannot write as a format string")
        }
        if type == 4, try archive.bool(predicateOperator.fields["NSNegate"]) { spelled = "!=" }
        let options = try archive.integer(predicateOperator.fields["NSOptions"]) ?? archive.integer(predicateOperator.fields["NSFlags"]) ?? 0
        let flags = (options & 1 != 0 ? "c" : "") + (options & 2 != 0 ? "d" : "") + (options & 8 != 0 ? "n" : "")
        if !flags.isEmpty, type >= 6 || type == 4 || type == 5 { spelled += "[\(flags)]" }
        let modifier: String
        switch try archive.integer(predicateOperator.fields["NSModifier"]) ?? 0 {
        case 1: modifier = "ALL "
        case 2: modifier = "ANY "
        default: modifier = ""
        }
        var constant: PropertyListValue?
        if let rightObject = try archive.object(object.fields["NSRightExpression"]), rightObject.className == "NSConstantValueExpression" {
            constant = try constantValue(rightObject.fields["NSConstantValue"], in: archive)
        }
        return (modifier + left + " " + spelled + " " + right, ComparisonParts(left: left, operatorType: type, right: constant, rightExpression: right))
    }

    /// The expression's format string; nil for `$null`.
    static func expression(_ field: PropertyListValue?, in archive: KeyedArchive, depth: Int = 0) throws -> String? {
        try checkDepth(depth, archive)
        guard let object = try archive.object(field) else { return nil }
        func sub(_ key: String) throws -> String? { try expression(object.fields[key], in: archive, depth: depth + 1) }
        func arguments() throws -> [String] {
            try archive.members(object.fields["NSArguments"]).map { member in
                guard let text = try expression(member, in: archive, depth: depth + 1) else {
                    throw archive.fail("an argument of a \(object.className) is missing")
                }
                return text
            }
        }
        switch object.className {
        case "NSSelfExpression": return "SELF"
        case "NSVariableExpression":
            guard let name = try archive.string(object.fields["NSVariable"]) else { throw archive.fail("a variable expression has no name") }
            return "$" + name
        case "NSKeyPathSpecifierExpression":
            guard let path = try archive.string(object.fields["NSKeyPath"]) else { throw archive.fail("a key path expression has no key path") }
            return path
        case "NSConstantValueExpression":
            return try constantText(object.fields["NSConstantValue"], in: archive, depth: depth + 1)
        case "NSAggregateExpression":
            let members = try archive.members(object.fields["NSCollection"]).map { try expression($0, in: archive, depth: depth + 1) ?? "nil" }
            return "{" + members.joined(separator: ", ") + "}"
        case "NSKeyPathExpression", "NSFunctionExpression":
            let selector = try archive.string(object.fields["NSSelectorName"]) ?? ""
            let arguments = try arguments()
            if object.className == "NSKeyPathExpression" || selector == "valueForKey:" || selector == "valueForKeyPath:" {
                guard arguments.count == 1 else { throw archive.fail("a key path expression has \(arguments.count) arguments") }
                let operand = try sub("NSOperand") ?? "SELF"
                return operand == "SELF" ? arguments[0] : operand + "." + arguments[0]
            }
            // `pages.@count` is parsed into the function count:(pages); the model file keeps
            // the key path form Xcode's editor and the format parser take.
            if selector == "count:", arguments.count == 1 { return arguments[0] + ".@count" }
            let operandObject = try archive.object(object.fields["NSOperand"])
            // Foundation's own functions archive their operand as the constant class
            // `_NSPredicateUtilities` (or none).
            if operandObject == nil || operandObject?.className == "NSConstantValueExpression" {
                return selector + "(" + arguments.joined(separator: ", ") + ")"
            }
            return "FUNCTION(" + ([try sub("NSOperand") ?? "SELF", "\"\(selector)\""] + arguments).joined(separator: ", ") + ")"
        default:
            throw archive.fail("an expression of class \(object.className), which Lade cannot write as a format string")
        }
    }

    /// A constant's value as a plain property-list value (dates, UUIDs and URLs unwrapped from
    /// their archived objects; a date as `.date`, a UUID as its 16 bytes, a URL as its text).
    static func constantValue(_ field: PropertyListValue?, in archive: KeyedArchive) throws -> PropertyListValue? {
        guard let value = try archive.value(field) else { return nil }
        guard case .dictionary = value else { return value }
        guard let object = try archive.object(field) else { return nil }
        switch object.className {
        case "NSDate":
            guard case .real(let seconds)? = try archive.value(object.fields["NS.time"]), seconds.isFinite else {
                throw archive.fail("a date constant has no time")
            }
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case "NSUUID":
            guard case .data(let bytes)? = try archive.value(object.fields["NS.uuidbytes"]), bytes.count == 16 else {
                throw archive.fail("a UUID constant is not 16 bytes")
            }
            return .data(bytes)
        case "NSURL":
            guard let text = try archive.string(object.fields["NS.relative"]) else { throw archive.fail("a URL constant has no text") }
            return .string(text)
        case "NSMutableString", "NSString":
            return try archive.string(field).map(PropertyListValue.string)
        case "NSNull": return nil
        case "NSDecimalNumber":
            // Its parts, for the reader of the value to make an exact Decimal of.
            var fields = object.fields
            fields["$class"] = .string(object.className)
            return .dictionary(fields)
        default: return .dictionary(["$class": .string(object.className)])
        }
    }

    private static func constantText(_ field: PropertyListValue?, in archive: KeyedArchive, depth: Int) throws -> String {
        try checkDepth(depth, archive)
        if let object = try? archive.object(field), ["NSArray", "NSMutableArray", "NSSet", "NSMutableSet", "NSOrderedSet"].contains(object.className) {
            let members = try archive.members(field).map { try constantText($0, in: archive, depth: depth + 1) }
            return "{" + members.joined(separator: ", ") + "}"
        }
        switch try constantValue(field, in: archive) {
        case nil: return "nil"
        case .string(let text)?: return quoted(text)
        case .integer(let number)?: return String(number)
        // A Boolean NSNumber (kCFBooleanTrue) comes from YES/NO in the source; 1 and 0 archive as integers.
        case .bool(let flag)?: return flag ? "YES" : "NO"
        case .real(let number)?: return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .date(let date)?: return "CAST(\(date.timeIntervalSinceReferenceDate), \"NSDate\")"
        case .data(let bytes)?:
            if bytes.count == 16, let object = try archive.object(field), object.className == "NSUUID" {
                return quoted(UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }).uuidString)
            }
            return "<" + bytes.map { String(format: "%02x", $0) }.joined() + ">"
        case .dictionary(let fields)? where fields["$class"] == .string("NSDecimalNumber"):
            guard let decimal = CompiledModelReader.decimal(fields) else { throw archive.fail("an NSDecimalNumber constant whose parts do not make a number") }
            return "\(decimal)"
        case .dictionary(let fields)?:
            throw archive.fail("a constant of class \(fields["$class"]?.stringValue ?? "?"), which Lade cannot write as a format string")
        case .array?: throw archive.fail("a constant is a bare array")
        }
    }

    static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    private static func checkDepth(_ depth: Int, _ archive: KeyedArchive) throws {
        guard depth < KeyedArchive.maximumDepth else {
            throw archive.fail("a predicate or expression nests deeper than \(KeyedArchive.maximumDepth) levels")
        }
    }
}
