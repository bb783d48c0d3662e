import Foundation

/// A lightweight migration in place, with SQL, in one transaction, as Core Data migrates a
/// SQLite store on opening it: the statements a store with Core Data's table layout runs (a
/// SQLite file, a PostgreSQL schema), over `MigrationSQL`, which says what differs between them
/// (identifier quoting, column types, how a table, join table or index is made, the metadata).
/// `LightweightMigration` (in `Migration/`) plans it and decides what is refused.
extension InferredMapping {
    func migrate(_ sql: some MigrationSQL, progress: (@Sendable (String) -> Void)?) throws {
        let q = sql.quoted
        let oldTables = try sql.tableNames()
        try refuseSharedOwners(sql, oldTables: oldTables)
        // Links of to-ones made to-many, read from their key columns before the tables go.
        for join in destinationSchema.joinTables {
            guard let source = keyJoins[join.name] else { continue }
            let (mine, theirs) = source.namedHere ? (join.sourceColumn, join.destinationColumn) : (join.destinationColumn, join.sourceColumn)
            let staging = q("\(join.name)_LADE_MIGRATING")
            try sql.execute("CREATE TABLE \(staging) ( \(q(join.sourceColumn)) \(sql.columnType("INTEGER")), \(q(join.destinationColumn)) \(sql.columnType("INTEGER")) )")
            guard oldTables.contains(source.table) else { continue }
            try sql.execute("INSERT INTO \(staging) (\(q(mine)), \(q(theirs))) SELECT \(q("Z_PK")), \(q(source.column)) FROM \(q(source.table)) WHERE \(q(source.column)) IS NOT NULL AND \(q("Z_ENT")) IN (\(source.entities.map(String.init).joined(separator: ", ")))")
        }
        // Entity tables: each hierarchy's table rebuilt with the new columns.
        for table in destinationSchema.tables {
            let root = table.rootEntity
            // The one old table this hierarchy's objects come from (the plan refuses two).
            let oldTable = destination.hierarchy(from: root).lazy.compactMap { self.entityMap[$0.name] }.first
                .flatMap { sourceSchema.entity(named: $0)?.tableName }
            let temporary = "\(table.name)_LADE_MIGRATING"
            try sql.execute("CREATE TABLE \(q(temporary)) ( " + table.columns.map { "\(q($0.name)) \(sql.columnType($0.declaredType))" }.joined(separator: ", ") + " )")
            if let oldTable, oldTables.contains(oldTable) {
                if let progress, case .integer(let rows)? = try sql.rows("SELECT COUNT(*) FROM \(q(oldTable))").first?.first {
                    progress("rebuilding \(table.name) (\(rows) rows)")
                }
                var targets: [String] = []
                var sources: [String] = []
                for column in table.columns {
                    targets.append(q(column.name))
                    sources.append(try sourceExpression(for: column, from: oldTable, sql))
                }
                // Rows of entities that were removed go with them.
                let kept = destination.hierarchy(from: root).compactMap { entityMap[$0.name] }.map { String(sourceSchema.entity(named: $0)!.number) }
                try sql.execute("INSERT INTO \(q(temporary)) (\(targets.joined(separator: ", "))) SELECT \(sources.joined(separator: ", ")) FROM \(q(oldTable)) WHERE \(q("Z_ENT")) IN (\(kept.isEmpty ? "NULL" : kept.joined(separator: ", ")))")
            }
        }
        // Old entity tables, join tables of relationships not kept, every index: dropped.
        for table in sourceSchema.tables where oldTables.contains(table.name) {
            try sql.execute("DROP TABLE \(q(table.name))")
        }
        for index in sourceSchema.indexes {
            try sql.execute(sql.dropIndex(index))
        }
        // The new tables under their own names, created as a new store's are (the schema text is
        // Core Data's, not a renamed table's), then filled from the staging copies.
        for table in destinationSchema.tables {
            let staging = q("\(table.name)_LADE_MIGRATING")
            try sql.execute(sql.createTable(table, of: destinationSchema))
            try sql.execute("INSERT INTO \(q(table.name)) SELECT * FROM \(staging)")
            try sql.execute("DROP TABLE \(staging)")
        }
        // Join tables: kept ones stay as they are when nothing about them changes; renamed
        // ones (a renamed relationship, a renumbered entity) are copied through staging tables
        // (a new name may be an old one's); others go, new ones are created.
        var copiedJoins = destinationSchema.joinTables.filter { keyJoins[$0.name] != nil }
        var keptJoins: Set<String> = []
        for join in destinationSchema.joinTables where keyJoins[join.name] == nil {
            guard let (old, aligned) = joinMap[join.name] else { continue }
            if old == join && aligned { keptJoins.insert(old.name); continue }
            let pairs = Self.joinColumns(join, from: old, aligned: aligned, q)
            let staging = q("\(join.name)_LADE_MIGRATING")
            try sql.execute("CREATE TABLE \(staging) ( " + pairs.map { "\(q($0.new)) \(sql.columnType("INTEGER"))" }.joined(separator: ", ") + " )")
            if oldTables.contains(old.name) {
                try sql.execute("INSERT INTO \(staging) (\(pairs.map { q($0.new) }.joined(separator: ", "))) SELECT \(pairs.map { $0.old ?? "NULL" }.joined(separator: ", ")) FROM \(q(old.name))")
            }
            copiedJoins.append(join)
        }
        for join in sourceSchema.joinTables where oldTables.contains(join.name) && !keptJoins.contains(join.name) {
            try sql.execute("DROP TABLE \(q(join.name))")
        }
        for join in destinationSchema.joinTables where !keptJoins.contains(join.name) {
            try sql.execute(sql.createJoinTable(join, of: destinationSchema))
        }
        for join in copiedJoins {
            let staging = q("\(join.name)_LADE_MIGRATING")
            let columns = Self.joinColumns(join, from: join, aligned: true, q).map { q($0.new) }.joined(separator: ", ")
            try sql.execute("INSERT INTO \(q(join.name)) (\(columns)) SELECT \(columns) FROM \(staging)")
            try sql.execute("DROP TABLE \(staging)")
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
                let outer = "\(q(table)).\(q(column))"
                try sql.execute("UPDATE \(q(table)) SET \(q(column)) = NULL WHERE \(outer) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM \(q(target)) d WHERE d.\(q("Z_PK")) = \(outer) AND d.\(q("Z_ENT")) IN (\(kinds.joined(separator: ", "))))")
            }
        }
        for owner in destinationSchema.ownerKeys {
            let source = destinationSchema.entity(named: owner.relationship.entity)!.tableName
            let kinds = destinationSchema.entityNumbers(from: owner.relationship.entity, in: destination).map(String.init)
            let outer = "\(q(owner.table)).\(q(owner.column))"
            try sql.execute("UPDATE \(q(owner.table)) SET \(q(owner.column)) = NULL WHERE \(outer) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM \(q(source)) s WHERE s.\(q("Z_PK")) = \(outer) AND s.\(q("Z_ENT")) IN (\(kinds.joined(separator: ", "))))")
        }
        for join in destinationSchema.joinTables {
            guard let relationship = destination.relationship(join.relationship.name, of: join.relationship.entity) else { continue }
            for (column, entity) in [(join.sourceColumn, join.relationship.entity), (join.destinationColumn, relationship.destinationEntityName)] {
                let table = destinationSchema.entity(named: entity)!.tableName
                let kinds = destinationSchema.entityNumbers(from: entity, in: destination).map(String.init)
                try sql.execute("DELETE FROM \(q(join.name)) WHERE NOT EXISTS (SELECT 1 FROM \(q(table)) d WHERE d.\(q("Z_PK")) = \(q(join.name)).\(q(column)) AND d.\(q("Z_ENT")) IN (\(kinds.joined(separator: ", "))))")
            }
        }
        try refuseSharedValues(sql)
        try refuseMissingValues(sql)
        for index in destinationSchema.indexes {
            // A kept join table keeps its index.
            try sql.execute(sql.createIndex(index, ifNotExists: true))
        }
        // Derived attributes: the old tables took their triggers with them; the new version's
        // are made as a new store's are, and their values set from the rows carried.
        try sql.installDerivedAttributes(schema: destinationSchema, model: destination)
        // Z_PRIMARYKEY: kept entities keep their rows (a renamed one its old name, as Core
        // Data's does; its Z_MAX), under their new numbers; new entities get theirs; removed
        // ones go.
        var stored: [Int64: (name: SQLiteValue, max: SQLiteValue)] = [:]
        for row in try sql.rows("SELECT \(q("Z_ENT")), \(q("Z_NAME")), \(q("Z_MAX")) FROM \(q("Z_PRIMARYKEY"))") {
            if case .integer(let number) = row[0] { stored[number] = (row[1], row[2]) }
        }
        // The history entities' rows (16001-16003) stay: their tables and rows are kept.
        try sql.execute("DELETE FROM \(q("Z_PRIMARYKEY")) WHERE \(q("Z_ENT")) NOT IN (16001, 16002, 16003)")
        for entity in destinationSchema.entities {
            let old = entityMap[entity.name].flatMap { sourceSchema.entity(named: $0)?.number }.flatMap { stored[$0] }
            // A renamed entity keeps the old name while its renaming identifier names it (so the
            // store opens with this version), and takes its own name after a second rename.
            let identifier = destination.entity(named: entity.name)?.renamingIdentifier
            let name: SQLiteValue = if case .text(let oldName)? = old?.name, oldName == entity.name || oldName == identifier { .text(oldName) } else { .text(entity.name) }
            let values: [SQLiteValue] = [.integer(entity.number), name, .integer(entity.superNumber), old?.max ?? .integer(0)]
            try sql.execute("INSERT INTO \(q("Z_PRIMARYKEY")) (\(q("Z_ENT")), \(q("Z_NAME")), \(q("Z_SUPER")), \(q("Z_MAX"))) VALUES (\(values.map(sql.literal).joined(separator: ", ")))")
        }
        // Keys are taken from a hierarchy root's Z_MAX: a new root (a new parent, an entity
        // out of its hierarchy) counts from the keys its table holds.
        for entity in destinationSchema.entities where destination.entity(named: entity.name)?.parentName == nil {
            try sql.execute("UPDATE \(q("Z_PRIMARYKEY")) SET \(q("Z_MAX")) = \(sql.greatest(q("Z_MAX"), "COALESCE((SELECT MAX(\(q("Z_PK"))) FROM \(q(entity.tableName))), 0)")) WHERE \(q("Z_ENT")) = \(entity.number)")
        }
        try sql.renumberHistory(tables: oldTables, numbers: destinationSchema.entities.compactMap { entity in
            entityMap[entity.name].flatMap { sourceSchema.entity(named: $0)?.number }.map { ($0, entity.number) }
        })
        // Metadata: the new version's hashes and identifiers, the rest kept.
        var metadata = try sql.readMetadata()
        let made = StoreMetadata.make(for: destination, storeType: sql.storeType)
        for key in [StoreMetadata.Key.versionHashes, StoreMetadata.Key.versionHashesVersion, StoreMetadata.Key.versionHashesDigest, StoreMetadata.Key.versionIdentifiers] {
            metadata[key] = made[key]
        }
        metadata[StoreMetadata.Key.ladeVersionHashKind] = made[StoreMetadata.Key.ladeVersionHashKind]
        try sql.writeMetadata(metadata)
        // Core Data's cached compiled model described the old version: the new version's
        // replaces it, in this transaction (none for a version that cannot be archived, never the old one).
        try sql.replaceModelCache(try destination.modelCacheBlobIfArchivable())
    }

    /// Refuses the migration when objects share the values of a uniqueness constraint whose
    /// unique index is not built yet (one the new version adds): the index cannot be built, and
    /// Core Data refuses such a migration for the same reason. Run inside the migration's
    /// transaction, after the tables are rebuilt, so the values checked are the new version's.
    private func refuseSharedValues(_ sql: some MigrationSQL) throws {
        let q = sql.quoted
        let built = try sql.indexNames()
        var reasons: [String] = []
        for entity in destination.entities {
            for constraint in entity.uniquenessConstraints {
                let name = "Z_\(entity.name)_UNIQUE_" + constraint.joined(separator: "_")
                guard let index = destinationSchema.indexes.first(where: { $0.name == name && $0.isUnique }), !built.contains(sql.indexName(index)) else { continue }
                let columns = index.columns.map(q)
                let list = columns.joined(separator: ", ")
                let query = "SELECT \(list), COUNT(*), MIN(\(q("Z_PK"))), MAX(\(q("Z_PK"))) FROM \(q(index.table)) WHERE "
                    + columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND ") + " GROUP BY \(list) HAVING COUNT(*) > 1 LIMIT 1"
                guard let row = try sql.rows(query).first, row.count == columns.count + 3 else { continue }
                let values = zip(constraint, row).map { "\($0) = \(Self.literal($1))" }.joined(separator: ", ")
                reasons.append(Self.sharedValuesReason(entity: entity.name, constraint: constraint, values: values,
                                                       count: row[columns.count], first: row[columns.count + 1], last: row[columns.count + 2]))
            }
        }
        guard reasons.isEmpty else { throw Refusal(reasons: reasons) }
    }

    /// Refuses the migration when objects lack a value for a required attribute without a
    /// default (`requiredWithoutValue`); run in the migration's transaction, on the new tables.
    private func refuseMissingValues(_ sql: some MigrationSQL) throws {
        let q = sql.quoted
        var reasons: [String] = []
        for place in requiredWithoutValue.sorted() {
            let (entity, attribute) = Self.split(place)
            guard let column = destinationSchema.columnName(for: .attribute(entity: entity, name: attribute)),
                  let table = destinationSchema.entity(named: entity)?.tableName else { continue }
            let kinds = destinationSchema.entityNumbers(from: entity, in: destination).map(String.init).joined(separator: ", ")
            let row = try sql.rows("SELECT COUNT(*), MIN(\(q("Z_PK"))) FROM \(q(table)) WHERE \(q("Z_ENT")) IN (\(kinds)) AND \(q(column)) IS NULL").first
            guard case .integer(let count)? = row?.first, count > 0, let first = row?.last else { continue }
            reasons.append(Self.missingValuesReason(place, count: Int(count), first: Self.literal(first)))
        }
        guard reasons.isEmpty else { throw Refusal(reasons: reasons) }
    }

    /// The SQL that fills a new table's column from the old table's row: per entity of the
    /// column's hierarchy (a property may have moved up or down, so rows of two entities may
    /// read it from two old columns), a `CASE` on the old `Z_ENT` when they differ.
    private func sourceExpression(for column: TableLayout.Column, from oldTable: String, _ sql: some MigrationSQL) throws -> String {
        let q = sql.quoted
        let (entity, fallback): (String, String)
        switch column.role {
        case .primaryKey: return q("Z_PK")
        case .entity: return Self.renumbered(q("Z_ENT"), numberMap)
        case .optimisticLock: return q("Z_OPT")
        case .attribute(let declaring, let name):
            let attribute = destination.attribute(name, of: declaring)!
            (entity, fallback) = (declaring, attribute.defaultValue.map { sql.literal(SQLiteValueCoding.encode($0)) } ?? "NULL")
        case .toOne(let declaring, _), .toOneEntity(let declaring, _), .orderKey(let declaring, _):
            (entity, fallback) = (declaring, "NULL")
        case .toManyOwner(let declaring, let name):
            // A to-one made this to-many: the one object whose key named the row (at most one,
            // `refuseSharedOwners`); the old table's name stands for the row read, as the
            // inner one has an alias.
            if let fill = ownerFills[.init(entity: declaring, name: name)] {
                return "(SELECT s.\(q("Z_PK")) FROM \(q(fill.table)) s WHERE s.\(q(fill.column)) = \(q(oldTable)).\(q("Z_PK")) AND s.\(q("Z_ENT")) IN (\(fill.entities.map(String.init).joined(separator: ", "))))"
            }
            // The owner's key, from where the old version kept it: its own owner column, or the
            // key column of the inverse to-one it had. The column is in the destination's table,
            // whose rows are the ones copied.
            return oldOwnerColumn(ofToMany: name, declaredBy: declaring).map(q) ?? "NULL"
        }
        var branches: [(number: Int64, expression: String)] = []
        let kept = destination.hierarchy(from: entity).filter { entityMap[$0.name] != nil }
        for member in kept {
            guard let expression = oldExpression(for: column.role, of: member.name, fallback: fallback, q),
                  let number = sourceSchema.entity(named: entityMap[member.name]!)?.number else { continue }
            branches.append((number, expression))
        }
        guard let first = branches.first else { return fallback }
        if branches.count == kept.count && branches.allSatisfy({ $0.expression == first.expression }) { return first.expression }
        return "CASE \(q("Z_ENT")) " + branches.map { "WHEN \($0.number) THEN \($0.expression) " }.joined() + "ELSE \(fallback) END"
    }

    /// Where the rows of `entity` (a destination entity, kept) find a column's value in the old
    /// table; nil when they had none (the column takes its fallback).
    private func oldExpression(for role: TableLayout.ColumnRole, of entity: String, fallback: String, _ q: (String) -> String) -> String? {
        let oldEntity = entityMap[entity]!
        switch role {
        case .attribute(let declaring, let name):
            guard let oldName = attributeMap[entity]?[name],
                  let oldDeclaring = TableLayout.declaringEntity(of: oldName, from: oldEntity, in: source),
                  let oldColumn = sourceSchema.columnName(for: .attribute(entity: oldDeclaring, name: oldName)) else { return nil }
            let optional = destination.attribute(name, of: declaring)!.isOptional
            return optional ? q(oldColumn) : "COALESCE(\(q(oldColumn)), \(fallback))"
        case .toOne(_, let name), .toOneEntity(_, let name), .orderKey(_, let name):
            guard let oldName = relationshipMap[entity]?[name],
                  let oldDeclaring = TableLayout.declaringEntity(of: oldName, from: oldEntity, in: source) else {
                // A to-one new in this version as the inverse of a to-many that had none: the
                // owner column kept what is now its key.
                if case .toOne = role, let relationship = destination.relationship(name, of: entity),
                   let inverse = destination.inverse(of: relationship), inverse.isToMany,
                   let inverseDeclaring = TableLayout.declaringEntity(of: inverse.name, from: relationship.destinationEntityName, in: destination) {
                    return oldOwnerColumn(ofToMany: inverse.name, declaredBy: inverseDeclaring).map(q)
                }
                return nil
            }
            let oldRole: TableLayout.ColumnRole = switch role {
            case .toOne: .toOne(entity: oldDeclaring, name: oldName)
            case .toOneEntity: .toOneEntity(entity: oldDeclaring, name: oldName)
            default: .orderKey(entity: oldDeclaring, name: oldName)
            }
            guard let oldColumn = sourceSchema.columnName(for: oldRole).map(q) else {
                // A to-many made ordered, whose inverse is this to-one: each owner's members
                // numbered in primary-key order, as a save numbers them (1024 apart).
                if case .orderKey = role, let key = sourceSchema.columnName(for: .toOne(entity: oldDeclaring, name: oldName)).map(q) {
                    return "CASE WHEN \(key) IS NULL THEN NULL ELSE ROW_NUMBER() OVER (PARTITION BY \(key) ORDER BY \(q("Z_PK"))) * 1024 END"
                }
                return nil
            }
            if case .toOneEntity = role { return Self.renumbered(oldColumn, numberMap) }
            return oldColumn
        default:
            return nil
        }
    }

    /// Refuses a to-one made a to-many without an inverse when two objects had one destination:
    /// Core Data's owner column keeps one owner per destination, and the others would lose it.
    private func refuseSharedOwners(_ sql: some MigrationSQL, oldTables: Set<String>) throws {
        let q = sql.quoted
        var reasons: [String] = []
        for (relationship, fill) in ownerFills.sorted(by: { ($0.key.entity, $0.key.name) < ($1.key.entity, $1.key.name) }) where oldTables.contains(fill.table) {
            let rows = try sql.rows("SELECT \(q(fill.column)), COUNT(*) FROM \(q(fill.table)) WHERE \(q(fill.column)) IS NOT NULL AND \(q("Z_ENT")) IN (\(fill.entities.map(String.init).joined(separator: ", "))) GROUP BY \(q(fill.column)) HAVING COUNT(*) > 1 ORDER BY \(q(fill.column))")
            guard let first = rows.first else { continue }
            let destination = destination.relationship(relationship.name, of: relationship.entity)?.destinationEntityName ?? "destination"
            reasons.append("relationship \(relationship.entity).\(relationship.name): made to-many without an inverse, which Core Data keeps in the \(destination)'s owner column (one owner each), but \(rows.count) \(destination) object\(rows.count == 1 ? " is" : "s are") the destination of several \(relationship.entity) objects (Z_PK \(SQLiteValueCoding.shown(first[0])) of \(SQLiteValueCoding.shown(first[1])) of them); give the to-many an inverse (a many-to-many keeps every link), or leave each \(destination) to one object first")
        }
        guard reasons.isEmpty else { throw Refusal(reasons: reasons) }
    }

    /// The old version's column that kept the owner key of the destination's to-many
    /// `name` of `declaring`, where it had one (its owner column, or its inverse to-one's key).
    private func oldOwnerColumn(ofToMany name: String, declaredBy declaring: String) -> String? {
        guard let oldEntity = entityMap[declaring], let oldName = relationshipMap[declaring]?[name],
              let oldDeclaring = TableLayout.declaringEntity(of: oldName, from: oldEntity, in: source) else { return nil }
        return sourceSchema.ownerColumn(ofToMany: oldName, declaredBy: oldDeclaring, in: source)
    }

    /// `column`'s entity numbers under the new numbering (`CASE … END`; the column itself when
    /// no number changes).
    static func renumbered(_ column: String, _ numbers: [Int64: Int64]) -> String {
        let changed = numbers.filter { $0.key != $0.value }.sorted { $0.key < $1.key }
        guard !changed.isEmpty else { return column }
        return "CASE \(column) " + changed.map { "WHEN \($0.key) THEN \($0.value)" }.joined(separator: " ") + " ELSE \(column) END"
    }

    /// A join table's columns, each with the SQL over the old table that fills it.
    static func joinColumns(_ join: TableLayout.JoinTable, from old: TableLayout.JoinTable, aligned: Bool, _ q: (String) -> String) -> [(new: String, old: String?)] {
        let mine = aligned ? old.sourceColumn : old.destinationColumn, theirs = aligned ? old.destinationColumn : old.sourceColumn
        var pairs: [(String, String?)] = [(join.sourceColumn, q(mine)), (join.destinationColumn, q(theirs))]
        // An order the old table lacks (a to-many made ordered): members numbered in
        // primary-key order within each owner, 1024 apart, as a save numbers them.
        func numbered(within owner: String, by member: String) -> String {
            "ROW_NUMBER() OVER (PARTITION BY \(q(owner)) ORDER BY \(q(member))) * 1024"
        }
        if let order = join.destinationOrderColumn {
            pairs.append((order, (aligned ? old.destinationOrderColumn : old.sourceOrderColumn).map(q) ?? numbered(within: mine, by: theirs)))
        }
        if let order = join.sourceOrderColumn {
            pairs.append((order, (aligned ? old.sourceOrderColumn : old.destinationOrderColumn).map(q) ?? numbered(within: theirs, by: mine)))
        }
        return pairs
    }
}

/// What a migration in place (`InferredMapping.migrate`) needs of the store it runs in: its
/// connection, in the migration's transaction, and what its SQL says differently.
protocol MigrationSQL {
    /// `NSStoreType` of the store.
    var storeType: String { get }
    func execute(_ sql: String) throws
    func rows(_ sql: String) throws -> [[SQLiteValue]]
    /// An identifier as SQL.
    func quoted(_ name: String) -> String
    func tableNames() throws -> Set<String>
    func indexNames() throws -> Set<String>
    /// The name an index of the layout has in the store.
    func indexName(_ index: TableLayout.Index) -> String
    /// The column type for a column Core Data declares as `declaredType`.
    func columnType(_ declaredType: String) -> String
    /// The statement that makes `table` as a new store of `schema` has it.
    func createTable(_ table: TableLayout.Table, of schema: TableLayout) -> String
    func createJoinTable(_ join: TableLayout.JoinTable, of schema: TableLayout) -> String
    func createIndex(_ index: TableLayout.Index, ifNotExists: Bool) -> String
    func dropIndex(_ index: TableLayout.Index) -> String
    /// The larger of two numbers, as SQL.
    func greatest(_ a: String, _ b: String) -> String
    /// A stored value as a SQL literal.
    func literal(_ value: SQLiteValue) -> String
    /// Makes what computes the new version's derived attributes.
    func installDerivedAttributes(schema: TableLayout, model: ManagedObjectModel) throws
    /// Renumbers the entities persistent history names.
    func renumberHistory(tables: Set<String>, numbers: [(old: Int64, new: Int64)]) throws
    func readMetadata() throws -> [String: PropertyListValue]
    func writeMetadata(_ metadata: [String: PropertyListValue]) throws
    /// Replaces the store's model cache (none: removed).
    func replaceModelCache(_ cache: Data?) throws
}
