import Foundation

/// Core Data's table layout for a model, as the SQLite stores Apple's tools write show it, and
/// the layout both SQL stores keep (SQLite, and PostgreSQL in one schema per store):
/// entity numbers (`Z_ENT`), one `Z<ROOT>` table per inheritance hierarchy, columns named
/// `Z` + the upper-cased property name (a numeric suffix when two collide), to-one keys,
/// `Z_FOK_` order columns, `Z_<n><NAME>` many-to-many join tables, the `Z<n><NAME>` owner
/// columns of to-many relationships without an inverse, and Core Data's indexes.
///
/// ```swift
/// let schema = TableLayout(model: model)
/// schema.entity(named: "Car")?.number       // 1
/// schema.createStatements                    // CREATE TABLE ZCAR ( Z_PK INTEGER PRIMARY KEY, … )
/// ```
package struct TableLayout: Sendable {
    /// An entity's place in the store: its number, its parent's, and its table.
    package struct Entity: Sendable, Equatable {
        package let name: String
        /// `Z_ENT`: depth-first over the hierarchies, roots and children each in name order, from 1.
        package let number: Int64
        /// `Z_SUPER`: the parent's number, 0 for a root.
        package let superNumber: Int64
        package let rootName: String
        package let tableName: String
    }

    /// What a column of an entity table holds.
    package enum ColumnRole: Sendable, Hashable {
        case primaryKey, entity, optimisticLock
        /// A stored attribute, by the entity that declares it and its name.
        case attribute(entity: String, name: String)
        /// A to-one relationship's destination primary key.
        case toOne(entity: String, name: String)
        /// The destination's `Z_ENT`, kept beside a to-one key whose destination has subentities.
        case toOneEntity(entity: String, name: String)
        /// The position of this object in the ordered to-many relationship that is the inverse
        /// of the named to-one relationship.
        case orderKey(entity: String, name: String)
        /// The owner's primary key in the destination's row, for the to-many relationship
        /// `name` of `entity` that has no inverse (``OwnerKey``).
        case toManyOwner(entity: String, name: String)
    }

    package struct Column: Sendable, Equatable {
        package let name: String
        /// As Core Data declares it: INTEGER, FLOAT, DECIMAL, TIMESTAMP, VARCHAR or BLOB.
        package let declaredType: String
        package let role: ColumnRole
    }

    package struct Table: Sendable, Equatable {
        package let name: String
        package let rootEntity: String
        package let columns: [Column]
    }

    /// A many-to-many relationship's table. Named after the side whose entity has the lower
    /// number (`Z_1BOOKS` for Author(1).books ↔ Book(2).authors).
    package struct JoinTable: Sendable, Equatable {
        package let name: String
        /// The relationship the table is named after, and its inverse.
        package let relationship: PropertyReference
        package let inverse: PropertyReference
        /// Holds primary keys of `relationship`'s source objects (`Z_1AUTHORS`).
        package let sourceColumn: String
        /// Holds primary keys of `relationship`'s destination objects (`Z_2BOOKS`).
        package let destinationColumn: String
        /// Order of destinations within each source, when `relationship` is ordered.
        package let destinationOrderColumn: String?
        /// Order of sources within each destination, when `inverse` is ordered.
        package let sourceOrderColumn: String?
    }

    /// A to-many relationship with no inverse, kept as Core Data keeps it: no join table; the
    /// destination's table has an `INTEGER` column `Z<source entity number><NAME>` holding the
    /// `Z_PK` of the object whose relationship holds the row (`ZPAGE.Z1PAGES` for entity 1
    /// `Book`'s `pages`, measured on a store Core Data wrote for such a model), indexed as
    /// `ZPAGE_Z1PAGES_INDEX`, with no entity column even when the source has subentities. So a
    /// destination belongs to at most one owner through it, as through a to-one inverse.
    package struct OwnerKey: Sendable, Equatable {
        /// The to-many relationship, by the entity that declares it.
        package let relationship: PropertyReference
        /// The destination entity, and the table that holds its rows and the column.
        package let destinationEntity: String
        package let table: String
        package let column: String
    }

    /// A relationship whose layout in Core Data's SQLite store is not known from any
    /// Apple-written store or public account of one (an ordered to-many without an inverse; a
    /// to-many whose inverse names no inverse, or another one). A store is not made for such a
    /// model, and one is read only where it holds the tables Lade's layout names.
    package struct UnknownLayout: Sendable, Equatable {
        package let relationship: PropertyReference
        package let reason: String
    }

    /// A relationship or attribute named by the entity that declares it.
    package struct PropertyReference: Sendable, Hashable {
        package let entity: String
        package let name: String
    }

    package struct Index: Sendable, Equatable {
        /// What an index is for: Core Data's own (a to-one key's column, which may be NULL;
        /// `Z_ENT` and join tables), a uniqueness constraint, or the model's fetching (indexed
        /// attributes, fetch indexes, compound indexes). Only the last are left out while a bulk
        /// load fills an empty table (`SQLiteStore.deferFetchIndexes`): the others serve the
        /// load itself.
        package enum Kind: Sendable, Equatable { case toOne, relationship, unique, fetch }

        package let name: String
        package let table: String
        /// Column terms as written in the statement (`ZNAME COLLATE BINARY ASC`).
        package let terms: [String]
        /// The columns of `terms`, unquoted, in order.
        package let columns: [String]
        package let kind: Kind
        package var isUnique: Bool { kind == .unique }

        init(name: String, table: String, columns: [String], terms: [String]? = nil, kind: Kind) {
            self.name = name
            self.table = table
            self.columns = columns
            self.terms = terms ?? columns.map(TableLayout.quoted)
            self.kind = kind
        }

        package var createStatement: String { createStatement(ifNotExists: false) }

        func createStatement(ifNotExists: Bool) -> String {
            "CREATE \(isUnique ? "UNIQUE " : "")INDEX \(ifNotExists ? "IF NOT EXISTS " : "")\(TableLayout.quoted(name)) ON \(TableLayout.quoted(table)) (\(terms.joined(separator: ", ")))"
        }
    }

    /// In `Z_ENT` order.
    package let entities: [Entity]
    package let tables: [Table]
    package let joinTables: [JoinTable]
    /// The owner columns of to-many relationships with no inverse, in entity-number order.
    package let ownerKeys: [OwnerKey]
    /// Relationships whose Core Data layout is not known (``UnknownLayout``).
    package let unknownLayouts: [UnknownLayout]
    package let indexes: [Index]

    private let entityIndex: [String: Int]
    private let tableIndex: [String: Int]
    private let entitiesPerTable: [String: Int]
    private let columnIndex: [ColumnRole: String]
    private let joinIndex: [PropertyReference: Int]
    private let ownerKeyIndex: [PropertyReference: Int]

    package static let primaryKeyTableStatement = "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)"
    package static let metadataTableStatement = "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)"
    package static let modelCacheTableStatement = "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)"
    package static let systemTables: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]

    package init(model: ManagedObjectModel) {
        // Entity numbers: depth-first over the hierarchies, roots and children in name order.
        var numbered: [Entity] = []
        func number(_ entity: EntityDescription, parent: Int64, root: String) {
            let current = Int64(numbered.count + 1)
            numbered.append(Entity(name: entity.name, number: current, superNumber: parent, rootName: root, tableName: "Z" + root.uppercased()))
            for child in model.subentities(of: entity.name) { number(child, parent: current, root: root) }
        }
        for root in model.entities.filter({ $0.parentName == nil }).sorted(by: { $0.name < $1.name }) {
            number(root, parent: 0, root: root.name)
        }
        entities = numbered
        var entityIndex: [String: Int] = [:]
        for (position, entity) in numbered.enumerated() { entityIndex[entity.name] = position }
        self.entityIndex = entityIndex
        func numberOf(_ name: String) -> Int64 { numbered[entityIndex[name]!].number }

        // To-many relationships without an inverse: their owner columns go into the
        // destination's table, among that entity's own columns; the cases no Apple-written
        // store shows are set apart.
        var ownerCandidates: [String: [(destination: String, reference: PropertyReference, base: String)]] = [:]
        var unknownLayouts: [UnknownLayout] = []
        // Which entities declare a relationship naming `entity.relationship` as its inverse,
        // gathered once: scanning the destination's hierarchy for each to-many made opening a
        // store whose hub has 8,000 such to-ones take 25 s (issue 43 §4 "Slow").
        var namingAsInverse: [PropertyReference: [String]] = [:]
        for entity in model.entities {
            for relationship in entity.relationships {
                guard let inverse = relationship.inverseName else { continue }
                namingAsInverse[PropertyReference(entity: relationship.destinationEntityName, name: inverse), default: []].append(entity.name)
            }
        }
        for entity in numbered.map({ model.entity(named: $0.name)! }) {
            for relationship in entity.relationships where relationship.isToMany && !relationship.isTransient {
                let reference = PropertyReference(entity: entity.name, name: relationship.name)
                let destination = relationship.destinationEntityName
                if let inverse = model.inverse(of: relationship) {
                    if inverse.isToMany && inverse.inverseName != relationship.name {
                        unknownLayouts.append(UnknownLayout(relationship: reference, reason: "its inverse \(destination).\(inverse.name) is a to-many that names \(inverse.inverseName.map { "'\($0)'" } ?? "no inverse") as its own: no Apple-written store shows how Core Data keeps a many-to-many whose inverses do not name each other"))
                    }
                    continue
                }
                let namedBack = (namingAsInverse[reference] ?? []).contains { model.entity($0, isKindOf: destination) }
                if namedBack {
                    unknownLayouts.append(UnknownLayout(relationship: reference, reason: "it names no inverse, but a relationship of \(destination) names it as its inverse: no Apple-written store shows how Core Data keeps such a pair"))
                } else if relationship.isOrdered {
                    unknownLayouts.append(UnknownLayout(relationship: reference, reason: "it is an ordered to-many with no inverse: no Apple-written store shows the columns Core Data keeps for one (the unordered kind's owner column is known)"))
                } else if let position = entityIndex[destination] {
                    let root = numbered[position].rootName
                    ownerCandidates[root, default: []].append((destination, reference, "Z\(numberOf(entity.name))" + relationship.name.uppercased()))
                }
            }
        }
        self.unknownLayouts = unknownLayouts

        // Entity tables.
        var tables: [Table] = []
        var columnIndex: [ColumnRole: String] = [:]
        var indexes: [Index] = []
        for root in numbered where root.superNumber == 0 {
            let hierarchy = model.hierarchy(from: root.name)
            var candidates: [ColumnCandidate] = []
            for (position, entity) in hierarchy.enumerated() {
                for attribute in entity.attributes where !attribute.isTransient && attribute.type != .undefined {
                    let type = Self.declaredType(of: attribute.type)
                    candidates.append(ColumnCandidate(
                        group: Self.group(of: type), entityOrder: position, kindOrder: 0, sortName: attribute.name.uppercased(),
                        baseName: "Z" + attribute.name.uppercased(), declaredType: type,
                        role: .attribute(entity: entity.name, name: attribute.name)))
                }
                for relationship in entity.relationships where !relationship.isToMany && !relationship.isTransient {
                    candidates.append(ColumnCandidate(
                        group: 0, entityOrder: position, kindOrder: 1, sortName: relationship.name.uppercased(),
                        baseName: "Z" + relationship.name.uppercased(), declaredType: "INTEGER",
                        role: .toOne(entity: entity.name, name: relationship.name)))
                    // Asked, not listed: a list for each to-one to a parent of 8,000 subentities took 19 s.
                    if model.layout(of: relationship.destinationEntityName)?.subentities.isEmpty == false {
                        // `Z<destination number>_<NAME>`: Apple's SampleModel2 stores (corpus)
                        // keep Page.book's destination entity in `Z1_BOOK`.
                        let destination = numberOf(relationship.destinationEntityName)
                        candidates.append(ColumnCandidate(
                            group: 0, entityOrder: position, kindOrder: 2, sortName: relationship.name.uppercased(),
                            // `Z1_BOOK`, as Core Data names it (SampleModel2_V1.sqlite, the corpus's one such column).
                            baseName: "Z\(destination)_" + relationship.name.uppercased(), declaredType: "INTEGER",
                            role: .toOneEntity(entity: entity.name, name: relationship.name)))
                    }
                    if let inverse = model.inverse(of: relationship), inverse.isToMany, inverse.isOrdered {
                        candidates.append(ColumnCandidate(
                            group: 0, entityOrder: position, kindOrder: 3, sortName: relationship.name.uppercased(),
                            baseName: "Z_FOK_" + relationship.name.uppercased(), declaredType: "INTEGER",
                            role: .orderKey(entity: entity.name, name: relationship.name)))
                    }
                }
            }
            let positions = Dictionary(uniqueKeysWithValues: hierarchy.enumerated().map { ($0.element.name, $0.offset) })
            for owner in ownerCandidates[root.name] ?? [] {
                // Where Core Data puts the column among the others is not known; reads and
                // writes name columns, so only the file's column order depends on it.
                candidates.append(ColumnCandidate(
                    group: 0, entityOrder: positions[owner.destination] ?? 0, kindOrder: 4, sortName: owner.base,
                    baseName: owner.base, declaredType: "INTEGER",
                    role: .toManyOwner(entity: owner.reference.entity, name: owner.reference.name)))
            }
            candidates.sort { ($0.group, $0.entityOrder, $0.kindOrder, $0.sortName) < ($1.group, $1.entityOrder, $1.kindOrder, $1.sortName) }
            var used = UniqueNames(["Z_PK", "Z_ENT", "Z_OPT"])
            var columns = [
                Column(name: "Z_PK", declaredType: "INTEGER PRIMARY KEY", role: .primaryKey),
                Column(name: "Z_ENT", declaredType: "INTEGER", role: .entity),
                Column(name: "Z_OPT", declaredType: "INTEGER", role: .optimisticLock),
            ]
            for candidate in candidates {
                let name = used.claim(candidate.baseName)
                columns.append(Column(name: name, declaredType: candidate.declaredType, role: candidate.role))
                columnIndex[candidate.role] = name
            }
            let table = Table(name: root.tableName, rootEntity: root.name, columns: columns)
            tables.append(table)

            // Indexes Core Data makes for every table: one per to-one key and owner column, and
            // Z_ENT for hierarchies.
            for column in columns {
                switch column.role {
                case .toOne, .toManyOwner:
                    indexes.append(Index(name: "\(table.name)_\(column.name)_INDEX", table: table.name, columns: [column.name], kind: .toOne))
                default: break
                }
            }
            if hierarchy.count > 1 {
                indexes.append(Index(name: "\(table.name)_Z_ENT_INDEX", table: table.name, columns: ["Z_ENT"], kind: .relationship))
            }
        }
        self.tables = tables
        var ownerKeys: [OwnerKey] = []
        var ownerKeyIndex: [PropertyReference: Int] = [:]
        for entity in numbered {
            for relationship in model.entity(named: entity.name)!.relationships {
                let reference = PropertyReference(entity: entity.name, name: relationship.name)
                guard let column = columnIndex[.toManyOwner(entity: entity.name, name: relationship.name)] else { continue }
                ownerKeyIndex[reference] = ownerKeys.count
                ownerKeys.append(OwnerKey(relationship: reference, destinationEntity: relationship.destinationEntityName,
                                          table: numbered[entityIndex[relationship.destinationEntityName]!].tableName, column: column))
            }
        }
        self.ownerKeys = ownerKeys
        self.ownerKeyIndex = ownerKeyIndex
        tableIndex = Dictionary(tables.enumerated().map { ($0.element.name, $0.offset) }, uniquingKeysWith: { first, _ in first })
        entitiesPerTable = numbered.reduce(into: [:]) { $0[$1.tableName, default: 0] += 1 }
        self.columnIndex = columnIndex

        // Indexes the model asks for: indexed attributes, uniqueness constraints, fetch indexes, compound indexes.
        func column(_ property: String, of entity: String) -> String? {
            Self.column(of: property, entity: entity, in: model, columns: columnIndex)
        }
        for entity in model.entities {
            let table = numbered[entityIndex[entity.name]!].tableName
            for attribute in entity.attributes where attribute.isIndexed && !attribute.isTransient {
                if let name = column(attribute.name, of: entity.name) {
                    indexes.append(Index(name: "\(table)_\(name)_INDEX", table: table, columns: [name], kind: .fetch))
                }
            }
            for constraint in entity.uniquenessConstraints {
                let columns = constraint.compactMap { column($0, of: entity.name) }
                guard columns.count == constraint.count, !columns.isEmpty else { continue }
                indexes.append(Index(
                    name: "Z_\(entity.name)_UNIQUE_" + constraint.joined(separator: "_"), table: table,
                    columns: columns, terms: columns.map { "\(Self.quoted($0)) COLLATE BINARY ASC" }, kind: .unique))
            }
            for fetchIndex in entity.fetchIndexes where fetchIndex.elements.allSatisfy({ $0.kind == "Binary" && $0.propertyName != nil }) {
                let columns = fetchIndex.elements.compactMap { column($0.propertyName!, of: entity.name) }
                guard columns.count == fetchIndex.elements.count, !columns.isEmpty else { continue }
                let terms = zip(columns, fetchIndex.elements).map { "\(Self.quoted($0)) COLLATE BINARY \($1.isAscending ? "ASC" : "DESC")" }
                indexes.append(Index(name: "Z_\(entity.name)_\(fetchIndex.name)", table: table, columns: columns, terms: terms, kind: .fetch))
            }
            for compound in entity.compoundIndexes {
                let columns = compound.compactMap { column($0, of: entity.name) }
                guard columns.count == compound.count, !columns.isEmpty else { continue }
                indexes.append(Index(name: "\(table)_" + columns.joined(separator: "_") + "_INDEX", table: table, columns: columns, kind: .fetch))
            }
        }

        // Many-to-many join tables, named after the side with the lower entity number.
        var joinTables: [JoinTable] = []
        var joinIndex: [PropertyReference: Int] = [:]
        var usedTableNames = UniqueNames(Set(tables.map(\.name)).union(Self.systemTables))
        // Join-table column names are unique across the whole model, not only within a table:
        // a name already taken gets "1" (then "2", …). Apple's Contacts store shows it:
        // Z_18PARENTGROUPS (Z_18CHILDGROUPS, Z_19PARENTGROUPS), then Z_22PARENTGROUPS
        // (Z_22CONTACTS, Z_19PARENTGROUPS1); so do Z_17TAGS (Z_17ENTRIES1, Z_22TAGS) and
        // Z_4SHORTCUTS (Z_4PARENTS1, Z_7SHORTCUTS). Entities are taken in number order.
        var usedJoinColumns = UniqueNames([])
        func joinColumn(_ base: String) -> String { usedJoinColumns.claim(base) }
        for entity in numbered.map({ model.entity(named: $0.name)! }) {
            for relationship in entity.relationships where relationship.isToMany && !relationship.isTransient {
                let inverse = model.inverse(of: relationship)
                guard inverse == nil || inverse!.isToMany else { continue }
                let reference = PropertyReference(entity: entity.name, name: relationship.name)
                guard joinIndex[reference] == nil, ownerKeyIndex[reference] == nil else { continue }
                let sourceNumber = numberOf(entity.name)
                let destinationNumber = numberOf(relationship.destinationEntityName)
                var inverseReference: PropertyReference?
                if let inverse, let declaring = Self.declaringEntity(of: inverse.name, from: relationship.destinationEntityName, in: model) {
                    let candidate = PropertyReference(entity: declaring, name: inverse.name)
                    let inverseNumber = numberOf(declaring)
                    // The table belongs to the lower-numbered side; the other side will find it.
                    // Between two relationships of one entity (a reflexive many-to-many) it is
                    // the one whose name sorts last: Apple's store for TodoItem.blockedBy ↔
                    // TodoItem.blocking has Z_2BLOCKING (Z_2BLOCKEDBY, Z_2BLOCKING).
                    if inverseNumber != sourceNumber ? inverseNumber < sourceNumber : inverse.name > relationship.name { continue }
                    inverseReference = candidate
                }
                let tableName = usedTableNames.claim("Z_\(sourceNumber)" + relationship.name.uppercased())
                // Only for a layout no Apple-written store shows (`unknownLayouts`: stores Lade
                // made before it refused them): a to-many without an inverse has no name for its
                // source column; Lade used the source entity's name.
                let sourceColumn = joinColumn("Z_\(sourceNumber)" + (inverse?.name ?? entity.name).uppercased())
                let destinationColumn = joinColumn("Z_\(destinationNumber)" + relationship.name.uppercased())
                let join = JoinTable(
                    name: tableName, relationship: reference, inverse: inverseReference ?? reference,
                    sourceColumn: sourceColumn, destinationColumn: destinationColumn,
                    destinationOrderColumn: relationship.isOrdered ? "Z_FOK_" + destinationColumn.dropFirst(2) : nil,
                    sourceOrderColumn: (inverse?.isOrdered ?? false) ? "Z_FOK_" + sourceColumn.dropFirst(2) : nil)
                joinIndex[reference] = joinTables.count
                if let inverseReference { joinIndex[inverseReference] = joinTables.count }
                joinTables.append(join)
                indexes.append(Index(
                    name: "\(tableName)_\(destinationColumn)_INDEX", table: tableName,
                    columns: [destinationColumn, sourceColumn], kind: .relationship))
            }
        }
        self.joinTables = joinTables
        self.joinIndex = joinIndex
        self.indexes = indexes
    }

    // MARK: Lookups

    package func entity(named name: String) -> Entity? {
        entityIndex[name].map { entities[$0] }
    }

    package func entity(number: Int64) -> Entity? {
        number >= 1 && number <= Int64(entities.count) ? entities[Int(number - 1)] : nil
    }

    /// The name of the entity `Z_ENT` `number` stands for, without copying the rest of it
    /// (asked once per row by batch inserts).
    package func entityName(number: Int64) -> String? {
        number >= 1 && number <= Int64(entities.count) ? entities[Int(number - 1)].name : nil
    }

    package func table(named name: String) -> Table? {
        tableIndex[name].map { tables[$0] }
    }

    /// How many entities (abstract ones included) keep their rows in `table`: its hierarchy's.
    package func entityCount(inTable table: String) -> Int {
        entitiesPerTable[table] ?? 0
    }

    /// The `Z_ENT` values of `entity` and every entity below it (only the concrete ones, whose
    /// objects can be rows, when `concreteOnly`).
    package func entityNumbers(from entity: String, in model: ManagedObjectModel, concreteOnly: Bool = false) -> [Int64] {
        model.hierarchy(from: entity).filter { !concreteOnly || !$0.isAbstract }.compactMap { self.entity(named: $0.name)?.number }
    }

    /// The column holding `role`, if the schema has one.
    package func columnName(for role: ColumnRole) -> String? {
        columnIndex[role]
    }

    /// The column of `property`, a stored attribute or to-one relationship of `entity` or of
    /// one of its ancestors; nil for anything else.
    package func columnName(ofProperty property: String, entity: String, in model: ManagedObjectModel) -> String? {
        Self.column(of: property, entity: entity, in: model, columns: columnIndex)
    }

    private static func column(of property: String, entity: String, in model: ManagedObjectModel, columns: [ColumnRole: String]) -> String? {
        guard let declaring = declaringEntity(of: property, from: entity, in: model) else { return nil }
        return columns[.attribute(entity: declaring, name: property)] ?? columns[.toOne(entity: declaring, name: property)]
    }

    /// The columns of entity table `name` in the order the read plans number them, as a SELECT
    /// list (each after `prefix`, such as `t0.`): rows are read by column name, never `*`, so a
    /// store whose columns lie in another order is read right (Apple's SampleModel2 stores put
    /// `ZPUBLISHEDAT` before `ZPRICE` and `ZUNIQUEID` before `ZCOVER`).
    package func selectList(ofTable name: String, prefix: String = "") -> String {
        guard let table = table(named: name) else { return prefix + "*" }
        return table.columns.map { prefix + Self.quoted($0.name) }.joined(separator: ", ")
    }

    /// The join table of a many-to-many relationship, from either side.
    package func joinTable(for relationship: PropertyReference) -> JoinTable? {
        joinIndex[relationship].map { joinTables[$0] }
    }

    /// The owner column of a to-many relationship with no inverse, from the entity that declares it.
    package func ownerKey(for relationship: PropertyReference) -> OwnerKey? {
        ownerKeyIndex[relationship].map { ownerKeys[$0] }
    }

    /// The column of the destination's table that holds the key of the object whose to-many
    /// relationship `name` (declared by `declaring`) holds the row: its inverse to-one's key, or
    /// Core Data's owner column when it has no inverse; nil for a many-to-many.
    package func ownerColumn(ofToMany name: String, declaredBy declaring: String, in model: ManagedObjectModel) -> String? {
        if let owner = ownerKey(for: .init(entity: declaring, name: name)) { return owner.column }
        guard let relationship = model.relationship(name, of: declaring), relationship.isToMany,
              let inverse = model.inverse(of: relationship), !inverse.isToMany,
              let inverseDeclaring = Self.declaringEntity(of: inverse.name, from: relationship.destinationEntityName, in: model) else { return nil }
        return columnName(for: .toOne(entity: inverseDeclaring, name: inverse.name))
    }

    /// The statement that reads the destinations of the to-many relationship `name` of
    /// `entityName`'s objects (`Z_PK`, `Z_ENT`; each owner's in order when it is ordered),
    /// through its join table, its inverse's key column or its owner column. Written with `quote` for identifiers and `prefix` before
    /// table names; `owners` is the condition on the owner's key (`= ?`, `= ANY($1)`), and with
    /// `selectingOwner` the owner's key is the first column and the rows are in owner order.
    package func toManyRead(_ name: String, from entityName: String, in model: ManagedObjectModel, quote: (String) -> String = { $0 },
                            prefix: String = "", owners: String, selectingOwner: Bool = false) -> String? {
        guard let relationship = model.relationship(name, of: entityName), relationship.isToMany,
              let destination = entity(named: relationship.destinationEntityName),
              let declaring = Self.declaringEntity(of: name, from: entityName, in: model) else { return nil }
        let (pk, ent) = (quote("Z_PK"), quote("Z_ENT"))
        if let join = joinTable(for: .init(entity: declaring, name: name)) {
            let named = join.relationship == .init(entity: declaring, name: name)
            let mine = "j." + quote(named ? join.sourceColumn : join.destinationColumn)
            let theirs = "j." + quote(named ? join.destinationColumn : join.sourceColumn)
            let order = (named ? join.destinationOrderColumn : join.sourceOrderColumn).map { "j.\(quote($0)), " } ?? ""
            return "SELECT \(selectingOwner ? mine + ", " : "")d.\(pk), d.\(ent) FROM \(prefix)\(quote(join.name)) j JOIN \(prefix)\(quote(destination.tableName)) d ON d.\(pk) = \(theirs) WHERE \(mine) \(owners) ORDER BY \(selectingOwner ? mine + ", " : "")\(order)d.\(pk)"
        }
        guard let keyColumn = ownerColumn(ofToMany: name, declaredBy: declaring, in: model).map(quote) else { return nil }
        let order = model.inverse(of: relationship).flatMap { inverse in
            Self.declaringEntity(of: inverse.name, from: relationship.destinationEntityName, in: model)
                .flatMap { columnName(for: .orderKey(entity: $0, name: inverse.name)) }
        }.map { "\(quote($0)), " } ?? ""
        let numbers = entityNumbers(from: relationship.destinationEntityName, in: model).map(String.init).joined(separator: ", ")
        return "SELECT \(selectingOwner ? keyColumn + ", " : "")\(pk), \(ent) FROM \(prefix)\(quote(destination.tableName)) WHERE \(keyColumn) \(owners) AND \(ent) IN (\(numbers)) ORDER BY \(selectingOwner ? keyColumn + ", " : "")\(order)\(pk)"
    }

    /// The entity that declares `property`: `entity` itself or one of its ancestors
    /// (``ManagedObjectModel/declaringEntity(of:from:)``).
    static func declaringEntity(of property: String, from entity: String, in model: ManagedObjectModel) -> String? {
        model.declaringEntity(of: property, from: entity)
    }

    // MARK: Statements

    /// Every CREATE statement of the layout: system tables, entity tables, join tables, indexes.
    package var createStatements: [String] {
        tableStatements.map(\.statement) + indexes.map(\.createStatement)
    }

    /// The same statements by table: each CREATE TABLE followed by the CREATE INDEX statements
    /// on that table, the tables in `createStatements`' order.
    package var createStatementsByTable: [[String]] {
        let indexesByTable = Dictionary(grouping: indexes, by: \.table)
        return tableStatements.map { [$0.statement] + (indexesByTable[$0.table] ?? []).map(\.createStatement) }
    }

    /// The CREATE TABLE statement of each table: system tables, entity tables, join tables.
    private var tableStatements: [(table: String, statement: String)] {
        var statements = [("Z_PRIMARYKEY", Self.primaryKeyTableStatement), ("Z_METADATA", Self.metadataTableStatement), ("Z_MODELCACHE", Self.modelCacheTableStatement)]
        for table in tables {
            statements.append((table.name, "CREATE TABLE \(Self.quoted(table.name)) ( " + table.columns.map { "\(Self.quoted($0.name)) \($0.declaredType)" }.joined(separator: ", ") + " )"))
        }
        for join in joinTables {
            let source = Self.quoted(join.sourceColumn), destination = Self.quoted(join.destinationColumn)
            var columns = ["\(source) INTEGER", "\(destination) INTEGER"]
            if let order = join.sourceOrderColumn { columns.append("\(Self.quoted(order)) INTEGER") }
            if let order = join.destinationOrderColumn { columns.append("\(Self.quoted(order)) INTEGER") }
            columns.append("PRIMARY KEY (\(source), \(destination))")
            statements.append((join.name, "CREATE TABLE \(Self.quoted(join.name)) ( " + columns.joined(separator: ", ") + " )"))
        }
        return statements
    }

    /// An identifier as SQL: as it is when it is a plain one (ASCII letters, digits and
    /// underscores, not starting with a digit; Lade's names all start with `Z`, which begins no
    /// SQL keyword), so the statements read as Core Data's own; in double quotes, doubled inside,
    /// otherwise. The model's name rules (``ModelValidator``) keep names plain; this keeps SQL
    /// safe even for a name that slipped past them.
    package static func quoted(_ name: String) -> String {
        let bytes = name.utf8
        let plain = bytes.first.map { $0 == UInt8(ascii: "Z") || $0 == UInt8(ascii: "z") } == true
            && bytes.allSatisfy(ModelValidator.isIdentifierByte)
        return plain ? name : "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// How Core Data declares a column of each attribute type.
    package static func declaredType(of type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: "INTEGER"
        case .double, .float: "FLOAT"
        case .decimal: "DECIMAL"
        case .date: "TIMESTAMP"
        case .string, .uri: "VARCHAR"
        // No SQLite store Lade opens holds a composite (`StoreError.refusingComposites`); a
        // schema is still made for models with them, to check the keys of in-memory fetches.
        case .binary, .transformable, .uuid, .undefined, .composite: "BLOB"
        }
    }

    /// Core Data lists integer columns first, then 8-byte numbers and dates (interleaved by
    /// name), then text, then blobs.
    static func group(of declaredType: String) -> Int {
        switch declaredType {
        case "INTEGER": 0
        case "FLOAT", "TIMESTAMP", "DECIMAL": 1
        case "VARCHAR": 2
        default: 3
        }
    }

    private struct ColumnCandidate {
        var group: Int
        var entityOrder: Int
        var kindOrder: Int
        var sortName: String
        var baseName: String
        var declaredType: String
        var role: ColumnRole
    }
}

/// Names made unique as Core Data makes them, with a number after a name already taken
/// (`ZNAME`, then `ZNAME1`, `ZNAME2`, …). Each name remembers the next number to try: many
/// relationships of one name to one entity (each join table's column `Z_<n>NAME`) cost a step
/// each, not a step for every name taken before (issue 43 §4 "Slow").
private struct UniqueNames {
    private var used: Set<String>
    private var nextSuffix: [String: Int] = [:]

    init(_ used: Set<String>) { self.used = used }

    /// `base`, or `base` with the lowest number that makes it a name not taken; now taken.
    mutating func claim(_ base: String) -> String {
        var name = base
        var suffix = nextSuffix[base] ?? 1
        while used.contains(name) {
            name = base + String(suffix)
            suffix += 1
        }
        nextSuffix[base] = suffix
        used.insert(name)
        return name
    }
}

