import Foundation

/// Archives Lade's predicates and expressions as the `NSPredicate`/`NSExpression` objects
/// Foundation's `NSKeyedArchiver` writes for them, for a model archive (a `.mom` or Core Data's
/// model cache).
///
/// Seen in Apple-written archives (CoreDataPlus's `SampleModel2` caches): comparisons with
/// `==`, `<=`, `>=` and `CONTAINS[c]`, `AND`, key paths from `SELF` and from `$VARIABLE`, `SELF`,
/// string and number constants, `@count`. The other forms follow the same classes' keys by
/// analogy (see docs/model-cache.md); an object ID constant cannot be archived and is refused
/// with ``PredicateArchiveError``.
extension KeyedArchiveWriter {
    /// The classes of `NSExpression` subclass `name`, up to `NSObject`.
    private static func expressionClasses(_ name: String) -> [String] {
        name == "NSKeyPathExpression"
            ? ["NSKeyPathExpression", "NSFunctionExpression", "NSExpression", "NSObject"]
            : [name, "NSExpression", "NSObject"]
    }

    /// `predicate` as an archived `NSPredicate`.
    mutating func predicate(_ predicate: FetchPredicate) throws(PredicateArchiveError) -> PropertyListValue {
        switch predicate {
        case .true: return object(["NSTruePredicate", "NSPredicate", "NSObject"], identity: "NSTruePredicate") { _ in [:] }
        case .false: return object(["NSFalsePredicate", "NSPredicate", "NSObject"], identity: "NSFalsePredicate") { _ in [:] }
        case .and(let parts): return try compound(type: 1, parts)
        case .or(let parts): return try compound(type: 2, parts)
        case .not(let inner): return try compound(type: 0, [inner])
        case .comparison(let comparison):
            let left = try expression(comparison.left)
            let op = comparisonOperator(comparison)
            let right = try expression(comparison.right)
            return object(["NSComparisonPredicate", "NSPredicate", "NSObject"]) { _ in
                ["NSLeftExpression": left, "NSPredicateOperator": op, "NSRightExpression": right]
            }
        }
    }

    private mutating func compound(type: Int64, _ parts: [FetchPredicate]) throws(PredicateArchiveError) -> PropertyListValue {
        var members: [PropertyListValue] = []
        for part in parts { members.append(try predicate(part)) }
        let subpredicates = array(members)
        return object(["NSCompoundPredicate", "NSPredicate", "NSObject"]) { _ in
            ["NSCompoundPredicateType": .integer(type), "NSSubpredicates": subpredicates]
        }
    }

    /// The operator object: its class and `NSOperatorType` are `NSPredicateOperatorType`'s;
    /// `NSModifier` is 0 direct, 1 ALL, 2 ANY; `[c]`/`[d]` are `NSOptions` (equality and
    /// order) or `NSFlags` (string operators and IN/CONTAINS), 1 and 2 as in Foundation.
    private mutating func comparisonOperator(_ comparison: Comparison) -> PropertyListValue {
        let modifier: Int64 = switch comparison.modifier { case .direct: 0; case .all: 1; case .any: 2 }
        let options = Int64(comparison.options.rawValue)
        func base(_ type: Int64) -> [String: PropertyListValue] { ["NSModifier": .integer(modifier), "NSOperatorType": .integer(type)] }
        switch comparison.op {
        case .equal, .notEqual:
            let negate = comparison.op == .notEqual
            return object(["NSEqualityPredicateOperator", "NSPredicateOperator", "NSObject"]) { _ in
                base(negate ? 5 : 4).merging(["NSNegate": .bool(negate), "NSOptions": .integer(options)]) { $1 }
            }
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            let type: Int64 = switch comparison.op { case .lessThan: 0; case .lessThanOrEqual: 1; case .greaterThan: 2; default: 3 }
            return object(["NSComparisonPredicateOperator", "NSPredicateOperator", "NSObject"]) { _ in
                base(type).merging(["NSOptions": .integer(options), "NSVariant": .integer(type)]) { $1 }
            }
        case .contains, .in:
            let type: Int64 = comparison.op == .contains ? 99 : 10
            return object(["NSInPredicateOperator", "NSPredicateOperator", "NSObject"]) { _ in
                base(type).merging(["NSFlags": .integer(options)]) { $1 }
            }
        case .beginsWith, .endsWith, .like, .matches:
            let (name, type): (String, Int64) = switch comparison.op {
            case .beginsWith: ("NSBeginsWithPredicateOperator", 8)
            case .endsWith: ("NSEndsWithPredicateOperator", 9)
            case .like: ("NSLikePredicateOperator", 7)
            default: ("NSMatchingPredicateOperator", 6)
            }
            return object([name, "NSStringPredicateOperator", "NSPredicateOperator", "NSObject"]) { _ in
                base(type).merging(["NSFlags": .integer(options)]) { $1 }
            }
        case .between:
            return object(["NSBetweenPredicateOperator", "NSPredicateOperator", "NSObject"]) { _ in base(100) }
        }
    }

    /// `expression` as an archived `NSExpression`.
    mutating func expression(_ expression: FetchExpression) throws(PredicateArchiveError) -> PropertyListValue {
        switch expression {
        case .evaluatedObject:
            // Foundation's parser shares one `SELF` expression; so does the archive.
            return object(Self.expressionClasses("NSSelfExpression"), identity: "NSSelfExpression") { _ in
                ["NSExpressionType": .integer(1)]
            }
        case .constant(let value):
            let archived = try constant(value)
            return object(Self.expressionClasses("NSConstantValueExpression")) { _ in
                ["NSConstantValue": archived, "NSExpressionType": .integer(0)]
            }
        case .variable(let name):
            let variable = string(name)
            return object(Self.expressionClasses("NSVariableExpression")) { _ in
                ["NSExpressionType": .integer(2), "NSVariable": variable]
            }
        case .keyPath(let path):
            let operand = try self.expression(.evaluatedObject)
            // One key is `valueForKey:`, several `valueForKeyPath:`, as Foundation's parser makes them.
            return keyPathExpression(type: 3, operand: operand, path: path, selector: path.count == 1 ? "valueForKey:" : "valueForKeyPath:")
        case .variableKeyPath(let name, let path):
            let operand = try self.expression(.variable(name))
            return keyPathExpression(type: 4, operand: operand, path: path, selector: "valueForKeyPath:")
        case .collectionOperator(let op, let collection, let path):
            let argument: PropertyListValue
            switch (collection, path.isEmpty) {
            case (_, true): argument = try self.expression(collection)
            case (.keyPath(let base), false): argument = try self.expression(.keyPath(base + path))
            case (.variableKeyPath(let name, let base), false): argument = try self.expression(.variableKeyPath(name, base + path))
            default: throw PredicateArchiveError("\(op.rawValue) followed by a key path needs a key path before it")
            }
            let selector: String = switch op { case .count: "count:"; case .sum: "sum:"; case .avg: "average:"; case .min: "min:"; case .max: "max:" }
            // Foundation's own functions have the class `_NSPredicateUtilities` as their operand.
            let utilities = object(Self.expressionClasses("NSConstantValueExpression")) { archive in
                ["NSConstantValueClassName": archive.string("_NSPredicateUtilities"), "NSExpressionType": .integer(0)]
            }
            let arguments = array([argument])
            let name = string(selector)
            return object(Self.expressionClasses("NSFunctionExpression")) { _ in
                ["NSArguments": arguments, "NSExpressionType": .integer(4), "NSOperand": utilities, "NSSelectorName": name]
            }
        case .aggregate(let members):
            var archived: [PropertyListValue] = []
            for member in members { archived.append(try self.expression(member)) }
            let collection = array(archived)
            return object(Self.expressionClasses("NSAggregateExpression")) { _ in
                ["NSCollection": collection, "NSExpressionType": .integer(14)]
            }
        case .subquery(let collection, let variable, let predicate):
            // NSSubqueryExpression's keys, as Foundation's archiving writes them: the collection,
            // the variable's name, the predicate.
            let archivedCollection = try self.expression(collection)
            let name = string(variable)
            let archivedPredicate = try self.predicate(predicate)
            return object(Self.expressionClasses("NSSubqueryExpression")) { _ in
                ["NSExpressionType": .integer(13), "NSExpression": archivedCollection, "NSVariable": name, "NSSubpredicate": archivedPredicate]
            }
        }
    }

    private mutating func keyPathExpression(type: Int64, operand: PropertyListValue, path: [String], selector: String) -> PropertyListValue {
        let specifier = object(Self.expressionClasses("NSKeyPathSpecifierExpression")) { archive in
            ["NSExpressionType": .integer(10), "NSKeyPath": archive.string(path.joined(separator: "."))]
        }
        let arguments = array([specifier], classes: ["NSMutableArray", "NSArray", "NSObject"])
        let name = string(selector)
        return object(Self.expressionClasses("NSKeyPathExpression")) { _ in
            ["NSArguments": arguments, "NSExpressionType": .integer(type), "NSOperand": operand, "NSSelectorName": name]
        }
    }

    /// A constant value as Foundation archives the object: numbers and Booleans as property-list
    /// scalars, strings and data as themselves, dates, UUIDs, URLs and decimals as their classes.
    mutating func constant(_ value: PredicateValue) throws(PredicateArchiveError) -> PropertyListValue {
        switch value {
        case .null: return Self.null
        case .attribute(let attribute): return attributeValue(attribute)
        case .collection(let members):
            var archived: [PropertyListValue] = []
            for member in members { archived.append(try constant(member)) }
            return array(archived)
        case .object:
            throw PredicateArchiveError("an object ID constant cannot be archived in a model")
        }
    }

    /// An attribute value (a default value, a constant) as the Foundation object archived.
    mutating func attributeValue(_ value: AttributeValue) -> PropertyListValue {
        switch value {
        case .integer(let number): return scalar(.integer(number))
        case .double(let number): return scalar(.real(number))
        case .float(let number): return scalar(.real(Double(number)))
        case .bool(let flag): return scalar(.bool(flag))
        case .string(let text): return string(text)
        case .binary(let bytes): return data(bytes)
        case .date(let date):
            return object(["NSDate", "NSObject"]) { _ in ["NS.time": .real(date.timeIntervalSinceReferenceDate)] }
        case .uuid(let uuid):
            let bytes = withUnsafeBytes(of: uuid.uuid) { Data($0) }
            return object(["NSUUID", "NSObject"]) { _ in ["NS.uuidbytes": .data(bytes)] }
        case .uri(let url):
            return object(["NSURL", "NSObject"]) { archive in ["NS.base": Self.null, "NS.relative": archive.string(url.absoluteString)] }
        case .decimal(let decimal):
            return object(["NSDecimalNumber", "NSNumber", "NSValue", "NSObject"]) { _ in Self.decimalFields(decimal) }
        case .composite(let elements):
            // A composite's value is a dictionary of its elements, as Core Data gives it.
            var pairs: [(key: String, value: PropertyListValue)] = []
            for name in elements.keys.sorted() { pairs.append((name, attributeValue(elements[name]!))) }
            return dictionary(pairs)
        }
    }

    /// `NSDecimalNumber`'s keyed fields: the `NSDecimal` parts (exponent, the mantissa's length
    /// in 16-bit words, sign, compact: no trailing decimal zeros), its eight mantissa words
    /// little-endian (`NS.mantissa.bo` 1).
    private static func decimalFields(_ decimal: Decimal) -> [String: PropertyListValue] {
        // The significand's digits into 16-bit words, least significant first (it fits in 128 bits).
        var words = [UInt16](repeating: 0, count: 8)
        let digits = "\(decimal.significand.magnitude)".utf8.filter { $0 >= 0x30 && $0 <= 0x39 }
        for digit in digits {
            var carry = UInt32(digit - 0x30)
            for index in words.indices {
                let product = UInt32(words[index]) * 10 + carry
                words[index] = UInt16(truncatingIfNeeded: product)
                carry = product >> 16
            }
        }
        let length = (words.lastIndex { $0 != 0 } ?? -1) + 1
        var mantissa = Data()
        for word in words { mantissa += [UInt8(word & 0xFF), UInt8(word >> 8)] }
        let compact = length == 0 || digits.last != 0x30
        return [
            "NS.exponent": .integer(Int64(length == 0 ? 0 : decimal.exponent)), "NS.length": .integer(Int64(length)),
            "NS.negative": .bool(length > 0 && decimal.sign == .minus), "NS.compact": .bool(compact),
            "NS.mantissa.bo": .integer(1), "NS.mantissa": .data(mantissa),
        ]
    }
}

/// A predicate or expression that has no archived form Lade can write.
struct PredicateArchiveError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
