import Foundation

/// Lightweight (inferred) migration of a store from one model version to another, as Core
/// Data migrates a store on opening it: a SQLite store in place, with SQL, in one transaction;
/// an XML or binary store through its objects, written anew and renamed over the old file.
///
/// The mapping is inferred as Core Data infers it: entities and properties matched by their
/// renaming identifier (Xcode's "Renaming ID"; an unset one is the name), on both sides.
/// This first step covers what most app updates do, and refuses the rest with the entity,
/// the property and the rule, before anything is written:
/// - entities added or removed (references to a removed entity's objects cleared, their
///   many-to-many links removed); entities renamed (the store's `Z_PRIMARYKEY` keeps the old
///   name, as Core Data's does);
/// - attributes added (existing rows take the default), removed, renamed; optional made
///   required (rows without a value take the default; without one, refused when a row lacks a
///   value, as is a required attribute added without a default); Integer widened
///   (16 → 32 → 64, or to Decimal);
/// - to-one relationships added, removed, renamed; many-to-many relationships kept, added or
///   removed;
/// - indexes, uniqueness constraints and fetch indexes of the new version.
/// - entities renumbered (an entity added or renamed before others in name order): `Z_ENT`,
///   to-one entity columns, join tables named by number and `Z_PRIMARYKEY` follow the new
///   version's numbers; join tables of renamed many-to-many relationships are renamed.
/// - a to-one made an unordered to-many: its destination becomes its one link (on SQLite, when
///   the to-many is kept in a join table: many-to-many, or without an inverse).
/// - a to-many made ordered (members numbered in the order they were made, by primary key,
///   1024 apart as a save numbers them) or unordered (the order dropped).
/// - hierarchy changes: new parent or child entities, entities leaving a hierarchy, attributes
///   and to-one relationships moving up or down (rows move to their new hierarchy's table with
///   their keys; a new root's `Z_MAX` counts on from them).
/// Not yet (refused, naming the rule): merging two hierarchies (Core Data does not infer it),
/// a to-many relationship moving within its hierarchy, to-many → to-one, other type changes.
///
/// Primary keys, `Z_OPT`, `Z_MAX` and the store UUID are kept; the metadata's version hashes
/// and identifiers become the new version's, in the same transaction. A kill at any point
/// leaves the store at the old version or the new one, never between.
///
/// ```swift
/// let plan = try LightweightMigration(store: url, from: v1, to: v2)
/// print(plan.steps)          // what changes, per entity
/// try plan.run()
/// ```
public struct LightweightMigration: Sendable {
    public let url: URL
    public let source: ManagedObjectModel
    public let destination: ManagedObjectModel
    /// What the migration does, one line per change, for `--dry-run` and the summary.
    public private(set) var steps: [String] = []
    /// What the migration drops with its data: removed entities (with their objects), stored
    /// attributes and relationships, as `Entity` or `Entity.property` of the source.
    public private(set) var dropped: [String] = []

    /// Where each destination entity and property comes from, as the store type executes it.
    private(set) var mapping: InferredMapping

    /// Plans the migration of the SQLite store at `url`, made with `source`, to `destination`;
    /// throws `MigrationRefusal` naming what lightweight migration cannot carry.
    public init(store url: URL, from source: ManagedObjectModel, to destination: ManagedObjectModel) throws {
        try self.init(planning: url, from: source, to: destination)
        guard refusals.isEmpty else { throw MigrationRefusal(store: url.path, reasons: refusals) }
    }

    /// Plans the migration whether or not it can be carried: `refusals` says what cannot, and
    /// the maps say what would be matched (a staged migration compares two plans).
    init(planning url: URL, from source: ManagedObjectModel, to destination: ManagedObjectModel, origins: Origins = Origins()) throws {
        self.url = url
        self.origins = origins
        self.source = source
        self.destination = destination
        storeType = try StoreType(locationOf: url) ?? StoreType(detectingFileAt: url)
        mapping = InferredMapping(from: source, to: destination)
        plan()
    }

    /// What lightweight migration cannot carry, one reason each; empty when it can run.
    private(set) var refusals: [String] = []
    /// Where destination entities and properties come from in the source, decided before
    /// renaming identifiers are matched: the renames a chain of versions declares, for a
    /// migration inferred directly between its ends (`StagedMigration`).
    struct Origins: Sendable {
        /// Destination entity → source entity.
        var entities: [String: String] = [:]
        /// Destination entity → (destination property → source property).
        var attributes: [String: [String: String]] = [:]
        var relationships: [String: [String: String]] = [:]
    }
    private let origins: Origins

    /// SQLite stores migrate with SQL in place; XML and binary stores through their objects and
    /// the atomic writer (the file replaced whole, or not at all).
    public let storeType: StoreType

    private static func identifier(_ entity: EntityDescription) -> String { entity.renamingIdentifier ?? entity.name }

    /// The root of `entity`'s hierarchy.
    private static func root(of entity: String, in model: ManagedObjectModel) -> String {
        var name = entity
        while let parent = model.entity(named: name)?.parentName { name = parent }
        return name
    }

    private mutating func plan() {
        var refusals: [String] = []
        var inverseMadeToMany: [(join: String, place: String)] = []
        let sourceByIdentifier = Dictionary(source.entities.map { (Self.identifier($0), $0) }, uniquingKeysWith: { first, _ in first })
        var matchedSources: Set<String> = []
        for entity in destination.entities {
            // By the origin given, then as Core Data infers (equal renaming identifiers, an unset
            // one being the name), then by name, then a renaming identifier naming an entity of
            // the source by its name (a rename of a rename: Xcode's Renaming ID is usually set
            // to the name in the version before, whose own identifier is an older name).
            guard let old = origins.entities[entity.name].flatMap(source.entity(named:)) ?? sourceByIdentifier[Self.identifier(entity)]
                    ?? source.entity(named: entity.name) ?? entity.renamingIdentifier.flatMap(source.entity(named:)) else {
                steps.append("\(entity.name): added")
                continue
            }
            mapping.entityMap[entity.name] = old.name
            matchedSources.insert(old.name)
            if old.name != entity.name { steps.append("\(entity.name): renamed from \(old.name)") }
        }
        for entity in source.entities where !matchedSources.contains(entity.name) {
            steps.append("\(entity.name): removed, with its objects")
            dropped.append(entity.name)
        }
        // Hierarchies: entities may get a new parent or child, or leave a hierarchy, with their
        // properties moving up and down; each new hierarchy's objects must come from one old one
        // (merging two hierarchies is not inferred, as Core Data does not infer it).
        for root in destination.entities where root.parentName == nil {
            let kept = destination.hierarchy(from: root.name).compactMap { entity in mapping.entityMap[entity.name].map { (entity.name, $0) } }
            let oldRoots = Set(kept.map { Self.root(of: $0.1, in: source) })
            if oldRoots.count > 1 {
                refusals.append("entity \(root.name): its hierarchy would merge the objects of \(oldRoots.sorted().joined(separator: " and ")), two hierarchies before; merging hierarchies is not inferred (use a mapping model)")
            }
            for (new, old) in kept {
                let newParent = destination.entity(named: new)!.parentName, oldParent = source.entity(named: old)!.parentName
                if newParent.flatMap({ mapping.entityMap[$0] }) != oldParent || (newParent != nil) != (oldParent != nil) {
                    steps.append("\(new): parent \(oldParent ?? "none") → \(newParent ?? "none")")
                }
            }
        }
        // Entity numbers: the new version's (an entity added or renamed before another in
        // name order moves it): Z_ENT values, to-one entity columns, join tables named by
        // number and Z_PRIMARYKEY follow.
        for (new, old) in mapping.entityMap.sorted(by: { $0.key < $1.key }) where storeType.keepsTableLayout {
            let newNumber = mapping.destinationSchema.entity(named: new)!.number, oldNumber = mapping.sourceSchema.entity(named: old)!.number
            mapping.numberMap[oldNumber] = newNumber
            if newNumber != oldNumber { steps.append("\(new): entity number \(oldNumber) → \(newNumber)") }
        }
        // Properties, per kept entity, its inherited ones included (a property may move up or
        // down its hierarchy); each message once.
        var said: Set<String> = []
        func step(_ text: String) { if said.insert(text).inserted { steps.append(text) } }
        func refuse(_ text: String) { if said.insert(text).inserted { refusals.append(text) } }
        for entity in destination.entities {
            guard let oldName = mapping.entityMap[entity.name], let old = source.entity(named: oldName) else { continue }
            let oldAll = source.attributes(of: old.name).filter { !$0.isTransient }
            let oldAttributes = Dictionary(oldAll.map { ($0.renamingIdentifier ?? $0.name, $0) }, uniquingKeysWith: { first, _ in first })
            var seen: Set<String> = []
            for attribute in destination.attributes(of: entity.name) where !attribute.isTransient && attribute.type != .undefined {
                let place = "\(TableLayout.declaringEntity(of: attribute.name, from: entity.name, in: destination) ?? entity.name).\(attribute.name)"
                let origin = origins.attributes[entity.name]?[attribute.name]
                guard let previous = origin.flatMap({ name in oldAll.first { $0.name == name } }) ?? oldAttributes[attribute.renamingIdentifier ?? attribute.name]
                        ?? oldAll.first(where: { $0.name == attribute.name }) ?? oldAll.first(where: { $0.name == attribute.renamingIdentifier }) else {
                    if !attribute.isOptional && attribute.defaultValue == nil {
                        // Core Data's inferred mapping carries it while there is no object to lack it.
                        mapping.requiredWithoutValue.insert(place)
                        step("\(place): added as required without a default value; refused if there are objects, which would have none")
                        continue
                    }
                    if storeType == .sqlite, attribute.isKeptExternally, attribute.defaultValue != nil {
                        refuse("attribute \(place): added with a default value and external storage (allowsExternalBinaryDataStorage), which lightweight migration does not write into a SQLite store's existing objects: add it without a default, or use a mapping model")
                        continue
                    }
                    step("\(place): added" + (attribute.defaultValue.map { ", existing objects take \($0.canonicalText)" } ?? ""))
                    continue
                }
                seen.insert(previous.name)
                mapping.attributeMap[entity.name, default: [:]][attribute.name] = previous.name
                if previous.name != attribute.name { step("\(place): renamed from \(previous.name)") }
                if previous.type != attribute.type {
                    // Integer widening, and Integer → Decimal, which Core Data infers in practice
                    // (SQLite keeps the integers as they are in the DECIMAL column, exactly).
                    let widening: [AttributeType: [AttributeType]] = [.integer16: [.integer32, .integer64, .decimal], .integer32: [.integer64, .decimal], .integer64: [.decimal]]
                    if widening[previous.type]?.contains(attribute.type) == true {
                        step("\(place): widened from \(previous.type.rawValue) to \(attribute.type.rawValue)")
                    } else {
                        refuse("attribute \(place): its type changes from \(previous.type.rawValue) to \(attribute.type.rawValue), which lightweight migration does not convert (Integer widening and Integer → Decimal only); use a mapping model")
                    }
                }
                if storeType == .sqlite, previous.isKeptExternally != attribute.isKeptExternally {
                    // The column holds Core Data's external form (a marker, files) or the bytes themselves.
                    refuse("attribute \(place): \(attribute.isKeptExternally ? "allows" : "no longer allows") external storage (allowsExternalBinaryDataStorage), which changes how a SQLite store keeps every value of it; lightweight migration does not rewrite them: use a mapping model (which writes a new store), or keep the setting")
                }
                if previous.isOptional && !attribute.isOptional {
                    if attribute.defaultValue == nil {
                        // As Core Data's inferred mapping: only objects without a value fail.
                        mapping.requiredWithoutValue.insert(place)
                        step("\(place): made required without a default value; refused if objects have no value")
                    } else {
                        step("\(place): made required; objects without a value take \(attribute.defaultValue!.canonicalText)")
                    }
                }
            }
            // A constraint the old version did not have (by the old names of its attributes):
            // its unique index is built, or the migration refused if objects share its values.
            for constraint in entity.uniquenessConstraints where !constraint.isEmpty {
                let oldNames = constraint.map { mapping.attributeMap[entity.name]?[$0] ?? mapping.relationshipMap[entity.name]?[$0] ?? "" }
                if !old.uniquenessConstraints.contains(oldNames) {
                    step("\(entity.name): uniqueness constraint (\(constraint.joined(separator: ", "))) added; refused if objects share its values")
                }
            }
            for attribute in oldAll where !seen.contains(attribute.name) {
                let place = "\(TableLayout.declaringEntity(of: attribute.name, from: old.name, in: source) ?? old.name).\(attribute.name)"
                if !dropped.contains(place) { dropped.append(place) }
                step("\(place): removed")
            }
            let oldAllRelationships = source.relationships(of: old.name).filter { !$0.isTransient }
            let oldRelationships = Dictionary(oldAllRelationships.map { ($0.renamingIdentifier ?? $0.name, $0) }, uniquingKeysWith: { first, _ in first })
            var seenRelationships: Set<String> = []
            for relationship in destination.relationships(of: entity.name) where !relationship.isTransient {
                let declaring = TableLayout.declaringEntity(of: relationship.name, from: entity.name, in: destination) ?? entity.name
                let place = "\(declaring).\(relationship.name)"
                let origin = origins.relationships[entity.name]?[relationship.name]
                guard let previous = origin.flatMap({ name in oldAllRelationships.first { $0.name == name } }) ?? oldRelationships[relationship.renamingIdentifier ?? relationship.name]
                        ?? oldAllRelationships.first(where: { $0.name == relationship.name }) ?? oldAllRelationships.first(where: { $0.name == relationship.renamingIdentifier }) else {
                    if !relationship.isOptional && !relationship.isToMany {
                        refuse("relationship \(place): added as required, so existing objects would have none")
                    }
                    step("\(place): added")
                    continue
                }
                seenRelationships.insert(previous.name)
                mapping.relationshipMap[entity.name, default: [:]][relationship.name] = previous.name
                // Inherited: planned where it is declared, unless it moved within the hierarchy,
                // which a to-one may (its key column is read per entity); a to-many's join table
                // or inverse key would have to move with it.
                let oldDeclaring = TableLayout.declaringEntity(of: previous.name, from: old.name, in: source) ?? old.name
                if mapping.entityMap[declaring] != oldDeclaring {
                    if relationship.isToMany || previous.isToMany {
                        refuse("relationship \(place): a to-many relationship moves within its hierarchy (declared in \(oldDeclaring) before); not migrated yet")
                    } else if mapping.entityMap[relationship.destinationEntityName] != previous.destinationEntityName {
                        refuse("relationship \(place): its destination changes (\(previous.destinationEntityName) → \(relationship.destinationEntityName))")
                    } else {
                        step("\(place): moved from \(oldDeclaring).\(previous.name)")
                    }
                    continue
                }
                if declaring != entity.name { continue }
                if previous.isToMany && relationship.isToMany && previous.isOrdered != relationship.isOrdered {
                    // Ordering changes: an order made from the primary keys (the order the
                    // objects were made), or dropped; the join table or key column follows below.
                    steps.append(relationship.isOrdered ? "\(place): made ordered, members numbered in the order they were made (primary key)"
                                                        : "\(place): made unordered, the order dropped")
                } else if previous.isToMany != relationship.isToMany || previous.isOrdered != relationship.isOrdered {
                    // To-one made an unordered to-many kept in a join table (many-to-many, or no
                    // inverse): each object's one destination becomes its one link.
                    if !previous.isToMany, relationship.isToMany, !relationship.isOrdered,
                       mapping.entityMap[relationship.destinationEntityName] == previous.destinationEntityName {
                        if !storeType.keepsTableLayout {
                            // An atomic store's object keeps its destination as its one member.
                            steps.append("\(place): to-one made to-many, each object's \(previous.name) its one member")
                            continue
                        }
                        if let join = mapping.destinationSchema.joinTable(for: .init(entity: entity.name, name: relationship.name)),
                           let declaring = TableLayout.declaringEntity(of: previous.name, from: old.name, in: source),
                           let column = mapping.sourceSchema.columnName(for: .toOne(entity: declaring, name: previous.name)) {
                            mapping.keyJoins[join.name] = (mapping.sourceSchema.entity(named: old.name)!.tableName, column,
                                                   mapping.sourceSchema.entityNumbers(from: old.name, in: source),
                                                   join.relationship == .init(entity: entity.name, name: relationship.name))
                            mapping.relationshipMap[entity.name, default: [:]][relationship.name] = nil
                            steps.append("\(place): to-one made to-many, each object's \(previous.name) its one link (join table \(join.name))")
                            continue
                        }
                        if let owner = mapping.destinationSchema.ownerKey(for: .init(entity: entity.name, name: relationship.name)),
                           let declaring = TableLayout.declaringEntity(of: previous.name, from: old.name, in: source),
                           let column = mapping.sourceSchema.columnName(for: .toOne(entity: declaring, name: previous.name)) {
                            // Without an inverse, the destination's owner column keeps it: refused
                            // when objects share a destination (`InferredMapping.refuseSharedOwners`).
                            mapping.ownerFills[owner.relationship] = (mapping.sourceSchema.entity(named: old.name)!.tableName, column,
                                                                      mapping.sourceSchema.entityNumbers(from: old.name, in: source))
                            mapping.relationshipMap[entity.name, default: [:]][relationship.name] = nil
                            steps.append("\(place): to-one made to-many, each object's \(previous.name) its one member (owner column \(owner.table).\(owner.column))")
                            continue
                        }
                    }
                    refusals.append("relationship \(place): changes between to-one, to-many and ordered" + (previous.isToMany && !relationship.isToMany
                        ? " (to-many to to-one would keep one destination of several)" : relationship.isToMany && !relationship.isOrdered && storeType.keepsTableLayout
                        ? " (a to-one made to-many is carried when the to-many is kept in a join table; here its inverse would hold the key)" : "") + "; not migrated yet")
                    continue
                }
                if mapping.entityMap[relationship.destinationEntityName] != previous.destinationEntityName {
                    refusals.append("relationship \(place): its destination changes (\(previous.destinationEntityName) → \(relationship.destinationEntityName))")
                    continue
                }
                if !previous.isToMany || !storeType.keepsTableLayout {
                    // A to-one's key column is read through `mapping.relationshipMap`; an atomic store
                    // keeps both sides of every relationship by name: nothing more to plan.
                } else if let newJoin = mapping.destinationSchema.joinTable(for: .init(entity: entity.name, name: relationship.name)),
                          let oldJoin = mapping.sourceSchema.joinTable(for: .init(entity: old.name, name: previous.name)) {
                    // A renamed relationship or a renumbered entity renames the join table: its rows
                    // are copied, column by column, whichever side names the old one.
                    let aligned = (oldJoin.relationship == .init(entity: old.name, name: previous.name))
                        == (newJoin.relationship == .init(entity: entity.name, name: relationship.name))
                    mapping.joinMap[newJoin.name] = (oldJoin, aligned)
                    if oldJoin.name != newJoin.name { steps.append("\(place): join table \(oldJoin.name) → \(newJoin.name)") }
                } else if (destination.inverse(of: relationship)?.isToMany ?? false) != (source.inverse(of: previous)?.isToMany ?? false) {
                    // Carried when the inverse is a to-one made to-many (its key fills the join table).
                    if let join = mapping.destinationSchema.joinTable(for: .init(entity: entity.name, name: relationship.name)) {
                        inverseMadeToMany.append((join.name, place))
                    } else {
                        refusals.append("relationship \(place): its inverse changes between to-one and to-many; not migrated yet")
                    }
                }
                if previous.name != relationship.name { steps.append("\(place): renamed from \(previous.name)") }
                if previous.isOptional && !relationship.isOptional && !relationship.isToMany {
                    refusals.append("relationship \(place): made required; objects without one could not be migrated")
                }
            }
            for relationship in oldAllRelationships where !seenRelationships.contains(relationship.name) {
                let place = "\(TableLayout.declaringEntity(of: relationship.name, from: old.name, in: source) ?? old.name).\(relationship.name)"
                if !dropped.contains(place) { dropped.append(place) }
                step("\(place): removed")
            }
        }
        for (join, place) in inverseMadeToMany where mapping.keyJoins[join] == nil {
            refusals.append("relationship \(place): its inverse changes between to-one and to-many; not migrated yet")
        }
        self.refusals = refusals
        if steps.isEmpty { steps.append("no change to the stored layout (indexes and metadata only)") }
    }

    /// Migrates the store: SQLite in one transaction, XML and binary by writing the whole file
    /// anew beside the old one and renaming it over; a failure leaves it as it was. The store
    /// type executes what was planned (`StoreType.executeLightweightMigration`).
    ///
    /// `progress` is told what the migration is doing (a table being rebuilt, with its rows;
    /// the file being written), for a progress line.
    public func run(progress: (@Sendable (String) -> Void)? = nil) throws {
        do {
            try storeType.executeLightweightMigration(mapping, at: url, progress: progress)
        } catch let refusal as InferredMapping.Refusal {
            throw MigrationRefusal(store: url.path, reasons: refusal.reasons)
        }
    }
}

/// What lightweight migration cannot carry, every reason at once, before anything is written.
public struct MigrationRefusal: LadeError, Sendable {
    public let store: String
    public let reasons: [String]
    public var code: String { "migration.refused" }

    /// Whether the refusal is of a mapping model's (else of lightweight migration's rules).
    public let byMapping: Bool

    package init(store: String, reasons: [String], mapping: Bool = false) {
        self.store = store
        self.reasons = reasons
        self.byMapping = mapping
    }
    public var description: String {
        "\(store): " + (byMapping ? "the mapping model" : "lightweight migration")
            + " cannot carry this store to the new version, nothing was changed: " + reasons.joined(separator: "; ")
    }
}
