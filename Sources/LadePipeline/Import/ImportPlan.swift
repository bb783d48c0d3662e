import Foundation
import Lade

/// One import step checked against its model: which attribute takes which source field and
/// how, which relationships are wired by which keys, and the fields the reader must deliver.
///
/// ```swift
/// let plan = try ImportPlan(step: job.steps[0], model: model)
/// let reader = try RecordReader(path: …, format: …, fields: plan.readerFields)
/// try plan.check(columns: reader.columns)        // listed columns exist in the header
/// ```
package struct ImportPlan: Sendable {
    /// An attribute and where its value comes from. (Classes: read for every field of every
    /// row, and a reference is cheaper to hand around than a copy.)
    package final class AttributePlan: Sendable {
        package let attribute: AttributeDescription
        /// Indices into `readerFields`: the first that is present in a record gives the value
        /// (several for name-matched attributes: `createdAt`, `created_at`, …).
        package let fieldIndices: [Int]
        package let converter: ValueConverter
        /// A constant for every row (`value:` in the job), already parsed.
        package let constant: AttributeValue?
        package let listed: Bool
        package let validator: AttributeValidator
        /// The job's store type when it may be unable to keep a value of this attribute's type
        /// exactly (a Decimal on SQLite): each value is then asked (`refusal(of:)`) while it is
        /// mapped. Nil for the other attributes, whose values every store keeps.
        package let refusingStore: PersistentStoreCoordinator.StoreType?

        init(attribute: AttributeDescription, fieldIndices: [Int], converter: ValueConverter, constant: AttributeValue?, listed: Bool, validator: AttributeValidator,
             store: PersistentStoreCoordinator.StoreType?) {
            self.attribute = attribute
            self.fieldIndices = fieldIndices
            self.converter = converter
            self.constant = constant
            self.listed = listed
            self.validator = validator
            refusingStore = store.flatMap { $0.keepsEveryValue(of: attribute.type) ? nil : $0 }
        }
    }

    /// A relationship wired by the destination's key.
    package final class RelationshipPlan: Sendable {
        package let settings: RelationshipSettings
        package let relationship: RelationshipDescription
        package let fieldIndex: Int
        /// The destination attribute keys are matched against, and how key text is read for it.
        package let match: AttributeDescription
        package let matchConverter: ValueConverter
        package let matchValidator: AttributeValidator
        /// As `AttributePlan.refusingStore`, for `match` (a destination made from a key, with
        /// `create: true`, holds the key there).
        package let refusingStore: PersistentStoreCoordinator.StoreType?

        init(settings: RelationshipSettings, relationship: RelationshipDescription, fieldIndex: Int, match: AttributeDescription, matchConverter: ValueConverter, matchValidator: AttributeValidator,
             store: PersistentStoreCoordinator.StoreType?) {
            self.settings = settings
            self.relationship = relationship
            self.fieldIndex = fieldIndex
            self.match = match
            self.matchConverter = matchConverter
            self.matchValidator = matchValidator
            refusingStore = store.flatMap { $0.keepsEveryValue(of: match.type) ? nil : $0 }
        }

        /// Why a destination cannot be made from `key` (`create: true`): the key breaks the
        /// match attribute's rules, or the store could not keep it exactly; nil when it can.
        package func creationProblem(_ key: AttributeValue) -> String? {
            let problem = matchValidator.violation(of: key).map(\.message) ?? refusingStore?.refusal(of: key)
            return problem.map { "a \(relationship.destinationEntityName) cannot be created with \(match.name) '\(key.canonicalText)': \(match.name) \($0)" }
        }
    }

    /// Positions in `attributes` of required attributes without a default: a new object needs
    /// a value for each from its row.
    package var requiredWithoutDefault: [Int] {
        attributes.indices.filter { !attributes[$0].attribute.isOptional && attributes[$0].attribute.defaultValue == nil }
    }

    /// Positions in `relationships` of required to-one relationships (the model's): a new
    /// object needs a destination for each from its row.
    package var requiredToOne: [Int] {
        relationships.indices.filter { !relationships[$0].relationship.isOptional && !relationships[$0].relationship.isToMany }
    }

    /// Positions in `relationships` with `create: true`, and with `required: true` (the job's).
    package var creating: [Int] { relationships.indices.filter { relationships[$0].settings.create } }
    package var requiredByJob: [Int] { relationships.indices.filter { relationships[$0].settings.required } }

    package let step: ImportStep
    package let entity: EntityDescription
    package let attributes: [AttributePlan]
    package let relationships: [RelationshipPlan]
    /// Positions in `attributes` of the key attributes, in key order.
    package let keyIndices: [Int]
    /// What the reader is asked for, in this order.
    package let readerFields: [FieldPath]
    /// The job's store type, whose limits values are checked against; nil checks none.
    package let storeType: PersistentStoreCoordinator.StoreType?
    /// Model defaults of the entity's attributes that the store cannot keep exactly (on SQLite,
    /// a Decimal default of more than 15 significant digits that no double reads back as): a new
    /// object would take one when its row gives the attribute no value (`position` in
    /// `attributes`; nil when no field sets it, so every new object would), and is refused for it.
    package let unkeepableDefaults: [(position: Int?, attribute: String, problem: String)]

    /// `storeType`: the job's store, whose limits a value is checked against as the model's
    /// rules are (on SQLite, a Decimal of more than 15 significant digits that no double reads
    /// back as); nil checks none.
    package init(step: ImportStep, model: ManagedObjectModel, storeType: PersistentStoreCoordinator.StoreType? = nil) throws {
        self.step = step
        self.storeType = storeType
        let entity = try Self.entity(of: step, model: model)
        self.entity = entity
        // Fields are numbered as they are first named: attributes, name matches, relationships.
        var fields = ReaderFields()
        attributes = try Self.attributePlans(step, entity: entity, model: model, storeType: storeType, fields: &fields)
        keyIndices = try Self.keyIndices(step, entity: entity, model: model, attributes: attributes)
        relationships = try Self.relationshipPlans(step, entity: entity, model: model, storeType: storeType, fields: &fields)
        readerFields = fields.paths
        unkeepableDefaults = Self.unkeepableDefaults(entity: entity, model: model, attributes: attributes, storeType: storeType)
    }

    /// The fields the reader is asked for, each once, numbered in the order they are first named.
    private struct ReaderFields {
        private(set) var paths: [FieldPath] = []
        private var positions: [FieldPath: Int] = [:]

        mutating func index(of path: FieldPath) -> Int {
            if let known = positions[path] { return known }
            paths.append(path)
            positions[path] = paths.count - 1
            return paths.count - 1
        }
    }

    /// The step's entity, which must exist and not be abstract.
    private static func entity(of step: ImportStep, model: ManagedObjectModel) throws -> EntityDescription {
        guard let entity = model.entity(named: step.entity) else {
            throw JobError(file: step.location, field: "entity", UnknownEntityError(step.entity, in: model).description)
        }
        guard !entity.isAbstract else {
            throw JobError(file: step.location, field: "entity", "'\(entity.name)' is abstract: import into one of its subentities (\(model.subentities(of: entity.name).map(\.name).joined(separator: ", ")))")
        }
        return entity
    }

    /// The listed fields' attributes (a column or a constant), then with `autoMatch` every other
    /// attribute, from a column spelling its name.
    private static func attributePlans(_ step: ImportStep, entity: EntityDescription, model: ManagedObjectModel, storeType: PersistentStoreCoordinator.StoreType?,
                                       fields: inout ReaderFields) throws -> [AttributePlan] {
        var plans: [AttributePlan] = []
        for field in step.fields {
            plans.append(try listedAttributePlan(field, step: step, entity: entity, model: model, storeType: storeType, fields: &fields))
        }
        guard step.autoMatch else { return plans }
        let listed = Set(step.fields.map(\.attribute))
        // A derived attribute is never matched: the store computes it (an export's column of it,
        // imported again, is left alone).
        for attribute in model.attributes(of: entity.name) where !listed.contains(attribute.name) && !attribute.isTransient && attribute.type != .undefined
            && attribute.derivationExpression == nil {
            let candidates = ImportPlan.columnSpellings(of: attribute.name).map { fields.index(of: FieldPath(components: [$0])) }
            let field = FieldSettings(attribute: attribute.name, origin: .field(FieldPath(components: [attribute.name])), dateFormat: nil,
                                      timeZone: .utc, empty: nil, listed: false, location: step.location)
            plans.append(AttributePlan(
                attribute: attribute, fieldIndices: candidates,
                converter: try ValueConverter(attribute: attribute, field: field, nulls: step.source.nulls),
                constant: nil, listed: false, validator: AttributeValidator(attribute), store: storeType))
        }
        return plans
    }

    /// A listed field's attribute: from a column, or a constant parsed and checked now.
    private static func listedAttributePlan(_ field: FieldSettings, step: ImportStep, entity: EntityDescription, model: ManagedObjectModel,
                                            storeType: PersistentStoreCoordinator.StoreType?, fields: inout ReaderFields) throws -> AttributePlan {
        guard let attribute = model.attribute(field.attribute, of: entity.name) else {
            let isRelationship = model.relationship(field.attribute, of: entity.name) != nil
            throw JobError(file: field.location, field: "fields.\(field.attribute)", isRelationship
                ? "'\(field.attribute)' is a relationship: wire it under 'relationships:' with from/match"
                : "\(entity.name) has no attribute '\(field.attribute)'; its attributes are \(model.attributes(of: entity.name).map(\.name).joined(separator: ", "))")
        }
        if let derivation = attribute.derivationExpression {
            // The store computes it (Core Data's triggers): a value from the source would be
            // kept until the next change of what it derives from, and read as the truth.
            throw JobError(file: field.location, field: "fields.\(field.attribute)",
                           "'\(attribute.name)' is a derived attribute (\(derivation)): the store computes it from what it derives from, and never takes it from a source; remove it from fields")
        }
        let converter = try ValueConverter(attribute: attribute, field: field, nulls: step.source.nulls)
        switch field.origin {
        case .field(let path):
            return AttributePlan(attribute: attribute, fieldIndices: [fields.index(of: path)], converter: converter, constant: nil, listed: true, validator: AttributeValidator(attribute),
                                 store: storeType)
        case .constant(let text):
            let value: AttributeValue?
            switch converter.convert(.string(text)) {
            case .value(let parsed): value = parsed
            case .absent: value = nil
            case .failure(let reason): throw JobError(file: field.location, field: "fields.\(field.attribute).value", reason)
            }
            if let value, let problem = AttributeValidator(attribute).violation(of: value)?.message ?? storeType?.refusal(of: value) {
                throw JobError(file: field.location, field: "fields.\(field.attribute).value", "\(attribute.name) \(problem)")
            }
            return AttributePlan(attribute: attribute, fieldIndices: [], converter: converter, constant: value, listed: true, validator: AttributeValidator(attribute),
                                 store: storeType)
        }
    }

    /// Positions in `attributes` of the step's key, each an attribute that takes its value from the source.
    private static func keyIndices(_ step: ImportStep, entity: EntityDescription, model: ManagedObjectModel, attributes plans: [AttributePlan]) throws -> [Int] {
        var keyIndices: [Int] = []
        for name in step.key {
            guard let position = plans.firstIndex(where: { $0.attribute.name == name }) else {
                if model.attribute(name, of: entity.name) == nil {
                    throw JobError(file: step.location, field: "key", "\(entity.name) has no attribute '\(name)'")
                }
                throw JobError(file: step.location, field: "key", "the key attribute '\(name)' takes no value from the source: list it under fields (or turn autoMatch on)")
            }
            guard plans[position].constant == nil else {
                throw JobError(file: step.location, field: "key", "the key attribute '\(name)' is a constant, so every row would be the same object")
            }
            keyIndices.append(position)
        }
        return keyIndices
    }

    /// The step's relationships, each wired by a source field to its destination's match attribute.
    private static func relationshipPlans(_ step: ImportStep, entity: EntityDescription, model: ManagedObjectModel, storeType: PersistentStoreCoordinator.StoreType?,
                                          fields: inout ReaderFields) throws -> [RelationshipPlan] {
        var relationships: [RelationshipPlan] = []
        for settings in step.relationships {
            let field = "relationships.\(settings.relationship)"
            guard let relationship = model.relationship(settings.relationship, of: entity.name) else {
                throw JobError(file: settings.location, field: field, "\(entity.name) has no relationship '\(settings.relationship)'; its relationships are \(model.relationships(of: entity.name).map(\.name).joined(separator: ", "))")
            }
            let destination = relationship.destinationEntityName
            guard let match = model.attribute(settings.match, of: destination) else {
                throw JobError(file: settings.location, field: "\(field).match", "\(destination) has no attribute '\(settings.match)'")
            }
            if settings.create { try checkCreatable(destination, from: match, settings: settings, model: model) }
            let matchField = FieldSettings(attribute: match.name, origin: .field(settings.from), dateFormat: nil, timeZone: .utc,
                                           empty: nil, listed: true, location: settings.location)
            relationships.append(RelationshipPlan(
                settings: settings, relationship: relationship, fieldIndex: fields.index(of: settings.from), match: match,
                matchConverter: try ValueConverter(attribute: match, field: matchField, nulls: step.source.nulls),
                matchValidator: AttributeValidator(match), store: storeType))
        }
        return relationships
    }

    /// Refuses `create: true` when a destination made from a key alone could not be saved: an
    /// abstract entity, or another required attribute without a default or a required relationship.
    private static func checkCreatable(_ destination: String, from match: AttributeDescription, settings: RelationshipSettings, model: ManagedObjectModel) throws {
        let field = "relationships.\(settings.relationship).create"
        guard !(model.entity(named: destination)?.isAbstract ?? true) else {
            throw JobError(file: settings.location, field: field, "\(destination) is abstract, so missing ones cannot be created")
        }
        let others = model.attributes(of: destination).filter {
            $0.name != match.name && !$0.isOptional && $0.defaultValue == nil && !$0.isTransient
        }
        if let other = others.first {
            throw JobError(file: settings.location, field: field, "a \(destination) made from a key has only '\(match.name)', but \(destination).\(other.name) is required and has no default")
        }
        let requiredRelationships = model.relationships(of: destination).filter { !$0.isOptional && !$0.isTransient }
        if let other = requiredRelationships.first {
            throw JobError(file: settings.location, field: field, "a \(destination) made from a key cannot have its required relationship '\(other.name)'")
        }
    }

    /// The entity's model defaults `storeType` cannot keep exactly (see `unkeepableDefaults`).
    private static func unkeepableDefaults(entity: EntityDescription, model: ManagedObjectModel, attributes plans: [AttributePlan],
                                           storeType: PersistentStoreCoordinator.StoreType?) -> [(position: Int?, attribute: String, problem: String)] {
        guard let storeType else { return [] }
        var unkeepable: [(position: Int?, attribute: String, problem: String)] = []
        for attribute in model.attributes(of: entity.name) where !attribute.isTransient {
            guard let value = attribute.defaultValue, let refusal = storeType.refusal(of: value) else { continue }
            unkeepable.append((plans.firstIndex { $0.attribute.name == attribute.name }, attribute.name,
                               "a new \(entity.name) would take \(attribute.name)'s default (\(ValueConverter.clip(value.canonicalText))), which \(refusal)"))
        }
        return unkeepable
    }

    /// Checks listed fields against a source's columns (a CSV header; JSON sources name no
    /// columns up front). Returns the name-matched attributes with the column each found.
    ///
    /// `isHeader: false` says `columns` are only the keys of a JSON source's first object: a
    /// JSON record may leave any key out and a key path reaches into nested objects, so then
    /// nothing is refused and only the name matches are worked out.
    @discardableResult
    package func check(columns: [String]?, sourceName: String, isHeader: Bool = true) throws -> [(attribute: String, column: String)] {
        guard let columns else { return [] }
        if isHeader {
            // Two columns of one name: which one a field would read is not the user's choice.
            var first: [String: Int] = [:]
            for (position, name) in columns.enumerated() {
                if let earlier = first[name] {
                    throw JobError(file: step.location, field: "source",
                                   "columns \(earlier + 1) and \(position + 1) of \(sourceName)'s header are both named '\(name)'; rename one of them")
                }
                first[name] = position
            }
        }
        let present = Set(columns)
        for plan in attributes where plan.listed && isHeader {
            for index in plan.fieldIndices {
                let name = readerFields[index].components.joined(separator: ".")
                guard present.contains(name) else {
                    throw JobError(file: step.location, field: "fields.\(plan.attribute.name)",
                                   "column '\(name)' is not in \(sourceName)'s header; its columns are \(columns.joined(separator: ", "))")
                }
            }
        }
        for plan in relationships where isHeader {
            let name = readerFields[plan.fieldIndex].components.joined(separator: ".")
            guard present.contains(name) else {
                throw JobError(file: step.location, field: "relationships.\(plan.settings.relationship).from",
                               "column '\(name)' is not in \(sourceName)'s header; its columns are \(columns.joined(separator: ", "))")
            }
        }
        for index in keyIndices where !attributes[index].listed && isHeader {
            let found = attributes[index].fieldIndices.contains { present.contains(readerFields[$0].components.joined(separator: ".")) }
            guard found else {
                throw JobError(file: step.location, field: "key", "no column of \(sourceName) matches the key attribute '\(attributes[index].attribute.name)'; map it under fields")
            }
        }
        var matched: [(String, String)] = []
        for plan in attributes where !plan.listed {
            let candidates = plan.fieldIndices.map { readerFields[$0].components.joined(separator: ".") }.filter(present.contains)
            if isHeader, candidates.count > 1 {
                let described = candidates.map { ($0, columns.firstIndex(of: $0)! + 1) }.sorted { $0.1 < $1.1 }
                    .map { "'\($0.0)' (column \($0.1))" }
                throw JobError(file: step.location, field: "fields",
                               "columns \(described.joined(separator: " and ")) of \(sourceName) all match attribute '\(plan.attribute.name)' by name; map the one to use under fields (\(plan.attribute.name): COLUMN)")
            }
            if let name = candidates.first {
                matched.append((plan.attribute.name, name))
            }
        }
        return matched
    }

    /// How a column may spell an attribute's name: as is, snake_case, kebab-case, lower case,
    /// UPPER_SNAKE and PascalCase (`createdAt` ~ `created_at`).
    static func columnSpellings(of name: String) -> [String] {
        var words: [String] = []
        var current = ""
        for character in name {
            if character.isUppercase && !current.isEmpty && !(current.last?.isUppercase ?? false) {
                words.append(current)
                current = ""
            }
            current.append(character)
        }
        if !current.isEmpty { words.append(current) }
        let lower = words.map { $0.lowercased() }
        var spellings = [
            name,
            lower.joined(separator: "_"),
            lower.joined(separator: "-"),
            name.lowercased(),
            lower.joined(separator: "_").uppercased(),
            name.prefix(1).uppercased() + name.dropFirst(),
        ]
        var seen: Set<String> = []
        spellings.removeAll { !seen.insert($0).inserted }
        return spellings
    }
}
