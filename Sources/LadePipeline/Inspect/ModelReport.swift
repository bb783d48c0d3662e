import Foundation
import Lade

/// A model printed for people (`lade inspect MODEL`) or as JSON (`--json`).
///
/// The JSON form is Lade's JSON model format itself (docs/model-format.md), so
/// `lade inspect Model.xcdatamodeld --json > model.json` also converts a model to JSON.
public struct ModelReport {
    public let model: ManagedObjectModel
    /// The path the model was loaded from, shown in the heading.
    public let source: String
    public let versions: ModelVersions?

    public init(model: ManagedObjectModel, source: String, versions: ModelVersions? = nil) {
        self.model = model
        self.source = source
        self.versions = versions
    }

    public func json() throws -> String {
        String(decoding: try model.jsonData(), as: UTF8.self)
    }

    /// The versions of a bundle, one a line, the current one marked (`lade inspect MODEL
    /// --list-versions`).
    public static func text(listing versions: ModelVersions) -> String {
        versions.names.map { ($0 == versions.current ? "\($0) (current)" : $0) + "\n" }.joined()
    }

    public func text() -> String {
        var out: [String] = []
        var heading = "Model \(source)"
        if let name = model.versionName { heading += " — version \(name)" }
        out.append(heading)
        if let versions, versions.names.count > 1 {
            let listed = versions.names.map { $0 == versions.current ? "\($0) (current)" : $0 }
            out.append("Versions: " + listed.joined(separator: ", "))
        }
        if !model.versionIdentifiers.isEmpty {
            out.append("Version identifiers: " + model.versionIdentifiers.map { "\"\($0)\"" }.joined(separator: ", "))
        }
        out.append(model.hasAppleVersionHashes
            ? "Version hashes: Apple's, from the compiled model (.momd)"
            : "Version hashes: Lade's own SHA-256, not Apple's (give the compiled .momd with --momd for Apple's)")
        out.append("\(model.entities.count) entities")
        for entity in model.entities {
            out.append("")
            out += entityLines(entity)
        }
        if !model.composites.isEmpty {
            out.append("")
            out.append("Composites (kept in in-memory stores only: SQLite, XML and binary stores refuse them)")
            for composite in model.composites {
                out.append("  \(composite.name)\(composite.elements.isEmpty ? " (no elements)" : ":")")
                out += table(composite.elements.map { [$0.name, $0.type.rawValue, attributeDetails($0)] })
            }
        }
        if !model.fetchRequestTemplates.isEmpty {
            out.append("")
            out.append("Fetch request templates")
            for template in model.fetchRequestTemplates {
                out.append("  " + describe(template))
            }
        }
        if !model.configurations.isEmpty {
            out.append("")
            out.append("Configurations")
            for configuration in model.configurations {
                let cloud = configuration.isUsedWithCloudKit ? " (CloudKit)" : ""
                out.append("  \(configuration.name)\(cloud): \(configuration.entityNames.joined(separator: ", "))")
            }
        }
        return out.joined(separator: "\n") + "\n"
    }

    private func entityLines(_ entity: EntityDescription) -> [String] {
        var title = "Entity \(entity.name)"
        if let parent = entity.parentName { title += " : \(parent)" }
        if entity.isAbstract { title += " (abstract)" }
        var out = [title]
        let subentities = model.subentities(of: entity.name).map(\.name)
        if !subentities.isEmpty { out.append("  subentities: \(subentities.joined(separator: ", "))") }
        if let className = entity.representedClassName, className != entity.name { out.append("  class: \(className)") }
        if let renaming = entity.renamingIdentifier { out.append("  renaming identifier: \(renaming)") }
        if let modifier = entity.versionHashModifier { out.append("  version hash modifier: \(modifier)") }
        if let hash = model.versionHash(of: entity.name) {
            out.append("  version hash: \(hash.base64EncodedString()) (\(entity.appleVersionHash == nil ? "Lade's" : "Apple's"))")
        }
        if !entity.attributes.isEmpty {
            out.append("  attributes:")
            out += table(entity.attributes.map { [$0.name, $0.type.rawValue, attributeDetails($0)] })
        }
        if !entity.relationships.isEmpty {
            out.append("  relationships:")
            out += table(entity.relationships.map { ["\($0.name)", "→ \($0.destinationEntityName)", relationshipDetails($0)] })
        }
        if !entity.fetchedProperties.isEmpty {
            out.append("  fetched properties:")
            for fetched in entity.fetchedProperties {
                out.append("    \(fetched.name): \(describe(fetched.fetchRequest))")
            }
        }
        for constraint in entity.uniquenessConstraints {
            out.append("  unique: (\(constraint.joined(separator: ", ")))")
        }
        for index in entity.fetchIndexes {
            let elements = index.elements.map { element in
                "\(element.propertyName ?? element.expression ?? "?") \(element.isAscending ? "asc" : "desc")\(element.kind == "Binary" ? "" : " \(element.kind)")"
            }
            out.append("  fetch index \(index.name): (\(elements.joined(separator: ", ")))")
        }
        for compound in entity.compoundIndexes {
            out.append("  compound index: (\(compound.joined(separator: ", ")))")
        }
        out += userInfoLines(entity.userInfo, indent: "  ")
        return out
    }

    private func attributeDetails(_ attribute: AttributeDescription) -> String {
        var parts = [attribute.isOptional ? "optional" : "required"]
        if let composite = attribute.compositeName { parts.append("composite \(composite)") }
        if attribute.isTransient { parts.append("transient") }
        if let value = attribute.defaultValue { parts.append("default \(show(value))") }
        if let value = attribute.minValue { parts.append("min \(show(value))") }
        if let value = attribute.maxValue { parts.append("max \(show(value))") }
        if let pattern = attribute.regularExpression { parts.append("regex /\(pattern)/") }
        if let transformer = attribute.valueTransformerName { parts.append("transformer \(transformer)") }
        if attribute.allowsExternalBinaryDataStorage { parts.append("external storage") }
        if attribute.isIndexed { parts.append("indexed") }
        if let derivation = attribute.derivationExpression { parts.append("derived from \(derivation)") }
        if let renaming = attribute.renamingIdentifier { parts.append("renamed from \(renaming)") }
        if !attribute.userInfo.isEmpty { parts.append("userInfo \(inline(attribute.userInfo))") }
        return parts.joined(separator: ", ")
    }

    private func relationshipDetails(_ relationship: RelationshipDescription) -> String {
        var parts = [relationship.isToMany ? (relationship.isOrdered ? "to-many ordered" : "to-many") : "to-one"]
        parts.append(relationship.isOptional ? "optional" : "required")
        if relationship.isTransient { parts.append("transient") }
        if relationship.minCount != 0 || (relationship.isToMany && relationship.maxCount != 0) {
            parts.append("count \(relationship.minCount)...\(relationship.maxCount == 0 ? "∞" : String(relationship.maxCount))")
        }
        parts.append("inverse \(relationship.inverseName ?? "none")")
        parts.append("delete \(relationship.deleteRule.rawValue)")
        if relationship.isIndexed { parts.append("indexed") }
        if let renaming = relationship.renamingIdentifier { parts.append("renamed from \(renaming)") }
        if !relationship.userInfo.isEmpty { parts.append("userInfo \(inline(relationship.userInfo))") }
        return parts.joined(separator: ", ")
    }

    private func describe(_ template: FetchRequestTemplate) -> String {
        var text = template.name.isEmpty ? template.entityName : "\(template.name): \(template.entityName)"
        if let predicate = template.predicateString { text += " where \(predicate)" }
        if let limit = template.fetchLimit { text += ", limit \(limit)" }
        if let size = template.fetchBatchSize { text += ", batch \(size)" }
        if let resultType = template.resultType { text += ", result \(resultType)" }
        return text
    }

    private func show(_ value: AttributeValue) -> String {
        switch value {
        case .string(let text): "\"\(text)\""
        case .date(let date): ISO8601DateFormatter().string(from: date)
        default: value.canonicalText
        }
    }

    private func inline(_ info: [String: String]) -> String {
        "{" + info.keys.sorted().map { "\($0) = \(info[$0]!)" }.joined(separator: "; ") + "}"
    }

    private func userInfoLines(_ info: [String: String], indent: String) -> [String] {
        info.isEmpty ? [] : ["\(indent)userInfo:"] + info.keys.sorted().map { "\(indent)  \($0) = \(info[$0]!)" }
    }

    private func table(_ rows: [[String]]) -> [String] {
        let widths = (0..<2).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            "    " + row[0].padding(toLength: widths[0], withPad: " ", startingAt: 0) + "  "
                + row[1].padding(toLength: widths[1], withPad: " ", startingAt: 0) + "  " + row[2]
        }
    }
}
