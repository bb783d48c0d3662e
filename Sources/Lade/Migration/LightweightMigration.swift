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

    private let sourceSchema: SQLiteSchema
    private let destinationSchema: SQLiteSchema
    /// Destination entity → source entity, for entities that existed before.
    private(set) var entityMap: [String: String] = [:]
    /// (destination entity, destination attribute) → source attribute, where it existed.
    private(set) var attributeMap: [String: [String: String]] = [:]
    /// (destination entity, destination relationship) → source relationship.
    private(set) var relationshipMap: [String: [String: String]] = [:]
    /// Destination join table → source join table, for many-to-many relationships kept, and
    /// whether the two name the same side's column first (else the columns swap).
    private var joinMap: [String: (table: SQLiteSchema.JoinTable, aligned: Bool)] = [:]
    /// Source entity number → destination entity number, for entities kept (SQLite).
    private var numberMap: [Int64: Int64] = [:]
    /// Destination join tables filled from a to-one's key column (a to-one made to-many): the
    /// old table, its key column, the entity numbers whose rows hold the relationship, and
    /// whether the join table is named after that relationship (its objects' keys go in the
    /// source column) or after the inverse.
    private var keyJoins: [String: (table: String, column: String, entities: [Int64], namedHere: Bool)] = [:]

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
        storeType = try PersistentStoreCoordinator.StoreType(detectingFileAt: url)
        sourceSchema = SQLiteSchema(model: source)
        destinationSchema = SQLiteSchema(model: destination)
        plan()
    }

    /// What lightweight migration cannot carry, one reason each; empty when it can run.
    private(set) var refusals: [String] = []
    /// Required attributes without a default that objects may lack after the migration
    /// (`Entity.attribute`, by the declaring entity): added, or made required. The migration is
    /// refused when an object lacks one, as Core Data's validation of the new objects refuses it.
    private var requiredWithoutValue: Set<String> = []

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
    public let storeType: PersistentStoreCoordinator.StoreType

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
            entityMap[entity.name] = old.name
            matchedSources.insert(old.name)
            if old.name != entity.name { steps.append("\(entity.name): renamed from \(old.name)") }
        }
        for entity in source.entities where !matchedSources.contains(entity.name) {
            steps.append("\(entity.name): removed, with its objects")
        }
        // Hierarchies: entities may get a new parent or child, or leave a hierarchy, with their
        // properties moving up and down; each new hierarchy's objects must come from one old one
        // (merging two hierarchies is not inferred, as Core Data does not infer it).
        for root in destination.entities where root.parentName == nil {
            let kept = destination.hierarchy(from: root.name).compactMap { entity in entityMap[entity.name].map { (entity.name, $0) } }
            let oldRoots = Set(kept.map { Self.root(of: $0.1, in: source) })
            if oldRoots.count > 1 {
                refusals.append("entity \(root.name): its hierarchy would merge the objects of \(oldRoots.sorted().joined(separator: " and ")), two hierarchies before; merging hierarchies is not inferred (use a mapping model)")
            }
            for (new, old) in kept {
                let newParent = destination.entity(named: new)!.parentName, oldParent = source.entity(named: old)!.parentName
                if newParent.flatMap({ entityMap[$0] }) != oldParent || (newParent != nil) != (oldParent != nil) {
                    steps.append("\(new): parent \(oldParent ?? "none") → \(newParent ?? "none")")
                }
            }
        }
        // Entity numbers: the new version's (an entity added or renamed before another in
        // name order moves it): Z_ENT values, to-one entity columns, join tables named by
        // number and Z_PRIMARYKEY follow.
        for (new, old) in entityMap.sorted(by: { $0.key < $1.key }) where storeType == .sqlite {
            let newNumber = destinationSchema.entity(named: new)!.number, oldNumber = sourceSchema.entity(named: old)!.number
            numberMap[oldNumber] = newNumber
            if newNumber != oldNumber { steps.append("\(new): entity number \(oldNumber) → \(newNumber)") }
        }
        // Properties, per kept entity, its inherited ones included (a property may move up or
        // down its hierarchy); each message once.
        var said: Set<String> = []
        func step(_ text: String) { if said.insert(text).inserted { steps.append(text) } }
        func refuse(_ text: String) { if said.insert(text).inserted { refusals.append(text) } }
        for entity in destination.entities {
            guard let oldName = entityMap[entity.name], let old = source.entity(named: oldName) else { continue }
            let oldAll = source.attributes(of: old.name).filter { !$0.isTransient }
            let oldAttributes = Dictionary(oldAll.map { ($0.renamingIdentifier ?? $0.name, $0) }, uniquingKeysWith: { first, _ in first })
            var seen: Set<String> = []
            for attribute in destination.attributes(of: entity.name) where !attribute.isTransient && attribute.type != .undefined {
                let place = "\(SQLiteSchema.declaringEntity(of: attribute.name, from: entity.name, in: destination) ?? entity.name).\(attribute.name)"
                let origin = origins.attributes[entity.name]?[attribute.name]
                guard let previous = origin.flatMap({ name in oldAll.first { $0.name == name } }) ?? oldAttributes[attribute.renamingIdentifier ?? attribute.name]
                        ?? oldAll.first(where: { $0.name == attribute.name }) ?? oldAll.first(where: { $0.name == attribute.renamingIdentifier }) else {
                    if !attribute.isOptional && attribute.defaultValue == nil {
                        // Core Data's inferred mapping carries it while there is no object to lack it.
                        requiredWithoutValue.insert(place)
                        step("\(place): added as required without a default value; refused if there are objects, which would have none")
                        continue
                    }
                    step("\(place): added" + (attribute.defaultValue.map { ", existing objects take \($0.canonicalText)" } ?? ""))
                    continue
                }
                seen.insert(previous.name)
                attributeMap[entity.name, default: [:]][attribute.name] = previous.name
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
                if previous.isOptional && !attribute.isOptional {
                    if attribute.defaultValue == nil {
                        // As Core Data's inferred mapping: only objects without a value fail.
                        requiredWithoutValue.insert(place)
                        step("\(place): made required without a default value; refused if objects have no value")
                    } else {
                        step("\(place): made required; objects without a value take \(attribute.defaultValue!.canonicalText)")
                    }
                }
            }
            // A constraint the old version did not have (by the old names of its attributes):
            // its unique index is built, or the migration refused if objects share its values.
            for constraint in entity.uniquenessConstraints where !constraint.isEmpty {
                let oldNames = constraint.map { attributeMap[entity.name]?[$0] ?? relationshipMap[entity.name]?[$0] ?? "" }
                if !old.uniquenessConstraints.contains(oldNames) {
                    step("\(entity.name): uniqueness constraint (\(constraint.joined(separator: ", "))) added; refused if objects share its values")
                }
            }
            for attribute in oldAll where !seen.contains(attribute.name) {
                step("\(SQLiteSchema.declaringEntity(of: attribute.name, from: old.name, in: source) ?? old.name).\(attribute.name): removed")
            }
            let oldAllRelationships = source.relationships(of: old.name).filter { !$0.isTransient }
            let oldRelationships = Dictionary(oldAllRelationships.map { ($0.renamingIdentifier ?? $0.name, $0) }, uniquingKeysWith: { first, _ in first })
            var seenRelationships: Set<String> = []
            for relationship in destination.relationships(of: entity.name) where !relationship.isTransient {
                let declaring = SQLiteSchema.declaringEntity(of: relationship.name, from: entity.name, in: destination) ?? entity.name
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
                relationshipMap[entity.name, default: [:]][relationship.name] = previous.name
                // Inherited: planned where it is declared, unless it moved within the hierarchy,
                // which a to-one may (its key column is read per entity); a to-many's join table
                // or inverse key would have to move with it.
                let oldDeclaring = SQLiteSchema.declaringEntity(of: previous.name, from: old.name, in: source) ?? old.name
                if entityMap[declaring] != oldDeclaring {
                    if relationship.isToMany || previous.isToMany {
                        refuse("relationship \(place): a to-many relationship moves within its hierarchy (declared in \(oldDeclaring) before); not migrated yet")
                    } else if entityMap[relationship.destinationEntityName] != previous.destinationEntityName {
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
                       entityMap[relationship.destinationEntityName] == previous.destinationEntityName {
                        if storeType != .sqlite {
                            // An atomic store's object keeps its destination as its one member.
                            steps.append("\(place): to-one made to-many, each object's \(previous.name) its one member")
                            continue
                        }
                        if let join = destinationSchema.joinTable(for: .init(entity: entity.name, name: relationship.name)),
                           let declaring = SQLiteSchema.declaringEntity(of: previous.name, from: old.name, in: source),
                           let column = sourceSchema.columnName(for: .toOne(entity: declaring, name: previous.name)) {
                            keyJoins[join.name] = (sourceSchema.entity(named: old.name)!.tableName, column,
                                                   sourceSchema.entityNumbers(from: old.name, in: source),
                                                   join.relationship == .init(entity: entity.name, name: relationship.name))
                            relationshipMap[entity.name, default: [:]][relationship.name] = nil
                            steps.append("\(place): to-one made to-many, each object's \(previous.name) its one link (join table \(join.name))")
                            continue
                        }
                    }
                    refusals.append("relationship \(place): changes between to-one, to-many and ordered" + (previous.isToMany && !relationship.isToMany
                        ? " (to-many to to-one would keep one destination of several)" : relationship.isToMany && !relationship.isOrdered && storeType == .sqlite
                        ? " (a to-one made to-many is carried when the to-many is kept in a join table; here its inverse would hold the key)" : "") + "; not migrated yet")
                    continue
                }
                if entityMap[relationship.destinationEntityName] != previous.destinationEntityName {
                    refusals.append("relationship \(place): its destination changes (\(previous.destinationEntityName) → \(relationship.destinationEntityName))")
                    continue
                }
                if !previous.isToMany || storeType != .sqlite {
                    // A to-one's key column is read through `relationshipMap`; an atomic store
                    // keeps both sides of every relationship by name: nothing more to plan.
                } else if let newJoin = destinationSchema.joinTable(for: .init(entity: entity.name, name: relationship.name)),
                          let oldJoin = sourceSchema.joinTable(for: .init(entity: old.name, name: previous.name)) {
                    // A renamed relationship or a renumbered entity renames the join table: its rows
                    // are copied, column by column, whichever side names the old one.
                    let aligned = (oldJoin.relationship == .init(entity: old.name, name: previous.name))
                        == (newJoin.relationship == .init(entity: entity.name, name: relationship.name))
                    joinMap[newJoin.name] = (oldJoin, aligned)
                    if oldJoin.name != newJoin.name { steps.append("\(place): join table \(oldJoin.name) → \(newJoin.name)") }
                } else if (destination.inverse(of: relationship)?.isToMany ?? false) != (source.inverse(of: previous)?.isToMany ?? false) {
                    // Carried when the inverse is a to-one made to-many (its key fills the join table).
                    if let join = destinationSchema.joinTable(for: .init(entity: entity.name, name: relationship.name)) {
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
                step("\(SQLiteSchema.declaringEntity(of: relationship.name, from: old.name, in: source) ?? old.name).\(relationship.name): removed")
            }
        }
        for (join, place) in inverseMadeToMany where keyJoins[join] == nil {
            refusals.append("relationship \(place): its inverse changes between to-one and to-many; not migrated yet")
        }
        self.refusals = refusals
        if steps.isEmpty { steps.append("no change to the stored layout (indexes and metadata only)") }
    }

    /// Migrates the store: SQLite in one transaction, XML and binary by writing the whole file
    /// anew beside the old one and renaming it over; a failure leaves it as it was.
    ///
    /// `progress` is told what the migration is doing (a table being rebuilt, with its rows;
    /// the file being written), for a progress line.
    public func run(progress: (@Sendable (String) -> Void)? = nil) throws {
        if let format = storeType.atomicFileFormat {
            progress?("rewriting \(url.lastPathComponent) (\(format.storeType))")
            return try runAtomic(format)
        }
        // Rows of no entity, or keys to missing objects, would be dropped or carried as they
        // are: a damaged store is refused before anything is written (`lade check` says where).
        let damage = try SQLiteStore(url: url, model: source, readOnly: true).damage(thorough: false)
        guard damage.isEmpty else { throw StoreError.damaged(damage, path: url.path) }
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
        } catch let error as SQLiteError {
            throw StoreError(path: url.path, sqlite: error)
        }
        do {
            try connection.transaction {
                try migrate(connection, progress: progress)
            }
            _ = try connection.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch let error as SQLiteError {
            throw StoreError(path: url.path, sqlite: error)
        }
    }

    private func migrate(_ connection: SQLiteConnection, progress: (@Sendable (String) -> Void)?) throws {
        let oldTables = try connection.tableNames()
        // Links of to-ones made to-many, read from their key columns before the tables go.
        for join in destinationSchema.joinTables {
            guard let source = keyJoins[join.name] else { continue }
            let (mine, theirs) = source.namedHere ? (join.sourceColumn, join.destinationColumn) : (join.destinationColumn, join.sourceColumn)
            let staging = SQLiteSchema.quoted("\(join.name)_LADE_MIGRATING")
            try connection.execute("CREATE TABLE \(staging) ( \(SQLiteSchema.quoted(join.sourceColumn)) INTEGER, \(SQLiteSchema.quoted(join.destinationColumn)) INTEGER )")
            guard oldTables.contains(source.table) else { continue }
            try connection.execute("INSERT INTO \(staging) (\(SQLiteSchema.quoted(mine)), \(SQLiteSchema.quoted(theirs))) SELECT Z_PK, \(SQLiteSchema.quoted(source.column)) FROM \(SQLiteSchema.quoted(source.table)) WHERE \(SQLiteSchema.quoted(source.column)) IS NOT NULL AND Z_ENT IN (\(source.entities.map(String.init).joined(separator: ", ")))")
        }
        // Entity tables: each hierarchy's table rebuilt with the new columns.
        for table in destinationSchema.tables {
            let root = table.rootEntity
            // The one old table this hierarchy's objects come from (the plan refuses two).
            let oldTable = destination.hierarchy(from: root).lazy.compactMap { self.entityMap[$0.name] }.first
                .flatMap { sourceSchema.entity(named: $0)?.tableName }
            let temporary = "\(table.name)_LADE_MIGRATING"
            try connection.execute("CREATE TABLE \(SQLiteSchema.quoted(temporary)) ( " + table.columns.map { "\(SQLiteSchema.quoted($0.name)) \($0.declaredType)" }.joined(separator: ", ") + " )")
            if let oldTable, oldTables.contains(oldTable) {
                if let progress, case .integer(let rows)? = try connection.rows("SELECT COUNT(*) FROM \(SQLiteSchema.quoted(oldTable))").first?.first {
                    progress("rebuilding \(table.name) (\(rows) rows)")
                }
                var targets: [String] = []
                var sources: [String] = []
                for column in table.columns {
                    targets.append(SQLiteSchema.quoted(column.name))
                    sources.append(try sourceExpression(for: column))
                }
                // Rows of entities that were removed go with them.
                let kept = destination.hierarchy(from: root).compactMap { entityMap[$0.name] }.map { String(sourceSchema.entity(named: $0)!.number) }
                try connection.execute("INSERT INTO \(SQLiteSchema.quoted(temporary)) (\(targets.joined(separator: ", "))) SELECT \(sources.joined(separator: ", ")) FROM \(SQLiteSchema.quoted(oldTable)) WHERE Z_ENT IN (\(kept.isEmpty ? "NULL" : kept.joined(separator: ", ")))")
            }
        }
        // Old entity tables, join tables of relationships not kept, every index: dropped.
        for table in sourceSchema.tables where oldTables.contains(table.name) {
            try connection.execute("DROP TABLE \(SQLiteSchema.quoted(table.name))")
        }
        for index in sourceSchema.indexes {
            try connection.execute("DROP INDEX IF EXISTS \(SQLiteSchema.quoted(index.name))")
        }
        // The new tables under their own names, created as a new store's are (the schema text is
        // Core Data's, not a renamed table's), then filled from the staging copies.
        for table in destinationSchema.tables {
            let staging = SQLiteSchema.quoted("\(table.name)_LADE_MIGRATING")
            try connection.execute(destinationSchema.createStatements.first { $0.hasPrefix("CREATE TABLE \(SQLiteSchema.quoted(table.name)) ") }!)
            try connection.execute("INSERT INTO \(SQLiteSchema.quoted(table.name)) SELECT * FROM \(staging)")
            try connection.execute("DROP TABLE \(staging)")
        }
        // Join tables: kept ones stay as they are when nothing about them changes; renamed
        // ones (a renamed relationship, a renumbered entity) are copied through staging tables
        // (a new name may be an old one's); others go, new ones are created.
        var copiedJoins = destinationSchema.joinTables.filter { keyJoins[$0.name] != nil }
        var keptJoins: Set<String> = []
        for join in destinationSchema.joinTables where keyJoins[join.name] == nil {
            guard let (old, aligned) = joinMap[join.name] else { continue }
            if old == join && aligned { keptJoins.insert(old.name); continue }
            let pairs = Self.joinColumns(join, from: old, aligned: aligned)
            let staging = SQLiteSchema.quoted("\(join.name)_LADE_MIGRATING")
            try connection.execute("CREATE TABLE \(staging) ( " + pairs.map { "\(SQLiteSchema.quoted($0.new)) INTEGER" }.joined(separator: ", ") + " )")
            if oldTables.contains(old.name) {
                try connection.execute("INSERT INTO \(staging) (\(pairs.map { SQLiteSchema.quoted($0.new) }.joined(separator: ", "))) SELECT \(pairs.map { $0.old ?? "NULL" }.joined(separator: ", ")) FROM \(SQLiteSchema.quoted(old.name))")
            }
            copiedJoins.append(join)
        }
        for join in sourceSchema.joinTables where oldTables.contains(join.name) && !keptJoins.contains(join.name) {
            try connection.execute("DROP TABLE \(SQLiteSchema.quoted(join.name))")
        }
        for join in destinationSchema.joinTables where !keptJoins.contains(join.name) {
            try connection.execute(destinationSchema.createStatements.first { $0.hasPrefix("CREATE TABLE \(SQLiteSchema.quoted(join.name)) ") }!)
        }
        for join in copiedJoins {
            let staging = SQLiteSchema.quoted("\(join.name)_LADE_MIGRATING")
            let columns = Self.joinColumns(join, from: join, aligned: true).map { SQLiteSchema.quoted($0.new) }.joined(separator: ", ")
            try connection.execute("INSERT INTO \(SQLiteSchema.quoted(join.name)) (\(columns)) SELECT \(columns) FROM \(staging)")
            try connection.execute("DROP TABLE \(staging)")
        }
        // Objects of removed entities went with them: references to them are cleared, as a
        // delete with Nullify clears them, and their many-to-many links removed.
        for entity in destination.entities {
            for relationship in entity.relationships where !relationship.isToMany && !relationship.isTransient {
                guard let column = destinationSchema.columnName(for: .toOne(entity: entity.name, name: relationship.name)) else { continue }
                let table = destinationSchema.entity(named: entity.name)!.tableName
                let target = destinationSchema.entity(named: relationship.destinationEntityName)!.tableName
                let kinds = destinationSchema.entityNumbers(from: relationship.destinationEntityName, in: destination).map(String.init)
                // The outer column by its table's name: a relationship within one table (a
                // category's parent) would otherwise name the inner row's own column.
                let outer = "\(SQLiteSchema.quoted(table)).\(SQLiteSchema.quoted(column))"
                try connection.execute("UPDATE \(SQLiteSchema.quoted(table)) SET \(SQLiteSchema.quoted(column)) = NULL WHERE \(outer) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM \(SQLiteSchema.quoted(target)) d WHERE d.Z_PK = \(outer) AND d.Z_ENT IN (\(kinds.joined(separator: ", "))))")
            }
        }
        for join in destinationSchema.joinTables {
            guard let relationship = destination.relationship(join.relationship.name, of: join.relationship.entity) else { continue }
            for (column, entity) in [(join.sourceColumn, join.relationship.entity), (join.destinationColumn, relationship.destinationEntityName)] {
                let table = destinationSchema.entity(named: entity)!.tableName
                let kinds = destinationSchema.entityNumbers(from: entity, in: destination).map(String.init)
                try connection.execute("DELETE FROM \(SQLiteSchema.quoted(join.name)) WHERE NOT EXISTS (SELECT 1 FROM \(SQLiteSchema.quoted(table)) d WHERE d.Z_PK = \(SQLiteSchema.quoted(join.name)).\(column) AND d.Z_ENT IN (\(kinds.joined(separator: ", "))))")
            }
        }
        try refuseSharedValues(connection)
        try refuseMissingValues(connection)
        for index in destinationSchema.indexes {
            // A kept join table keeps its index.
            try connection.execute(index.createStatement
                .replacingOccurrences(of: "CREATE UNIQUE INDEX ", with: "CREATE UNIQUE INDEX IF NOT EXISTS ")
                .replacingOccurrences(of: "CREATE INDEX ", with: "CREATE INDEX IF NOT EXISTS "))
        }
        // Z_PRIMARYKEY: kept entities keep their rows (a renamed one its old name, as Core
        // Data's does; its Z_MAX), under their new numbers; new entities get theirs; removed
        // ones go.
        var stored: [Int64: (name: SQLiteValue, max: SQLiteValue)] = [:]
        for row in try connection.rows("SELECT Z_ENT, Z_NAME, Z_MAX FROM Z_PRIMARYKEY") {
            if case .integer(let number) = row[0] { stored[number] = (row[1], row[2]) }
        }
        try connection.execute("DELETE FROM Z_PRIMARYKEY")
        let insertKey = try connection.prepare("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, ?)")
        for entity in destinationSchema.entities {
            let old = entityMap[entity.name].flatMap { sourceSchema.entity(named: $0)?.number }.flatMap { stored[$0] }
            // A renamed entity keeps the old name while its renaming identifier names it (so the
            // store opens with this version), and takes its own name after a second rename.
            let identifier = destination.entity(named: entity.name)?.renamingIdentifier
            let name: SQLiteValue = if case .text(let oldName)? = old?.name, oldName == entity.name || oldName == identifier { .text(oldName) } else { .text(entity.name) }
            try insertKey.run([.integer(entity.number), name, .integer(entity.superNumber), old?.max ?? .integer(0)])
        }
        // Keys are taken from a hierarchy root's Z_MAX: a new root (a new parent, an entity
        // out of its hierarchy) counts from the keys its table holds.
        for entity in destinationSchema.entities where destination.entity(named: entity.name)?.parentName == nil {
            try connection.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = MAX(Z_MAX, IFNULL((SELECT MAX(Z_PK) FROM \(SQLiteSchema.quoted(entity.tableName))), 0)) WHERE Z_ENT = \(entity.number)")
        }
        // Metadata: the new version's hashes and identifiers, the rest kept.
        let (_, old) = try SQLiteStore.readMetadata(connection, path: url.path)
        var metadata = old
        let made = StoreMetadata.make(for: destination, storeType: StoreMetadata.sqliteStoreType)
        for key in [StoreMetadata.Key.versionHashes, StoreMetadata.Key.versionHashesVersion, StoreMetadata.Key.versionHashesDigest, StoreMetadata.Key.versionIdentifiers] {
            metadata[key] = made[key]
        }
        metadata[StoreMetadata.Key.ladeVersionHashKind] = made[StoreMetadata.Key.ladeVersionHashKind]
        try connection.prepare("UPDATE Z_METADATA SET Z_PLIST = ? WHERE Z_VERSION = 1").run([try SQLiteStore.encodedMetadata(metadata)])
        // Core Data's cached compiled model describes the old version.
        if try connection.tableNames().contains("Z_MODELCACHE") { try connection.execute("DELETE FROM Z_MODELCACHE") }
    }

    /// Refuses the migration when objects share the values of a uniqueness constraint whose
    /// unique index is not built yet (one the new version adds): the index cannot be built, and
    /// Core Data refuses such a migration for the same reason. Run inside the migration's
    /// transaction, after the tables are rebuilt, so the values checked are the new version's.
    private func refuseSharedValues(_ connection: SQLiteConnection) throws {
        let built = Set(try connection.rows("SELECT name FROM sqlite_master WHERE type = 'index'").compactMap { row -> String? in
            if case .text(let name) = row[0] { return name } else { return nil } })
        var reasons: [String] = []
        for entity in destination.entities {
            for constraint in entity.uniquenessConstraints {
                let name = "Z_\(entity.name)_UNIQUE_" + constraint.joined(separator: "_")
                guard !built.contains(name), let index = destinationSchema.indexes.first(where: { $0.name == name && $0.isUnique }) else { continue }
                let columns = index.columns.map(SQLiteSchema.quoted)
                let list = columns.joined(separator: ", ")
                let sql = "SELECT \(list), COUNT(*), MIN(Z_PK), MAX(Z_PK) FROM \(SQLiteSchema.quoted(index.table)) WHERE "
                    + columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND ") + " GROUP BY \(list) HAVING COUNT(*) > 1 LIMIT 1"
                guard let row = try connection.rows(sql).first, row.count == columns.count + 3 else { continue }
                let values = zip(constraint, row).map { "\($0) = \(Self.literal($1))" }.joined(separator: ", ")
                reasons.append(Self.sharedValuesReason(entity: entity.name, constraint: constraint, values: values,
                                                       count: row[columns.count], first: row[columns.count + 1], last: row[columns.count + 2]))
            }
        }
        guard reasons.isEmpty else { throw MigrationRefusal(store: url.path, reasons: reasons) }
    }

    /// Refuses the migration when objects lack a value for a required attribute without a
    /// default (`requiredWithoutValue`); run in the migration's transaction, on the new tables.
    private func refuseMissingValues(_ connection: SQLiteConnection) throws {
        var reasons: [String] = []
        for place in requiredWithoutValue.sorted() {
            let (entity, attribute) = Self.split(place)
            guard let column = destinationSchema.columnName(for: .attribute(entity: entity, name: attribute)),
                  let table = destinationSchema.entity(named: entity)?.tableName else { continue }
            let kinds = destinationSchema.entityNumbers(from: entity, in: destination).map(String.init).joined(separator: ", ")
            let row = try connection.rows("SELECT COUNT(*), MIN(Z_PK) FROM \(SQLiteSchema.quoted(table)) WHERE Z_ENT IN (\(kinds)) AND \(SQLiteSchema.quoted(column)) IS NULL").first
            guard case .integer(let count)? = row?.first, count > 0, let first = row?.last else { continue }
            reasons.append(Self.missingValuesReason(place, count: Int(count), first: Self.literal(first)))
        }
        guard reasons.isEmpty else { throw MigrationRefusal(store: url.path, reasons: reasons) }
    }

    static func split(_ place: String) -> (entity: String, attribute: String) {
        let dot = place.lastIndex(of: ".")!
        return (String(place[..<dot]), String(place[place.index(after: dot)...]))
    }

    /// Why objects without a value cannot be carried, the same for every store type.
    static func missingValuesReason(_ place: String, count: Int, first: String) -> String {
        "attribute \(place): required in the new version, without a default value, and \(count) object\(count == 1 ? " has" : "s have") no value for it (Z_PK \(first)\(count > 1 ? " and more" : "")); give it a default value in the new version, or give those objects a value in the store first"
    }

    /// Why a uniqueness constraint cannot be built, the same for every store type.
    static func sharedValuesReason(entity: String, constraint: [String], values: String, count: SQLiteValue, first: SQLiteValue, last: SQLiteValue) -> String {
        let objects = if case .integer(let number) = count { "\(number) objects" } else { "objects" }
        return "entity \(entity): the new version's uniqueness constraint on (\(constraint.joined(separator: ", "))) cannot hold, "
            + "because \(objects) share \(values) (Z_PK \(literal(first)) and \(literal(last))); Core Data refuses this migration too. "
            + "Make those values unique (or delete the extra objects) in the store at its current version, then migrate again"
    }

    /// An atomic store: every object read with the old version, carried to the new one (entity
    /// and property renames, defaults for new attributes and required ones without a value,
    /// removed entities' objects dropped with the references to them), keys kept.
    private func runAtomic(_ format: AtomicStoreFileFormat.Type) throws {
        var contents = try format.read(at: url, model: source)
        let damage = contents.graph.damage(model: source, thorough: false)
        guard damage.isEmpty else { throw StoreError.damaged(damage, path: url.path) }
        let oldToNew = Dictionary(entityMap.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
        var graph = AtomicObjectGraph(nextKey: contents.graph.nextKey)
        graph.externalIDs = contents.graph.externalIDs
        let kept = Set(contents.graph.objects.compactMap { key, object in oldToNew[object.entity] == nil ? nil : key })
        for (key, object) in contents.graph.objects {
            guard let entity = oldToNew[object.entity] else { continue }
            var moved = AtomicObject(entity: entity, version: object.version)
            for attribute in destination.attributes(of: entity) where !attribute.isTransient && attribute.type != .undefined {
                var value = attributeMap[entity]?[attribute.name].flatMap { object.attributes[$0] }
                if value == nil, attributeMap[entity]?[attribute.name] == nil || !attribute.isOptional { value = attribute.defaultValue }
                if attribute.type == .decimal, case .integer(let number)? = value { value = .decimal(Decimal(number)) }
                if let value { moved.attributes[attribute.name] = value }
            }
            for relationship in destination.relationships(of: entity) where !relationship.isTransient {
                guard let oldName = relationshipMap[entity]?[relationship.name] else { continue }
                if relationship.isToMany {
                    if let destinations = object.toMany[oldName]?.filter({ kept.contains($0) }), !destinations.isEmpty {
                        moved.toMany[relationship.name] = destinations
                    } else if let target = object.toOne[oldName], kept.contains(target) {
                        moved.toMany[relationship.name] = [target]   // a to-one made to-many
                    }
                } else if let target = object.toOne[oldName], kept.contains(target) {
                    moved.toOne[relationship.name] = target
                }
            }
            graph.set(moved, for: key)
        }
        // A uniqueness constraint the objects break cannot hold in the new version: refused,
        // as the SQLite store's unique index cannot be built.
        var shared: [String] = []
        for entity in destination.entities {
            for constraint in entity.uniquenessConstraints where !constraint.isEmpty {
                if let (values, first, last, count) = graph.sharedValues(of: constraint, objectsOf: destination.hierarchy(from: entity.name).map(\.name)) {
                    let text = zip(constraint, values).map { "\($0) = \($1.map { Self.literal(SQLiteValueCoding.encode($0)) } ?? "NULL")" }.joined(separator: ", ")
                    shared.append(Self.sharedValuesReason(entity: entity.name, constraint: constraint, values: text,
                                                          count: .integer(Int64(count)), first: .integer(first), last: .integer(last)))
                }
            }
        }
        // A required attribute without a default that objects lack.
        for place in requiredWithoutValue.sorted() {
            let (entity, attribute) = Self.split(place)
            let kinds = Set(destination.hierarchy(from: entity).map(\.name))
            let lacking = graph.keys(ofEntities: Array(kinds)).filter { graph.objects[$0]?.attributes[attribute] == nil }
            if let first = lacking.first { shared.append(Self.missingValuesReason(place, count: lacking.count, first: String(first))) }
        }
        guard shared.isEmpty else { throw MigrationRefusal(store: url.path, reasons: shared) }
        contents.graph = graph
        let made = StoreMetadata.make(for: destination, storeType: format.storeType)
        for key in [StoreMetadata.Key.versionHashes, StoreMetadata.Key.versionHashesVersion, StoreMetadata.Key.versionHashesDigest, StoreMetadata.Key.versionIdentifiers] {
            contents.metadata[key] = made[key]
        }
        contents.metadata[StoreMetadata.Key.ladeVersionHashKind] = made[StoreMetadata.Key.ladeVersionHashKind]
        try format.check(destination, path: url.path)
        try AtomicFileWriter.replace(url) { try format.write(contents, model: destination, to: $0) }
    }

    /// The SQL that fills a new table's column from the old table's row: per entity of the
    /// column's hierarchy (a property may have moved up or down, so rows of two entities may
    /// read it from two old columns), a `CASE` on the old `Z_ENT` when they differ.
    private func sourceExpression(for column: SQLiteSchema.Column) throws -> String {
        let (entity, fallback): (String, String)
        switch column.role {
        case .primaryKey: return "Z_PK"
        case .entity: return Self.renumbered("Z_ENT", numberMap)
        case .optimisticLock: return "Z_OPT"
        case .attribute(let declaring, let name):
            let attribute = destination.attribute(name, of: declaring)!
            (entity, fallback) = (declaring, attribute.defaultValue.map { Self.literal(SQLiteValueCoding.encode($0)) } ?? "NULL")
        case .toOne(let declaring, _), .toOneEntity(let declaring, _), .orderKey(let declaring, _):
            (entity, fallback) = (declaring, "NULL")
        }
        var branches: [(number: Int64, expression: String)] = []
        let kept = destination.hierarchy(from: entity).filter { entityMap[$0.name] != nil }
        for member in kept {
            guard let expression = oldExpression(for: column.role, of: member.name, fallback: fallback),
                  let number = sourceSchema.entity(named: entityMap[member.name]!)?.number else { continue }
            branches.append((number, expression))
        }
        guard let first = branches.first else { return fallback }
        if branches.count == kept.count && branches.allSatisfy({ $0.expression == first.expression }) { return first.expression }
        return "CASE Z_ENT " + branches.map { "WHEN \($0.number) THEN \($0.expression) " }.joined() + "ELSE \(fallback) END"
    }

    /// Where the rows of `entity` (a destination entity, kept) find a column's value in the old
    /// table; nil when they had none (the column takes its fallback).
    private func oldExpression(for role: SQLiteSchema.ColumnRole, of entity: String, fallback: String) -> String? {
        let oldEntity = entityMap[entity]!
        switch role {
        case .attribute(let declaring, let name):
            guard let oldName = attributeMap[entity]?[name],
                  let oldDeclaring = SQLiteSchema.declaringEntity(of: oldName, from: oldEntity, in: source),
                  let oldColumn = sourceSchema.columnName(for: .attribute(entity: oldDeclaring, name: oldName)) else { return nil }
            let optional = destination.attribute(name, of: declaring)!.isOptional
            return optional ? SQLiteSchema.quoted(oldColumn) : "COALESCE(\(SQLiteSchema.quoted(oldColumn)), \(fallback))"
        case .toOne(_, let name), .toOneEntity(_, let name), .orderKey(_, let name):
            guard let oldName = relationshipMap[entity]?[name],
                  let oldDeclaring = SQLiteSchema.declaringEntity(of: oldName, from: oldEntity, in: source) else { return nil }
            let oldRole: SQLiteSchema.ColumnRole = switch role {
            case .toOne: .toOne(entity: oldDeclaring, name: oldName)
            case .toOneEntity: .toOneEntity(entity: oldDeclaring, name: oldName)
            default: .orderKey(entity: oldDeclaring, name: oldName)
            }
            guard let oldColumn = sourceSchema.columnName(for: oldRole).map(SQLiteSchema.quoted) else {
                // A to-many made ordered, whose inverse is this to-one: each owner's members
                // numbered in primary-key order, as a save numbers them (1024 apart).
                if case .orderKey = role, let key = sourceSchema.columnName(for: .toOne(entity: oldDeclaring, name: oldName)).map(SQLiteSchema.quoted) {
                    return "CASE WHEN \(key) IS NULL THEN NULL ELSE ROW_NUMBER() OVER (PARTITION BY \(key) ORDER BY Z_PK) * 1024 END"
                }
                return nil
            }
            if case .toOneEntity = role { return Self.renumbered(oldColumn, numberMap) }
            return oldColumn
        default:
            return nil
        }
    }

    /// `column`'s entity numbers under the new numbering (`CASE … END`; the column itself when
    /// no number changes).
    static func renumbered(_ column: String, _ numbers: [Int64: Int64]) -> String {
        let changed = numbers.filter { $0.key != $0.value }.sorted { $0.key < $1.key }
        guard !changed.isEmpty else { return column }
        return "CASE \(column) " + changed.map { "WHEN \($0.key) THEN \($0.value)" }.joined(separator: " ") + " ELSE \(column) END"
    }

    /// A join table's columns, each with the SQL over the old table that fills it.
    static func joinColumns(_ join: SQLiteSchema.JoinTable, from old: SQLiteSchema.JoinTable, aligned: Bool) -> [(new: String, old: String?)] {
        let mine = aligned ? old.sourceColumn : old.destinationColumn, theirs = aligned ? old.destinationColumn : old.sourceColumn
        var pairs: [(String, String?)] = [(join.sourceColumn, SQLiteSchema.quoted(mine)), (join.destinationColumn, SQLiteSchema.quoted(theirs))]
        // An order the old table lacks (a to-many made ordered): members numbered in
        // primary-key order within each owner, 1024 apart, as a save numbers them.
        func numbered(within owner: String, by member: String) -> String {
            "ROW_NUMBER() OVER (PARTITION BY \(SQLiteSchema.quoted(owner)) ORDER BY \(SQLiteSchema.quoted(member))) * 1024"
        }
        if let order = join.destinationOrderColumn {
            pairs.append((order, (aligned ? old.destinationOrderColumn : old.sourceOrderColumn).map(SQLiteSchema.quoted) ?? numbered(within: mine, by: theirs)))
        }
        if let order = join.sourceOrderColumn {
            pairs.append((order, (aligned ? old.sourceOrderColumn : old.destinationOrderColumn).map(SQLiteSchema.quoted) ?? numbered(within: theirs, by: mine)))
        }
        return pairs
    }

    static func literal(_ value: SQLiteValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer(let number): String(number)
        case .real(let number): number.isFinite ? "\(number)" : "NULL"
        case .text(let text): "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let data): "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
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

    public init(store: String, reasons: [String], mapping: Bool = false) {
        self.store = store
        self.reasons = reasons
        self.byMapping = mapping
    }
    public var description: String {
        "\(store): " + (byMapping ? "the mapping model" : "lightweight migration")
            + " cannot carry this store to the new version, nothing was changed: " + reasons.joined(separator: "; ")
    }
}
