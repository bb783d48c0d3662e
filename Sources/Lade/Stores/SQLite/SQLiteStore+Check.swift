import Foundation

/// Finding damage in a SQLite store: SQLite's own integrity check, then Core Data's
/// invariants for the model, each as a count with the first place it was seen.
extension SQLiteStore {
    /// What in the store breaks Core Data's invariants for the model (see `StoreDamage`).
    ///
    /// Quick (`thorough: false`, a few SQL queries, what conversions and exports run first):
    /// rows whose `Z_ENT` names no concrete entity, to-one keys and join-table rows naming
    /// objects that are not there. Thorough adds `PRAGMA integrity_check`, `Z_PRIMARYKEY`'s
    /// counters, every value read as its attribute's type, required values, uniqueness
    /// constraints and one-to-one inverses.
    package func damage(thorough: Bool) throws -> [StoreDamage] {
        try withConnection { connection in
            var found: [StoreDamage] = []
            if thorough { found += try integrityDamage(connection) }
            // A file SQLite calls damaged may fail any query below; what it found is the answer.
            if !found.isEmpty { return found }
            // Tables and columns the model's layout has and the file lacks: every query below
            // would fail on them, so they are the answer.
            found += try layoutDamage(connection)
            if !found.isEmpty { return found }
            if thorough { found += try keyCounterDamage(connection) }
            found += try unknownEntityDamage(connection)
            found += try danglingReferenceDamage(connection)
            found += try danglingLinkDamage(connection)
            if thorough {
                found += try valueDamage(connection)
                found += try uniquenessDamage(connection)
                found += try inverseDamage(connection)
                found += try missingIndexDamage(connection)
                found += try derivedValueDamage(connection)
                found += try orphanExternalFileDamage(connection)
                if let damage = SQLiteHistory.missingTablesDamage(tables: try connection.tableNames(), entityNumbers: storedEntityNames.keys) { found.append(damage) }
            }
            return found
        }
    }

    // MARK: Parts

    /// The model's tables (entity and join tables) the file lacks, and columns of them it
    /// lacks, one finding per table, as the PostgreSQL store's check reports them.
    private func layoutDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        let tables = try connection.tableNames()
        var found: [StoreDamage] = []
        let expected = schema.tables.map { ($0.name, $0.columns.map(\.name), "entity table of \(model.hierarchy(from: $0.rootEntity).map(\.name).joined(separator: ", "))") }
            + schema.joinTables.map { ($0.name, [$0.sourceColumn, $0.destinationColumn] + [$0.sourceOrderColumn, $0.destinationOrderColumn].compactMap { $0 },
                                      "join table of \($0.relationship.entity).\($0.relationship.name)") }
        for (table, wanted, role) in expected {
            guard tables.contains(table) else {
                found.append(StoreDamage(.missingTable, place: table, count: 1, example: "\(role), not in the file",
                                         problem: "table of the model's layout missing (its objects cannot be read or written; restore it from a backup, or convert the store from one)"))
                continue
            }
            let present = Set(try connection.rows("PRAGMA table_info(\(TableLayout.quoted(table)))").compactMap { row -> String? in
                if case .text(let name) = row[1] { return name.uppercased() } else { return nil } })
            let missing = wanted.filter { !present.contains($0.uppercased()) }
            guard !missing.isEmpty else { continue }
            found.append(StoreDamage(.missingColumn, place: table, count: missing.count, example: missing.joined(separator: ", "),
                                     problem: "column\(missing.count == 1 ? "" : "s") of the model's layout missing (the table's objects cannot be read or written)"))
        }
        return found
    }

    /// `relationship.@count` values that are not the count, as Core Data's triggers compute it
    /// (every row of the counted table whose key names the object). Other forms are computed by
    /// triggers Lade runs but does not make; it does not second-guess them.
    private func derivedValueDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        var found: [StoreDamage] = []
        for derived in model.derivedAttributes {
            guard let count = schema.countDerivation(for: derived, in: model) else { continue }
            let kinds = count.entityNumbers.map(String.init).joined(separator: ", ")
            let actual = "(SELECT COUNT(d.\(count.foreignKey)) FROM \(count.parameterTable) d WHERE d.\(count.foreignKey) = s.Z_PK)"
            guard let (number, key) = try countAndFirst("SELECT COUNT(*), MIN(s.Z_PK) FROM \(count.sourceTable) s WHERE s.Z_ENT IN (\(kinds)) AND s.\(count.valueColumn) IS NOT \(actual)", connection) else { continue }
            let row = try connection.rows("SELECT s.\(count.valueColumn), \(actual) FROM \(count.sourceTable) s WHERE s.Z_PK = \(key)").first ?? []
            found.append(StoreDamage(
                .derivedValue, place: "\(derived.entity).\(derived.attribute.name)", count: Int(number),
                example: "Z_PK \(key) holds \(row.first.map(SQLiteValueCoding.shown) ?? "?") where \(derived.attribute.derivationExpression ?? "its derivation") is \(row.dropFirst().first.map(SQLiteValueCoding.shown) ?? "?")",
                problem: "derived \(number == 1 ? "value that is" : "values that are") not what \(number == 1 ? "it derives" : "they derive") from (\(derived.attribute.derivationExpression ?? ""))"))
        }
        return found
    }

    /// Indexes of the layout the file lacks, one finding per table.
    private func missingIndexDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        let present = try connection.indexNames()
        var missing: [String: [TableLayout.Index]] = [:]
        for index in schema.indexes where !present.contains(index.name) { missing[index.table, default: []].append(index) }
        return missing.keys.sorted().map { table in
            let indexes = missing[table]!
            let onlyFetch = indexes.allSatisfy { $0.kind == .fetch }
            return StoreDamage(.missingIndex, place: table, count: indexes.count, example: indexes.map(\.name).joined(separator: ", "),
                               problem: onlyFetch
                                   ? "fetch indexes of the model not in the file (an import stopped before its last commit leaves them out; running the import again builds them)"
                                   : "indexes of the model's layout not in the file")
        }
    }

    private func integrityDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        let lines = try connection.rows("PRAGMA integrity_check(100)").compactMap { row -> String? in
            if case .text(let line) = row.first { return line } else { return nil }
        }
        guard lines != ["ok"], let first = lines.first else { return [] }
        return [StoreDamage(.integrity, place: "SQLite file", count: lines.count, example: first,
                            problem: lines.count >= 100 ? "or more problems found by PRAGMA integrity_check" : "problems found by PRAGMA integrity_check")]
    }

    private func keyCounterDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        var found: [StoreDamage] = []
        var counters: [Int64: SQLiteValue] = [:]
        for row in try connection.rows("SELECT Z_ENT, Z_MAX FROM Z_PRIMARYKEY") {
            if case .integer(let number) = row[0] { counters[number] = row[1] }
        }
        for root in schema.entities where root.name == root.rootName {
            guard case .integer(let largest) = try connection.rows("SELECT IFNULL(MAX(Z_PK), 0) FROM \(root.tableName)").first?.first else { continue }
            let counter = counters[root.number]
            if case .integer(let maximum)? = counter, maximum >= largest { continue }
            found.append(StoreDamage(
                .keyCounter, place: "Z_PRIMARYKEY", count: 1,
                example: "Z_ENT \(root.number) (\(root.name)): Z_MAX is \(counter.map(SQLiteValueCoding.shown) ?? "missing (no row)"), \(root.tableName) holds Z_PK \(largest)",
                problem: "key counter below a key in use (new objects would take keys already taken)"))
        }
        if SQLiteHistory.isTracked(tables: try connection.tableNames()) { found += try SQLiteHistory.keyCounterDamage(in: connection) }
        return found
    }

    private func unknownEntityDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        var found: [StoreDamage] = []
        for table in schema.tables {
            guard let (count, key) = try countAndFirst("SELECT COUNT(*), MIN(t.Z_PK) FROM \(table.name) t WHERE NOT (\(kinds(of: table.rootEntity, alias: "t")) AND t.Z_ENT IS NOT NULL)", connection) else { continue }
            let number = try connection.rows("SELECT Z_ENT FROM \(table.name) WHERE Z_PK = \(key)").first?.first ?? .null
            found.append(StoreDamage(
                .unknownEntity, place: table.name, count: Int(count), example: "Z_PK \(key), Z_ENT \(SQLiteValueCoding.shown(number))",
                problem: count == 1 ? "row whose Z_ENT names no concrete entity of the model" : "rows whose Z_ENT names no concrete entity of the model"))
        }
        return found
    }

    /// `Z_ENT IN (…)` for the concrete entities of `entity`'s hierarchy, on table alias `alias`.
    private func kinds(of entity: String, alias: String) -> String {
        let numbers = schema.entityNumbers(from: entity, in: model, concreteOnly: true)
        return numbers.isEmpty ? "0" : "\(alias).Z_ENT IN (\(numbers.map(String.init).joined(separator: ", ")))"
    }

    /// A `SELECT COUNT(*), MIN(…)` query's two answers, or nil when it counts nothing.
    private func countAndFirst(_ sql: String, _ connection: SQLiteConnection) throws -> (count: Int64, first: Int64)? {
        let row = try connection.rows(sql).first
        guard case .integer(let count)? = row?[0], count > 0, case .integer(let first)? = row?[1] else { return nil }
        return (count, first)
    }

    private func danglingReferenceDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        var found: [StoreDamage] = []
        for entity in model.entities {
            for relationship in entity.relationships where !relationship.isToMany && !relationship.isTransient {
                guard let column = schema.columnName(for: .toOne(entity: entity.name, name: relationship.name)) else { continue }
                let table = schema.entity(named: entity.name)!.tableName
                let destination = schema.entity(named: relationship.destinationEntityName)!.tableName
                let sql = """
                    SELECT COUNT(*), MIN(s.Z_PK) FROM \(table) s WHERE \(kinds(of: entity.name, alias: "s")) AND s.\(column) IS NOT NULL \
                    AND NOT EXISTS (SELECT 1 FROM \(destination) d WHERE d.Z_PK = s.\(column) AND \(kinds(of: relationship.destinationEntityName, alias: "d")))
                    """
                guard let (count, key) = try countAndFirst(sql, connection) else { continue }
                let target = try connection.rows("SELECT \(column) FROM \(table) WHERE Z_PK = \(key)").first?.first ?? .null
                found.append(StoreDamage(
                    .danglingReference, place: "\(entity.name).\(relationship.name)", count: Int(count),
                    example: "Z_PK \(key) names \(relationship.destinationEntityName) Z_PK \(SQLiteValueCoding.shown(target))",
                    problem: count == 1 ? "reference to an object that is not in the store" : "references to objects that are not in the store"))
            }
        }
        // The owner columns of to-many relationships without an inverse: each names the object
        // whose relationship holds the row.
        for owner in schema.ownerKeys {
            let source = schema.entity(named: owner.relationship.entity)!.tableName
            let sql = """
                SELECT COUNT(*), MIN(d.Z_PK) FROM \(owner.table) d WHERE \(kinds(of: owner.destinationEntity, alias: "d")) AND d.\(owner.column) IS NOT NULL \
                AND NOT EXISTS (SELECT 1 FROM \(source) s WHERE s.Z_PK = d.\(owner.column) AND \(kinds(of: owner.relationship.entity, alias: "s")))
                """
            guard let (count, key) = try countAndFirst(sql, connection) else { continue }
            let target = try connection.rows("SELECT \(owner.column) FROM \(owner.table) WHERE Z_PK = \(key)").first?.first ?? .null
            found.append(StoreDamage(
                .danglingReference, place: "\(owner.relationship.entity).\(owner.relationship.name)", count: Int(count),
                example: "\(owner.destinationEntity) Z_PK \(key) has \(owner.column) \(SQLiteValueCoding.shown(target)), naming no \(owner.relationship.entity)",
                problem: count == 1 ? "destination whose owner is not in the store" : "destinations whose owner is not in the store"))
        }
        return found
    }

    private func danglingLinkDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        var found: [StoreDamage] = []
        for join in schema.joinTables {
            guard let relationship = model.relationship(join.relationship.name, of: join.relationship.entity) else { continue }
            let sides = [
                (join.sourceColumn, join.relationship.entity),
                (join.destinationColumn, relationship.destinationEntityName),
            ]
            var count: Int64 = 0
            var example = ""
            for (column, entity) in sides {
                let table = schema.entity(named: entity)!.tableName
                let sql = """
                    SELECT COUNT(*), MIN(j.\(column)) FROM \(join.name) j \
                    WHERE NOT EXISTS (SELECT 1 FROM \(table) d WHERE d.Z_PK = j.\(column) AND \(kinds(of: entity, alias: "d")))
                    """
                let rows = try connection.rows(sql)
                guard case .integer(let missing) = rows.first?[0], missing > 0 else { continue }
                count += missing
                if example.isEmpty {
                    let shown = if case .integer(let n) = rows.first?[1] { String(n) } else { "NULL" }
                    example = "\(join.name).\(column) names \(entity) Z_PK \(shown)"
                }
            }
            if count > 0 {
                found.append(StoreDamage(
                    .danglingLink, place: "\(join.relationship.entity).\(join.relationship.name)", count: Int(count), example: example,
                    problem: count == 1 ? "many-to-many link to an object that is not in the store" : "many-to-many links to objects that are not in the store"))
            }
        }
        return found
    }

    /// Reads every row as the model's types say, counting what cannot be read and required
    /// values that are missing, per attribute or relationship.
    private func valueDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        struct Tally { var count = 0; var example = "" }
        var wrong: [String: (TableReadPlan, TableReadPlan.Attribute, Int64, SQLiteValueCoding.Unreadable, Int)] = [:]
        var missingFiles: [String: (TableReadPlan, TableReadPlan.Attribute, Int64, SQLiteExternalData.MissingFile, Int)] = [:]
        var missing: [String: Tally] = [:]
        var order: [String] = []
        for entity in schema.entities {
            guard let plan = readPlans[entity.number], let described = model.entity(named: entity.name), !described.isAbstract else { continue }
            let requiredAttributes = Set(model.attributes(of: entity.name).filter { !$0.isOptional && !$0.isTransient }.map(\.name))
            let requiredToOne = Set(model.relationships(of: entity.name).filter { !$0.isOptional && !$0.isToMany && !$0.isTransient }.map(\.name))
            let statement = try connection.prepare("SELECT \(schema.selectList(ofTable: entity.tableName)) FROM \(entity.tableName) WHERE Z_ENT = ? ORDER BY Z_PK")
            try statement.bind([.integer(entity.number)])
            while try statement.step() {
                guard case .integer(let key) = statement.value(at: 0) else { continue }
                for attribute in plan.attributes {
                    let place = "\(entity.name).\(attribute.name)"
                    do {
                        let column = statement.value(at: attribute.column)
                        if attribute.external, let externalData, externalData.marked {
                            // An external value's file is looked for, not read.
                            if case .file(let name)? = try SQLiteExternalData.parse(column), !externalData.hasFile(name) {
                                let missing = SQLiteExternalData.MissingFile(path: externalData.folder.appendingPathComponent(name).path, reason: "there is no file here")
                                let tally = "file " + place
                                if let seen = missingFiles[tally] { missingFiles[tally] = (seen.0, seen.1, seen.2, seen.3, seen.4 + 1) } else {
                                    order.append(tally)
                                    missingFiles[tally] = (plan, attribute, key, missing, 1)
                                }
                            }
                        }
                        if try (attribute.external && externalData?.marked == true ? SQLiteExternalData.parse(column).map { _ in AttributeValue.binary(Data()) }
                                : SQLiteValueCoding.decode(column, as: attribute.type)) == nil, requiredAttributes.contains(attribute.name) {
                            if missing[place] == nil { order.append(place); missing[place] = Tally(example: "Z_PK \(key)") }
                            missing[place]!.count += 1
                        }
                    } catch {
                        if let seen = wrong[place] {
                            wrong[place] = (seen.0, seen.1, seen.2, seen.3, seen.4 + 1)
                        } else {
                            order.append(place)
                            wrong[place] = (plan, attribute, key, error, 1)
                        }
                    }
                }
                for relationship in plan.toOne where requiredToOne.contains(relationship.name) {
                    guard case .null = statement.value(at: relationship.column) else { continue }
                    let place = "\(entity.name).\(relationship.name)"
                    if missing[place] == nil { order.append(place); missing[place] = Tally(example: "Z_PK \(key)") }
                    missing[place]!.count += 1
                }
            }
        }
        return order.map { place in
            if let (plan, attribute, key, missing, count) = missingFiles[place] {
                return missingExternalFile(plan, attribute, key: key, missing, count: count)
            }
            if let (plan, attribute, key, error, count) = wrong[place] {
                return wrongType(plan, attribute, key: key, error, count: count)
            }
            let tally = missing[place]!
            return StoreDamage(.requiredMissing, place: place, count: tally.count, example: tally.example,
                               problem: tally.count == 1 ? "object without a value for a required property" : "objects without a value for a required property")
        }
    }

    private func uniquenessDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        var found: [StoreDamage] = []
        for entity in model.entities {
            for constraint in entity.uniquenessConstraints {
                let columns = constraint.compactMap { property -> String? in
                    guard let declaring = TableLayout.declaringEntity(of: property, from: entity.name, in: model) else { return nil }
                    return schema.columnName(for: .attribute(entity: declaring, name: property)) ?? schema.columnName(for: .toOne(entity: declaring, name: property))
                }
                guard columns.count == constraint.count, !columns.isEmpty else { continue }
                let table = schema.entity(named: entity.name)!.tableName
                let list = columns.map { "t.\($0)" }.joined(separator: ", ")
                let sql = """
                    SELECT SUM(n - 1), MIN(k) FROM (SELECT COUNT(*) AS n, MIN(t.Z_PK) AS k FROM \(table) t \
                    WHERE \(kinds(of: entity.name, alias: "t")) AND \(columns.map { "t.\($0) IS NOT NULL" }.joined(separator: " AND ")) \
                    GROUP BY \(list) HAVING COUNT(*) > 1)
                    """
                guard let (count, key) = try countAndFirst(sql, connection) else { continue }
                found.append(StoreDamage(
                    .notUnique, place: "\(entity.name) (\(constraint.joined(separator: ", ")))", count: Int(count),
                    example: "Z_PK \(key) shares its values with another object",
                    problem: count == 1 ? "object sharing the values of a uniqueness constraint with an earlier one" : "objects sharing the values of a uniqueness constraint with an earlier one"))
            }
        }
        return found
    }

    /// One-to-one relationships keep a key on both sides; each must name the other.
    private func inverseDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        var found: [StoreDamage] = []
        for entity in model.entities {
            for relationship in entity.relationships where !relationship.isToMany && !relationship.isTransient {
                guard let inverse = model.inverse(of: relationship), !inverse.isToMany, !inverse.isTransient,
                      let inverseDeclaring = TableLayout.declaringEntity(of: inverse.name, from: relationship.destinationEntityName, in: model),
                      let column = schema.columnName(for: .toOne(entity: entity.name, name: relationship.name)),
                      let inverseColumn = schema.columnName(for: .toOne(entity: inverseDeclaring, name: inverse.name))
                else { continue }
                let table = schema.entity(named: entity.name)!.tableName
                let destination = schema.entity(named: relationship.destinationEntityName)!.tableName
                let sql = """
                    SELECT COUNT(*), MIN(s.Z_PK) FROM \(table) s JOIN \(destination) d ON d.Z_PK = s.\(column) AND \(kinds(of: relationship.destinationEntityName, alias: "d")) \
                    WHERE \(kinds(of: entity.name, alias: "s")) AND d.\(inverseColumn) IS NOT s.Z_PK
                    """
                guard let (count, key) = try countAndFirst(sql, connection) else { continue }
                found.append(StoreDamage(
                    .inverseMismatch, place: "\(entity.name).\(relationship.name)", count: Int(count),
                    example: "Z_PK \(key): its \(relationship.destinationEntityName) does not name it back in \(inverse.name)",
                    problem: count == 1 ? "one-to-one reference whose inverse does not point back" : "one-to-one references whose inverse does not point back"))
            }
        }
        return found
    }
}

/// External binary data no row names (`SQLiteExternalData`): what a run killed between writing
/// a file and committing its row leaves, or one killed after a commit and before removing the
/// files of values it replaced.
extension SQLiteStore {
    /// The files in the store's `_EXTERNAL_DATA` folder that no row names, by name: files
    /// named as Core Data names them (a UUID) and files Lade was writing (`.lade-partial`);
    /// any other file there is left alone. Call with the connection held.
    func orphanExternalFiles(_ connection: SQLiteConnection) throws -> [String] {
        guard let externalData, externalData.marked,
              let names = try? FileManager.default.contentsOfDirectory(atPath: externalData.folder.path) else { return [] }
        let candidates = names.filter { name in
            SQLiteExternalData.isFileName(name) || (name.hasPrefix(".") && name.hasSuffix(SQLiteExternalData.partialSuffix))
        }
        guard !candidates.isEmpty else { return [] }
        var named: Set<String> = []
        var seen: Set<String> = []
        for plan in writePlans.values.sorted(by: { $0.table < $1.table }) {
            for column in plan.externalColumns where seen.insert("\(plan.table).\(column)").inserted {
                let statement = try connection.prepare("SELECT \(column) FROM \(plan.table) WHERE substr(\(column), 1, 1) = X'02'")
                while try statement.step() {
                    if case .file(let name)? = try? SQLiteExternalData.parse(statement.value(at: 0)) { named.insert(name.uppercased()) }
                }
            }
        }
        return candidates.filter { !named.contains($0.uppercased()) }.sorted()
    }

    private func orphanExternalFileDamage(_ connection: SQLiteConnection) throws -> [StoreDamage] {
        let orphans = try orphanExternalFiles(connection)
        guard let first = orphans.first, let externalData else { return [] }
        return [StoreDamage(.orphanExternalFile, place: externalData.folder.path, count: orphans.count, example: first,
                            problem: orphans.count == 1 ? "external binary data file that no row names (removed by a repair of the store)" : "external binary data files that no row names (removed by a repair of the store)")]
    }

    /// Removes the external binary data files no row names, holding the store's write lock
    /// (`BEGIN IMMEDIATE`), so that no save is writing files meanwhile (a save writes its files
    /// inside its transaction); returns their names.
    package func removeOrphanExternalFiles() throws -> [String] {
        guard !isReadOnly else { throw StoreError(.readOnly, path: fileURL.path, "the store was opened read-only") }
        return try withConnection { connection in
            try connection.transaction {
                let orphans = try orphanExternalFiles(connection)
                guard let externalData else { return orphans }
                for name in orphans { unlink(externalData.folder.appendingPathComponent(name).path) }
                if !orphans.isEmpty { try FileSystem.fsync(path: externalData.folder.path) }
                return orphans
            }
        }
    }
}
