import Foundation

/// A value expression of a mapping model (an archived `NSExpression`), as far as a migration
/// without the app's code can run one: constants, variables (`$source`, `$manager`…), key
/// paths from them (through to-one and to-many relationships, with collection operators such
/// as `@distinctUnionOfSets`), functions, and the fetch an entity mapping starts from.
///
/// What it cannot run is still read, so that a refusal can name it: a `FUNCTION` on anything
/// but the migration manager's known methods, a `CAST` to an app class, a block.
///
/// ```swift
/// let expression = MappingExpression.keyPath(.variable("source"), ["country", "continent"])
/// expression.description   // $source.country.continent
/// ```
public indirect enum MappingExpression: Sendable, Hashable, CustomStringConvertible {
    /// A constant: text, a number, a date, a Boolean, or nil.
    case constant(PredicateValue)
    /// `$name`: `$source`, `$manager`, `$destination`, `$entityMapping`, `$propertyMapping`,
    /// `$entityPolicy`.
    case variable(String)
    /// `SELF`.
    case evaluatedObject
    /// `operand.a.b` (`valueForKeyPath:`); a component may be a collection operator (`@count`,
    /// `@distinctUnionOfSets`…).
    case keyPath(MappingExpression, [String])
    /// `FUNCTION(operand, "selector", arguments…)`; a function of Foundation's own (`add:to:`,
    /// `now`, `CAST`) has no operand.
    case function(MappingExpression?, selector: String, arguments: [MappingExpression])
    /// `FETCH(fetch request expression, context expression, countOnly)`, the source expression
    /// of an entity mapping.
    case fetch(MappingExpression, context: MappingExpression, countOnly: Bool)
    /// `{a, b, …}`.
    case aggregate([MappingExpression])
    /// An archived expression class Lade does not run (a block, a subquery…), kept by name for
    /// the refusal.
    case unsupported(className: String)

    /// The migration manager's methods a mapping model may call (`FUNCTION($manager, …)`),
    /// which Lade runs as `NSMigrationManager` does.
    package static let managerSelectors: Set<String> = [
        "destinationInstancesForEntityMappingNamed:sourceInstances:",
        "destinationInstancesForSourceRelationshipNamed:sourceInstances:",
        "sourceInstancesForEntityMappingNamed:destinationInstances:",
        "fetchRequestForSourceEntityNamed:predicateString:",
        "fetchRequestForSourceEntityNamed:predicateString:includesSubentities:",
    ]

    /// Foundation's own expression functions Lade runs (`NSExpression(forFunction:arguments:)`).
    package static let builtInSelectors: Set<String> = [
        "add:to:", "from:subtract:", "multiply:by:", "divide:by:", "modulus:by:", "abs:",
        "lowercase:", "uppercase:", "now", "count:", "sum:", "min:", "max:", "average:",
    ]

    /// Where an expression would run code of the app's (a `FUNCTION` on an object or a
    /// selector Lade does not know, a `CAST` to a class other than Foundation's value classes,
    /// a block or another class Lade cannot run): one phrase per use, for the refusal.
    public var customCode: [String] {
        switch self {
        case .constant, .variable, .evaluatedObject: return []
        case .keyPath(let operand, _): return operand.customCode
        case .aggregate(let members): return members.flatMap(\.customCode)
        case .fetch(let request, let context, _): return request.customCode + context.customCode
        case .unsupported(let className): return ["an expression of class \(className)"]
        case .function(let operand, let selector, let arguments):
            let inner = (operand?.customCode ?? []) + arguments.flatMap(\.customCode)
            if selector == "castObject:toType:" {
                if case .constant(.attribute(.string(let type)))? = arguments.last, type == "Class",
                   case .constant(.attribute(.string(let name)))? = arguments.first {
                    return inner + ["CAST(\"\(name)\", \"Class\") (the app class \(name))"]
                }
                if case .constant(.attribute(.string(let type)))? = arguments.last, Self.castTypes.contains(type) { return inner }
                return inner + ["\(self)"]
            }
            switch operand {
            case .variable("manager")? where Self.managerSelectors.contains(selector): return inner
            case nil where Self.builtInSelectors.contains(selector): return inner
            case .function(_, "castObject:toType:", _)?: return inner + ["FUNCTION(…, \"\(selector)\", …) on a class of the app's"]
            default: return inner + ["FUNCTION(\(operand.map(\.description) ?? "nil"), \"\(selector)\", …)"]
            }
        }
    }

    /// `CAST(value, "NSNumber")` and the like convert between Foundation's value classes.
    static let castTypes: Set<String> = ["NSString", "NSNumber", "NSDate", "NSData", "NSDecimalNumber"]

    /// The expression in `NSExpression`'s format syntax.
    public var description: String {
        switch self {
        case .constant(let value): return Self.format(value)
        case .variable(let name): return "$" + name
        case .evaluatedObject: return "SELF"
        case .keyPath(.evaluatedObject, let path): return path.joined(separator: ".")
        case .keyPath(let operand, let path): return operand.description + "." + path.joined(separator: ".")
        case .function(nil, "castObject:toType:", let arguments) where arguments.count == 2:
            return "CAST(\(arguments[0]), \(arguments[1]))"
        case .function(nil, let selector, let arguments):
            return "\(selector)(\(arguments.map(\.description).joined(separator: ", ")))"
        case .function(let operand?, let selector, let arguments):
            return "FUNCTION(" + ([operand.description, "\"\(selector)\""] + arguments.map(\.description)).joined(separator: ", ") + ")"
        case .fetch(let request, let context, let countOnly):
            return "FETCH(\(request), \(context), \(countOnly ? "YES" : "NO"))"
        case .aggregate(let members): return "{" + members.map(\.description).joined(separator: ", ") + "}"
        case .unsupported(let className): return "<\(className)>"
        }
    }

    private static func format(_ value: PredicateValue) -> String {
        switch value {
        case .null: return "nil"
        case .attribute(.string(let text)): return "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        case .attribute(.bool(let flag)): return flag ? "YES" : "NO"
        case .attribute(let other): return other.canonicalText
        case .object(let id): return "\(id)"
        case .collection(let members): return "{" + members.map(format).joined(separator: ", ") + "}"
        }
    }

    /// Parses the key path Xcode keeps as a relationship mapping's source key path
    /// (`$source.country.continent`, `$source`, `$source.countries.@distinctUnionOfSets.moods`).
    static func sourceKeyPath(_ text: String) -> MappingExpression? {
        var parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= KeyedArchive.maximumKeyPathLength, let first = parts.first, first.hasPrefix("$"), first.count > 1,
              parts.dropFirst().allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "@" } }) else { return nil }
        let variable = MappingExpression.variable(String(first.dropFirst()))
        parts.removeFirst()
        return parts.isEmpty ? variable : .keyPath(variable, parts)
    }
}

// MARK: Reading archived NSExpressions

extension MappingExpression {
    /// Reads an archived `NSExpression` (`NSExpressionType` and the class's own fields), to
    /// `depth` objects deep at most.
    static func decode(_ field: PropertyListValue?, in archive: KeyedArchive, depth: Int = 0) throws -> MappingExpression? {
        guard depth < KeyedArchive.maximumDepth else {
            throw MappingModelError(archive.origin, "an expression nests deeper than \(KeyedArchive.maximumDepth) levels")
        }
        guard let object = try archive.object(field) else { return nil }
        func sub(_ key: String) throws -> MappingExpression? { try decode(object.fields[key], in: archive, depth: depth + 1) }
        func arguments() throws -> [MappingExpression] {
            guard let field = object.fields["NSArguments"] else { return [] }
            return try archive.members(field).map { member in
                guard let expression = try decode(member, in: archive, depth: depth + 1) else {
                    throw MappingModelError(archive.origin, "an argument of a \(object.className) is missing")
                }
                return expression
            }
        }
        switch object.className {
        case "NSConstantValueExpression":
            return .constant(try constant(object.fields["NSConstantValue"], in: archive, depth: depth + 1))
        case "NSVariableExpression":
            guard let name = try archive.string(object.fields["NSVariable"]) else {
                throw MappingModelError(archive.origin, "a variable expression has no name")
            }
            return .variable(name)
        case "NSSelfExpression":
            return .evaluatedObject
        case "NSKeyPathSpecifierExpression":
            guard let path = try archive.string(object.fields["NSKeyPath"]) else {
                throw MappingModelError(archive.origin, "a key path expression has no key path")
            }
            let components = path.split(separator: ".", omittingEmptySubsequences: false)
            guard components.count <= KeyedArchive.maximumKeyPathLength else {
                throw MappingModelError(archive.origin, "a key path has \(components.count) components, more than \(KeyedArchive.maximumKeyPathLength)")
            }
            return .keyPath(.evaluatedObject, components.map(String.init))
        case "NSKeyPathExpression", "NSFunctionExpression":
            let selector = try archive.string(object.fields["NSSelectorName"]) ?? ""
            let operand = try sub("NSOperand")
            let arguments = try arguments()
            if object.className == "NSKeyPathExpression" || selector == "valueForKeyPath:" || selector == "valueForKey:" {
                guard arguments.count == 1, case .keyPath(.evaluatedObject, let path) = arguments[0] else {
                    throw MappingModelError(archive.origin, "a key path expression's argument is not a key path")
                }
                return .keyPath(operand ?? .evaluatedObject, path)
            }
            // Foundation's own functions archive their operand as the constant class
            // `NSPredicateUtilities` (or none).
            if case .constant? = operand { return .function(nil, selector: selector, arguments: arguments) }
            return .function(operand, selector: selector, arguments: arguments)
        case "NSFetchRequestExpression":
            guard let request = try sub("NSFRExpression"), let context = try sub("NSMOCExpression") else {
                throw MappingModelError(archive.origin, "a fetch request expression lacks its request or context")
            }
            var countOnly = false
            if case .bool(let flag)? = try archive.value(object.fields["NSCountOnlyFlag"]) { countOnly = flag }
            return .fetch(request, context: context, countOnly: countOnly)
        case "NSAggregateExpression":
            let members = try archive.members(object.fields["NSCollection"]).map { member in
                try decode(member, in: archive, depth: depth + 1) ?? .constant(.null)
            }
            return .aggregate(members)
        default:
            return .unsupported(className: object.className)
        }
    }

    private static func constant(_ field: PropertyListValue?, in archive: KeyedArchive, depth: Int) throws -> PredicateValue {
        guard depth < KeyedArchive.maximumDepth else {
            throw MappingModelError(archive.origin, "a constant nests deeper than \(KeyedArchive.maximumDepth) levels")
        }
        switch try archive.value(field) {
        case nil: return .null
        case .string(let text)?: return .string(text)
        case .integer(let number)?: return .integer(number)
        case .real(let number)?: return .double(number)
        case .bool(let flag)?: return .bool(flag)
        case .date(let date)?: return .date(date)
        case .data(let data)?: return .data(data)
        case .array?: throw MappingModelError(archive.origin, "a constant is a bare array")
        case .dictionary?:
            guard let object = try archive.object(field) else { return .null }
            switch object.className {
            case "NSDate":
                guard case .real(let seconds)? = try archive.value(object.fields["NS.time"]), seconds.isFinite else {
                    throw MappingModelError(archive.origin, "a date constant has no time")
                }
                return .date(Date(timeIntervalSinceReferenceDate: seconds))
            case "NSNull": return .null
            case "NSArray", "NSMutableArray", "NSSet", "NSMutableSet", "NSOrderedSet":
                return .collection(try archive.members(field).map { try constant($0, in: archive, depth: depth + 1) })
            case "NSUUID":
                guard case .data(let bytes)? = try archive.value(object.fields["NS.uuidbytes"]), bytes.count == 16 else {
                    throw MappingModelError(archive.origin, "a UUID constant is not 16 bytes")
                }
                return .uuid(UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }))
            case "NSURL":
                guard let text = try archive.string(object.fields["NS.relative"]), let url = URL(string: text) else {
                    throw MappingModelError(archive.origin, "a URL constant has no text")
                }
                return .uri(url)
            case "NSDecimalNumber", "NSNumber":
                throw MappingModelError(archive.origin, "a constant of class \(object.className) in a form Lade does not read")
            default:
                // The class itself (CAST's operand) or another object: named, for the refusal.
                return .string(object.className)
            }
        }
    }
}
