import Foundation

/// A model that cannot be written as Core Data's archived model (a `.mom`, a store's model
/// cache): what could not be archived, where, and why.
public struct ModelArchiveError: LadeError, Equatable {
    public let entity: String?
    public let property: String?
    public let reason: String

    public var code: String { "model.archive" }

    public var description: String {
        var place = ""
        if let entity { place = "entity '\(entity)'" + (property.map { ", property '\($0)'" } ?? "") + ": " }
        return "cannot write the model in Core Data's archived form (the store's model cache): \(place)\(reason). "
            + "Rewrite it in a form the model file accepts and Lade archives (docs/model-cache.md lists them)"
    }
}

extension ManagedObjectModel {
    /// The model as a compiled model (`.mom`): the `NSKeyedArchiver` archive of the
    /// `NSManagedObjectModel` with the classes and keys Xcode's model compiler writes.
    package func archivedModel() throws -> Data {
        try ModelArchive.archive(self, form: .compiled)
    }

    /// The model as Core Data keeps it in a SQLite store's `Z_MODELCACHE`: the archive Core Data
    /// writes for a loaded model (entities in an `NSKnownKeysDictionary1`, each subentity holding
    /// its inherited properties too), raw-deflated.
    package func modelCacheBlob() throws -> Data {
        try RawDeflate.compress(try ModelArchive.archive(self, form: .cache))
    }

    /// The model cache a SQLite store gets, or nil for a model Lade accepts but cannot archive
    /// (``ModelArchiveError``: a predicate that does not parse, which Lade reports only when the
    /// template is used; a derivation such as `now()` Lade's expressions cannot hold). Such a
    /// store gets no cache, as Lade's stores had none before, rather than no store: Core Data
    /// writes its own cache when it opens one without.
    package func modelCacheBlobIfArchivable() throws -> Data? {
        do {
            return try modelCacheBlob()
        } catch is ModelArchiveError {
            return nil
        }
    }
}

/// Writes a ``ManagedObjectModel`` as the archived `NSManagedObjectModel` (see
/// docs/model-cache.md for each class, key and flag, and where each comes from).
enum ModelArchive {
    enum Form {
        /// What Xcode's model compiler writes into a `.mom`.
        case compiled
        /// What Core Data writes into `Z_MODELCACHE` for a model it has loaded.
        case cache
    }

    /// The identity of the archived model object, which every entity refers back to.
    fileprivate static let modelIdentity = "model"

    static func archive(_ model: ManagedObjectModel, form: Form) throws -> Data {
        var archive = KeyedArchiveWriter()
        let context = Context(model: model, form: form)
        let root = try archive.model(context)
        return try archive.archive(root: root)
    }

    /// What the encoding of one model needs: the model, the form, and where properties live.
    struct Context {
        let model: ManagedObjectModel
        let form: Form

        /// Entities in the order of their names' UTF-8 bytes, as every dictionary here is written.
        var sortedEntities: [EntityDescription] {
            model.entities.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        }

        /// The entity whose archived property object `property`, seen on `entity`, is: in a
        /// compiled model, the ancestor declaring it; in a cache, every entity has its own.
        func owner(of property: String, on entity: String) -> String {
            guard form == .compiled else { return entity }
            return model.declaringEntity(of: property, from: entity) ?? entity
        }
    }
}

private let propertyClasses = ["NSPropertyDescription", "NSObject"]

private func sortedByName<T>(_ items: [T], _ name: (T) -> String) -> [T] {
    items.sorted { name($0).utf8.lexicographicallyPrecedes(name($1).utf8) }
}

extension KeyedArchiveWriter {
    fileprivate mutating func model(_ context: ModelArchive.Context) throws -> PropertyListValue {
        try object(["NSManagedObjectModel", "NSObject"], identity: ModelArchive.modelIdentity) { archive in
            var fields: [String: PropertyListValue] = [:]
            fields["NSEntities"] = try archive.entities(context)
            let templates = sortedByName(context.model.fetchRequestTemplates, \.name)
            if templates.isEmpty {
                fields["NSFetchRequestTemplates"] = Self.null
            } else {
                var pairs: [(key: String, value: PropertyListValue)] = []
                for template in templates {
                    pairs.append((template.name, try archive.fetchRequest(template, context, entity: nil, property: nil)))
                }
                fields["NSFetchRequestTemplates"] = archive.dictionary(pairs, classes: ["NSMutableDictionary", "NSDictionary", "NSObject"])
            }
            let configurations = sortedByName(context.model.configurations, \.name)
            if !configurations.isEmpty {
                var pairs: [(key: String, value: PropertyListValue)] = []
                for configuration in configurations {
                    var members: [PropertyListValue] = []
                    for name in configuration.entityNames.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                        members.append(try archive.entityReference(name, context))
                    }
                    pairs.append((configuration.name, archive.array(members, classes: ["NSSet", "NSObject"])))
                }
                fields["NSConfigurations"] = archive.dictionary(pairs, classes: ["NSMutableDictionary", "NSDictionary", "NSObject"])
            }
            let identifiers = context.model.versionIdentifiers.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { archive.string($0) }
            fields["NSVersionIdentifiers"] = archive.array(identifiers, classes: ["NSSet", "NSObject"])
            return fields
        }
    }

    /// `NSEntities`: a mutable dictionary in a compiled model; Core Data's known-keys
    /// dictionary (keys sorted, values in their order) in a cache.
    private mutating func entities(_ context: ModelArchive.Context) throws -> PropertyListValue {
        let entities = context.sortedEntities
        switch context.form {
        case .compiled:
            var pairs: [(key: String, value: PropertyListValue)] = []
            for entity in entities { pairs.append((entity.name, try self.entity(entity.name, context))) }
            return dictionary(pairs, classes: ["NSMutableDictionary", "NSDictionary", "NSObject"])
        case .cache:
            return try object(["NSKnownKeysDictionary1", "NSKnownKeysDictionary", "NSMutableDictionary", "NSDictionary", "NSObject"]) { archive in
                let keys = archive.array(entities.map { archive.string($0.name) })
                let mapping = archive.object(["NSKnownKeysMappingStrategy1", "NSKnownKeysMappingStrategy", "NSObject"]) { _ in
                    ["keys": keys, "length": .integer(Int64(entities.count)), "version": .integer(1)]
                }
                let token = archive.string("__empty_slot_token_4c24_98dc_ac1e_b773__")
                var values: [PropertyListValue] = []
                for entity in entities { values.append(try archive.entity(entity.name, context)) }
                return ["emptyToken": token, "searchMapping": mapping, "values": archive.array(values), "version": .integer(1)]
            }
        }
    }

    /// A reference to an entity, written where `NSEntities` lists it: an entity met through a
    /// relationship is not written inside it, so a chain of entities does not nest.
    fileprivate mutating func entityReference(_ name: String, _ context: ModelArchive.Context) throws -> PropertyListValue {
        guard context.model.entity(named: name) != nil else {
            throw ModelArchiveError(entity: name, property: nil, reason: "no such entity in the model")
        }
        return reserve(identity: "entity:\(name)")
    }

    /// An entity and its properties (written once, where `NSEntities` lists it).
    fileprivate mutating func entity(_ name: String, _ context: ModelArchive.Context) throws -> PropertyListValue {
        guard let entity = context.model.entity(named: name) else {
            throw ModelArchiveError(entity: name, property: nil, reason: "no such entity in the model")
        }
        return try object(["NSEntityDescription", "NSObject"], identity: "entity:\(name)") { archive in
            var fields: [String: PropertyListValue] = [
                "NSEntityName": archive.string(name),
                "NSClassNameForEntity": archive.string(entity.representedClassName ?? "NSManagedObject"),
                "NSRenamingIdentifier": archive.string(entity.renamingIdentifier ?? name),
                "NSVersionHashModifier": archive.string(entity.versionHashModifier.flatMap { $0.isEmpty ? nil : $0 }),
                // The model object was started first, so this is a reference back to it.
                "NSManagedObjectModel": archive.reserve(identity: ModelArchive.modelIdentity),
            ]
            var subentities: [(key: String, value: PropertyListValue)] = []
            for child in sortedByName(context.model.subentities(of: name), \.name) {
                subentities.append((child.name, try archive.entityReference(child.name, context)))
            }
            fields["NSSubentities"] = archive.dictionary(subentities, classes: ["NSMutableDictionary", "NSDictionary", "NSObject"])
            fields["NSSuperentity"] = try entity.parentName.map { try archive.entityReference($0, context) } ?? Self.null
            fields["NSProperties"] = try archive.properties(of: entity, context)
            fields["NSUserInfo"] = archive.userInfo(entity.userInfo)
            if entity.isAbstract { fields["NSIsAbstract"] = .bool(true) }
            if !entity.uniquenessConstraints.isEmpty {
                fields["NSUniqueTuples"] = archive.nameLists(entity.uniquenessConstraints)
            }
            if !entity.fetchIndexes.isEmpty {
                var indexes: [PropertyListValue] = []
                for index in entity.fetchIndexes { indexes.append(try archive.fetchIndex(index, of: entity, context)) }
                fields["NSFetchIndexDescriptions"] = archive.array(indexes, classes: ["NSMutableArray", "NSArray", "NSObject"])
            }
            // Xcode's compiler also lists each fetch index of plain properties as a compound index.
            var compound = entity.compoundIndexes
            for index in entity.fetchIndexes where index.elements.allSatisfy({ $0.propertyName != nil && $0.expression == nil }) {
                let names = index.elements.compactMap(\.propertyName)
                if !compound.contains(names) { compound.append(names) }
            }
            if !compound.isEmpty { fields["NSCompoundIndexes"] = archive.nameLists(compound) }
            return fields
        }
    }

    /// An array of arrays of names (`NSUniqueTuples`, `NSCompoundIndexes`), mutable as Apple writes them.
    private mutating func nameLists(_ lists: [[String]]) -> PropertyListValue {
        let mutable = ["NSMutableArray", "NSArray", "NSObject"]
        let inner = lists.map { list in array(list.map { string($0) }, classes: mutable) }
        return array(inner, classes: mutable)
    }

    /// A user info dictionary; the empty one is shared, as Apple's archives share it.
    private mutating func userInfo(_ info: [String: String]) -> PropertyListValue {
        if info.isEmpty { return object(["NSDictionary", "NSObject"], identity: "userInfo:empty") { _ in ["NS.keys": .array([]), "NS.objects": .array([])] } }
        let pairs = sortedByName(Array(info), \.key).map { (key: $0.key, value: string($0.value)) }
        return dictionary(pairs)
    }

    private mutating func properties(of entity: EntityDescription, _ context: ModelArchive.Context) throws -> PropertyListValue {
        // A cache lists inherited properties on every subentity, each its own object.
        let layout = context.form == .cache ? context.model.layout(of: entity.name) : nil
        let attributes = layout?.attributes ?? entity.attributes
        let relationships = layout?.relationships ?? entity.relationships
        let fetched = layout?.fetchedProperties ?? entity.fetchedProperties
        var pairs: [(key: String, value: PropertyListValue)] = []
        for attribute in attributes { pairs.append((attribute.name, try self.attribute(attribute, on: entity.name, context))) }
        for relationship in relationships { pairs.append((relationship.name, try self.relationship(relationship, on: entity.name, context))) }
        for property in fetched { pairs.append((property.name, try fetchedProperty(property, on: entity.name, context))) }
        return dictionary(sortedByName(pairs, \.key), classes: ["NSMutableDictionary", "NSDictionary", "NSObject"])
    }

    /// `_P`: bit 0 always; 0x02 optional, 0x04 read-only, 0x08 transient; 0x10, 0x20, 0x40 and
    /// 0x80 when there are no validation predicates, no validation warnings, no user info, no
    /// version hash modifier (the keys then left out); 0x400 ordered.
    private static func propertyFlags(
        optional: Bool, readOnly: Bool = false, transient: Bool, ordered: Bool = false,
        validated: Bool = false, userInfo: [String: String], versionHashModifier: String?
    ) -> Int64 {
        var flags: Int64 = 1
        if optional { flags |= 0x02 }
        if readOnly { flags |= 0x04 }
        if transient { flags |= 0x08 }
        if !validated { flags |= 0x30 }
        if userInfo.isEmpty { flags |= 0x40 }
        if versionHashModifier?.isEmpty ?? true { flags |= 0x80 }
        if ordered { flags |= 0x400 }
        return flags
    }

    /// The keys every property has, and those written only when set.
    private mutating func propertyFields(
        name: String, renamingIdentifier: String?, on entity: String, optional: Bool, readOnly: Bool = false,
        transient: Bool, ordered: Bool = false, userInfo: [String: String], versionHashModifier: String?,
        flags: Int64, _ context: ModelArchive.Context
    ) throws -> [String: PropertyListValue] {
        var fields: [String: PropertyListValue] = [
            "NSPropertyName": string(name), "NSRenamingIdentifier": string(renamingIdentifier ?? name),
            "NSEntity": try entityReference(entity, context), "_P": .integer(flags),
        ]
        if optional { fields["NSIsOptional"] = .bool(true) }
        if readOnly { fields["NSIsReadOnly"] = .bool(true) }
        if transient { fields["NSIsTransient"] = .bool(true) }
        if ordered { fields["NSIsOrdered"] = .bool(true) }
        if !userInfo.isEmpty { fields["NSUserInfo"] = self.userInfo(userInfo) }
        if let versionHashModifier, !versionHashModifier.isEmpty { fields["NSVersionHashModifier"] = string(versionHashModifier) }
        return fields
    }

    private mutating func attribute(_ attribute: AttributeDescription, on entity: String, _ context: ModelArchive.Context) throws -> PropertyListValue {
        let owner = context.owner(of: attribute.name, on: entity)
        let derived = attribute.derivationExpression != nil
        let classes = (derived ? ["NSDerivedAttributeDescription"] : []) + ["NSAttributeDescription"] + propertyClasses
        return try object(classes, identity: "property:\(owner).\(attribute.name)") { archive in
            let rules = try archive.validationRules(attribute, entity: owner)
            let flags = Self.propertyFlags(
                optional: attribute.isOptional, readOnly: derived, transient: attribute.isTransient, validated: !rules.predicates.isEmpty,
                userInfo: attribute.userInfo, versionHashModifier: attribute.versionHashModifier)
            var fields = try archive.propertyFields(
                name: attribute.name, renamingIdentifier: attribute.renamingIdentifier, on: owner, optional: attribute.isOptional,
                readOnly: derived, transient: attribute.isTransient, userInfo: attribute.userInfo,
                versionHashModifier: attribute.versionHashModifier, flags: flags, context)
            if !rules.predicates.isEmpty {
                fields["NSValidationPredicates"] = archive.array(rules.predicates)
                fields["NSValidationWarnings"] = archive.array(rules.warnings)
            }
            fields["NSAttributeType"] = .integer(Self.attributeTypeCode(attribute.type))
            fields["NSAttributeValueClassName"] = archive.string(Self.valueClassName(attribute))
            fields["NSDefaultValue"] = attribute.defaultValue.map { archive.attributeValue($0) } ?? Self.null
            fields["NSValueTransformerName"] = archive.string(attribute.valueTransformerName)
            var attributeFlags: Int64 = 0
            if attribute.allowsExternalBinaryDataStorage { attributeFlags |= 0x04 }
            if attribute.preservesValueInHistoryOnDeletion { attributeFlags |= 0x10 }
            fields["NSFlagsKey"] = .integer(attributeFlags)
            if attribute.isIndexed { fields["NSIsIndexed"] = .bool(true) }
            if let expression = attribute.derivationExpression {
                fields["NSDerivationExpression"] = try archive.derivation(expression, entity: owner, property: attribute.name)
                fields["NSFilteringPredicate"] = Self.null
            }
            return fields
        }
    }

    /// `NSAttributeType`'s numbers.
    private static func attributeTypeCode(_ type: AttributeType) -> Int64 {
        switch type {
        case .undefined: 0
        case .integer16: 100
        case .integer32: 200
        case .integer64: 300
        case .decimal: 400
        case .double: 500
        case .float: 600
        case .string: 700
        case .boolean: 800
        case .date: 900
        case .binary: 1000
        case .uuid: 1100
        case .uri: 1200
        case .transformable: 1800
        case .composite: 2100   // NSCompositeAttributeType (macOS 14, iOS 17)
        }
    }

    /// `NSAttributeValueClassName`: the class Core Data gives each type; for a transformable
    /// attribute its custom class (nil when it has none), as a model built in code archives it.
    private static func valueClassName(_ attribute: AttributeDescription) -> String? {
        switch attribute.type {
        case .integer16, .integer32, .integer64, .double, .float, .boolean: "NSNumber"
        case .decimal: "NSDecimalNumber"
        case .string: "NSString"
        case .date: "NSDate"
        case .binary: "NSData"
        case .uuid: "NSUUID"
        case .uri: "NSURL"
        case .transformable: attribute.customClassName
        case .composite: "NSDictionary"
        case .undefined: nil
        }
    }

    /// The attribute's minimum, maximum and pattern as Core Data's validation predicates, each
    /// with its warning, the `NSValidationErrorCode` Core Data reports when it fails: a length
    /// for strings and binary data, the value itself for numbers and dates.
    private mutating func validationRules(_ attribute: AttributeDescription, entity: String) throws -> (predicates: [PropertyListValue], warnings: [PropertyListValue]) {
        var rules: [(FetchPredicate, Int64)] = []
        let measured: FetchExpression = attribute.type == .string || attribute.type == .binary ? .keyPath(["length"]) : .evaluatedObject
        let codes: (tooSmall: Int64, tooLarge: Int64) = switch attribute.type {
        case .string, .binary: (1670, 1660)
        case .date: (1640, 1630)
        default: (1620, 1610)
        }
        if let minimum = attribute.minValue {
            rules.append((.compare(measured, .greaterThanOrEqual, .constant(.attribute(minimum))), codes.tooSmall))
        }
        if let maximum = attribute.maxValue {
            rules.append((.compare(measured, .lessThanOrEqual, .constant(.attribute(maximum))), codes.tooLarge))
        }
        if let pattern = attribute.regularExpression {
            rules.append((.compare(.evaluatedObject, .matches, .constant(.string(pattern))), 1680))
        }
        var predicates: [PropertyListValue] = []
        var warnings: [PropertyListValue] = []
        for (rule, code) in rules {
            do {
                predicates.append(try predicate(rule))
            } catch {
                throw ModelArchiveError(entity: entity, property: attribute.name, reason: "its validation rule: \(error.description)")
            }
            warnings.append(scalar(.integer(code)))
        }
        return (predicates, warnings)
    }

    /// A derivation expression (a format string) as its archived `NSExpression`.
    private mutating func derivation(_ text: String, entity: String, property: String) throws -> PropertyListValue {
        // The predicate parser reads expressions as a comparison's left side.
        let parsed: FetchPredicate
        do {
            parsed = try FetchPredicate(format: "\(text) == nil")
        } catch {
            throw ModelArchiveError(entity: entity, property: property, reason: "its derivation expression '\(text)' does not parse: \(error)")
        }
        guard case .comparison(let comparison) = parsed else {
            throw ModelArchiveError(entity: entity, property: property, reason: "its derivation expression '\(text)' is not an expression")
        }
        do {
            return try expression(comparison.left)
        } catch {
            throw ModelArchiveError(entity: entity, property: property, reason: "its derivation expression '\(text)': \(error.description)")
        }
    }

    private mutating func relationship(_ relationship: RelationshipDescription, on entity: String, _ context: ModelArchive.Context) throws -> PropertyListValue {
        let owner = context.owner(of: relationship.name, on: entity)
        return try object(["NSRelationshipDescription"] + propertyClasses, identity: "property:\(owner).\(relationship.name)") { archive in
            let flags = Self.propertyFlags(
                optional: relationship.isOptional, transient: relationship.isTransient, ordered: relationship.isOrdered,
                userInfo: relationship.userInfo, versionHashModifier: relationship.versionHashModifier)
            var fields = try archive.propertyFields(
                name: relationship.name, renamingIdentifier: relationship.renamingIdentifier, on: owner,
                optional: relationship.isOptional, transient: relationship.isTransient, ordered: relationship.isOrdered,
                userInfo: relationship.userInfo, versionHashModifier: relationship.versionHashModifier, flags: flags, context)
            let destination = relationship.destinationEntityName
            fields["NSDestinationEntity"] = try archive.entityReference(destination, context)
            fields["_NSDestinationEntityName"] = archive.string(destination)
            if let inverse = relationship.inverseName, let target = context.model.relationship(inverse, of: destination) {
                fields["NSInverseRelationship"] = try archive.relationship(target, on: destination, context)
            } else {
                fields["NSInverseRelationship"] = Self.null
            }
            fields["_NSInverseRelationshipName"] = archive.string(relationship.inverseName)
            fields["NSMinCount"] = .integer(Int64(relationship.minCount))
            fields["NSMaxCount"] = .integer(Int64(relationship.maxCount))
            let rule: Int64 = switch relationship.deleteRule { case .noAction: 0; case .nullify: 1; case .cascade: 2; case .deny: 3 }
            fields["NSDeleteRule"] = .integer(rule)
            if relationship.isIndexed { fields["NSIsIndexed"] = .bool(true) }
            return fields
        }
    }

    private mutating func fetchedProperty(_ property: FetchedPropertyDescription, on entity: String, _ context: ModelArchive.Context) throws -> PropertyListValue {
        let owner = context.owner(of: property.name, on: entity)
        return try object(["NSFetchedPropertyDescription"] + propertyClasses, identity: "property:\(owner).\(property.name)") { archive in
            // A fetched property is always read-only and transient.
            let flags = Self.propertyFlags(optional: property.isOptional, readOnly: true, transient: true, userInfo: property.userInfo, versionHashModifier: nil)
            var fields = try archive.propertyFields(
                name: property.name, renamingIdentifier: nil, on: owner, optional: property.isOptional, readOnly: true,
                transient: true, userInfo: property.userInfo, versionHashModifier: nil, flags: flags, context)
            fields["NSFetchRequest"] = try archive.fetchRequest(property.fetchRequest, context, entity: owner, property: property.name)
            fields["_NSFetchRequestEntityName"] = archive.string(property.fetchRequest.entityName)
            return fields
        }
    }

    /// An `NSFetchRequest`: `NSFetchRequestFlags` bit 0 distinct results, 1 includes
    /// subentities, 2 includes property values, 3 objects as faults, 4 includes pending changes
    /// (30, Core Data's defaults, unless the template says otherwise).
    private mutating func fetchRequest(_ request: FetchRequestTemplate, _ context: ModelArchive.Context, entity: String?, property: String?) throws -> PropertyListValue {
        try object(["NSFetchRequest", "NSPersistentStoreRequest", "NSObject"]) { archive in
            var flags: Int64 = 0b100
            if request.returnsDistinctResults ?? false { flags |= 0b1 }
            if request.includesSubentities ?? true { flags |= 0b10 }
            if request.returnsObjectsAsFaults ?? true { flags |= 0b1000 }
            if request.includesPendingChanges ?? true { flags |= 0b10000 }
            var predicate = Self.null
            if let text = request.predicateString, !text.trimmingCharacters(in: .whitespaces).isEmpty {
                let place = entity ?? request.entityName
                let what = property ?? "fetch request '\(request.name)'"
                do {
                    predicate = try archive.predicate(try FetchPredicate(format: text))
                } catch let error as PredicateArchiveError {
                    throw ModelArchiveError(entity: place, property: what, reason: "its predicate '\(text)': \(error.description)")
                } catch {
                    throw ModelArchiveError(entity: place, property: what, reason: "its predicate '\(text)' does not parse: \(error)")
                }
            }
            return [
                "NSEntity": try archive.entityReference(request.entityName, context),
                "NSPredicate": predicate, "NSHavingPredicate": Self.null, "NSSortDescriptors": Self.null,
                "NSValuesToFetch": Self.null, "NSValuesToGroupBy": Self.null, "NSRelationshipKeyPathsForPrefetching": Self.null,
                "NSAllocationType": .integer(0), "NSFetchOffset": .integer(0),
                "NSBatchSize": .integer(Int64(request.fetchBatchSize ?? 0)), "NSFetchLimit": .integer(Int64(request.fetchLimit ?? 0)),
                "NSResultType": .integer(Self.resultType(request.resultType)),
                "NSHasFetchRequestFlags": .bool(true), "NSFetchRequestFlags": .integer(flags),
            ]
        }
    }

    /// `NSFetchRequestResultType`: objects 0, object IDs 1, dictionaries 2, count 4.
    private static func resultType(_ text: String?) -> Int64 {
        guard let text else { return 0 }
        if let number = Int64(text) { return number }
        switch text.lowercased() {
        case "nsmanagedobjectidresulttype", "managedobjectid", "objectid": return 1
        case "nsdictionaryresulttype", "dictionary": return 2
        case "nscountresulttype", "count": return 4
        default: return 0
        }
    }

    /// An `NSFetchIndexDescription` and its elements (binary or R-tree, on properties).
    private mutating func fetchIndex(_ index: FetchIndexDescription, of entity: EntityDescription, _ context: ModelArchive.Context) throws -> PropertyListValue {
        let identity = "index:\(entity.name).\(index.name)"
        return try object(["NSFetchIndexDescription", "NSObject"], identity: identity) { archive in
            var elements: [PropertyListValue] = []
            for element in index.elements {
                guard let name = element.propertyName, element.expression == nil else {
                    throw ModelArchiveError(entity: entity.name, property: nil, reason: "fetch index '\(index.name)' has an expression element, whose archived form no Apple-written model shows")
                }
                let kind: Int64 = element.kind.lowercased() == "rtree" ? 1 : 0
                let back = archive.reserve(identity: identity)
                elements.append(archive.object(["NSFetchIndexElementDescription", "NSObject"]) { archive in
                    ["NSPropertyName": archive.string(name), "NSAscending": .bool(element.isAscending),
                     "NSFetchIndexElementType": .integer(kind), "NSFetchIndexDescription": back]
                })
            }
            return [
                "NSIndexName": archive.string(index.name), "NSEntity": try archive.entityReference(entity.name, context),
                "NSIndexElements": archive.array(elements), "NSPartialIndexPredicate": Self.null,
            ]
        }
    }
}
