import Foundation

// Lade's JSON model format (docs/model-format.md). Keys left out take Core Data's defaults,
// and the writer leaves out what is at its default, so a hand-written model stays short.

extension ManagedObjectModel {
    /// The format name written at the top of every JSON model.
    public static let jsonFormatName = "lade-model"
    public static let jsonFormatVersion = 1

    /// Reads a JSON model. Problems name the file and the JSON path (`entities[2].attributes[0].type`).
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(jsonData: Data(contentsOf: url), file: url.path)
    /// ```
    public init(jsonData: Data, file: String = "<json>") throws {
        let document: ModelDocument
        do {
            document = try JSONDecoder().decode(ModelDocument.self, from: jsonData)
        } catch let error as DecodingError {
            throw ModelError(file: file, Self.describe(error))
        } catch {
            throw ModelError(file: file, "not valid JSON: \(error.localizedDescription)")
        }
        try self.init(
            entities: document.entities, fetchRequestTemplates: document.fetchRequests ?? [],
            configurations: document.configurations ?? [], versionName: document.versionName,
            versionIdentifiers: document.versionIdentifiers ?? [], sourceMap: ModelSourceMap(file: file),
            composites: document.composites ?? [])
    }

    /// The model in Lade's JSON format, pretty-printed with sorted keys. Each entity carries its
    /// version hash and where the hash came from (`apple` or `lade`).
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(ModelDocument(model: self))
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [CodingKey]) -> String {
            var text = ""
            for key in codingPath {
                if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
            }
            return text.isEmpty ? "top level" : text
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])): required key '\(key.stringValue)' is missing"
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)): expected \(type == String.self ? "a string" : type == Bool.self ? "true or false" : "a value of type \(type)"); \(context.debugDescription)"
        case .valueNotFound(_, let context):
            return "\(path(context.codingPath)): value is missing (null)"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                let underlying = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
                return "not valid JSON: \(underlying ?? context.debugDescription)"
            }
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

/// Refuses keys the format does not have, so a typo ("optinal") is an error, not a silent default.
private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

private func rejectUnknownKeys<Key: CodingKey & CaseIterable>(_ decoder: Decoder, _: Key.Type) throws {
    let known = Set(Key.allCases.map(\.stringValue))
    let container = try decoder.container(keyedBy: AnyKey.self)
    for key in container.allKeys where !known.contains(key.stringValue) {
        throw DecodingError.dataCorruptedError(
            forKey: key, in: container,
            debugDescription: "unknown key '\(key.stringValue)'; expected one of \(known.sorted().joined(separator: ", "))")
    }
}

private struct ModelDocument: Codable {
    var format: String?
    var formatVersion: Int?
    var versionName: String?
    var versionIdentifiers: [String]?
    var entities: [EntityDescription]
    var fetchRequests: [FetchRequestTemplate]?
    var configurations: [ModelConfiguration]?
    var composites: [CompositeDescription]?

    init(model: ManagedObjectModel) {
        format = ManagedObjectModel.jsonFormatName
        formatVersion = ManagedObjectModel.jsonFormatVersion
        versionName = model.versionName
        versionIdentifiers = model.versionIdentifiers.isEmpty ? nil : model.versionIdentifiers
        entities = model.entities
        fetchRequests = model.fetchRequestTemplates.isEmpty ? nil : model.fetchRequestTemplates
        configurations = model.configurations.isEmpty ? nil : model.configurations
        composites = model.composites.isEmpty ? nil : model.composites
        hashes = model.versionHashes
    }

    /// Only for writing: every entity's hash, Apple's or Lade's.
    private var hashes: [String: Data] = [:]

    enum CodingKeys: String, CodingKey, CaseIterable {
        case format, formatVersion, versionName, versionIdentifiers, entities, fetchRequests, configurations, composites
    }

    init(from decoder: Decoder) throws {
        try rejectUnknownKeys(decoder, CodingKeys.self)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        format = try container.decodeIfPresent(String.self, forKey: .format)
        if let format, format != ManagedObjectModel.jsonFormatName {
            throw DecodingError.dataCorruptedError(forKey: .format, in: container, debugDescription: "format is '\(format)', expected '\(ManagedObjectModel.jsonFormatName)'")
        }
        formatVersion = try container.decodeIfPresent(Int.self, forKey: .formatVersion)
        if let formatVersion, formatVersion > ManagedObjectModel.jsonFormatVersion {
            throw DecodingError.dataCorruptedError(forKey: .formatVersion, in: container, debugDescription: "format version \(formatVersion) is newer than this Lade reads (\(ManagedObjectModel.jsonFormatVersion)); upgrade Lade")
        }
        versionName = try container.decodeIfPresent(String.self, forKey: .versionName)
        versionIdentifiers = try container.decodeIfPresent([String].self, forKey: .versionIdentifiers)
        entities = try container.decode([EntityDescription].self, forKey: .entities)
        fetchRequests = try container.decodeIfPresent([FetchRequestTemplate].self, forKey: .fetchRequests)
        configurations = try container.decodeIfPresent([ModelConfiguration].self, forKey: .configurations)
        composites = try container.decodeIfPresent([CompositeDescription].self, forKey: .composites)
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(format, forKey: .format)
        try container.encodeIfPresent(formatVersion, forKey: .formatVersion)
        try container.encodeIfPresent(versionName, forKey: .versionName)
        try container.encodeIfPresent(versionIdentifiers, forKey: .versionIdentifiers)
        try container.encode(entities.map { EntityRecord(entity: $0, hash: hashes[$0.name]) }, forKey: .entities)
        try container.encodeIfPresent(fetchRequests, forKey: .fetchRequests)
        try container.encodeIfPresent(configurations, forKey: .configurations)
        try container.encodeIfPresent(composites, forKey: .composites)
    }
}

/// An entity as written: its description plus its version hash.
private struct EntityRecord: Encodable {
    var entity: EntityDescription
    var hash: Data?

    enum Keys: String, CodingKey { case versionHash }

    func encode(to encoder: Encoder) throws {
        try entity.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        if let hash {
            try container.encode(VersionHashRecord(base64: hash.base64EncodedString(), source: entity.appleVersionHash == nil ? "lade" : "apple"), forKey: .versionHash)
        }
    }
}

private struct VersionHashRecord: Codable {
    var base64: String
    /// `apple` (from a compiled model; kept on reading) or `lade` (computed; recomputed on reading).
    var source: String
}

extension EntityDescription: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, parent, abstract, className, renamingIdentifier, versionHashModifier, attributes, relationships
        case fetchedProperties, uniquenessConstraints, fetchIndexes, compoundIndexes, userInfo, versionHash
    }

    public init(from decoder: Decoder) throws {
        try rejectUnknownKeys(decoder, CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try c.decode(String.self, forKey: .name))
        parentName = try c.decodeIfPresent(String.self, forKey: .parent)
        isAbstract = try c.decodeIfPresent(Bool.self, forKey: .abstract) ?? false
        representedClassName = try c.decodeIfPresent(String.self, forKey: .className)
        renamingIdentifier = try c.decodeIfPresent(String.self, forKey: .renamingIdentifier)
        versionHashModifier = try c.decodeIfPresent(String.self, forKey: .versionHashModifier)
        attributes = try c.decodeIfPresent([AttributeDescription].self, forKey: .attributes) ?? []
        relationships = try c.decodeIfPresent([RelationshipDescription].self, forKey: .relationships) ?? []
        fetchedProperties = try c.decodeIfPresent([FetchedPropertyDescription].self, forKey: .fetchedProperties) ?? []
        uniquenessConstraints = try c.decodeIfPresent([[String]].self, forKey: .uniquenessConstraints) ?? []
        fetchIndexes = try c.decodeIfPresent([FetchIndexDescription].self, forKey: .fetchIndexes) ?? []
        compoundIndexes = try c.decodeIfPresent([[String]].self, forKey: .compoundIndexes) ?? []
        userInfo = try c.decodeIfPresent([String: String].self, forKey: .userInfo) ?? [:]
        if let hash = try c.decodeIfPresent(VersionHashRecord.self, forKey: .versionHash) {
            guard hash.source == "apple" || hash.source == "lade" else {
                throw DecodingError.dataCorruptedError(forKey: .versionHash, in: c, debugDescription: "versionHash source is 'apple' or 'lade', not '\(hash.source)'")
            }
        }
        if let hash = try c.decodeIfPresent(VersionHashRecord.self, forKey: .versionHash), hash.source == "apple" {
            guard let bytes = Data(base64Encoded: hash.base64), bytes.count == 32 else {
                throw DecodingError.dataCorruptedError(forKey: .versionHash, in: c, debugDescription: "an Apple version hash is 32 bytes of base64")
            }
            appleVersionHash = bytes
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encodeIfPresent(parentName, forKey: .parent)
        if isAbstract { try c.encode(true, forKey: .abstract) }
        try c.encodeIfPresent(representedClassName, forKey: .className)
        try c.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
        try c.encodeIfPresent(versionHashModifier, forKey: .versionHashModifier)
        try c.encode(attributes, forKey: .attributes)
        try c.encode(relationships, forKey: .relationships)
        if !fetchedProperties.isEmpty { try c.encode(fetchedProperties, forKey: .fetchedProperties) }
        if !uniquenessConstraints.isEmpty { try c.encode(uniquenessConstraints, forKey: .uniquenessConstraints) }
        if !fetchIndexes.isEmpty { try c.encode(fetchIndexes, forKey: .fetchIndexes) }
        if !compoundIndexes.isEmpty { try c.encode(compoundIndexes, forKey: .compoundIndexes) }
        if !userInfo.isEmpty { try c.encode(userInfo, forKey: .userInfo) }
    }
}

extension AttributeDescription: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, type, optional, transient, defaultValue = "default", min, max, regularExpression
        case valueTransformerName, customClassName, externalStorage, indexed, preserveAfterDeletion
        case renamingIdentifier, versionHashModifier, derivation, userInfo, composite
    }

    public init(from decoder: Decoder) throws {
        try rejectUnknownKeys(decoder, CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let typeName = try c.decode(String.self, forKey: .type)
        guard let type = AttributeType(rawValue: typeName) else {
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "unknown attribute type '\(typeName)'; expected one of \(AttributeType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self.init(name: try c.decode(String.self, forKey: .name), type: type)
        isOptional = try c.decodeIfPresent(Bool.self, forKey: .optional) ?? true
        isTransient = try c.decodeIfPresent(Bool.self, forKey: .transient) ?? false
        defaultValue = try Self.decodeValue(c, .defaultValue, as: type)
        if let boundType {
            minValue = try Self.decodeValue(c, .min, as: boundType)
            maxValue = try Self.decodeValue(c, .max, as: boundType)
        } else if c.contains(.min) || c.contains(.max) {
            throw DecodingError.dataCorruptedError(forKey: c.contains(.min) ? .min : .max, in: c, debugDescription: "\(type.rawValue) attributes take no minimum or maximum")
        }
        regularExpression = try c.decodeIfPresent(String.self, forKey: .regularExpression)
        valueTransformerName = try c.decodeIfPresent(String.self, forKey: .valueTransformerName)
        customClassName = try c.decodeIfPresent(String.self, forKey: .customClassName)
        allowsExternalBinaryDataStorage = try c.decodeIfPresent(Bool.self, forKey: .externalStorage) ?? false
        isIndexed = try c.decodeIfPresent(Bool.self, forKey: .indexed) ?? false
        preservesValueInHistoryOnDeletion = try c.decodeIfPresent(Bool.self, forKey: .preserveAfterDeletion) ?? false
        renamingIdentifier = try c.decodeIfPresent(String.self, forKey: .renamingIdentifier)
        versionHashModifier = try c.decodeIfPresent(String.self, forKey: .versionHashModifier)
        derivationExpression = try c.decodeIfPresent(String.self, forKey: .derivation)
        userInfo = try c.decodeIfPresent([String: String].self, forKey: .userInfo) ?? [:]
        compositeName = try c.decodeIfPresent(String.self, forKey: .composite)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(type.rawValue, forKey: .type)
        try c.encode(isOptional, forKey: .optional)
        if isTransient { try c.encode(true, forKey: .transient) }
        try Self.encodeValue(&c, defaultValue, .defaultValue)
        try Self.encodeValue(&c, minValue, .min)
        try Self.encodeValue(&c, maxValue, .max)
        try c.encodeIfPresent(regularExpression, forKey: .regularExpression)
        try c.encodeIfPresent(valueTransformerName, forKey: .valueTransformerName)
        try c.encodeIfPresent(customClassName, forKey: .customClassName)
        if allowsExternalBinaryDataStorage { try c.encode(true, forKey: .externalStorage) }
        if isIndexed { try c.encode(true, forKey: .indexed) }
        if preservesValueInHistoryOnDeletion { try c.encode(true, forKey: .preserveAfterDeletion) }
        try c.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
        try c.encodeIfPresent(versionHashModifier, forKey: .versionHashModifier)
        try c.encodeIfPresent(derivationExpression, forKey: .derivation)
        if !userInfo.isEmpty { try c.encode(userInfo, forKey: .userInfo) }
        try c.encodeIfPresent(compositeName, forKey: .composite)
    }

    /// Values in JSON: numbers and booleans as JSON numbers and booleans; decimals as strings
    /// (no binary rounding); dates as seconds since 2001-01-01 (or an ISO 8601 string);
    /// UUIDs, URIs and base64 binary as strings. A string is always read with the same parser
    /// as Xcode's `defaultValueString`.
    private static func decodeValue(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys, as type: AttributeType) throws -> AttributeValue? {
        guard c.contains(key), try !c.decodeNil(forKey: key) else { return nil }
        let text: String
        if let string = try? c.decode(String.self, forKey: key) {
            text = string
        } else if type == .string || type == .uuid || type == .uri || type == .binary || type == .transformable {
            throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "a \(type.rawValue) value is written as a JSON string")
        } else if let flag = try? c.decode(Bool.self, forKey: key), type == .boolean {
            return .bool(flag)
        } else if type.isInteger || type == .decimal, let number = try? c.decode(Int64.self, forKey: key) {
            text = String(number)
        } else if let number = try? c.decode(Double.self, forKey: key), type != .boolean {
            if type == .float { return .float(Float(number)) }
            text = String(number)
        } else {
            throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "expected a \(type.rawValue) value")
        }
        // A JSON number reaches us through a Double; past 15 significant digits it may not be
        // the number that was written, and a decimal must keep every digit.
        if type == .decimal, (try? c.decode(String.self, forKey: key)) == nil,
           text.prefix(while: { $0 != "e" }).filter(\.isNumber).drop(while: { $0 == "0" }).count > 15 {
            throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "write this Decimal as a string (\"\(text)\") to keep every digit")
        }
        do {
            return try AttributeValue(parsing: text, as: type)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "\(error)")
        }
    }

    private static func encodeValue(_ c: inout KeyedEncodingContainer<CodingKeys>, _ value: AttributeValue?, _ key: CodingKeys) throws {
        switch value {
        case nil: break
        case .integer(let v): try c.encode(v, forKey: key)
        case .double(let v) where v.isFinite: try c.encode(v, forKey: key)
        case .float(let v) where v.isFinite: try c.encode(v, forKey: key)
        case .bool(let v): try c.encode(v, forKey: key)
        case .date(let v): try c.encode(v.timeIntervalSinceReferenceDate, forKey: key)
        case .some(let other): try c.encode(other.canonicalText, forKey: key)
        }
    }
}

extension RelationshipDescription: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, destination, inverse, toMany, ordered, optional, transient, minCount, maxCount, deleteRule
        case indexed, renamingIdentifier, versionHashModifier, userInfo
    }

    public init(from decoder: Decoder) throws {
        try rejectUnknownKeys(decoder, CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let isToMany = try c.decodeIfPresent(Bool.self, forKey: .toMany) ?? false
        var rule = DeleteRule.nullify
        if let ruleName = try c.decodeIfPresent(String.self, forKey: .deleteRule) {
            guard let known = DeleteRule(rawValue: ruleName) else {
                throw DecodingError.dataCorruptedError(forKey: .deleteRule, in: c, debugDescription: "unknown delete rule '\(ruleName)'; expected Nullify, Cascade, Deny or No Action")
            }
            rule = known
        }
        self.init(
            name: try c.decode(String.self, forKey: .name),
            destinationEntityName: try c.decode(String.self, forKey: .destination),
            inverseName: try c.decodeIfPresent(String.self, forKey: .inverse), isToMany: isToMany,
            isOrdered: try c.decodeIfPresent(Bool.self, forKey: .ordered) ?? false,
            isOptional: try c.decodeIfPresent(Bool.self, forKey: .optional) ?? true,
            isTransient: try c.decodeIfPresent(Bool.self, forKey: .transient) ?? false,
            minCount: try c.decodeIfPresent(Int.self, forKey: .minCount) ?? 0,
            maxCount: try c.decodeIfPresent(Int.self, forKey: .maxCount), deleteRule: rule,
            isIndexed: try c.decodeIfPresent(Bool.self, forKey: .indexed) ?? false,
            renamingIdentifier: try c.decodeIfPresent(String.self, forKey: .renamingIdentifier),
            versionHashModifier: try c.decodeIfPresent(String.self, forKey: .versionHashModifier),
            userInfo: try c.decodeIfPresent([String: String].self, forKey: .userInfo) ?? [:])
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(destinationEntityName, forKey: .destination)
        try c.encodeIfPresent(inverseName, forKey: .inverse)
        try c.encode(isToMany, forKey: .toMany)
        if isOrdered { try c.encode(true, forKey: .ordered) }
        try c.encode(isOptional, forKey: .optional)
        if isTransient { try c.encode(true, forKey: .transient) }
        if minCount != 0 { try c.encode(minCount, forKey: .minCount) }
        if maxCount != (isToMany ? 0 : 1) { try c.encode(maxCount, forKey: .maxCount) }
        try c.encode(deleteRule.rawValue, forKey: .deleteRule)
        if isIndexed { try c.encode(true, forKey: .indexed) }
        try c.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
        try c.encodeIfPresent(versionHashModifier, forKey: .versionHashModifier)
        if !userInfo.isEmpty { try c.encode(userInfo, forKey: .userInfo) }
    }
}

extension FetchRequestTemplate: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, entity, predicate, fetchLimit, fetchBatchSize, resultType, includesSubentities
        case includesPendingChanges, returnsObjectsAsFaults, returnsDistinctResults
    }

    public init(from decoder: Decoder) throws {
        try rejectUnknownKeys(decoder, CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try c.decodeIfPresent(String.self, forKey: .name) ?? "",
            entityName: try c.decode(String.self, forKey: .entity),
            predicateString: try c.decodeIfPresent(String.self, forKey: .predicate),
            fetchLimit: try c.decodeIfPresent(Int.self, forKey: .fetchLimit),
            fetchBatchSize: try c.decodeIfPresent(Int.self, forKey: .fetchBatchSize),
            resultType: try c.decodeIfPresent(String.self, forKey: .resultType),
            includesSubentities: try c.decodeIfPresent(Bool.self, forKey: .includesSubentities),
            includesPendingChanges: try c.decodeIfPresent(Bool.self, forKey: .includesPendingChanges),
            returnsObjectsAsFaults: try c.decodeIfPresent(Bool.self, forKey: .returnsObjectsAsFaults),
            returnsDistinctResults: try c.decodeIfPresent(Bool.self, forKey: .returnsDistinctResults))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(entityName, forKey: .entity)
        try c.encodeIfPresent(predicateString, forKey: .predicate)
        try c.encodeIfPresent(fetchLimit, forKey: .fetchLimit)
        try c.encodeIfPresent(fetchBatchSize, forKey: .fetchBatchSize)
        try c.encodeIfPresent(resultType, forKey: .resultType)
        try c.encodeIfPresent(includesSubentities, forKey: .includesSubentities)
        try c.encodeIfPresent(includesPendingChanges, forKey: .includesPendingChanges)
        try c.encodeIfPresent(returnsObjectsAsFaults, forKey: .returnsObjectsAsFaults)
        try c.encodeIfPresent(returnsDistinctResults, forKey: .returnsDistinctResults)
    }
}

extension FetchedPropertyDescription: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable { case name, optional, fetchRequest, userInfo }

    public init(from decoder: Decoder) throws {
        try rejectUnknownKeys(decoder, CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try c.decode(String.self, forKey: .name),
            isOptional: try c.decodeIfPresent(Bool.self, forKey: .optional) ?? true,
            fetchRequest: try c.decode(FetchRequestTemplate.self, forKey: .fetchRequest),
            userInfo: try c.decodeIfPresent([String: String].self, forKey: .userInfo) ?? [:])
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(isOptional, forKey: .optional)
        try c.encode(fetchRequest, forKey: .fetchRequest)
        if !userInfo.isEmpty { try c.encode(userInfo, forKey: .userInfo) }
    }
}

extension FetchIndexDescription: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable { case name, elements }

    public init(from decoder: Decoder) throws {
        try rejectUnknownKeys(decoder, CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try c.decode(String.self, forKey: .name), elements: try c.decode([FetchIndexElement].self, forKey: .elements))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(elements, forKey: .elements)
    }
}

extension FetchIndexElement: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable { case property, expression, type, order }

    public init(from decoder: Decoder) throws {
        try rejectUnknownKeys(decoder, CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let order = try c.decodeIfPresent(String.self, forKey: .order) ?? "ascending"
        guard order == "ascending" || order == "descending" else {
            throw DecodingError.dataCorruptedError(forKey: .order, in: c, debugDescription: "order is 'ascending' or 'descending', not '\(order)'")
        }
        self.init(
            propertyName: try c.decodeIfPresent(String.self, forKey: .property),
            expression: try c.decodeIfPresent(String.self, forKey: .expression),
            kind: try c.decodeIfPresent(String.self, forKey: .type) ?? "Binary", isAscending: order == "ascending")
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(propertyName, forKey: .property)
        try c.encodeIfPresent(expression, forKey: .expression)
        try c.encode(kind, forKey: .type)
        try c.encode(isAscending ? "ascending" : "descending", forKey: .order)
    }
}

extension ModelConfiguration: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable { case name, entities, usedWithCloudKit }

    public init(from decoder: Decoder) throws {
        try rejectUnknownKeys(decoder, CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try c.decode(String.self, forKey: .name),
            entityNames: try c.decodeIfPresent([String].self, forKey: .entities) ?? [],
            isUsedWithCloudKit: try c.decodeIfPresent(Bool.self, forKey: .usedWithCloudKit) ?? false)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(entityNames, forKey: .entities)
        if isUsedWithCloudKit { try c.encode(true, forKey: .usedWithCloudKit) }
    }
}

extension CompositeDescription: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable { case name, elements }

    public init(from decoder: Decoder) throws {
        try rejectUnknownKeys(decoder, CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try c.decode(String.self, forKey: .name),
                  elements: try c.decodeIfPresent([AttributeDescription].self, forKey: .elements) ?? [])
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        if !elements.isEmpty { try c.encode(elements, forKey: .elements) }
    }
}
