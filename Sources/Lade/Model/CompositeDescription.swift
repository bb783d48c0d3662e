import Foundation

/// A composite type of a model (Xcode 15's `<composite name="…">` beside the entities): the
/// named set of elements an attribute of type `.composite` holds, as Core Data's
/// `NSCompositeAttributeDescription.elements`. An element is itself an attribute, and may be a
/// composite in turn (naming another composite of the model).
///
/// ```swift
/// let address = CompositeDescription(name: "Address", elements: [
///     AttributeDescription(name: "street", type: .string),
///     AttributeDescription(name: "zip", type: .string),
/// ])
/// var home = AttributeDescription(name: "home", type: .composite)
/// home.compositeName = "Address"
/// ```
///
/// A composite attribute's value is `AttributeValue.composite`: element name → value, a nested
/// composite's value a nested dictionary. Core Data keeps composites in SQLite stores only, and
/// how its SQLite store lays them out is not known from any Apple-written store, so Lade keeps
/// them in in-memory stores only and refuses them in SQLite, XML and binary stores.
public struct CompositeDescription: Sendable, Hashable {
    public var name: String
    /// The elements, in the model's order.
    public var elements: [AttributeDescription]

    public init(name: String, elements: [AttributeDescription] = []) {
        self.name = name
        self.elements = elements
    }
}

/// Core Data's rules for composites, checked with the rest of a model's.
enum CompositeRules {
    /// Attribute types Core Data does not take as a composite's element.
    static let refusedElementTypes: Set<AttributeType> = [.undefined]

    static func problems(entities: [EntityDescription], composites: [CompositeDescription], sourceMap: ModelSourceMap?) -> [ModelProblem] {
        var problems: [ModelProblem] = []
        let file = sourceMap?.file
        var byName: [String: CompositeDescription] = [:]
        for composite in composites {
            if byName.updateValue(composite, forKey: composite.name) != nil {
                problems.append(ModelProblem(file: file, line: sourceMap?.lines["composite:\(composite.name)"],
                                             message: "composite '\(composite.name)' is defined twice; rename one"))
            }
        }
        let defined = composites.isEmpty ? "the model defines none" : "the model defines \(composites.map(\.name).joined(separator: ", "))"
        /// The checks every attribute gets, on an entity or in a composite.
        func check(_ attribute: AttributeDescription, line: Int?, entity: String?, property: String) {
            func problem(_ message: String) {
                problems.append(ModelProblem(file: file, line: line, entity: entity, property: property, message: message))
            }
            guard attribute.type == .composite else {
                if let name = attribute.compositeName {
                    problem("composite=\"\(name)\" on a \(attribute.type.rawValue) attribute; only a Composite attribute names a composite")
                }
                return
            }
            guard let name = attribute.compositeName else {
                problem("a Composite attribute must name its composite (composite=\"NAME\"); \(defined)")
                return
            }
            if byName[name] == nil { problem("composite '\(name)' is not defined in the model; \(defined)") }
        }
        for entity in entities {
            for attribute in entity.attributes {
                check(attribute, line: sourceMap?.line(entity: entity.name, property: attribute.name), entity: entity.name, property: attribute.name)
            }
        }
        for composite in composites {
            var seen: Set<String> = []
            for element in composite.elements {
                let line = sourceMap?.lines["composite:\(composite.name).\(element.name)"] ?? sourceMap?.lines["composite:\(composite.name)"]
                let property = "\(composite.name).\(element.name)"
                check(element, line: line, entity: nil, property: property)
                if !seen.insert(element.name).inserted {
                    problems.append(ModelProblem(file: file, line: line, property: property, message: "composite '\(composite.name)' has two elements named '\(element.name)'"))
                }
                if refusedElementTypes.contains(element.type) || (element.type == .binary && element.allowsExternalBinaryDataStorage) {
                    problems.append(ModelProblem(file: file, line: line, property: property, message: "Core Data does not take \(element.allowsExternalBinaryDataStorage ? "Binary with external storage" : element.type.rawValue) as a composite's element"))
                }
            }
            if let cycle = cycle(from: composite.name, byName) {
                problems.append(ModelProblem(file: file, line: sourceMap?.lines["composite:\(composite.name)"],
                                             message: "composite '\(composite.name)' holds itself (\(cycle.joined(separator: " → "))); a composite cannot nest in itself"))
            }
        }
        return problems
    }

    /// The chain of composites by which `start` holds itself, if it does.
    private static func cycle(from start: String, _ byName: [String: CompositeDescription]) -> [String]? {
        var pending: [[String]] = [[start]]
        var visited: Set<String> = []
        while let path = pending.popLast() {
            for element in byName[path.last!]?.elements ?? [] where element.type == .composite {
                guard let next = element.compositeName else { continue }
                if next == start { return path + [next] }
                if visited.insert(next).inserted { pending.append(path + [next]) }
            }
        }
        return nil
    }
}
