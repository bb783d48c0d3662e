import Foundation

/// Reads Core Data's compiled model: the `NSKeyedArchiver` archive of an
/// `NSManagedObjectModel` that Xcode writes as a `.mom` (inside a `.momd`) and that Core Data
/// keeps, deflated, in a SQLite store's `Z_MODELCACHE`.
///
/// The archive is a graph with cycles (an entity names its model, a relationship its inverse
/// and its destination entity): the reader follows only what holds data (the model's entities,
/// each entity's properties, predicates and expressions) and reads every other reference by
/// name, so a hostile archive can neither loop it nor expand past ``KeyedArchive``'s bounds.
///
/// What the compiled form keeps differently from the `.xcdatamodel` it was compiled from is
/// read back into the source's form (see `docs/model-format.md`, "Compiled models"):
/// - dictionaries have no order: entities, properties and configuration members come sorted
///   by name (Xcode writes them so in `contents`);
/// - a renaming identifier equal to the name is the compiler's default, not the user's: nil;
/// - a subentity's properties include its inherited ones in a store's cache: those are left
///   to the superentity;
/// - min/max bounds and regular expressions are validation predicates (`length >= 3`,
///   `SELF <= 10`, `SELF MATCHES "…"`): read back as bounds; other predicates are warnings;
/// - a fetched property's request has no name: it is `fetchedPropertyFetchRequest`, as Xcode
///   names it;
/// - each fetch index is repeated as a legacy compound index of the same properties: that copy
///   is dropped.
struct CompiledModelReader {
    let archive: KeyedArchive
    let origin: String
    private(set) var warnings: [ModelProblem] = []

    /// How large a `Z_MODELCACHE` may inflate to: Apple's caches are tens of kilobytes; a
    /// model of thousands of entities is a few megabytes.
    static let maximumInflatedSize = 64 << 20

    /// The name Xcode gives a fetched property's request.
    static let fetchedPropertyRequestName = "fetchedPropertyFetchRequest"

    static func read(_ data: Data, origin: String, versionName: String?) throws -> ManagedObjectModel {
        // The archive's objects are let go before the model is made: both at once were the
        // peak of memory (issue 43 §4 "Slow").
        let parts = try {
            let archive = try KeyedArchive(data: data, origin: origin, error: { ModelError(file: origin, "cannot be read as a compiled Core Data model: \($0)") })
            var reader = CompiledModelReader(archive: archive, origin: origin)
            return try reader.parts()
        }()
        var model = try ManagedObjectModel(
            entities: parts.entities, fetchRequestTemplates: parts.templates, configurations: parts.configurations,
            versionName: versionName, versionIdentifiers: parts.identifiers, sourceMap: ModelSourceMap(file: origin))
        model.warnings = parts.warnings
        return model
    }

    /// Inflates a `Z_MODELCACHE.Z_CONTENT` blob (raw deflate, no zlib header), refusing one
    /// that would inflate past ``maximumInflatedSize``.
    static func inflate(_ blob: Data, origin: String) throws -> Data {
        do {
            return try RawDeflate.decompress(blob, limit: maximumInflatedSize)
        } catch {
            switch error {
            case .cannotStart: throw ModelError(file: origin, "cannot start zlib decompression (out of memory?)")
            case .tooLarge:
                throw ModelError(file: origin, "the model cache inflates to more than \(maximumInflatedSize >> 20) MiB, far past any Core Data model: refused as damaged or hostile")
            case .truncated: throw ModelError(file: origin, "the model cache ends before its deflate stream does: it is truncated")
            case .trailingBytes: throw ModelError(file: origin, "bytes follow the end of the model cache's deflate stream: it is damaged")
            case .notDeflate(let code): throw ModelError(file: origin, "the model cache is not a raw deflate stream (zlib code \(code)): it is damaged")
            }
        }
    }

    private func fail(_ message: String, entity: String? = nil, property: String? = nil) -> ModelError {
        ModelError(file: origin, entity: entity, property: property, message)
    }

    private mutating func warn(_ message: String, entity: String?, property: String? = nil) {
        warnings.append(ModelProblem(file: origin, entity: entity, property: property, message: message))
    }

    // MARK: Model

    /// What the archive says, in the model's terms, before it is checked as a model.
    private mutating func parts() throws -> (entities: [EntityDescription], templates: [FetchRequestTemplate], configurations: [ModelConfiguration],
                                             identifiers: [String], warnings: [ModelProblem]) {
        guard let root = try archive.object(archive.root), root.className == "NSManagedObjectModel" else {
            throw fail("the archive's root is not an NSManagedObjectModel: this is not a compiled Core Data model")
        }
        var entities: [EntityDescription] = []
        for (key, value) in try archive.dictionary(root.fields["NSEntities"]) ?? [] {
            entities.append(try entity(value, key: key))
        }
        entities = withoutInheritedProperties(entities).sorted { $0.name < $1.name }
        var templates: [FetchRequestTemplate] = []
        for (name, value) in try archive.dictionary(root.fields["NSFetchRequestTemplates"]) ?? [] {
            templates.append(try fetchRequest(value, name: name, owner: nil))
        }
        var configurations: [ModelConfiguration] = []
        for (name, value) in try archive.dictionary(root.fields["NSConfigurations"]) ?? [] {
            let members = try archive.members(value).map { try entityName($0) ?? "" }
            configurations.append(ModelConfiguration(name: name, entityNames: members.sorted()))
        }
        let identifiers = try archive.members(root.fields["NSVersionIdentifiers"]).compactMap { try archive.string($0) }.sorted()
        return (entities, templates.sorted { $0.name < $1.name }, configurations.sorted { $0.name < $1.name }, identifiers, warnings)
    }

    /// A store's cache repeats inherited properties in each subentity; the model keeps each
    /// property on the entity that declares it.
    private func withoutInheritedProperties(_ entities: [EntityDescription]) -> [EntityDescription] {
        let byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        return entities.map { entity in
            var inherited: Set<String> = []
            var seen: Set<String> = [entity.name]
            var current = entity.parentName
            while let name = current, seen.insert(name).inserted, let parent = byName[name] {
                inherited.formUnion(parent.propertyNames)
                current = parent.parentName
            }
            guard !inherited.isEmpty else { return entity }
            var copy = entity
            copy.attributes.removeAll { inherited.contains($0.name) }
            copy.relationships.removeAll { inherited.contains($0.name) }
            copy.fetchedProperties.removeAll { inherited.contains($0.name) }
            return copy
        }
    }

    /// The name of an archived entity, read without following anything else it refers to.
    private func entityName(_ field: PropertyListValue?) throws -> String? {
        guard let object = try archive.object(field) else { return nil }
        guard object.className == "NSEntityDescription" else {
            throw fail("the archive holds a \(object.className) where an entity was expected")
        }
        return try archive.string(object.fields["NSEntityName"])
    }

    private func userInfo(_ field: PropertyListValue?, entity: String?, property: String? = nil) throws -> [String: String] {
        var info: [String: String] = [:]
        for (key, value) in try archive.dictionary(field) ?? [] {
            switch try archive.value(value) {
            case .string?, .dictionary?: info[key] = try archive.string(value) ?? ""
            case .integer(let number)?: info[key] = String(number)
            case .real(let number)?: info[key] = String(number)
            case .bool(let flag)?: info[key] = flag ? "YES" : "NO"
            default: throw fail("the user info entry '\(key)' is not text", entity: entity, property: property)
            }
        }
        return info
    }

    /// A renaming identifier: the compiler stores the element's own name where none was set.
    private func renamingIdentifier(_ field: PropertyListValue?, name: String) throws -> String? {
        let identifier = try archive.string(field)
        return identifier == name ? nil : identifier
    }

    // MARK: Entities

    private mutating func entity(_ field: PropertyListValue, key: String) throws -> EntityDescription {
        guard let object = try archive.object(field) else { throw fail("the entity '\(key)' is missing") }
        guard object.className == "NSEntityDescription" else {
            throw fail("the archive holds a \(object.className) where the entity '\(key)' was expected")
        }
        guard let name = try archive.string(object.fields["NSEntityName"]) else { throw fail("an entity has no name") }
        guard name == key else { throw fail("the entity '\(name)' is listed under the name '\(key)'", entity: name) }
        let className = try archive.string(object.fields["NSClassNameForEntity"])
        var entity = EntityDescription(
            name: name, parentName: try entityName(object.fields["NSSuperentity"]),
            isAbstract: try archive.bool(object.fields["NSIsAbstract"]),
            representedClassName: className == "NSManagedObject" ? nil : className,
            renamingIdentifier: try renamingIdentifier(object.fields["NSRenamingIdentifier"], name: name),
            versionHashModifier: try archive.string(object.fields["NSVersionHashModifier"]),
            userInfo: try userInfo(object.fields["NSUserInfo"], entity: name))
        for tuple in try archive.members(object.fields["NSUniqueTuples"]) {
            entity.uniquenessConstraints.append(try archive.members(tuple).map { member in
                if let text = try? archive.string(member) { return text }
                guard let property = try archive.object(member), let propertyName = try archive.string(property.fields["NSPropertyName"]) else {
                    throw fail("a uniqueness constraint names something that is neither a property nor its name", entity: name)
                }
                return propertyName
            })
        }
        for tuple in try archive.members(object.fields["NSCompoundIndexes"]) {
            entity.compoundIndexes.append(try archive.members(tuple).map { member in
                if let text = try? archive.string(member) { return text }
                guard let property = try archive.object(member), let propertyName = try archive.string(property.fields["NSPropertyName"]) else {
                    throw fail("a compound index names something that is neither a property nor its name", entity: name)
                }
                return propertyName
            })
        }
        for index in try archive.members(object.fields["NSFetchIndexDescriptions"]) {
            let fetchIndex = try fetchIndex(index, entity: name)
            if !fetchIndex.elements.isEmpty { entity.fetchIndexes.append(fetchIndex) }
        }
        // The compiler mirrors each fetch index into the legacy compound indexes (Core Data
        // before iOS 11 reads those): that copy is not an index of its own.
        let mirrored = Set(entity.fetchIndexes.map { $0.elements.compactMap(\.propertyName) })
        entity.compoundIndexes.removeAll { mirrored.contains($0) }
        for (key, value) in try archive.dictionary(object.fields["NSProperties"]) ?? [] {
            guard let property = try archive.object(value) else { throw fail("the property '\(key)' is missing", entity: name) }
            let propertyName = try archive.string(property.fields["NSPropertyName"]) ?? ""
            guard propertyName == key else {
                throw fail("the property '\(propertyName)' is listed under the name '\(key)'", entity: name, property: key)
            }
            switch property.className {
            case "NSAttributeDescription", "NSDerivedAttributeDescription":
                entity.attributes.append(try attribute(property, name: key, entity: name))
            case "NSRelationshipDescription":
                entity.relationships.append(try relationship(property, name: key, entity: name))
            case "NSFetchedPropertyDescription":
                guard let request = property.fields["NSFetchRequest"] else {
                    throw fail("the fetched property has no fetch request", entity: name, property: key)
                }
                var template = try fetchRequest(request, name: Self.fetchedPropertyRequestName, owner: name)
                if let target = try archive.string(property.fields["_NSFetchRequestEntityName"]) { template.entityName = target }
                entity.fetchedProperties.append(FetchedPropertyDescription(
                    name: key, isOptional: try archive.bool(property.fields["NSIsOptional"]), fetchRequest: template,
                    userInfo: try userInfo(property.fields["NSUserInfo"], entity: name, property: key)))
            case "NSCompositeAttributeDescription":
                throw fail("a composite attribute, which Lade does not read yet", entity: name, property: key)
            default:
                throw fail("a property of class \(property.className), which Lade does not read", entity: name, property: key)
            }
        }
        entity.attributes.sort { $0.name < $1.name }
        entity.relationships.sort { $0.name < $1.name }
        entity.fetchedProperties.sort { $0.name < $1.name }
        return entity
    }

    /// An archived `NSFetchIndexDescription` (`NSIndexName`, `NSIndexElements`, each element's
    /// `NSPropertyName`, `NSFetchIndexElementType` 0 for a B-tree and 1 for an R-tree, `NSAscending`).
    private mutating func fetchIndex(_ field: PropertyListValue, entity: String) throws -> FetchIndexDescription {
        guard let object = try archive.object(field), object.className == "NSFetchIndexDescription" else {
            throw fail("a fetch index is not an NSFetchIndexDescription", entity: entity)
        }
        let name = try archive.string(object.fields["NSIndexName"]) ?? ""
        if let partial = try ArchivedPredicate.format(object.fields["NSPartialIndexPredicate"], in: archive) {
            warn("the fetch index '\(name)' is partial (WHERE \(partial)), which Lade's model does not keep: Lade reads it as a whole index", entity: entity)
        }
        var elements: [FetchIndexElement] = []
        for member in try archive.members(object.fields["NSIndexElements"]) {
            guard let element = try archive.object(member), element.className == "NSFetchIndexElementDescription" else {
                throw fail("an element of the fetch index '\(name)' is not an NSFetchIndexElementDescription", entity: entity)
            }
            guard let property = try archive.string(element.fields["NSPropertyName"]) else {
                // No compiled model seen holds one: an index is a speed-up, so the model still loads.
                warn("an element of the fetch index '\(name)' names no property (an expression element, which Lade does not read from a compiled model): the index leaves it out", entity: entity)
                continue
            }
            let type = try archive.integer(element.fields["NSFetchIndexElementType"]) ?? 0
            guard type == 0 || type == 1 else { throw fail("the fetch index '\(name)' has an element of type \(type), neither Binary (0) nor RTree (1)", entity: entity) }
            elements.append(FetchIndexElement(propertyName: property, kind: type == 1 ? "RTree" : "Binary",
                                              isAscending: element.fields["NSAscending"] == nil ? true : try archive.bool(element.fields["NSAscending"])))
        }
        return FetchIndexDescription(name: name, elements: elements)
    }

    /// `NSAttributeType` values.
    static let attributeTypes: [Int64: AttributeType] = [
        0: .undefined, 100: .integer16, 200: .integer32, 300: .integer64, 400: .decimal, 500: .double,
        600: .float, 700: .string, 800: .boolean, 900: .date, 1000: .binary, 1100: .uuid, 1200: .uri,
        1800: .transformable,
    ]

    /// `NSFlagsKey` bit for "Preserve After Deletion" (a UUID attribute with
    /// `preserveAfterDeletion="YES"` compiles to 16 in the corpus).
    static let preserveAfterDeletionFlag: Int64 = 16
    /// `NSFlagsKey` bit for "Allows External Storage" (docs/model-cache.md, "Flags").
    static let externalStorageFlag: Int64 = 4

    private mutating func attribute(_ object: KeyedArchive.Object, name: String, entity: String) throws -> AttributeDescription {
        let code = try archive.integer(object.fields["NSAttributeType"]) ?? 0
        guard let type = Self.attributeTypes[code] else {
            let kind = code == 2100 ? "composite" : code == 2000 ? "object ID" : "unknown"
            throw fail("attribute type \(code) (\(kind)), which Lade does not read", entity: entity, property: name)
        }
        let valueClass = try archive.string(object.fields["NSAttributeValueClassName"])
        var attribute = AttributeDescription(
            name: name, type: type, isOptional: try archive.bool(object.fields["NSIsOptional"]),
            isTransient: try archive.bool(object.fields["NSIsTransient"]),
            valueTransformerName: try archive.string(object.fields["NSValueTransformerName"]),
            customClassName: type == .transformable ? valueClass : nil,
            allowsExternalBinaryDataStorage: (try archive.integer(object.fields["NSFlagsKey"]) ?? 0) & Self.externalStorageFlag != 0,
            isIndexed: try archive.bool(object.fields["NSIsIndexed"]),
            preservesValueInHistoryOnDeletion: (try archive.integer(object.fields["NSFlagsKey"]) ?? 0) & Self.preserveAfterDeletionFlag != 0,
            renamingIdentifier: try renamingIdentifier(object.fields["NSRenamingIdentifier"], name: name),
            versionHashModifier: try archive.string(object.fields["NSVersionHashModifier"]),
            userInfo: try userInfo(object.fields["NSUserInfo"], entity: entity, property: name))
        if object.className == "NSDerivedAttributeDescription" {
            attribute.derivationExpression = try ArchivedPredicate.expression(object.fields["NSDerivationExpression"], in: archive)
        }
        attribute.defaultValue = try value(object.fields["NSDefaultValue"], as: type, entity: entity, property: name, label: "default value")
        let warnings = try archive.members(object.fields["NSValidationWarnings"])
        for (position, predicate) in try archive.members(object.fields["NSValidationPredicates"]).enumerated() {
            let message = position < warnings.count ? (try? archive.string(warnings[position])) ?? nil : nil
            try readValidation(predicate, into: &attribute, entity: entity, message: message)
        }
        return attribute
    }

    /// Reads a validation predicate as the bounds and pattern Xcode compiled it from.
    private mutating func readValidation(_ field: PropertyListValue, into attribute: inout AttributeDescription, entity: String, message: String?) throws {
        var comparisons: [PropertyListValue] = []
        var pending = [field]
        var unread: [String] = []
        while let next = pending.popLast() {
            guard let object = try archive.object(next) else { continue }
            if object.className == "NSCompoundPredicate", try archive.integer(object.fields["NSCompoundPredicateType"]) == 1 {
                guard pending.count + comparisons.count < archive.maximumReads else { break }
                pending.append(contentsOf: try archive.members(object.fields["NSSubpredicates"]).reversed())
            } else if object.className == "NSComparisonPredicate" {
                comparisons.append(next)
            } else {
                unread.append(try ArchivedPredicate.format(next, in: archive) ?? object.className)
            }
        }
        for field in comparisons {
            guard let object = try archive.object(field) else { continue }
            let (text, parts) = try ArchivedPredicate.comparison(object, in: archive, depth: 1)
            let bounded = attribute.boundType.map { _ in parts.left == (attribute.type == .string || attribute.type == .binary || attribute.type == .transformable ? "length" : "SELF") } ?? false
            switch parts.operatorType {
            case 3 where bounded, 1 where bounded:
                let bound = try value(parts.right, raw: true, as: attribute.boundType!, entity: entity, property: attribute.name, label: parts.operatorType == 3 ? "minimum" : "maximum")
                if parts.operatorType == 3 { attribute.minValue = bound } else { attribute.maxValue = bound }
            case 6 where parts.left == "SELF":
                guard case .string(let pattern)? = parts.right else { unread.append(text); continue }
                attribute.regularExpression = pattern
            default: unread.append(text)
            }
        }
        for text in unread {
            warn("the validation predicate '\(text)'\(message.map { " ('\($0)')" } ?? "") is not a bound or a regular expression, which are what Lade checks: Lade does not check it", entity: entity, property: attribute.name)
        }
    }

    /// An archived `NSDecimalNumber` (its `NSDecimal` parts: exponent, mantissa length in
    /// 16-bit words, sign, and the mantissa's words, little-endian when `NS.mantissa.bo` is 1),
    /// exactly; nil for parts that do not make one.
    static func decimal(_ fields: [String: PropertyListValue]) -> Decimal? {
        guard case .integer(let exponent)? = fields["NS.exponent"], (-128...127).contains(exponent),
              case .integer(let length)? = fields["NS.length"], (0...8).contains(length),
              case .data(let mantissa)? = fields["NS.mantissa"], mantissa.count >= Int(length) * 2 else { return nil }
        let littleEndian = fields["NS.mantissa.bo"].map { $0 == .integer(1) } ?? true
        let negative = fields["NS.negative"] == .bool(true)
        guard length > 0 else { return negative ? nil : Decimal(0) }   // a negative zero is NaN
        let bytes = [UInt8](mantissa)
        var value = Decimal(0)
        for index in stride(from: Int(length) - 1, through: 0, by: -1) {
            let low = bytes[index * 2], high = bytes[index * 2 + 1]
            let word = littleEndian ? UInt16(high) << 8 | UInt16(low) : UInt16(low) << 8 | UInt16(high)
            value = value * 65_536 + Decimal(word)
        }
        let scaled = Decimal(sign: negative ? .minus : .plus, exponent: Int(exponent) + value.exponent, significand: Decimal(sign: .plus, exponent: 0, significand: value.significand))
        return scaled
    }

    /// An archived value (a default, a bound) as a value of `type`.
    private mutating func value(_ field: PropertyListValue?, raw: Bool = false, as type: AttributeType, entity: String, property: String, label: String) throws -> AttributeValue? {
        let plain = raw ? field : try ArchivedPredicate.constantValue(field, in: archive)
        guard let plain else { return nil }
        func mismatch() -> ModelError {
            fail("the \(label) is a \(KeyedArchive.kind(plain)), which a \(type.rawValue) attribute cannot hold", entity: entity, property: property)
        }
        switch (type, plain) {
        case (_, .integer(let number)) where type.isInteger: return .integer(number)
        case (_, .bool(let flag)) where type.isInteger: return .integer(flag ? 1 : 0)
        case (.double, .integer(let number)): return .double(Double(number))
        case (.double, .real(let number)): return .double(number)
        case (.float, .integer(let number)): return .float(Float(number))
        case (.float, .real(let number)): return .float(Float(number))
        case (.decimal, .integer(let number)): return .decimal(Decimal(number))
        case (.decimal, .real(let number)): return try AttributeValue(parsing: String(number), as: .decimal)
        case (.boolean, .bool(let flag)): return .bool(flag)
        case (.boolean, .integer(let number)): return .bool(number != 0)
        case (.string, .string(let text)): return .string(text)
        case (.date, .date(let date)): return .date(date)
        case (.date, .real(let seconds)): return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case (.binary, .data(let bytes)): return .binary(bytes)
        case (.uuid, .data(let bytes)) where bytes.count == 16:
            return .uuid(UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }))
        case (.uri, .string(let text)):
            guard let url = URL(string: text) else { throw mismatch() }
            return .uri(url)
        case (.transformable, _), (.undefined, _):
            // An object of the app's, archived: Lade has no class to make it from.
            warn("the \(label) is an archived object of the app's, which Lade cannot read; the attribute has no \(label)", entity: entity, property: property)
            return nil
        case (.decimal, .dictionary(let fields)) where fields["$class"]?.stringValue == "NSDecimalNumber":
            guard let decimal = Self.decimal(fields) else {
                throw fail("the \(label) is an NSDecimalNumber whose parts (NS.exponent, NS.length, NS.mantissa) do not make a number", entity: entity, property: property)
            }
            return .decimal(decimal)
        case (_, .dictionary(let fields)):
            throw fail("the \(label) is an object of class \(fields["$class"]?.stringValue ?? "?"), which Lade does not read", entity: entity, property: property)
        default: throw mismatch()
        }
    }

    // MARK: Relationships and fetch requests

    /// `NSDeleteRule` values.
    static let deleteRules: [Int64: DeleteRule] = [0: .noAction, 1: .nullify, 2: .cascade, 3: .deny]

    private func relationship(_ object: KeyedArchive.Object, name: String, entity: String) throws -> RelationshipDescription {
        var destination = try archive.string(object.fields["_NSDestinationEntityName"])
        if destination == nil { destination = try entityName(object.fields["NSDestinationEntity"]) }
        guard let destination else { throw fail("the relationship has no destination entity", entity: entity, property: name) }
        var inverse = try archive.string(object.fields["_NSInverseRelationshipName"])
        if inverse == nil, let inverseObject = try archive.object(object.fields["NSInverseRelationship"]) {
            inverse = try archive.string(inverseObject.fields["NSPropertyName"])
        }
        let ruleCode = try archive.integer(object.fields["NSDeleteRule"]) ?? 1
        guard let rule = Self.deleteRules[ruleCode] else {
            throw fail("delete rule \(ruleCode), which is not No Action, Nullify, Cascade or Deny", entity: entity, property: name)
        }
        let minCount = try archive.integer(object.fields["NSMinCount"]) ?? 0
        let maxCount = try archive.integer(object.fields["NSMaxCount"]) ?? 0
        // maxCount 1 is to-one; 0 (and -1, NSUIntegerMax as Swift's `.max` archives) unbounded.
        let isToMany = maxCount != 1
        guard minCount >= 0, minCount <= Int32.max, maxCount <= Int32.max else {
            throw fail("the relationship's counts (\(minCount)…\(maxCount)) are out of range", entity: entity, property: name)
        }
        return RelationshipDescription(
            name: name, destinationEntityName: destination, inverseName: inverse, isToMany: isToMany,
            isOrdered: try archive.bool(object.fields["NSIsOrdered"]), isOptional: try archive.bool(object.fields["NSIsOptional"]),
            isTransient: try archive.bool(object.fields["NSIsTransient"]), minCount: Int(minCount),
            maxCount: isToMany ? Int(max(maxCount, 0)) : 1, deleteRule: rule,
            isIndexed: try archive.bool(object.fields["NSIsIndexed"]),
            renamingIdentifier: try renamingIdentifier(object.fields["NSRenamingIdentifier"], name: name),
            versionHashModifier: try archive.string(object.fields["NSVersionHashModifier"]),
            userInfo: try userInfo(object.fields["NSUserInfo"], entity: entity, property: name))
    }

    /// `NSFetchRequestResultType` values, as Xcode names them in `resultType`.
    static let resultTypes: [Int64: String] = [1: "NSManagedObjectIDResultType", 2: "NSDictionaryResultType", 4: "NSCountResultType"]

    private func fetchRequest(_ field: PropertyListValue, name: String, owner: String?) throws -> FetchRequestTemplate {
        guard let object = try archive.object(field), object.className == "NSFetchRequest" else {
            throw fail("the fetch request '\(name)' is not an NSFetchRequest", entity: owner)
        }
        var target = try archive.string(object.fields["NSEntityName"])
        if target == nil, let entityField = object.fields["NSEntity"] {
            if case .string? = try archive.value(entityField) { target = try archive.string(entityField) } else { target = try entityName(entityField) }
        }
        let limit = try archive.integer(object.fields["NSFetchLimit"]) ?? 0
        let batch = try archive.integer(object.fields["NSBatchSize"]) ?? 0
        return FetchRequestTemplate(
            name: name, entityName: target ?? "",
            predicateString: try ArchivedPredicate.format(object.fields["NSPredicate"], in: archive),
            fetchLimit: limit > 0 ? Int(clamping: limit) : nil, fetchBatchSize: batch > 0 ? Int(clamping: batch) : nil,
            resultType: Self.resultTypes[try archive.integer(object.fields["NSResultType"]) ?? 0])
    }
}

extension ManagedObjectModel {
    /// Decodes the model a SQLite store carries in `Z_MODELCACHE.Z_CONTENT`: Core Data's
    /// compiled model (an `NSKeyedArchiver` archive of the `NSManagedObjectModel`), deflated
    /// without a zlib header. `origin` names the blob in errors (say `Store.sqlite, Z_MODELCACHE`).
    ///
    /// The archive carries no version hashes; ``modelCache(ofStoreAt:)`` takes them from the
    /// store's metadata.
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(modelCache: blob, origin: "Store.sqlite, Z_MODELCACHE")
    /// ```
    public init(modelCache: Data, origin: String) throws {
        let archive = try CompiledModelReader.inflate(modelCache, origin: origin)
        self = try CompiledModelReader.read(archive, origin: origin, versionName: nil)
    }

    /// Decodes a compiled model's archive (the bytes of a `.mom`), `origin` naming it in errors.
    package init(compiledModel data: Data, origin: String, versionName: String? = nil) throws {
        self = try CompiledModelReader.read(data, origin: origin, versionName: versionName)
    }
}
