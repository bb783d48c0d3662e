import Foundation
import Lade

/// A value expression as Xcode's mapping editor keeps one it was typed into: an `NSExpression`
/// archived by `NSKeyedArchiver` (its classes' names and fields, as Foundation writes them), for
/// tests that need mapping models with expressions of their own (``MappingDocument``).
public indirect enum ArchivedExpression: Sendable {
    /// `$variable.a.b` (`valueForKeyPath:` on a variable expression).
    case keyPath(variable: String, path: String)
    /// A text constant.
    case string(String)
    /// An integer constant.
    case integer(Int64)
    /// One of Foundation's functions (`add:to:`, `multiply:by:`…) on `arguments`.
    case function(String, [ArchivedExpression])

    /// The keyed archive (a binary property list); references are written as `["CF$UID": n]`,
    /// which Lade's reader takes as UIDs.
    public func archive() throws -> Data {
        var objects: [PropertyListValue] = [.string("$null")]
        var classes: [String: Int] = [:]
        func add(_ value: PropertyListValue) -> PropertyListValue {
            objects.append(value)
            return .dictionary(["CF$UID": .integer(Int64(objects.count - 1))])
        }
        func classReference(_ name: String, _ supers: [String]) -> PropertyListValue {
            if let index = classes[name] { return .dictionary(["CF$UID": .integer(Int64(index))]) }
            let reference = add(.dictionary(["$classname": .string(name), "$classes": .array(([name] + supers).map { .string($0) })]))
            classes[name] = objects.count - 1
            return reference
        }
        func object(_ className: String, _ supers: [String], _ fields: [String: PropertyListValue]) -> PropertyListValue {
            var fields = fields
            fields["$class"] = classReference(className, supers)
            return add(.dictionary(fields))
        }
        let expression = ["NSExpression", "NSObject"]
        func array(_ members: [PropertyListValue]) -> PropertyListValue {
            object("NSMutableArray", ["NSArray", "NSObject"], ["NS.objects": .array(members)])
        }
        func encode(_ node: ArchivedExpression) -> PropertyListValue {
            switch node {
            case .string(let text):
                return object("NSConstantValueExpression", expression, ["NSConstantValue": add(.string(text)), "NSExpressionType": .integer(0)])
            case .integer(let number):
                return object("NSConstantValueExpression", expression, ["NSConstantValue": .integer(number), "NSExpressionType": .integer(0)])
            case .keyPath(let variable, let path):
                let operand = object("NSVariableExpression", expression, ["NSVariable": add(.string(variable)), "NSExpressionType": .integer(2)])
                let specifier = object("NSKeyPathSpecifierExpression", expression, ["NSKeyPath": add(.string(path)), "NSExpressionType": .integer(10)])
                return object("NSKeyPathExpression", ["NSFunctionExpression"] + expression, [
                    "NSSelectorName": add(.string("valueForKeyPath:")), "NSOperand": operand,
                    "NSArguments": array([specifier]), "NSExpressionType": .integer(3),
                ])
            case .function(let selector, let arguments):
                // Foundation's own functions have the utilities class as their operand.
                let operand = object("NSConstantValueExpression", expression, ["NSConstantValueClassName": add(.string("_NSPredicateUtilities")), "NSExpressionType": .integer(0)])
                let members = arguments.map(encode)
                return object("NSFunctionExpression", expression, [
                    "NSSelectorName": add(.string(selector)), "NSOperand": operand,
                    "NSArguments": array(members), "NSExpressionType": .integer(4),
                ])
            }
        }
        let root = encode(self)
        return try PropertyListValue.dictionary([
            "$archiver": .string("NSKeyedArchiver"), "$version": .integer(100000),
            "$top": .dictionary(["root": root]), "$objects": .array(objects),
        ]).binaryPropertyList()
    }

    /// The expression in `NSExpression`'s format syntax, for messages.
    public var description: String {
        switch self {
        case .keyPath(let variable, let path): "$\(variable).\(path)"
        case .string(let text): "\"\(text)\""
        case .integer(let number): "\(number)"
        case .function(let selector, let arguments): "\(selector)(\(arguments.map(\.description).joined(separator: ", ")))"
        }
    }
}
