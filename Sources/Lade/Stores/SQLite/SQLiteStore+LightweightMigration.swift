import Foundation

/// How a SQLite store executes a lightweight migration: in place, with SQL, in one
/// transaction, as Core Data migrates a SQLite store on opening it. `LightweightMigration`
/// (in `Migration/`) plans it and decides what is refused; this carries out what it inferred.
extension InferredMapping {
    /// Carries the SQLite store at `url` to `destination`, in one transaction: a failure or a
    /// kill leaves it at the old version. A damaged store is refused before anything is
    /// written; objects that cannot be carried (shared values of a new uniqueness constraint,
    /// a required attribute without a value) are refused (`Refusal`) with the transaction
    /// rolled back.
    ///
    /// `progress` is told each table being rebuilt, with its rows.
    func executeOnSQLiteStore(at url: URL, progress: (@Sendable (String) -> Void)?) throws {
        if let refusal = StoreError.refusingComposites(in: destination, storeType: StoreMetadata.sqliteStoreType, path: url.path) { throw refusal }
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
                try migrate(connection, at: url, progress: progress)
            }
            _ = try connection.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch let error as SQLiteError {
            throw StoreError(path: url.path, sqlite: error)
        }
    }

    private func migrate(_ connection: SQLiteConnection, at url: URL, progress: (@Sendable (String) -> Void)?) throws {
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
        // Derived attributes: the old tables took their triggers with them; the new version's
        // are made as a new store's are, and their values set from the rows carried.
        try SQLiteStore.installDerivedAttributeTriggers(schema: destinationSchema, model: destination, connection: connection)
        // Z_PRIMARYKEY: kept entities keep their rows (a renamed one its old name, as Core
        // Data's does; its Z_MAX), under their new numbers; new entities get theirs; removed
        // ones go.
        var stored: [Int64: (name: SQLiteValue, max: SQLiteValue)] = [:]
        for row in try connection.rows("SELECT Z_ENT, Z_NAME, Z_MAX FROM Z_PRIMARYKEY") {
            if case .integer(let number) = row[0] { stored[number] = (row[1], row[2]) }
        }
        // The history entities' rows (16001-16003) stay: their tables and rows are kept.
        try connection.execute("DELETE FROM Z_PRIMARYKEY WHERE Z_ENT NOT IN (16001, 16002, 16003)")
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
        try SQLiteHistory.renumberChanges(connection, tables: oldTables, numbers: destinationSchema.entities.compactMap { entity in
            entityMap[entity.name].flatMap { sourceSchema.entity(named: $0)?.number }.map { ($0, entity.number) }
        })
        // Metadata: the new version's hashes and identifiers, the rest kept.
        let (_, old) = try SQLiteStore.readMetadata(connection, path: url.path)
        var metadata = old
        let made = StoreMetadata.make(for: destination, storeType: StoreMetadata.sqliteStoreType)
        for key in [StoreMetadata.Key.versionHashes, StoreMetadata.Key.versionHashesVersion, StoreMetadata.Key.versionHashesDigest, StoreMetadata.Key.versionIdentifiers] {
            metadata[key] = made[key]
        }
        metadata[StoreMetadata.Key.ladeVersionHashKind] = made[StoreMetadata.Key.ladeVersionHashKind]
        try connection.prepare("UPDATE Z_METADATA SET Z_PLIST = ? WHERE Z_VERSION = 1").run([try SQLiteStore.encodedMetadata(metadata)])
        // Core Data's cached compiled model described the old version: the new version's
        // replaces it, in this transaction (none for a version that cannot be archived, never the old one).
        if try !connection.tableNames().contains("Z_MODELCACHE") { try connection.execute(SQLiteSchema.modelCacheTableStatement) }
        try connection.execute("DELETE FROM Z_MODELCACHE")
        if let cache = try destination.modelCacheBlobIfArchivable() {
            try connection.prepare("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)").run([.blob(cache)])
        }
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
        guard reasons.isEmpty else { throw Refusal(reasons: reasons) }
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
        guard reasons.isEmpty else { throw Refusal(reasons: reasons) }
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
}
