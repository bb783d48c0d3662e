import Foundation

/// Reads the `contents` XML that Xcode writes inside a `.xcdatamodel` directory.
///
/// Editor-only details (diagram positions in `<elements>`, `syncable`, code generation
/// flags, `usesScalarValueType`) are read past; everything that shapes objects or stores is
/// kept. Unknown attribute types, unparsable values and unknown elements are problems with
/// their line, reported together with the model's rule violations.
struct XcodeModelReader {
    let file: String
    private var problems: [ModelProblem] = []
    private var warnings: [ModelProblem] = []
    private var sourceMap: ModelSourceMap

    init(file: String) {
        self.file = file
        self.sourceMap = ModelSourceMap(file: file)
    }

    static func read(_ data: Data, file: String, versionName: String?) throws -> ManagedObjectModel {
        var reader = XcodeModelReader(file: file)
        return try reader.read(try XMLElementTree.parse(data, file: file), versionName: versionName)
    }

    private mutating func problem(_ line: Int, entity: String? = nil, property: String? = nil, _ message: String) {
        problems.append(ModelProblem(file: file, line: line, entity: entity, property: property, message: message))
    }

    private mutating func read(_ root: XMLElementTree, versionName: String?) throws -> ManagedObjectModel {
        if root.name == "database" {
            throw ModelError(file: file, line: root.line, "this is a Core Data XML store, not a model: name the store's model with \(ModelLoader.namingAdvice)")
        }
        guard root.name == "model" else {
            throw ModelError(file: file, line: root.line, "the root element is <\(root.name)>, not <model>: this is not a Core Data model's contents file")
        }
        var entities: [EntityDescription] = []
        var templates: [FetchRequestTemplate] = []
        var configurations: [ModelConfiguration] = []
        var composites: [CompositeDescription] = []
        for child in root.children {
            switch child.name {
            case "entity": entities.append(readEntity(child))
            case "fetchRequest":
                if let template = readFetchRequest(child, entity: nil) {
                    sourceMap.lines["fetchRequest:\(template.name)"] = child.line
                    templates.append(template)
                }
            case "configuration":
                let name = child["name"] ?? ""
                sourceMap.lines["configuration:\(name)"] = child.line
                configurations.append(ModelConfiguration(
                    name: name, entityNames: child.children(named: "memberEntity").compactMap { $0["name"] },
                    isUsedWithCloudKit: flag(child["usedWithCloudKit"])))
            case "composite": composites.append(readComposite(child))
            case "elements": break  // diagram layout
            default: problem(child.line, "unknown element <\(child.name)> in <model>; Lade does not read it")
            }
        }
        let identifiers = root["userDefinedModelVersionIdentifier"].map { [$0] } ?? []
        let ruleProblems = ModelValidator(
            entities: entities, fetchRequestTemplates: templates, configurations: configurations, sourceMap: sourceMap
        ).problems()
        guard problems.isEmpty && ruleProblems.isEmpty else { throw ModelError(problems + ruleProblems) }
        var model = try ManagedObjectModel(
            entities: entities, fetchRequestTemplates: templates, configurations: configurations,
            versionName: versionName, versionIdentifiers: identifiers, sourceMap: sourceMap, composites: composites)
        model.warnings = warnings
        return model
    }

    private mutating func readEntity(_ node: XMLElementTree) -> EntityDescription {
        let name = node["name"] ?? ""
        if node["name"] == nil { problem(node.line, "an <entity> has no name") }
        sourceMap.lines[name] = node.line
        var entity = EntityDescription(
            name: name, parentName: node["parentEntity"], isAbstract: flag(node["isAbstract"]),
            representedClassName: node["representedClassName"], renamingIdentifier: node["elementID"],
            versionHashModifier: node["versionHashModifier"])
        for child in node.children {
            if let property = child["name"], ["attribute", "relationship", "fetchedProperty"].contains(child.name) {
                sourceMap.lines["\(name).\(property)"] = child.line
            }
            switch child.name {
            case "attribute": if let attribute = readAttribute(child, entity: name) { entity.attributes.append(attribute) }
            case "relationship": if let relationship = readRelationship(child, entity: name) { entity.relationships.append(relationship) }
            case "fetchedProperty":
                guard let request = child.children(named: "fetchRequest").first,
                      let template = readFetchRequest(request, entity: name)
                else {
                    problem(child.line, entity: name, property: child["name"], "a fetched property needs a <fetchRequest> with an entity")
                    continue
                }
                entity.fetchedProperties.append(FetchedPropertyDescription(
                    name: child["name"] ?? "", isOptional: flag(child["optional"]), fetchRequest: template,
                    userInfo: readUserInfo(child)))
            case "uniquenessConstraints":
                for constraint in child.children(named: "uniquenessConstraint") {
                    entity.uniquenessConstraints.append(constraint.children(named: "constraint").compactMap { $0["value"] })
                }
            case "fetchIndex":
                entity.fetchIndexes.append(FetchIndexDescription(
                    name: child["name"] ?? "",
                    elements: child.children(named: "fetchIndexElement").map {
                        FetchIndexElement(
                            propertyName: $0["property"], expression: $0["expression"], kind: $0["type"] ?? "Binary",
                            isAscending: ($0["order"] ?? "ascending") != "descending")
                    }))
            case "compoundIndexes":
                for index in child.children(named: "compoundIndex") {
                    entity.compoundIndexes.append(index.children(named: "index").compactMap { $0["value"] })
                }
            case "userInfo": entity.userInfo = readUserInfo(node)
            default: problem(child.line, entity: name, "unknown element <\(child.name)> in <entity>; Lade does not read it")
            }
        }
        return entity
    }

    /// Xcode 15's `<composite name="…">`: its `<attribute>` elements, read as an entity's are.
    private mutating func readComposite(_ node: XMLElementTree) -> CompositeDescription {
        let name = node["name"] ?? ""
        if node["name"] == nil { problem(node.line, "a <composite> has no name") }
        sourceMap.lines["composite:\(name)"] = node.line
        var composite = CompositeDescription(name: name)
        for child in node.children {
            guard child.name == "attribute" else {
                problem(child.line, "unknown element <\(child.name)> in <composite> '\(name)'; Lade reads only <attribute> there")
                continue
            }
            sourceMap.lines["composite:\(name).\(child["name"] ?? "")"] = child.line
            if let element = readAttribute(child, entity: nil) { composite.elements.append(element) }
        }
        return composite
    }

    private mutating func readAttribute(_ node: XMLElementTree, entity: String?) -> AttributeDescription? {
        let name = node["name"] ?? ""
        guard let typeName = node["attributeType"] else {
            problem(node.line, entity: entity, property: name, "attribute has no attributeType")
            return nil
        }
        guard let type = AttributeType(rawValue: typeName) else {
            let known = AttributeType.allCases.map(\.rawValue).joined(separator: ", ")
            problem(node.line, entity: entity, property: name, "unknown attributeType '\(typeName)'; expected one of \(known)")
            return nil
        }
        var attribute = AttributeDescription(
            name: name, type: type, isOptional: flag(node["optional"]), isTransient: flag(node["transient"]),
            regularExpression: node["regularExpressionString"], valueTransformerName: node["valueTransformerName"],
            customClassName: node["customClassName"],
            allowsExternalBinaryDataStorage: flag(node["allowsExternalBinaryDataStorage"]),
            isIndexed: flag(node["indexed"]), preservesValueInHistoryOnDeletion: flag(node["preserveAfterDeletion"]),
            renamingIdentifier: node["elementID"], versionHashModifier: node["versionHashModifier"],
            derivationExpression: flag(node["derived"]) ? node["derivationExpression"] : nil,
            userInfo: readUserInfo(node))
        attribute.compositeName = node["composite"]
        if let pattern = attribute.regularExpression, let compiled = try? RegularExpression(pattern), !compiled.isNative {
            // Validation still follows the pattern, through ICU; ICU gives up on values that
            // need too much backtracking, and such a value is accepted unchecked, so the user is told.
            warnings.append(ModelProblem(file: file, line: node.line, entity: entity, property: name,
                                         message: "the regular expression \(compiled) uses constructs Lade's linear-time engine does not run (lookaround, backreferences, \\p{…}, …): values are validated by ICU, and a value it gives up on after heavy backtracking is accepted unchecked (an import warns)"))
        }
        let isDate = type == .date
        attribute.defaultValue = value(node, isDate ? "defaultDateTimeInterval" : "defaultValueString", as: type, entity: entity, label: "default value")
        if let boundType = attribute.boundType {
            attribute.minValue = value(node, isDate ? "minDateTimeInterval" : "minValueString", as: boundType, entity: entity, label: "minimum")
            attribute.maxValue = value(node, isDate ? "maxDateTimeInterval" : "maxValueString", as: boundType, entity: entity, label: "maximum")
        }
        return attribute
    }

    private mutating func value(_ node: XMLElementTree, _ key: String, as type: AttributeType, entity: String?, label: String) -> AttributeValue? {
        guard let text = node[key] else { return nil }
        do {
            return try AttributeValue(parsing: text, as: type)
        } catch where type.isInteger {
            // Apple's model compiler reads an integer default as NSString's integer value does
            // (leading spaces, a sign, then digits; anything else ends the number, and no digits
            // is 0), so a model Xcode compiles, say with "NO" on an Integer 64, loads with the
            // value Core Data uses there, and a warning.
            let value = Self.leadingInteger(text)
            guard type.integerRange!.contains(value) else {
                problem(node.line, entity: entity, property: node["name"], "\(label) (\(key)): \(error)")
                return nil
            }
            warnings.append(ModelProblem(file: file, line: node.line, entity: entity, property: node["name"],
                                         message: "\(label) (\(key)) '\(text)' is not a whole number; Core Data reads it as \(value), and so does Lade"))
            return .integer(value)
        } catch {
            problem(node.line, entity: entity, property: node["name"], "\(label) (\(key)): \(error)")
            return nil
        }
    }

    /// NSString's `longLongValue`: leading whitespace, an optional sign, then as many decimal
    /// digits as there are (saturating); 0 when there are none.
    static func leadingInteger(_ text: String) -> Int64 {
        var bytes = Substring(text).utf8.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        var negative = false
        if let sign = bytes.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
            negative = sign == UInt8(ascii: "-")
            bytes = bytes.dropFirst()
        }
        var value: Int64 = 0
        for byte in bytes {
            guard byte >= 0x30 && byte <= 0x39 else { break }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(byte - 0x30))
            if overflow || overflow2 { return negative ? .min : .max }
            value = sum
        }
        return negative ? -value : value
    }

    private mutating func readRelationship(_ node: XMLElementTree, entity: String) -> RelationshipDescription? {
        let name = node["name"] ?? ""
        guard let destination = node["destinationEntity"] else {
            problem(node.line, entity: entity, property: name, "relationship has no destinationEntity")
            return nil
        }
        if let inverseEntity = node["inverseEntity"], node["inverseName"] != nil, inverseEntity != destination {
            problem(node.line, entity: entity, property: name, "inverseEntity '\(inverseEntity)' differs from destinationEntity '\(destination)'")
        }
        var rule = DeleteRule.nullify
        if let ruleName = node["deletionRule"] {
            if let known = DeleteRule(rawValue: ruleName) {
                rule = known
            } else {
                problem(node.line, entity: entity, property: name, "unknown deletionRule '\(ruleName)'; expected Nullify, Cascade, Deny or No Action")
            }
        }
        let isToMany = flag(node["toMany"])
        return RelationshipDescription(
            name: name, destinationEntityName: destination, inverseName: node["inverseName"], isToMany: isToMany,
            isOrdered: flag(node["ordered"]), isOptional: flag(node["optional"]), isTransient: flag(node["transient"]),
            minCount: integer(node, "minCount", entity: entity) ?? 0,
            maxCount: integer(node, "maxCount", entity: entity) ?? (isToMany ? 0 : 1),
            deleteRule: rule, isIndexed: flag(node["indexed"]), renamingIdentifier: node["elementID"],
            versionHashModifier: node["versionHashModifier"], userInfo: readUserInfo(node))
    }

    private mutating func integer(_ node: XMLElementTree, _ key: String, entity: String) -> Int? {
        guard let text = node[key] else { return nil }
        guard let value = Int(text) else {
            problem(node.line, entity: entity, property: node["name"], "\(key) '\(text)' is not a whole number")
            return nil
        }
        return value
    }

    private mutating func readFetchRequest(_ node: XMLElementTree, entity: String?) -> FetchRequestTemplate? {
        guard let target = node["entity"] else {
            problem(node.line, entity: entity, "<fetchRequest> '\(node["name"] ?? "")' names no entity")
            return nil
        }
        func optionalFlag(_ key: String) -> Bool? { node[key].map(flag) }
        return FetchRequestTemplate(
            name: node["name"] ?? "", entityName: target, predicateString: node["predicateString"],
            fetchLimit: integer(node, "fetchLimit", entity: entity ?? target),
            fetchBatchSize: integer(node, "fetchBatchSize", entity: entity ?? target),
            resultType: node["resultType"], includesSubentities: optionalFlag("includeSubentities"),
            includesPendingChanges: optionalFlag("includesPendingChanges"),
            returnsObjectsAsFaults: optionalFlag("returnObjectsAsFaults"),
            returnsDistinctResults: optionalFlag("returnDistinctResults"))
    }

    private func readUserInfo(_ node: XMLElementTree) -> [String: String] {
        var info: [String: String] = [:]
        for block in node.children(named: "userInfo") {
            for entry in block.children(named: "entry") {
                if let key = entry["key"] { info[key] = entry["value"] ?? "" }
            }
        }
        return info
    }

    private func flag(_ text: String?) -> Bool {
        text == "YES" || text == "true" || text == "1"
    }
}
