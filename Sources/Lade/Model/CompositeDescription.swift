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
        }
        problems += nesting(composites, byName, sourceMap)
        return problems
    }

    /// How deep composites may nest: no Apple rule says, but a model with composites chained
    /// past this is not one Xcode's editor makes, and each level costs every reader a step.
    static let maximumNesting = 64

    /// Composites that hold themselves, and nesting past `maximumNesting`: one depth-first walk
    /// of the composites (each visited once, without recursion).
    private static func nesting(_ composites: [CompositeDescription], _ byName: [String: CompositeDescription],
                                _ sourceMap: ModelSourceMap?) -> [ModelProblem] {
        var problems: [ModelProblem] = []
        var depth: [String: Int] = [:]      // finished: levels below and including it
        var onPath: [String: Int] = [:]     // open: position on the path
        for root in composites where depth[root.name] == nil && onPath[root.name] == nil {
            var path: [(name: String, children: [String], next: Int)] = []
            func open(_ name: String) {
                onPath[name] = path.count
                let children = (byName[name]?.elements ?? []).filter { $0.type == .composite }.compactMap(\.compositeName)
                path.append((name, children.filter { byName[$0] != nil }, 0))
            }
            open(root.name)
            while let top = path.last {
                guard top.next < top.children.count else {
                    path.removeLast()
                    onPath[top.name] = nil
                    let below = top.children.map { depth[$0] ?? 0 }.max() ?? 0
                    depth[top.name] = below + 1
                    if below + 1 > maximumNesting, !problems.contains(where: { $0.message.contains("nest more than") }) {
                        problems.append(ModelProblem(file: sourceMap?.file, line: sourceMap?.lines["composite:\(top.name)"],
                                                     message: "composites nest more than \(maximumNesting) levels deep from composite '\(top.name)'; Lade reads at most \(maximumNesting)"))
                    }
                    continue
                }
                path[path.count - 1].next += 1
                let child = top.children[top.next]
                if let position = onPath[child] {
                    let cycle = path[position...].map(\.name) + [child]
                    problems.append(ModelProblem(file: sourceMap?.file, line: sourceMap?.lines["composite:\(child)"],
                                                 message: "composite '\(child)' holds itself (\(cycle.joined(separator: " → "))); a composite cannot nest in itself"))
                } else if depth[child] == nil {
                    open(child)
                }
            }
        }
        return problems
    }
}
