import Foundation

extension ManagedObjectModel {
    /// The model as the `contents` file of an Xcode model folder (`NAME.xcdatamodel/contents`):
    /// the XML Xcode's model editor writes, which Xcode opens and compiles and Lade reads back
    /// (`ManagedObjectModel(contentsOf:)`) as a model equal to this one. So a model read from a
    /// store's `Z_MODELCACHE`, a compiled `.mom` or a JSON model becomes a model a user can
    /// name with `--model`, or open in Xcode.
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(carriedByStoreAt: URL(fileURLWithPath: "App.sqlite"))
    /// let contents = try model.xcodeModelContents()   // <?xml …?><model type="com.apple.IDECoreDataModeler.DataModel" …
    /// ```
    ///
    /// The output is deterministic: entities, fetch request templates and configurations in
    /// name order (by bytes), as Xcode writes them; each entity's attributes, relationships and
    /// fetched properties, and each composite's elements, in the model's order (Xcode's editor
    /// sorts properties by name, and so does a model read from a `.mom` or a cache already);
    /// `userInfo` entries by key. Every name and value is escaped (`&amp;`, `&lt;`, `&quot;`,
    /// and tabs and line breaks as character references, so they read back as they were).
    ///
    /// What Xcode's XML cannot say is refused, never dropped: a name or value with a character
    /// XML 1.0 cannot hold (a control character), more than one version identifier, and
    /// anything that does not read back equal (each problem names its entity and property).
    /// The one thing left out on purpose is Apple's version hashes (`appleVersionHash`, from a
    /// `.momd`'s `VersionInfo.plist` or a store's metadata): the XML has no place for them,
    /// Xcode computes them again when it compiles the model, and Lade, reading the XML,
    /// computes its own.
    public func xcodeModelContents() throws -> Data {
        var writer = XcodeModelWriter()
        writer.write(self)
        guard writer.problems.isEmpty else { throw ModelError(writer.problems) }
        let data = Data(writer.text.utf8)
        try XcodeModelWriter.checkReadsBack(data, as: self)
        return data
    }

    /// This model as its Xcode `contents` reads back: entities, templates and configurations
    /// in name order, without Apple's version hashes.
    func inXcodeOrder() throws -> ManagedObjectModel {
        try ManagedObjectModel(
            entities: XcodeModelWriter.byName(entities, \.name).map { entity in
                var copy = entity
                copy.appleVersionHash = nil
                return copy
            },
            fetchRequestTemplates: XcodeModelWriter.byName(fetchRequestTemplates, \.name),
            configurations: XcodeModelWriter.byName(configurations, \.name),
            versionName: versionName, versionIdentifiers: versionIdentifiers, composites: composites)
    }
}

/// Builds the `contents` XML of a model (`ManagedObjectModel.xcodeModelContents()`), element by
/// element, with the attribute names and value spellings Xcode's model editor writes (as the
/// corpus's `contents` files show) and `XcodeModelReader` reads.
struct XcodeModelWriter {
    private(set) var text = ""
    private(set) var problems: [ModelProblem] = []

    /// Elements in name order, by the names' bytes (a total order, whatever the names hold).
    static func byName<Element>(_ elements: [Element], _ name: (Element) -> String) -> [Element] {
        elements.sorted { AttributeValue.byteOrder(name($0), name($1)) < 0 }
    }

    // MARK: Model

    mutating func write(_ model: ManagedObjectModel) {
        text += #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"# + "\n"
        var attributes: [(String, String?)] = [
            ("type", "com.apple.IDECoreDataModeler.DataModel"), ("documentVersion", "1.0"),
            ("minimumToolsVersion", "Automatic"), ("sourceLanguage", "Swift"),
        ]
        switch model.versionIdentifiers.count {
        case 0: break
        case 1: attributes.append(("userDefinedModelVersionIdentifier", model.versionIdentifiers[0]))
        default:
            problems.append(ModelProblem(message: "the model has \(model.versionIdentifiers.count) version identifiers (\(model.versionIdentifiers.joined(separator: ", "))); Xcode's model keeps one (userDefinedModelVersionIdentifier)"))
        }
        open("model", attributes, depth: 0, at: (nil, nil))
        for entity in Self.byName(model.entities, \.name) { write(entity) }
        for composite in model.composites { write(composite) }
        for template in Self.byName(model.fetchRequestTemplates, \.name) {
            write(template, depth: 1, at: (nil, nil))
        }
        for configuration in Self.byName(model.configurations, \.name) {
            let place = (nil as String?, "configuration \(configuration.name)" as String?)
            let members = configuration.entityNames
            open("configuration", [("name", configuration.name), ("usedWithCloudKit", flag(configuration.isUsedWithCloudKit))],
                 depth: 1, at: place, empty: members.isEmpty)
            for member in members { open("memberEntity", [("name", member)], depth: 2, at: place, empty: true) }
            if !members.isEmpty { close("configuration", depth: 1) }
        }
        close("model", depth: 0)
    }

    // MARK: Entities

    private mutating func write(_ entity: EntityDescription) {
        let place = (entity.name as String?, nil as String?)
        let isEmpty = entity.attributes.isEmpty && entity.relationships.isEmpty && entity.fetchedProperties.isEmpty
            && entity.fetchIndexes.isEmpty && entity.uniquenessConstraints.isEmpty && entity.compoundIndexes.isEmpty
            && entity.userInfo.isEmpty
        open("entity", [
            ("name", entity.name), ("representedClassName", entity.representedClassName),
            ("isAbstract", flag(entity.isAbstract)), ("parentEntity", entity.parentName),
            ("elementID", entity.renamingIdentifier), ("versionHashModifier", entity.versionHashModifier),
        ], depth: 1, at: place, empty: isEmpty)
        guard !isEmpty else { return }
        for attribute in entity.attributes { write(attribute, entity: entity.name, depth: 2) }
        for relationship in entity.relationships { write(relationship, entity: entity.name) }
        for fetched in entity.fetchedProperties {
            let at = (entity.name as String?, fetched.name as String?)
            open("fetchedProperty", [("name", fetched.name), ("optional", flag(fetched.isOptional))], depth: 2, at: at)
            write(fetched.fetchRequest, depth: 3, at: at)
            write(fetched.userInfo, depth: 3, at: at)
            close("fetchedProperty", depth: 2)
        }
        for index in entity.fetchIndexes {
            let at = (entity.name as String?, "fetch index \(index.name)" as String?)
            open("fetchIndex", [("name", index.name)], depth: 2, at: at, empty: index.elements.isEmpty)
            for element in index.elements {
                open("fetchIndexElement", [
                    ("property", element.propertyName), ("expression", element.expression),
                    ("type", element.kind), ("order", element.isAscending ? "ascending" : "descending"),
                ], depth: 3, at: at, empty: true)
            }
            if !index.elements.isEmpty { close("fetchIndex", depth: 2) }
        }
        write(entity.uniquenessConstraints, as: ("uniquenessConstraints", "uniquenessConstraint", "constraint"), at: place)
        write(entity.compoundIndexes, as: ("compoundIndexes", "compoundIndex", "index"), at: place)
        write(entity.userInfo, depth: 2, at: place)
        close("entity", depth: 1)
    }

    /// Lists of property names (uniqueness constraints, compound indexes) as Xcode nests them:
    /// `<uniquenessConstraints><uniquenessConstraint><constraint value="…"/>…`; nothing for none.
    private mutating func write(_ lists: [[String]], as elements: (list: String, item: String, name: String), at place: (String?, String?)) {
        guard !lists.isEmpty else { return }
        open(elements.list, [], depth: 2, at: place)
        for names in lists {
            open(elements.item, [], depth: 3, at: place, empty: names.isEmpty)
            for name in names { open(elements.name, [("value", name)], depth: 4, at: place, empty: true) }
            if !names.isEmpty { close(elements.item, depth: 3) }
        }
        close(elements.list, depth: 2)
    }

    /// Xcode 15's `<composite>`: its elements as attributes, in the composite's order.
    private mutating func write(_ composite: CompositeDescription) {
        open("composite", [("name", composite.name)], depth: 1, at: (nil, "composite \(composite.name)"), empty: composite.elements.isEmpty)
        guard !composite.elements.isEmpty else { return }
        for element in composite.elements { write(element, entity: nil, depth: 2, owner: "composite \(composite.name)") }
        close("composite", depth: 1)
    }

    private mutating func write(_ attribute: AttributeDescription, entity: String?, depth: Int, owner: String? = nil) {
        let at = (entity, owner.map { "\($0).\(attribute.name)" } ?? attribute.name)
        let isDate = attribute.type == .date
        var attributes: [(String, String?)] = [
            ("name", attribute.name), ("optional", flag(attribute.isOptional)), ("transient", flag(attribute.isTransient)),
            ("attributeType", attribute.type.rawValue),
        ]
        if attribute.boundType != nil {
            attributes.append((isDate ? "minDateTimeInterval" : "minValueString", value(attribute.minValue, "minimum", at: at)))
            attributes.append((isDate ? "maxDateTimeInterval" : "maxValueString", value(attribute.maxValue, "maximum", at: at)))
        } else if attribute.minValue != nil || attribute.maxValue != nil {
            problem(at, "a \(attribute.type.rawValue) attribute has a minimum or maximum, which Xcode's model has no place for")
        }
        attributes += [
            (isDate ? "defaultDateTimeInterval" : "defaultValueString", value(attribute.defaultValue, "default value", at: at)),
            ("regularExpressionString", attribute.regularExpression),
            ("allowsExternalBinaryDataStorage", flag(attribute.allowsExternalBinaryDataStorage)),
            ("valueTransformerName", attribute.valueTransformerName), ("customClassName", attribute.customClassName),
            ("composite", attribute.compositeName),
            ("derived", flag(attribute.derivationExpression != nil)), ("derivationExpression", attribute.derivationExpression),
            ("indexed", flag(attribute.isIndexed)), ("preserveAfterDeletion", flag(attribute.preservesValueInHistoryOnDeletion)),
            ("elementID", attribute.renamingIdentifier), ("versionHashModifier", attribute.versionHashModifier),
        ]
        open("attribute", attributes, depth: depth, at: at, empty: attribute.userInfo.isEmpty)
        if !attribute.userInfo.isEmpty {
            write(attribute.userInfo, depth: depth + 1, at: at)
            close("attribute", depth: depth)
        }
    }

    /// A default, minimum or maximum in the spelling `AttributeValue(parsing:as:)` reads back.
    private mutating func value(_ value: AttributeValue?, _ label: String, at: (String?, String?)) -> String? {
        guard let value else { return nil }
        switch value {
        case .double(let number) where !number.isFinite:
            problem(at, "the \(label) \(number) is not a number Xcode's model (or Lade) reads")
            return nil
        case .float(let number) where !number.isFinite:
            problem(at, "the \(label) \(number) is not a number Xcode's model (or Lade) reads")
            return nil
        case .composite:
            problem(at, "the \(label) is a composite value, which Xcode's model has no spelling for")
            return nil
        default:
            return value.canonicalText
        }
    }

    private mutating func write(_ relationship: RelationshipDescription, entity: String) {
        let at = (entity as String?, relationship.name as String?)
        // Xcode writes maxCount="1" on every to-one relationship, and a to-many one's only when bounded.
        let maximum = relationship.isToMany && relationship.maxCount == 0 ? nil : String(relationship.maxCount)
        open("relationship", [
            ("name", relationship.name), ("optional", flag(relationship.isOptional)),
            ("transient", flag(relationship.isTransient)),
            ("minCount", relationship.minCount != 0 ? String(relationship.minCount) : nil), ("maxCount", maximum),
            ("toMany", flag(relationship.isToMany)), ("deletionRule", relationship.deleteRule.rawValue),
            ("ordered", flag(relationship.isOrdered)), ("destinationEntity", relationship.destinationEntityName),
            ("inverseName", relationship.inverseName),
            ("inverseEntity", relationship.inverseName == nil ? nil : relationship.destinationEntityName),
            ("indexed", flag(relationship.isIndexed)), ("elementID", relationship.renamingIdentifier),
            ("versionHashModifier", relationship.versionHashModifier),
        ], depth: 2, at: at, empty: relationship.userInfo.isEmpty)
        if !relationship.userInfo.isEmpty {
            write(relationship.userInfo, depth: 3, at: at)
            close("relationship", depth: 2)
        }
    }

    // MARK: Fetch requests and userInfo

    private mutating func write(_ template: FetchRequestTemplate, depth: Int, at: (String?, String?)) {
        let place = at.1 == nil ? (at.0, "fetch request \(template.name)") : at
        func optionalFlag(_ value: Bool?) -> String? { value.map { $0 ? "YES" : "NO" } }
        open("fetchRequest", [
            ("name", template.name), ("entity", template.entityName), ("predicateString", template.predicateString),
            ("fetchLimit", template.fetchLimit.map(String.init)), ("fetchBatchSize", template.fetchBatchSize.map(String.init)),
            ("resultType", template.resultType), ("includeSubentities", optionalFlag(template.includesSubentities)),
            ("includesPendingChanges", optionalFlag(template.includesPendingChanges)),
            ("returnObjectsAsFaults", optionalFlag(template.returnsObjectsAsFaults)),
            ("returnDistinctResults", optionalFlag(template.returnsDistinctResults)),
        ], depth: depth, at: place, empty: true)
    }

    private mutating func write(_ userInfo: [String: String], depth: Int, at: (String?, String?)) {
        guard !userInfo.isEmpty else { return }
        open("userInfo", [], depth: depth, at: at)
        for (key, value) in Self.byName(Array(userInfo), \.key) {
            open("entry", [("key", key), ("value", value)], depth: depth + 1, at: at, empty: true)
        }
        close("userInfo", depth: depth)
    }

    // MARK: XML

    /// `YES` for true; nothing for false, which is what an absent flag reads as.
    private func flag(_ value: Bool) -> String? { value ? "YES" : nil }

    private mutating func problem(_ at: (String?, String?), _ message: String) {
        problems.append(ModelProblem(entity: at.0, property: at.1, message: message))
    }

    /// A start tag (`empty`: an empty-element tag) with its attributes in the order given;
    /// attributes whose value is nil are left out.
    private mutating func open(_ name: String, _ attributes: [(String, String?)], depth: Int, at: (String?, String?), empty: Bool = false) {
        text += String(repeating: "    ", count: depth) + "<" + name
        for (key, value) in attributes {
            guard let value else { continue }
            guard let escaped = Self.escaped(value) else {
                problem(at, "the \(key) of <\(name)> holds a character XML 1.0 cannot hold (a control character such as U+0000–U+001F other than tab and line breaks, or U+FFFE/U+FFFF), so Xcode's model cannot carry it")
                continue
            }
            text += " " + key + "=\"" + escaped + "\""
        }
        text += empty ? "/>\n" : ">\n"
    }

    private mutating func close(_ name: String, depth: Int) {
        text += String(repeating: "    ", count: depth) + "</" + name + ">\n"
    }

    /// `value` escaped for a double-quoted attribute: markup characters as entities, and tab,
    /// line feed and carriage return as character references (a parser turns them, written
    /// literally, into spaces); nil when `value` holds a character XML 1.0 has no place for.
    static func escaped(_ value: String) -> String? {
        var result = ""
        result.unicodeScalars.reserveCapacity(value.unicodeScalars.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "\t": result += "&#9;"
            case "\n": result += "&#10;"
            case "\r": result += "&#13;"
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF:
                return nil
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    // MARK: Reading back

    /// Reads `data` back as `XcodeModelReader` does and throws naming each part that does not
    /// come back equal to `model`: nothing is written that cannot be read back.
    static func checkReadsBack(_ data: Data, as model: ManagedObjectModel) throws {
        let back: ManagedObjectModel
        do {
            back = try XcodeModelReader.read(data, file: "<written contents>", versionName: model.versionName)
        } catch let error as ModelError {
            throw ModelError([ModelProblem(message: "the model written as Xcode's contents does not read back:")] + error.problems)
        }
        let expected = try model.inXcodeOrder()
        guard back != expected else { return }
        var problems: [ModelProblem] = []
        func differ(_ what: String, entity: String? = nil, property: String? = nil) {
            problems.append(ModelProblem(entity: entity, property: property, message: "\(what) does not read back the same from Xcode's contents"))
        }
        if back.versionIdentifiers != expected.versionIdentifiers { differ("the version identifier") }
        if back.fetchRequestTemplates != expected.fetchRequestTemplates { differ("a fetch request template") }
        if back.configurations != expected.configurations { differ("a configuration") }
        if back.composites != expected.composites { differ("a composite") }
        for entity in expected.entities {
            guard let other = back.entity(named: entity.name) else {
                differ("the entity", entity: entity.name)
                continue
            }
            guard other != entity else { continue }
            let fields = zip(Mirror(reflecting: entity).children, Mirror(reflecting: other).children)
                .filter { ($0.0.value as? AnyHashable) != ($0.1.value as? AnyHashable) }.compactMap(\.0.label)
            differ("its \(fields.joined(separator: ", "))", entity: entity.name)
        }
        if problems.isEmpty { differ("the model") }
        throw ModelError(problems)
    }
}
