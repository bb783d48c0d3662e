import Foundation

/// Checks a model against the rules Core Data enforces when it loads one, collecting every
/// problem rather than stopping at the first.
struct ModelValidator {
    let entities: [EntityDescription]
    let fetchRequestTemplates: [FetchRequestTemplate]
    let configurations: [ModelConfiguration]
    let sourceMap: ModelSourceMap?

    /// Names Core Data refuses for properties: they collide with methods of NSObject or
    /// NSManagedObject that take no arguments ("description" is the one people meet).
    static let reservedPropertyNames: Set<String> = [
        "description", "debugDescription", "class", "superclass", "self", "hash", "zone", "entity",
        "objectID", "managedObjectContext", "isInserted", "isUpdated", "isDeleted", "isFault",
        "hasChanges", "hasPersistentChangedValues", "faultingState", "changedValues",
        "changedValuesForCurrentEvent", "committedValues", "observationInfo", "isProxy", "retain",
        "release", "autorelease", "retainCount", "copy", "mutableCopy", "dealloc", "init",
        "awakeFromFetch", "awakeFromInsert", "awakeFromSnapshotEvents", "willSave", "didSave",
        "willTurnIntoFault", "didTurnIntoFault", "prepareForDeletion", "validateForDelete",
        "validateForInsert", "validateForUpdate", "classForCoder", "classForKeyedArchiver",
    ]

    /// Xcode's model editor takes entity names that start with an uppercase letter and property
    /// names that start with a lowercase one, both made of ASCII letters, digits and underscores
    /// (every name in the corpus of Apple-written models follows it). The names become SQLite
    /// table and column names (`Z` + the name in capitals), so the rule also keeps every
    /// identifier Lade writes into SQL a plain one: a name carrying SQL is refused here.
    /// Returns the rule a name breaks, or nil.
    static func nameRule(broken name: String, startsUppercase: Bool) -> String? {
        let bytes = Array(name.utf8)
        guard let first = bytes.first else { return "it is empty" }
        let startOK = startsUppercase ? (0x41...0x5A).contains(first) : (0x61...0x7A).contains(first)
        if !startOK {
            return startsUppercase ? "it must start with an uppercase letter (A-Z)" : "it must start with a lowercase letter (a-z)"
        }
        if let bad = name.unicodeScalars.first(where: { !$0.isASCII || !isIdentifierByte(UInt8($0.value)) }) {
            let shownCharacter = bad.value < 0x20 || bad.value == 0x7F ? String(format: "U+%04X", bad.value) : "'\(Character(bad))'"
            return "it may hold only letters (A-Z, a-z), digits and underscores, not \(shownCharacter)"
        }
        return nil
    }

    static func isIdentifierByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F
    }

    /// A name as an error shows it: at most 60 characters.
    static func shown(_ name: String) -> String { name.count > 60 ? name.prefix(57) + "…" : name }

    private var entityIndex: [String: EntityDescription] = [:]
    /// Each entity's own properties by name (the first of a name): what a property's name
    /// refers to is then found in as many steps as the entity has ancestors, not properties
    /// (the inverses of a hub's 100,000 relationships, each looked up by scanning them all,
    /// made a model of 25,000 entities take minutes: issue 43 §4 "Slow").
    private var declared: [String: [String: Declared]] = [:]
    private var found: [ModelProblem] = []

    private enum Declared {
        case attribute(AttributeDescription)
        case relationship(RelationshipDescription)
        case fetched
    }

    init(entities: [EntityDescription], fetchRequestTemplates: [FetchRequestTemplate], configurations: [ModelConfiguration], sourceMap: ModelSourceMap?) {
        self.entities = entities
        self.fetchRequestTemplates = fetchRequestTemplates
        self.configurations = configurations
        self.sourceMap = sourceMap
    }

    func problems() -> [ModelProblem] {
        var copy = self
        copy.run()
        return copy.found
    }

    private mutating func report(entity: String? = nil, property: String? = nil, line: Int? = nil, _ message: String) {
        found.append(ModelProblem(
            file: sourceMap?.file, line: line ?? sourceMap?.line(entity: entity, property: property),
            entity: entity, property: property, message: message))
    }

    private mutating func run() {
        for entity in entities {
            if entity.name.isEmpty {
                report("an entity has an empty name")
            } else if let rule = Self.nameRule(broken: entity.name, startsUppercase: true) {
                report(entity: Self.shown(entity.name), "entity name '\(Self.shown(entity.name))' breaks Xcode's rule for entity names: \(rule)")
            } else if entityIndex[entity.name] != nil {
                report(entity: entity.name, "the model declares entity '\(entity.name)' more than once; entity names must be unique")
            } else {
                entityIndex[entity.name] = entity
                var properties: [String: Declared] = [:]
                for attribute in entity.attributes where properties[attribute.name] == nil { properties[attribute.name] = .attribute(attribute) }
                for relationship in entity.relationships where properties[relationship.name] == nil { properties[relationship.name] = .relationship(relationship) }
                for fetched in entity.fetchedProperties where properties[fetched.name] == nil { properties[fetched.name] = .fetched }
                declared[entity.name] = properties
            }
        }
        for entity in entities {
            checkInheritance(of: entity)
        }
        // The checks below walk each entity's ancestors: not through loops or runaway chains.
        guard found.isEmpty else { return }
        for entity in entities {
            checkProperties(of: entity)
            checkConstraintsAndIndexes(of: entity)
        }
        checkTemplatesAndConfigurations()
    }

    private mutating func checkInheritance(of entity: EntityDescription) {
        guard let parent = entity.parentName else { return }
        guard entityIndex[parent] != nil else {
            report(entity: entity.name, "parent entity '\(parent)' is not in the model")
            return
        }
        var seen: Set<String> = [entity.name]
        var current: String? = parent
        while let name = current {
            if !seen.insert(name).inserted {
                report(entity: entity.name, "inheritance loops back to '\(name)'; an entity cannot be its own ancestor")
                return
            }
            // Every subentity holds all of its ancestors' properties, so a deep chain costs the
            // square of its depth in memory and time; a hostile model is stopped here, early.
            if seen.count - 1 > Self.maximumInheritanceDepth {
                report(entity: entity.name, "the entity has more than \(Self.maximumInheritanceDepth) ancestors; Lade reads inheritance chains up to \(Self.maximumInheritanceDepth) deep")
                return
            }
            current = entityIndex[name]?.parentName
        }
    }

    /// How many ancestors an entity may have (real models have a handful).
    static let maximumInheritanceDepth = 100

    /// Ancestors nearest first; stops at loops and unknown parents (reported elsewhere).
    private func ancestors(of entity: EntityDescription) -> [EntityDescription] {
        var result: [EntityDescription] = []
        var seen: Set<String> = [entity.name]
        var current = entity.parentName
        while let name = current, let parent = entityIndex[name], seen.insert(name).inserted {
            result.append(parent)
            current = parent.parentName
        }
        return result
    }

    /// The property `name` of the entity, inherited ones included, the root's declaration first
    /// (as Core Data resolves a name a subentity redeclares, which is reported elsewhere).
    private func property(_ name: String, of entityName: String) -> Declared? {
        guard let entity = entityIndex[entityName] else { return nil }
        for owner in ancestors(of: entity).reversed() + [entity] {
            if let property = declared[owner.name]?[name] { return property }
        }
        return nil
    }

    private func relationship(_ name: String, of entityName: String) -> RelationshipDescription? {
        guard case .relationship(let relationship)? = property(name, of: entityName) else { return nil }
        return relationship
    }

    private func isKind(_ name: String, of ancestor: String) -> Bool {
        guard let entity = entityIndex[name] else { return false }
        return name == ancestor || ancestors(of: entity).contains { $0.name == ancestor }
    }

    private mutating func checkProperties(of entity: EntityDescription) {
        let ancestors = ancestors(of: entity)
        var own: Set<String> = []
        for name in entity.propertyNames {
            if name.isEmpty {
                report(entity: entity.name, "a property has an empty name")
            } else if !own.insert(name).inserted {
                report(entity: entity.name, property: name, "the entity declares '\(name)' more than once; property names must be unique")
            } else if let owner = ancestors.first(where: { declared[$0.name]?[name] != nil })?.name {
                report(entity: entity.name, property: name, "'\(name)' is already a property of parent entity '\(owner)'; a subentity cannot redeclare it")
            }
            if !name.isEmpty, let rule = Self.nameRule(broken: name, startsUppercase: false) {
                report(entity: entity.name, property: Self.shown(name), "property name '\(Self.shown(name))' breaks Xcode's rule for property names: \(rule)")
            }
            if Self.reservedPropertyNames.contains(name) {
                report(entity: entity.name, property: name, "'\(name)' is a reserved name in Core Data (it is a method of NSObject or NSManagedObject); rename the property")
            }
        }
        for attribute in entity.attributes {
            checkAttribute(attribute, of: entity)
        }
        for relationship in entity.relationships {
            checkRelationship(relationship, of: entity)
        }
        for fetched in entity.fetchedProperties where entityIndex[fetched.fetchRequest.entityName] == nil {
            report(entity: entity.name, property: fetched.name, "fetched property fetches entity '\(fetched.fetchRequest.entityName)', which is not in the model")
        }
    }

    private mutating func checkAttribute(_ attribute: AttributeDescription, of entity: EntityDescription) {
        let name = attribute.name
        if attribute.type == .undefined && !attribute.isTransient {
            report(entity: entity.name, property: name, "attribute type 'Undefined' is allowed only for transient attributes; choose a type or mark it transient")
        }
        if let value = attribute.defaultValue, !value.fits(attribute.type) {
            report(entity: entity.name, property: name, "default value '\(value.canonicalText)' is not a \(attribute.type.rawValue) value")
        }
        for (label, bound) in [("minimum", attribute.minValue), ("maximum", attribute.maxValue)] {
            guard let bound else { continue }
            guard let boundType = attribute.boundType else {
                report(entity: entity.name, property: name, "\(attribute.type.rawValue) attributes take no \(label)")
                continue
            }
            if !bound.fits(boundType) {
                report(entity: entity.name, property: name, "\(label) '\(bound.canonicalText)' is not a \(boundType == .integer64 && !attribute.type.isNumeric ? "length" : boundType.rawValue + " value")")
            }
        }
        if let low = attribute.minValue, let high = attribute.maxValue, let order = Self.compare(low, high), order > 0 {
            report(entity: entity.name, property: name, "minimum \(low.canonicalText) is greater than maximum \(high.canonicalText)")
        }
        if let pattern = attribute.regularExpression {
            if attribute.type != .string {
                report(entity: entity.name, property: name, "a regular expression applies only to String attributes, not \(attribute.type.rawValue)")
            } else {
                do { _ = try RegularExpression(pattern) } catch let error as RegularExpressionError {
                    report(entity: entity.name, property: name, "regular expression '\(pattern)' does not compile: \(error.reason) (at offset \(error.offset))")
                } catch {
                    report(entity: entity.name, property: name, "regular expression '\(pattern)' does not compile")
                }
            }
        }
    }

    private mutating func checkRelationship(_ relationship: RelationshipDescription, of entity: EntityDescription) {
        let name = relationship.name
        if relationship.isOrdered && !relationship.isToMany {
            report(entity: entity.name, property: name, "a to-one relationship cannot be ordered; make it to-many or clear 'ordered'")
        }
        if relationship.minCount < 0 || relationship.maxCount < 0 {
            report(entity: entity.name, property: name, "min and max counts cannot be negative")
        } else if relationship.maxCount > 0 && relationship.minCount > relationship.maxCount {
            report(entity: entity.name, property: name, "minimum count \(relationship.minCount) is greater than maximum count \(relationship.maxCount)")
        }
        if !relationship.isToMany && relationship.maxCount != 1 {
            report(entity: entity.name, property: name, "a to-one relationship has maximum count 1, not \(relationship.maxCount)")
        }
        let destination = relationship.destinationEntityName
        guard entityIndex[destination] != nil else {
            report(entity: entity.name, property: name, "destination entity '\(destination)' is not in the model")
            return
        }
        guard let inverseName = relationship.inverseName else { return }
        guard let inverse = self.relationship(inverseName, of: destination) else {
            report(entity: entity.name, property: name, "inverse '\(inverseName)' is not a relationship of destination entity '\(destination)'")
            return
        }
        if !isKind(entity.name, of: inverse.destinationEntityName) {
            report(entity: entity.name, property: name, "inverse '\(destination).\(inverseName)' leads to '\(inverse.destinationEntityName)', not back to '\(entity.name)'")
        } else if let back = inverse.inverseName, back != name {
            report(entity: entity.name, property: name, "inverse '\(destination).\(inverseName)' names '\(back)' as its inverse, not '\(name)'; the two must point at each other")
        }
    }

    private mutating func checkConstraintsAndIndexes(of entity: EntityDescription) {
        /// Whether `name` is an attribute or a relationship of the entity (a fetched property is neither).
        func isStored(_ name: String) -> Bool {
            switch property(name, of: entity.name) {
            case .attribute?, .relationship?: true
            case .fetched?, nil: false
            }
        }
        for constraint in entity.uniquenessConstraints {
            if constraint.isEmpty {
                report(entity: entity.name, "a uniqueness constraint lists no properties")
            }
            for name in constraint {
                switch property(name, of: entity.name) {
                case .attribute(let attribute)?:
                    if attribute.isTransient {
                        report(entity: entity.name, property: name, "uniqueness constraint names transient attribute '\(name)'; only stored properties can be unique")
                    }
                case .relationship(let relationship)?:
                    if relationship.isToMany {
                        report(entity: entity.name, property: name, "uniqueness constraint names to-many relationship '\(name)'; only attributes and to-one relationships can be unique")
                    }
                case .fetched?, nil:
                    report(entity: entity.name, property: name, "uniqueness constraint names '\(name)', which is not a property of the entity")
                }
            }
        }
        for index in entity.fetchIndexes {
            if index.name.isEmpty || index.name.utf8.contains(where: { !Self.isIdentifierByte($0) }) || index.name.utf8.first.map({ (0x30...0x39).contains($0) }) == true {
                report(entity: entity.name, "fetch index name '\(Self.shown(index.name))' must be letters, digits and underscores, not starting with a digit")
            }
            if index.elements.isEmpty {
                report(entity: entity.name, "fetch index '\(index.name)' has no elements")
            }
            for element in index.elements {
                if element.propertyName == nil && element.expression == nil {
                    report(entity: entity.name, "fetch index '\(index.name)' has an element with neither a property nor an expression")
                }
                if element.kind != "Binary" && element.kind != "RTree" {
                    report(entity: entity.name, "fetch index '\(index.name)' has element type '\(element.kind)'; expected Binary or RTree")
                }
                if let property = element.propertyName, !isStored(property) {
                    report(entity: entity.name, property: property, "fetch index '\(index.name)' names '\(property)', which is not a property of the entity")
                }
            }
        }
        for compound in entity.compoundIndexes {
            for property in compound where !isStored(property) {
                report(entity: entity.name, property: property, "compound index names '\(property)', which is not a property of the entity")
            }
        }
    }

    private mutating func checkTemplatesAndConfigurations() {
        var templateNames: Set<String> = []
        for template in fetchRequestTemplates {
            let line = sourceMap?.lines["fetchRequest:\(template.name)"]
            if !templateNames.insert(template.name).inserted {
                report(line: line, "fetch request template '\(template.name)' is declared more than once")
            }
            if entityIndex[template.entityName] == nil {
                report(line: line, "fetch request template '\(template.name)' fetches entity '\(template.entityName)', which is not in the model")
            }
        }
        var configurationNames: Set<String> = []
        for configuration in configurations {
            let line = sourceMap?.lines["configuration:\(configuration.name)"]
            if !configurationNames.insert(configuration.name).inserted {
                report(line: line, "configuration '\(configuration.name)' is declared more than once")
            }
            for member in configuration.entityNames where entityIndex[member] == nil {
                report(line: line, "configuration '\(configuration.name)' lists entity '\(member)', which is not in the model")
            }
        }
    }

    /// Orders two bounds of the same kind; nil when they cannot be compared.
    static func compare(_ a: AttributeValue, _ b: AttributeValue) -> Int? {
        switch (a, b) {
        case (.integer(let x), .integer(let y)): x == y ? 0 : (x < y ? -1 : 1)
        case (.double(let x), .double(let y)): x == y ? 0 : (x < y ? -1 : 1)
        case (.float(let x), .float(let y)): x == y ? 0 : (x < y ? -1 : 1)
        case (.decimal(let x), .decimal(let y)): x == y ? 0 : (x < y ? -1 : 1)
        case (.date(let x), .date(let y)): x == y ? 0 : (x < y ? -1 : 1)
        default: nil
        }
    }
}
