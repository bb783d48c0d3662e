import Foundation

/// Reading and writing rows: the PostgreSQL store's side of `PersistentStore`.
extension PostgreSQLStore: PersistentStore {
    package var type: String { Self.storeType }
    package var url: URL? { location.url }

    // MARK: Fetching

    /// Rows of the entity (and its subentities) narrowed by what `PostgreSQLQuery` can say in
    /// SQL exactly as the evaluator means it; the rest of the predicate, the sort and the
    /// window are applied by the evaluator (`StoreRowEvaluation`) when SQL could not say them.
    package func fetch(_ request: StoreFetchRequest) throws -> [StoreRow] {
        guard let entity = schema.entity(named: request.entityName) else { throw UnknownEntityError(request.entityName, in: model) }
        let query = try PostgreSQLQuery(request, store: self)
        let rows = try withConnection { connection in
            let result = try connection.execute(query.select(schema.selectListQuoted(ofTable: entity.tableName, prefix: "t0."), prefix: prefix), query.parameters)
            return try (0..<result.count).map { try decodeRow(result, $0, table: entity.tableName) }
        }
        if query.isExact { return rows }
        return try StoreRowEvaluation(store: self, model: model)
            .apply(request, to: rows, filter: !query.predicateIsExact, sort: !query.orderIsExact, window: true)
    }

    package func count(_ request: StoreFetchRequest) throws -> Int {
        var unsorted = request
        unsorted.sortDescriptors = []
        let query = try PostgreSQLQuery(unsorted, store: self)
        if query.isExact {
            return try withConnection { connection in
                Int(try connection.execute("SELECT count(*) FROM (\(query.select("t0.\"Z_PK\"", prefix: prefix))) AS counted", query.parameters).integer(0, 0) ?? 0)
            }
        }
        return try fetch(unsorted).count
    }

    package func forEachBatch(ofEntity entityName: String, batchSize: Int, _ body: ([StoreRow]) throws -> Void) throws {
        guard let entity = schema.entity(named: entityName) else { throw UnknownEntityError(entityName, in: model) }
        let sql = "SELECT \(schema.selectListQuoted(ofTable: entity.tableName)) FROM \(prefix)\(postgreSQLQuoted(entity.tableName)) WHERE \"Z_ENT\" = $1 AND \"Z_PK\" > $2 ORDER BY \"Z_PK\" LIMIT $3"
        var last = Int64.min
        let size = max(1, batchSize)
        while true {
            let rows = try withConnection { connection in
                let result = try connection.execute(sql, [.integer(entity.number), .integer(last), .integer(Int64(size))])
                return try (0..<result.count).map { try decodeRow(result, $0, table: entity.tableName) }
            }
            guard let end = rows.last?.objectID.primaryKey else { return }
            last = end
            try body(rows)
            if rows.count < size { return }
        }
    }

    package func rows(for ids: [ManagedObjectID]) throws -> [StoreRow] {
        var byTable: [String: [Int64]] = [:]
        for id in ids where id.storeIdentifier == identifier {
            guard let key = id.primaryKey, let entity = schema.entity(named: id.entityName) else { continue }
            byTable[entity.tableName, default: []].append(key)
        }
        return try withConnection { connection in
            var rows: [StoreRow] = []
            for (table, keys) in byTable.sorted(by: { $0.key < $1.key }) {
                for start in stride(from: 0, to: keys.count, by: 10_000) {
                    let chunk = keys[start..<min(start + 10_000, keys.count)]
                    let list = "{" + chunk.map(String.init).joined(separator: ",") + "}"
                    let result = try connection.execute("SELECT \(schema.selectListQuoted(ofTable: table)) FROM \(prefix)\(postgreSQLQuoted(table)) WHERE \"Z_PK\" = ANY($1::bigint[])", [.text(list)])
                    for row in 0..<result.count { rows.append(try decodeRow(result, row, table: table)) }
                }
            }
            return rows
        }
    }

    /// Decodes a row of an entity table, its columns as `selectListQuoted` lists them; a row
    /// the model cannot read is damage, refused with where it is.
    private func decodeRow(_ result: PostgreSQLResult, _ row: Int, table: String) throws -> StoreRow {
        guard let key = result.integer(row, 0), let number = result.integer(row, 1), let plan = readPlans[number] else {
            throw StoreError.damaged([StoreDamage(.unknownEntity, place: table, count: 1,
                                                  example: "Z_PK \(result.text(row, 0) ?? "NULL"), Z_ENT \(result.text(row, 1) ?? "NULL")",
                                                  problem: "row whose Z_ENT names no entity of the model")], path: location.redacted)
        }
        let version = result.integer(row, 2) ?? 0
        var values = [AttributeValue?](repeating: nil, count: plan.layout.attributes.count)
        for attribute in plan.attributes {
            let stored = result.value(row, attribute.column)
            do {
                values[attribute.position] = try PostgreSQLValueCoding.decode(stored, as: attribute.type)
            } catch {
                let column = schema.columnName(for: .attribute(entity: TableLayout.declaringEntity(of: attribute.name, from: plan.entity, in: model) ?? plan.entity, name: attribute.name)) ?? attribute.name
                throw StoreError.damaged([StoreDamage(.wrongType, place: "\(plan.entity).\(attribute.name)", count: 1,
                                                      example: "Z_PK \(key) holds \(error.held) in \(column)",
                                                      problem: "value that cannot be \(attribute.type.rawValue) (the attribute's type)")], path: location.redacted)
            }
        }
        var toOne = [ManagedObjectID?](repeating: nil, count: plan.layout.relationships.count)
        for relationship in plan.toOne {
            guard let destination = result.integer(row, relationship.column) else { continue }
            var entityName = relationship.destination
            if let column = relationship.entityColumn, let number = result.integer(row, column), let actual = schema.entity(number: number) {
                entityName = actual.name
            }
            toOne[relationship.position] = ManagedObjectID(entityName: entityName, storeIdentifier: identifier, primaryKey: destination)
        }
        return StoreRow(objectID: ManagedObjectID(entityName: plan.entity, storeIdentifier: identifier, primaryKey: key),
                        version: version, layout: plan.layout, values: values, toOneIDs: toOne)
    }

    package func relatedObjectIDs(of id: ManagedObjectID, relationship name: String) throws -> [ManagedObjectID] {
        try relatedObjectIDs(of: [id], relationship: name)[id] ?? []
    }

    /// One statement per 10,000 objects of one entity hierarchy (`= ANY` of their keys).
    package func relatedObjectIDs(of ids: [ManagedObjectID], relationship name: String) throws -> [ManagedObjectID: [ManagedObjectID]] {
        var found: [ManagedObjectID: [ManagedObjectID]] = [:]
        for (entityName, group) in Dictionary(grouping: ids.filter { $0.primaryKey != nil && $0.storeIdentifier == identifier }, by: \.entityName) {
            guard let sql = schema.toManyRead(name, from: entityName, in: model, quote: postgreSQLQuoted, prefix: prefix,
                                              owners: "= ANY($1::bigint[])", selectingOwner: true) else { continue }
            var owners: [Int64: ManagedObjectID] = [:]
            for id in group { owners[id.primaryKey!] = id; found[id] = [] }
            let keys = owners.keys.sorted()
            try withConnection { connection in
                for start in stride(from: 0, to: keys.count, by: 10_000) {
                    let list = "{" + keys[start..<min(start + 10_000, keys.count)].map(String.init).joined(separator: ",") + "}"
                    let result = try connection.execute(sql, [.text(list)])
                    for row in 0..<result.count {
                        guard let owner = result.integer(row, 0).flatMap({ owners[$0] }), let destinationKey = result.integer(row, 1),
                              let number = result.integer(row, 2), let entity = schema.entity(number: number) else { continue }
                        found[owner, default: []].append(ManagedObjectID(entityName: entity.name, storeIdentifier: identifier, primaryKey: destinationKey))
                    }
                }
            }
        }
        return found
    }

    // MARK: Keys

    package func newObjectIDs(for entity: String, count: Int) throws -> [ManagedObjectID] {
        guard !isReadOnly else { throw StoreError(.readOnly, path: location.redacted, "the store was opened read-only") }
        guard count > 0 else { return [] }
        guard let root = model.rootEntity(of: entity).flatMap({ schema.entity(named: $0.name) }) else { throw UnknownEntityError(entity, in: model) }
        let keys = try lock.withLock { try takeKeys(root: root.number, count: count) }
        return keys.map { ManagedObjectID(entityName: entity, storeIdentifier: identifier, primaryKey: $0) }
    }

    package func giveBackObjectIDs(_ ids: [ManagedObjectID], for entity: String) throws {
        guard !isReadOnly, let keys = ids.handedOutKeys, let root = model.rootEntity(of: entity).flatMap({ schema.entity(named: $0.name) }) else { return }
        lock.withLock { giveBackKeys(root: root.number, keys) }
    }

    // MARK: Saving

    package func save(_ request: StoreSaveRequest) throws {
        guard !isReadOnly else { throw StoreError(.readOnly, path: location.redacted, "the store was opened read-only") }
        guard !request.isEmpty else { return }
        if let metadata = request.metadata {
            for key in StoreMetadata.reservedKeys where metadata[key] != nil && metadata[key] != self.metadata[key] {
                throw StoreError(.reservedMetadataKey, path: location.redacted, "metadata key '\(key)' belongs to the store; it cannot be changed")
            }
        }
        let refused = refusedValues(request)
        guard refused.isEmpty else { throw ObjectValidationError(failures: refused) }
        try withConnection { connection in
            guard !bulkInsertOpen else {
                throw StoreError(.transactionOpen, path: location.redacted, "a batch insert session is open on this store: commit or roll it back before saving")
            }
            // A save of metadata alone leaves the author of the commit it joins as it is.
            if !(request.inserted.isEmpty && request.updated.isEmpty && request.deleted.isEmpty && request.links.isEmpty && request.orders.isEmpty) {
                noteAuthorship(request.authorship)
            }
            let derived = try writeTransaction(connection) { try writingDerivedValues(into: request.derivedValues, connection) {
                try insert(request.inserted, connection)
                var conflicts: [StoreSaveError.VersionConflict] = []
                for change in request.updated {
                    if let conflict = try update(change, connection) { conflicts.append(conflict) }
                }
                for deletion in request.deleted {
                    if let conflict = try delete(deletion.objectID, expectedVersion: deletion.expectedVersion, connection) { conflicts.append(conflict) }
                }
                guard conflicts.isEmpty else { throw StoreSaveError.conflicts(conflicts) }
                for link in request.links { try apply(link, connection) }
                for order in request.orders { try apply(order, connection) }
                if let metadata = request.metadata { try writeMetadata(metadata, connection) }
            } }
            for (objectID, attribute, value) in derived { request.derivedValues?.record(objectID, attribute, value) }
        }
        if let metadata = request.metadata { metadataCommitted(metadata) }
    }

    /// Runs a write: in its own transaction, or, while saves are held, in a savepoint of the
    /// held transaction (so a failed save leaves the saves before it).
    func writeTransaction<T>(_ connection: PostgreSQLConnection, _ body: () throws -> T) throws -> T {
        guard heldSaves != nil else {
            return try connection.transaction {
                let result = try body()
                try recordHistory(connection)
                return result
            }
        }
        try connection.execute("SAVEPOINT lade_save")
        do {
            let result = try body()
            try connection.execute("RELEASE SAVEPOINT lade_save")
            return result
        } catch {
            if connection.isAlive { _ = try? connection.execute("ROLLBACK TO SAVEPOINT lade_save") }
            throw error
        }
    }

    private func refusedValues(_ request: StoreSaveRequest) -> [ObjectValidationError.Failure] {
        var refused: [ObjectValidationError.Failure] = []
        for change in request.inserted + request.updated {
            for (name, value) in change.attributes {
                if let reason = PostgreSQLValueCoding.refusal(value) {
                    refused.append(ObjectValidationError.Failure(objectID: change.objectID, property: name, rule: .precision, value: value.map { "\($0)" }, message: reason))
                }
            }
        }
        return refused
    }

    /// The values of one new row, in its write plan's column order after Z_PK, Z_ENT, Z_OPT.
    private func insertValues(_ change: StoreSaveRequest.RowChange, _ plan: TableWritePlan, key: Int64) -> [PostgreSQLValue] {
        var values: [PostgreSQLValue] = [.integer(key), .integer(plan.number), .integer(1)]
        if let positional = change.positional, positional.layout === plan.layout {
            for column in plan.columns {
                switch column.kind {
                case .attribute(_, let index): values.append(PostgreSQLValueCoding.encode(positional.values[index]))
                case .toOne(_, let index): values.append(positional.toOneIDs[index]?.primaryKey.map { .integer($0) } ?? .null)
                case .toOneEntity(_, let index): values.append(entityNumberValue(positional.toOneIDs[index]))
                }
            }
        } else {
            let attributes = change.attributes, toOne = change.toOne
            for column in plan.columns {
                switch column.kind {
                case .attribute(let name, _): values.append(PostgreSQLValueCoding.encode(attributes[name] ?? nil))
                case .toOne(let name, _): values.append((toOne[name] ?? nil)?.primaryKey.map { .integer($0) } ?? .null)
                case .toOneEntity(let name, _): values.append(entityNumberValue(toOne[name] ?? nil))
                }
            }
        }
        return values
    }

    /// New rows, one `COPY` per entity (a multi-row `INSERT` of bound values spent some 40% of
    /// the server's time on that path parsing and planning it); when one breaks a unique index,
    /// they are written again row by row to name the object that did.
    private func insert(_ changes: [StoreSaveRequest.RowChange], _ connection: PostgreSQLConnection) throws {
        var byEntity: [String: [StoreSaveRequest.RowChange]] = [:]
        var order: [String] = []
        for change in changes {
            if byEntity[change.objectID.entityName] == nil { order.append(change.objectID.entityName) }
            byEntity[change.objectID.entityName, default: []].append(change)
        }
        for entity in order {
            guard let plan = writePlans[entity] else { continue }
            let names = (["Z_PK", "Z_ENT", "Z_OPT"] + plan.columns.map(\.name)).map(postgreSQLQuoted).joined(separator: ", ")
            let table = "\(prefix)\(postgreSQLQuoted(plan.table))"
            let rows = byEntity[entity]!.filter { $0.objectID.primaryKey != nil }
            guard !rows.isEmpty else { continue }
            var next = 0
            do {
                // The savepoint is made by the statement that starts the COPY (one round trip).
                _ = try connection.copyIn("SAVEPOINT lade_insert; COPY \(table) (\(names)) FROM STDIN") { buffer in
                    while next < rows.count && buffer.count < 1 << 20 {
                        for (index, value) in insertValues(rows[next], plan, key: rows[next].objectID.primaryKey!).enumerated() {
                            if index > 0 { buffer.append(9) }
                            PostgreSQLCopyText.append(value, to: &buffer)
                        }
                        buffer.append(10)
                        next += 1
                    }
                    return next < rows.count
                }
            } catch let error as PostgreSQLError where error.isUniqueViolation {
                try connection.execute("ROLLBACK TO SAVEPOINT lade_insert")
                let width = 3 + plan.columns.count
                let single = "INSERT INTO \(table) (\(names)) VALUES (" + (1...width).map { "$\($0)" }.joined(separator: ", ") + ")"
                for change in rows {
                    try run(single, insertValues(change, plan, key: change.objectID.primaryKey!), for: change.objectID, connection)
                }
            }
            try connection.execute("RELEASE SAVEPOINT lade_insert")
        }
    }

    private func update(_ change: StoreSaveRequest.RowChange, _ connection: PostgreSQLConnection) throws -> StoreSaveError.VersionConflict? {
        guard let key = change.objectID.primaryKey, let plan = writePlans[change.objectID.entityName] else { return nil }
        var assignments: [String] = []
        var values: [PostgreSQLValue] = []
        let attributes = change.attributes, toOne = change.toOne
        for column in plan.columns {
            let value: PostgreSQLValue
            switch column.kind {
            case .attribute(let name, _):
                guard let changed = attributes[name] else { continue }
                value = PostgreSQLValueCoding.encode(changed)
            case .toOne(let name, _):
                guard let changed = toOne[name] else { continue }
                value = changed?.primaryKey.map { .integer($0) } ?? .null
            case .toOneEntity(let name, _):
                guard let changed = toOne[name] else { continue }
                value = entityNumberValue(changed)
            }
            values.append(value)
            assignments.append("\(postgreSQLQuoted(column.name)) = $\(values.count)")
        }
        assignments.append("\"Z_OPT\" = \"Z_OPT\" + 1")
        values.append(.integer(key))
        var sql = "UPDATE \(prefix)\(postgreSQLQuoted(plan.table)) SET \(assignments.joined(separator: ", ")) WHERE \"Z_PK\" = $\(values.count)"
        if let expected = change.expectedVersion {
            values.append(.integer(expected))
            sql += " AND \"Z_OPT\" = $\(values.count)"
        }
        guard try run(sql, values, for: change.objectID, connection) == 0 else { return nil }
        return StoreSaveError.VersionConflict(objectID: change.objectID, expectedVersion: change.expectedVersion ?? 0, storedVersion: try storedVersion(of: change.objectID, connection))
    }

    private func delete(_ id: ManagedObjectID, expectedVersion: Int64?, _ connection: PostgreSQLConnection) throws -> StoreSaveError.VersionConflict? {
        guard let key = id.primaryKey, let plan = writePlans[id.entityName] else { return nil }
        var sql = "DELETE FROM \(prefix)\(postgreSQLQuoted(plan.table)) WHERE \"Z_PK\" = $1"
        var values: [PostgreSQLValue] = [.integer(key)]
        if let expectedVersion {
            sql += " AND \"Z_OPT\" = $2"
            values.append(.integer(expectedVersion))
        }
        if try connection.execute(sql, values).affectedRows == 0, let expectedVersion {
            return StoreSaveError.VersionConflict(objectID: id, expectedVersion: expectedVersion, storedVersion: try storedVersion(of: id, connection))
        }
        for (table, column) in plan.joinColumns {
            try connection.execute("DELETE FROM \(prefix)\(postgreSQLQuoted(table)) WHERE \(postgreSQLQuoted(column)) = $1", [.integer(key)])
        }
        for owner in plan.ownerKeys {
            try connection.execute("UPDATE \(prefix)\(postgreSQLQuoted(owner.table)) SET \(postgreSQLQuoted(owner.column)) = NULL WHERE \(postgreSQLQuoted(owner.column)) = $1", [.integer(key)])
        }
        return nil
    }

    private func apply(_ link: StoreSaveRequest.LinkChange, _ connection: PostgreSQLConnection) throws {
        guard let key = link.source.primaryKey,
              let declaring = TableLayout.declaringEntity(of: link.relationship, from: link.source.entityName, in: model) else { return }
        let added = link.added.compactMap(\.primaryKey), removed = link.removed.compactMap(\.primaryKey)
        if let owner = schema.ownerKey(for: .init(entity: declaring, name: link.relationship)) {
            // A to-many with no inverse: the owner's key in each destination's row; a removal
            // clears only a key that is still this owner's (as the SQLite store does).
            let (table, column) = (prefix + postgreSQLQuoted(owner.table), postgreSQLQuoted(owner.column))
            if !added.isEmpty {
                try connection.execute("UPDATE \(table) SET \(column) = $1 WHERE \"Z_PK\" = ANY($2::bigint[])",
                                       [.integer(key), .text("{" + added.map(String.init).joined(separator: ",") + "}")])
            }
            if !removed.isEmpty {
                try connection.execute("UPDATE \(table) SET \(column) = NULL WHERE \"Z_PK\" = ANY($2::bigint[]) AND \(column) = $1",
                                       [.integer(key), .text("{" + removed.map(String.init).joined(separator: ",") + "}")])
            }
            return
        }
        guard let join = schema.joinTable(for: .init(entity: declaring, name: link.relationship)) else { return }
        let named = join.relationship == .init(entity: declaring, name: link.relationship)
        let (mine, theirs) = named ? (join.sourceColumn, join.destinationColumn) : (join.destinationColumn, join.sourceColumn)
        let table = prefix + postgreSQLQuoted(join.name)
        if !added.isEmpty {
            try connection.execute("INSERT INTO \(table) (\(postgreSQLQuoted(mine)), \(postgreSQLQuoted(theirs))) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING",
                                   [.integer(key), .text("{" + added.map(String.init).joined(separator: ",") + "}")])
        }
        if !removed.isEmpty {
            try connection.execute("DELETE FROM \(table) WHERE \(postgreSQLQuoted(mine)) = $1 AND \(postgreSQLQuoted(theirs)) = ANY($2::bigint[])",
                                   [.integer(key), .text("{" + removed.map(String.init).joined(separator: ",") + "}")])
        }
    }

    private func apply(_ order: StoreSaveRequest.OrderChange, _ connection: PostgreSQLConnection) throws {
        guard let key = order.owner.primaryKey, let relationship = model.relationship(order.relationship, of: order.owner.entityName) else { return }
        let declaring = TableLayout.declaringEntity(of: order.relationship, from: order.owner.entityName, in: model)!
        let destinations = order.destinations.compactMap(\.primaryKey)
        guard !destinations.isEmpty else { return }
        // Core Data's gaps of 1024 between order keys, as the SQLite store writes them.
        let keys = "{" + destinations.map(String.init).joined(separator: ",") + "}"
        if let join = schema.joinTable(for: .init(entity: declaring, name: order.relationship)) {
            let named = join.relationship == .init(entity: declaring, name: order.relationship)
            guard let orderColumn = named ? join.destinationOrderColumn : join.sourceOrderColumn else { return }
            let (mine, theirs) = named ? (join.sourceColumn, join.destinationColumn) : (join.destinationColumn, join.sourceColumn)
            try connection.execute("""
                UPDATE \(prefix)\(postgreSQLQuoted(join.name)) AS j SET \(postgreSQLQuoted(orderColumn)) = o.position * 1024
                FROM unnest($2::bigint[]) WITH ORDINALITY AS o(destination, position)
                WHERE j.\(postgreSQLQuoted(mine)) = $1 AND j.\(postgreSQLQuoted(theirs)) = o.destination
                """, [.integer(key), .text(keys)])
        } else if let inverse = model.inverse(of: relationship) {
            let inverseDeclaring = TableLayout.declaringEntity(of: inverse.name, from: relationship.destinationEntityName, in: model)!
            guard let orderColumn = schema.columnName(for: .orderKey(entity: inverseDeclaring, name: inverse.name)) else { return }
            let table = schema.entity(named: relationship.destinationEntityName)!.tableName
            try connection.execute("""
                UPDATE \(prefix)\(postgreSQLQuoted(table)) AS t SET \(postgreSQLQuoted(orderColumn)) = o.position * 1024
                FROM unnest($1::bigint[]) WITH ORDINALITY AS o(destination, position)
                WHERE t."Z_PK" = o.destination
                """, [.text(keys)])
        }
    }

    private func storedVersion(of id: ManagedObjectID, _ connection: PostgreSQLConnection) throws -> Int64? {
        guard let key = id.primaryKey, let plan = writePlans[id.entityName] else { return nil }
        return try connection.execute("SELECT \"Z_OPT\" FROM \(prefix)\(postgreSQLQuoted(plan.table)) WHERE \"Z_PK\" = $1", [.integer(key)]).integer(0, 0)
    }

    private func entityNumberValue(_ id: ManagedObjectID?) -> PostgreSQLValue {
        guard let id, let number = schema.entity(named: id.entityName)?.number else { return .null }
        return .integer(number)
    }

    /// Runs an INSERT or UPDATE for one object; a broken unique index is a uniqueness violation
    /// naming the object and the constraint. Returns the rows changed.
    @discardableResult
    private func run(_ sql: String, _ values: [PostgreSQLValue], for id: ManagedObjectID, _ connection: PostgreSQLConnection) throws -> Int {
        do {
            return try connection.execute(sql, values).affectedRows
        } catch let error as PostgreSQLError where error.isUniqueViolation {
            throw StoreSaveError.uniquenessViolation(entity: id.entityName, properties: uniquenessProperties(in: error, entity: id.entityName), objectID: id)
        }
    }

    /// The uniqueness constraint whose index `error` names.
    func uniquenessProperties(in error: PostgreSQLError, entity: String) -> [String] {
        for described in [model.entity(named: entity)].compactMap({ $0 }) + model.ancestors(of: entity) {
            for constraint in described.uniquenessConstraints {
                let columns = constraint.compactMap { property in
                    schema.columnName(for: .attribute(entity: described.name, name: property)) ?? schema.columnName(for: .toOne(entity: described.name, name: property))
                }
                if let index = schema.indexes.first(where: { $0.isUnique && Set($0.columns) == Set(columns) }), error.message.contains(Self.indexName(index)) {
                    return constraint
                }
            }
        }
        // An index no constraint of the entity makes (it cannot be one Lade made): the server's words.
        return [error.message]
    }

    // MARK: Checking

    /// What breaks Core Data's invariants: tables and columns of the model's layout the schema
    /// lacks, rows whose `Z_ENT` names no entity of the table's hierarchy, and (thorough) values
    /// that cannot be read as their attributes' types. A table found lacking is not read further.
    package func damage(thorough: Bool) throws -> [StoreDamage] {
        var found: [StoreDamage] = []
        var incomplete: Set<String> = []
        try withConnection { connection in
            (found, incomplete) = try layoutDamage(connection)
            for table in schema.tables where !incomplete.contains(table.name) {
                let numbers = model.hierarchy(from: table.rootEntity).compactMap { schema.entity(named: $0.name)?.number }.map(String.init).joined(separator: ",")
                let result = try connection.execute("SELECT count(*), min(\"Z_PK\") FROM \(prefix)\(postgreSQLQuoted(table.name)) WHERE \"Z_ENT\" IS NULL OR \"Z_ENT\" NOT IN (\(numbers))")
                if let count = result.integer(0, 0), count > 0 {
                    found.append(StoreDamage(.unknownEntity, place: table.name, count: Int(count), example: "Z_PK \(result.text(0, 1) ?? "NULL")", problem: "rows whose Z_ENT names no entity of the model"))
                }
            }
        }
        if thorough {
            for entity in schema.entities where !incomplete.contains(entity.tableName) {
                do { try forEachBatch(ofEntity: entity.name, batchSize: 5_000) { _ in } } catch let error as StoreError {
                    if case .damaged(let damage) = error.kind { found += damage } else { throw error }
                }
            }
            // `relationship.@count` values that are not the count (as the SQLite check compares them).
            try withConnection { connection in
                if SQLiteHistory.isTracked(tables: try PostgreSQLHistory.tableNames(connection)) {
                    found += try SQLiteHistory.keyCounterDamage(in: PostgreSQLHistoryDatabase(connection: connection))
                }
                for derived in model.derivedAttributes {
                    guard let count = schema.countDerivation(for: derived, in: model),
                          !incomplete.contains(count.sourceTable), !incomplete.contains(count.parameterTable) else { continue }
                    let (source, parameter) = (prefix + postgreSQLQuoted(count.sourceTable), prefix + postgreSQLQuoted(count.parameterTable))
                    let (value, key) = (postgreSQLQuoted(count.valueColumn), postgreSQLQuoted(count.foreignKey))
                    let actual = "(SELECT count(d.\(key)) FROM \(parameter) d WHERE d.\(key) = s.\"Z_PK\")"
                    let result = try connection.execute("""
                        SELECT count(*) OVER (), s."Z_PK", s.\(value), \(actual) FROM \(source) s
                        WHERE s."Z_ENT" IN (\(count.entityNumbers.map(String.init).joined(separator: ", "))) AND s.\(value) IS DISTINCT FROM \(actual)
                        ORDER BY s."Z_PK" LIMIT 1
                        """)
                    guard result.count == 1, let number = result.integer(0, 0) else { continue }
                    found.append(StoreDamage(
                        .derivedValue, place: "\(derived.entity).\(derived.attribute.name)", count: Int(number),
                        example: "Z_PK \(result.text(0, 1) ?? "?") holds \(result.text(0, 2) ?? "NULL") where \(derived.attribute.derivationExpression ?? "its derivation") is \(result.text(0, 3) ?? "?")",
                        problem: "derived \(number == 1 ? "value that is" : "values that are") not what \(number == 1 ? "it derives" : "they derive") from (\(derived.attribute.derivationExpression ?? ""))"))
                }
            }
        }
        return found
    }

    /// The tables, and columns of tables, of the model's layout that the schema lacks (dropped
    /// or altered by hand); and the names of the tables found lacking, which no query reads.
    private func layoutDamage(_ connection: PostgreSQLConnection) throws -> ([StoreDamage], Set<String>) {
        let result = try connection.execute("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = $1", [.text(location.schema)])
        var columns: [String: Set<String>] = [:]
        for row in 0..<result.count {
            if let table = result.text(row, 0), let column = result.text(row, 1) { columns[table, default: []].insert(column) }
        }
        var found: [StoreDamage] = []
        var incomplete: Set<String> = []
        let expected = schema.tables.map { ($0.name, $0.columns.map(\.name), "entity table of \(model.hierarchy(from: $0.rootEntity).map(\.name).joined(separator: ", "))") }
            + schema.joinTables.map { ($0.name, [$0.sourceColumn, $0.destinationColumn] + [$0.sourceOrderColumn, $0.destinationOrderColumn].compactMap { $0 },
                                      "join table of \($0.relationship.entity).\($0.relationship.name)") }
        for (table, wanted, role) in expected {
            guard let present = columns[table] else {
                incomplete.insert(table)
                found.append(StoreDamage(.missingTable, place: table, count: 1, example: "\(role), not in schema \(postgreSQLQuoted(location.schema))",
                                         problem: "table of the model's layout missing (its objects cannot be read or written; restore it from a backup, or convert the store from one)"))
                continue
            }
            let missing = wanted.filter { !present.contains($0) }
            guard !missing.isEmpty else { continue }
            incomplete.insert(table)
            found.append(StoreDamage(.missingColumn, place: table, count: missing.count, example: missing.joined(separator: ", "),
                                     problem: "column\(missing.count == 1 ? "" : "s") of the model's layout missing (the table's objects cannot be read or written)"))
        }
        return (found, incomplete)
    }
}

extension PostgreSQLStore: HeldSaves {
    package func beginHeldSaves(undoable: Bool) throws -> Int {
        guard !isReadOnly else { throw StoreError(.readOnly, path: location.redacted, "the store was opened read-only") }
        return try withConnection { connection in
            guard heldSaves == nil else { throw StoreError(.transactionOpen, path: location.redacted, "a store transaction is already open on this store") }
            guard !bulkInsertOpen else { throw StoreError(.transactionOpen, path: location.redacted, "a batch insert session is open on this store: commit or roll it back before a store transaction begins") }
            try connection.execute("BEGIN")
            heldSavesBegun += 1
            heldSaves = (heldSavesBegun, undoable)
            return heldSavesBegun
        }
    }

    package func isHoldingSaves(_ generation: Int) -> Bool { lock.withLock { heldSaves?.generation == generation } }

    package func commitHeldSaves(_ generation: Int, metadata: [String: PropertyListValue]?) throws {
        try lock.withLock {
            guard heldSaves?.generation == generation else { return }
            defer { heldSaves = nil }
            if let metadata { try writeMetadata(metadata, connection) }
            do {
                try recordHistory(connection)
                try connection.execute("COMMIT")
            } catch {
                if connection.isAlive { _ = try? connection.execute("ROLLBACK") }
                throw error
            }
        }
        if let metadata { metadataCommitted(metadata) }
    }

    package func rollbackHeldSaves(_ generation: Int) {
        lock.withLock {
            guard heldSaves?.generation == generation else { return }
            heldSaves = nil
            if connection.isAlive { _ = try? connection.execute("ROLLBACK") }
        }
    }

    /// Changes whenever a transaction may have committed since (the server's next transaction
    /// number): never the same after another writer committed, sometimes different when only
    /// other databases were written (the caller then resets its context sooner than needed).
    package func dataVersion() throws -> Int64 {
        try withConnection { connection in
            try connection.execute("SELECT txid_snapshot_xmax(txid_current_snapshot())").integer(0, 0) ?? 0
        }
    }
}

extension TableLayout {
    /// The columns of entity table `name` as a SELECT list of quoted names (each after
    /// `prefix`), in the order read plans number them.
    func selectListQuoted(ofTable name: String, prefix: String = "") -> String {
        guard let table = table(named: name) else { return prefix + "*" }
        return table.columns.map { prefix + postgreSQLQuoted($0.name) }.joined(separator: ", ")
    }
}
