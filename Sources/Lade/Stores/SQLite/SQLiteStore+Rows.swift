import CSQLite
import Foundation

/// Reading and writing rows: the SQLite store's side of `PersistentStore`.
extension SQLiteStore: PersistentStore {
    package var type: String { StoreMetadata.sqliteStoreType }
    package var url: URL? { fileURL }

    // MARK: Fetching

    package func fetch(_ request: StoreFetchRequest) throws -> [StoreRow] {
        guard let table = schema.entity(named: request.entityName)?.tableName else { throw UnknownEntityError(request.entityName, in: model) }
        let (sql, arguments) = try selectSQL(request, columns: schema.selectList(ofTable: table, prefix: "t0."))
        return try withConnection { connection in
            let statement = try cachedStatement(sql, connection)
            defer { statement.reset() }
            try statement.bind(arguments)
            var rows: [StoreRow] = []
            while try statement.step() {
                rows.append(try decodeRow(statement, table: table))
            }
            return rows
        }
    }

    package func count(_ request: StoreFetchRequest) throws -> Int {
        var unlimited = request
        unlimited.sortDescriptors = []
        let (inner, arguments) = try selectSQL(unlimited, columns: "t0.Z_PK")
        return try withConnection { connection in
            let statement = try cachedStatement("SELECT COUNT(*) FROM (\(inner))", connection)
            guard case .integer(let count) = try statement.rows(arguments).first?.first else { return 0 }
            return Int(count)
        }
    }

    private func selectSQL(_ request: StoreFetchRequest, columns: String) throws -> (String, [SQLiteValue]) {
        guard schema.entity(named: request.entityName) != nil else { throw UnknownEntityError(request.entityName, in: model) }
        let numbers = (request.includesSubentities ? model.hierarchy(from: request.entityName).map(\.name) : [request.entityName])
            .map { schema.entity(named: $0)!.number }
        var compiler = SQLPredicateCompiler(model: model, schema: schema, entity: request.entityName)
        compiler.storeIdentifier = identifier
        compiler.keepsExternalMarkers = externalData?.marked ?? false
        let query = try compiler.compile(request.predicate, sortDescriptors: request.sortDescriptors, entityNumbers: numbers)
        var sql = "SELECT \(columns) FROM \(query.from) WHERE \(query.whereClause) ORDER BY \(query.orderBy)"
        if request.fetchLimit > 0 || request.fetchOffset > 0 {
            sql += " LIMIT \(request.fetchLimit > 0 ? request.fetchLimit : -1) OFFSET \(max(0, request.fetchOffset))"
        }
        return (sql, query.arguments)
    }

    package func forEachBatch(ofEntity entityName: String, batchSize: Int, _ body: ([StoreRow]) throws -> Void) throws {
        guard let entity = schema.entity(named: entityName) else { throw UnknownEntityError(entityName, in: model) }
        let sql = "SELECT \(schema.selectList(ofTable: entity.tableName)) FROM \(entity.tableName) WHERE Z_ENT = ? AND Z_PK > ? ORDER BY Z_PK LIMIT ?"
        var last = Int64.min
        while true {
            let rows = try withConnection { connection in
                let statement = try cachedStatement(sql, connection)
                defer { statement.reset() }
                try statement.bind([.integer(entity.number), .integer(last), .integer(Int64(max(1, batchSize)))])
                var rows: [StoreRow] = []
                while try statement.step() {
                    rows.append(try decodeRow(statement, table: entity.tableName))
                }
                return rows
            }
            guard let end = rows.last?.objectID.primaryKey else { return }
            last = end
            try body(rows)
            if rows.count < max(1, batchSize) { return }
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
            for (table, keys) in byTable {
                for chunk in stride(from: 0, to: keys.count, by: 500).map({ Array(keys[$0..<min($0 + 500, keys.count)]) }) {
                    let statement = try cachedStatement("SELECT \(schema.selectList(ofTable: table)) FROM \(table) WHERE Z_PK IN (\(Array(repeating: "?", count: chunk.count).joined(separator: ", ")))", connection)
                    defer { statement.reset() }
                    try statement.bind(chunk.map { .integer($0) })
                    while try statement.step() {
                        rows.append(try decodeRow(statement, table: table))
                    }
                }
            }
            return rows
        }
    }

    /// Decodes a row of an entity table, its columns as `TableLayout.selectList` lists them. A row the model cannot read (a `Z_ENT`
    /// that names no entity, a value that cannot stand for its attribute) is damage, refused
    /// with where it is, never skipped or read as nil.
    private func decodeRow(_ statement: SQLiteStatement, table: String) throws -> StoreRow {
        guard case .integer(let key) = statement.value(at: 0), case .integer(let number) = statement.value(at: 1),
              let plan = readPlans[number]
        else {
            throw StoreError.damaged([unreadableRow(statement, table: table)], path: fileURL.path)
        }
        var version: Int64 = 0
        if case .integer(let stored) = statement.value(at: 2) { version = stored }
        var values = [AttributeValue?](repeating: nil, count: plan.layout.attributes.count)
        for attribute in plan.attributes {
            values[attribute.position] = try attributeValue(statement.value(at: attribute.column), of: attribute, in: plan, key: key)
        }
        var toOne = [ManagedObjectID?](repeating: nil, count: plan.layout.relationships.count)
        for relationship in plan.toOne {
            guard case .integer(let destination) = statement.value(at: relationship.column) else { continue }
            var entityName = relationship.destination
            if let column = relationship.entityColumn, case .integer(let destinationNumber) = statement.value(at: column),
               let actual = schema.entity(number: destinationNumber) {
                entityName = actual.name
            }
            toOne[relationship.position] = ManagedObjectID(entityName: entityName, storeIdentifier: identifier, primaryKey: destination)
        }
        return StoreRow(
            objectID: ManagedObjectID(entityName: plan.entity, storeIdentifier: identifier, primaryKey: key),
            version: version, layout: plan.layout, values: values, toOneIDs: toOne)
    }

    /// The value of `attribute` a row's column holds (an external file's bytes read), or the
    /// damage that keeps it from being read: a value that cannot be the attribute's type, a
    /// marker Lade does not know, an external file that is not there.
    func attributeValue(_ column: SQLiteValue, of attribute: TableReadPlan.Attribute, in plan: TableReadPlan, key: Int64) throws -> AttributeValue? {
        do {
            if attribute.external, let externalData { return try externalData.value(of: column, as: attribute.type) }
            return try SQLiteValueCoding.decode(column, as: attribute.type)
        } catch let error as SQLiteValueCoding.Unreadable {
            throw StoreError.damaged([wrongType(plan, attribute, key: key, error, count: 1)], path: fileURL.path)
        } catch let missing as SQLiteExternalData.MissingFile {
            throw StoreError.damaged([missingExternalFile(plan, attribute, key: key, missing, count: 1)], path: fileURL.path)
        }
    }

    /// The damage of external values whose files are not there.
    func missingExternalFile(_ plan: TableReadPlan, _ attribute: TableReadPlan.Attribute, key: Int64, _ missing: SQLiteExternalData.MissingFile, count: Int) -> StoreDamage {
        StoreDamage(
            .missingExternalFile, place: "\(plan.entity).\(attribute.name)", count: count,
            example: "Z_PK \(key) names \(missing.path): \(missing.reason)",
            problem: "\(count == 1 ? "value" : "values") kept in a file that cannot be read (a SQLite store keeps long Binary values of this attribute in the folder \(externalData.map { $0.folder.deletingLastPathComponent().lastPathComponent } ?? "_SUPPORT") beside it: copy or move that folder with the store)")
    }

    /// The damage of a row whose `Z_PK` or `Z_ENT` the model cannot read.
    private func unreadableRow(_ statement: SQLiteStatement, table: String) -> StoreDamage {
        StoreDamage(
            .unknownEntity, place: table, count: 1,
            example: "Z_PK \(SQLiteValueCoding.shown(statement.value(at: 0))), Z_ENT \(SQLiteValueCoding.shown(statement.value(at: 1)))",
            problem: "row whose Z_ENT names no entity of the model")
    }

    /// The damage of values in one attribute's column that cannot stand for its type.
    func wrongType(_ plan: TableReadPlan, _ attribute: TableReadPlan.Attribute, key: Int64, _ error: SQLiteValueCoding.Unreadable, count: Int) -> StoreDamage {
        let column = schema.columnName(for: .attribute(entity: TableLayout.declaringEntity(of: attribute.name, from: plan.entity, in: model) ?? plan.entity, name: attribute.name)) ?? attribute.name
        return StoreDamage(
            .wrongType, place: "\(plan.entity).\(attribute.name)", count: count,
            example: "Z_PK \(key) holds \(error.held) in \(column)",
            problem: "\(count == 1 ? "value" : "values") that cannot be \(attribute.type.rawValue) (the attribute's type)")
    }

    // MARK: To-many relationships

    package func relatedObjectIDs(of id: ManagedObjectID, relationship name: String) throws -> [ManagedObjectID] {
        guard let key = id.primaryKey, let sql = schema.toManyRead(name, from: id.entityName, in: model, owners: "= ?") else { return [] }
        return try withConnection { connection in
            try cachedStatement(sql, connection).rows([.integer(key)]).compactMap { row in
                guard case .integer(let destinationKey) = row[0], case .integer(let number) = row[1], let entity = schema.entity(number: number) else { return nil }
                return ManagedObjectID(entityName: entity.name, storeIdentifier: identifier, primaryKey: destinationKey)
            }
        }
    }

    // MARK: Keys

    package func newObjectIDs(for entity: String, count: Int) throws -> [ManagedObjectID] {
        guard !isReadOnly else { throw StoreError(.readOnly, path: url?.path ?? "", "the store was opened read-only") }
        guard count > 0 else { return [] }
        return try withConnection { connection in
            try writeTransaction(connection) { try reserveKeys(for: entity, count: count, connection) }
        }
    }

    package func giveBackObjectIDs(_ ids: [ManagedObjectID], for entity: String) throws {
        guard !isReadOnly, let keys = ids.handedOutKeys, let root = model.rootEntity(of: entity).flatMap({ schema.entity(named: $0.name) }) else { return }
        try withConnection { connection in
            // In a store transaction, the write goes into it: its commit keeps the counter
            // given back, its rollback the counter as it was before.
            try writeTransaction(connection) {
                try cachedStatement("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ? AND Z_MAX = ?", connection)
                    .run([.integer(keys.lowerBound - 1), .integer(root.number), .integer(keys.upperBound)])
            }
        }
    }

    /// Takes `count` primary keys from the root entity's `Z_MAX`, as Core Data does.
    private func reserveKeys(for entity: String, count: Int, _ connection: SQLiteConnection) throws -> [ManagedObjectID] {
        let root = schema.entity(named: model.rootEntity(of: entity)!.name)!
        guard case .integer(let current) = try cachedStatement("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", connection).rows([.integer(root.number)]).first?.first ?? .integer(0) else {
            return []
        }
        try cachedStatement("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?", connection).run([.integer(current + Int64(count)), .integer(root.number)])
        return (1...Int64(count)).map { ManagedObjectID(entityName: entity, storeIdentifier: identifier, primaryKey: current + $0) }
    }

    // MARK: Saving

    package func save(_ request: StoreSaveRequest) throws {
        guard !isReadOnly else { throw StoreError(.readOnly, path: url?.path ?? "", "the store was opened read-only") }
        guard !request.isEmpty else { return }
        if let metadata = request.metadata { try checkReservedKeys(metadata) }
        // Every value is checked before anything is written: a save the store refuses for a
        // value writes nothing, so a transaction held across saves need not undo part of one.
        let refused = refusedValues(request)
        guard refused.isEmpty else { throw ObjectValidationError(failures: refused) }
        try withConnection { connection in
            // A save of metadata alone leaves the author of the commit it joins as it is.
            if !(request.inserted.isEmpty && request.updated.isEmpty && request.deleted.isEmpty && request.links.isEmpty && request.orders.isEmpty) {
                noteAuthorship(request.authorship)
            }
            try recordingDerivedValues(connection, into: request.derivedValues) { try writeTransaction(connection) {
                var conflicts: [StoreSaveError.VersionConflict] = []
                for change in request.inserted { try insert(change, connection) }
                for change in request.updated {
                    if let conflict = try update(change, connection) { conflicts.append(conflict) }
                }
                for deletion in request.deleted {
                    if let conflict = try delete(deletion.objectID, expectedVersion: deletion.expectedVersion, connection) { conflicts.append(conflict) }
                }
                guard conflicts.isEmpty else { throw StoreSaveError.conflicts(conflicts) }
                for link in request.links { try apply(link, connection) }
                for order in request.orders { try apply(order, connection) }
                if let metadata = request.metadata { try writeMetadataRow(metadata, connection) }
            } }
        }
        if let metadata = request.metadata { metadataCommitted(metadata) }
    }

    /// The values of a save's new and changed rows that the store cannot keep exactly.
    private func refusedValues(_ request: StoreSaveRequest) -> [ObjectValidationError.Failure] {
        var refused: [ObjectValidationError.Failure] = []
        func check(_ value: AttributeValue?, _ name: String, _ id: ManagedObjectID) {
            if let reason = SQLiteValueCoding.refusal(value) {
                refused.append(ObjectValidationError.Failure(objectID: id, property: name, rule: .precision, value: value.map { "\($0)" }, message: reason))
            }
        }
        for change in request.inserted {
            guard let plan = writePlans[change.objectID.entityName] else { continue }
            let positional = change.positional.flatMap { $0.layout === plan.layout ? $0 : nil }
            let named = positional == nil ? change.attributes : [:]
            for column in plan.columns {
                guard case .attribute(let name, let index) = column.kind else { continue }
                check(positional.map { $0.values[index] } ?? named[name] ?? nil, name, change.objectID)
            }
        }
        for change in request.updated {
            guard let plan = writePlans[change.objectID.entityName] else { continue }
            let attributes = change.attributes
            for column in plan.columns {
                guard case .attribute(let name, _) = column.kind, let value = attributes[name] else { continue }
                check(value, name, change.objectID)
            }
        }
        return refused
    }

    private func insert(_ change: StoreSaveRequest.RowChange, _ connection: SQLiteConnection) throws {
        guard let key = change.objectID.primaryKey, let plan = writePlans[change.objectID.entityName] else { return }
        let statement = try insertStatement(for: plan, connection)
        statement.reset()
        statement.bind(.integer(key), at: 1)
        statement.bind(.integer(plan.number), at: 2)
        statement.bind(.integer(1), at: 3)
        var position: Int32 = 4
        if let positional = change.positional, positional.layout === plan.layout {
            // The context's way: values by position, nothing looked up by name.
            for column in plan.columns {
                switch column.kind {
                case .attribute(_, let index): statement.bind(try encoded(positional.values[index], column), at: position)
                case .toOne(_, let index): statement.bind(positional.toOneIDs[index]?.primaryKey.map { .integer($0) } ?? .null, at: position)
                case .toOneEntity(_, let index): statement.bind(entityNumberValue(positional.toOneIDs[index]), at: position)
                }
                position += 1
            }
        } else {
            let attributes = change.attributes, toOne = change.toOne
            for column in plan.columns {
                switch column.kind {
                case .attribute(let name, _): statement.bind(try encoded(attributes[name] ?? nil, column), at: position)
                case .toOne(let name, _): statement.bind((toOne[name] ?? nil)?.primaryKey.map { .integer($0) } ?? .null, at: position)
                case .toOneEntity(let name, _): statement.bind(entityNumberValue(toOne[name] ?? nil), at: position)
                }
                position += 1
            }
        }
        try runBound(statement, for: change.objectID)
    }

    /// Each entity's INSERT, prepared once per store (not looked up by its text per row).
    private func insertStatement(for plan: TableWritePlan, _ connection: SQLiteConnection) throws -> SQLiteStatement {
        if let statement = plan.insertStatement.statement { return statement }
        let statement = try connection.prepare(plan.insertSQL)
        plan.insertStatement.statement = statement
        return statement
    }

    private func update(_ change: StoreSaveRequest.RowChange, _ connection: SQLiteConnection) throws -> StoreSaveError.VersionConflict? {
        guard let key = change.objectID.primaryKey, let plan = writePlans[change.objectID.entityName] else { return nil }
        var assignments: [String] = []
        var values: [SQLiteValue] = []
        let attributes = change.attributes, toOne = change.toOne
        // The files of the values this update replaces: released when it is written.
        let replaced = try storedExternalValues(of: key, in: plan, connection) { column in
            guard case .attribute(let name, _) = column.kind else { return false }
            return attributes[name] != nil
        }
        for column in plan.columns {
            switch column.kind {
            case .attribute(let name, _):
                guard let value = attributes[name] else { continue }
                assignments.append("\(column.name) = ?")
                values.append(try encoded(value, column))
            case .toOne(let name, _):
                guard let value = toOne[name] else { continue }
                assignments.append("\(column.name) = ?")
                values.append(value?.primaryKey.map { .integer($0) } ?? .null)
            case .toOneEntity(let name, _):
                guard let value = toOne[name] else { continue }
                assignments.append("\(column.name) = ?")
                values.append(entityNumberValue(value))
            }
        }
        assignments.append("Z_OPT = Z_OPT + 1")
        var sql = "UPDATE \(plan.table) SET \(assignments.joined(separator: ", ")) WHERE Z_PK = ?"
        values.append(.integer(key))
        if let expected = change.expectedVersion {
            sql += " AND Z_OPT = ?"
            values.append(.integer(expected))
        }
        try run(try cachedStatement(sql, connection), values, for: change.objectID)
        guard connection.changes == 0 else {
            replaced.forEach { externalData?.release($0) }
            return nil
        }
        return StoreSaveError.VersionConflict(objectID: change.objectID, expectedVersion: change.expectedVersion ?? 0, storedVersion: try storedVersion(of: change.objectID, connection))
    }

    private func delete(_ id: ManagedObjectID, expectedVersion: Int64?, _ connection: SQLiteConnection) throws -> StoreSaveError.VersionConflict? {
        guard let key = id.primaryKey, let plan = writePlans[id.entityName] else { return nil }
        var sql = "DELETE FROM \(plan.table) WHERE Z_PK = ?"
        var values: [SQLiteValue] = [.integer(key)]
        if let expectedVersion {
            sql += " AND Z_OPT = ?"
            values.append(.integer(expectedVersion))
        }
        let files = try storedExternalValues(of: key, in: plan, connection) { _ in true }
        try cachedStatement(sql, connection).run(values)
        if connection.changes == 0, let expectedVersion {
            return StoreSaveError.VersionConflict(objectID: id, expectedVersion: expectedVersion, storedVersion: try storedVersion(of: id, connection))
        }
        if connection.changes > 0 { files.forEach { externalData?.release($0) } }
        for (table, column) in plan.joinColumns {
            try cachedStatement("DELETE FROM \(table) WHERE \(column) = ?", connection).run([.integer(key)])
        }
        for owner in plan.ownerKeys {
            try cachedStatement("UPDATE \(owner.table) SET \(owner.column) = NULL WHERE \(owner.column) = ?", connection).run([.integer(key)])
        }
        return nil
    }

    /// The column for `value` in a row written now: an attribute kept as external binary
    /// data in Core Data's form (its file written first), any other as `SQLiteValueCoding` has it.
    func encoded(_ value: AttributeValue?, _ column: TableWritePlan.Column) throws -> SQLiteValue {
        guard column.external, let externalData else { return SQLiteValueCoding.encode(value) }
        return try externalData.column(for: value)
    }

    /// What a row's external-data columns that `including` takes hold now, before it is
    /// updated or deleted. Nothing is read, and no column list made, when the store keeps no
    /// such values: every other update and delete pays nothing.
    func storedExternalValues(of key: Int64, in plan: TableWritePlan, _ connection: SQLiteConnection,
                              including: (TableWritePlan.Column) -> Bool) throws -> [SQLiteValue] {
        guard let externalData, externalData.marked else { return [] }
        let columns = plan.columns.filter { $0.external && including($0) }
        guard !columns.isEmpty else { return [] }
        return try cachedStatement("SELECT \(columns.map(\.name).joined(separator: ", ")) FROM \(plan.table) WHERE Z_PK = ?", connection)
            .rows([.integer(key)]).first ?? []
    }

    private func apply(_ link: StoreSaveRequest.LinkChange, _ connection: SQLiteConnection) throws {
        guard let key = link.source.primaryKey,
              let declaring = TableLayout.declaringEntity(of: link.relationship, from: link.source.entityName, in: model) else { return }
        if let owner = schema.ownerKey(for: .init(entity: declaring, name: link.relationship)) {
            // A to-many with no inverse: the owner's key in each destination's row. A removal
            // clears only a key that is still this owner's, so a destination moved to another
            // owner in the same save keeps its new one, whichever change comes first.
            let add = try cachedStatement("UPDATE \(owner.table) SET \(owner.column) = ? WHERE Z_PK = ?", connection)
            for destination in link.added {
                guard let other = destination.primaryKey else { continue }
                try add.run([.integer(key), .integer(other)])
            }
            let remove = try cachedStatement("UPDATE \(owner.table) SET \(owner.column) = NULL WHERE Z_PK = ? AND \(owner.column) = ?", connection)
            for destination in link.removed {
                guard let other = destination.primaryKey else { continue }
                try remove.run([.integer(other), .integer(key)])
            }
            return
        }
        guard let join = schema.joinTable(for: .init(entity: declaring, name: link.relationship)) else { return }
        let named = join.relationship == .init(entity: declaring, name: link.relationship)
        let (mine, theirs) = named ? (join.sourceColumn, join.destinationColumn) : (join.destinationColumn, join.sourceColumn)
        let insert = try cachedStatement("INSERT OR IGNORE INTO \(join.name) (\(mine), \(theirs)) VALUES (?, ?)", connection)
        for destination in link.added {
            guard let other = destination.primaryKey else { continue }
            try insert.run([.integer(key), .integer(other)])
        }
        let remove = try cachedStatement("DELETE FROM \(join.name) WHERE \(mine) = ? AND \(theirs) = ?", connection)
        for destination in link.removed {
            guard let other = destination.primaryKey else { continue }
            try remove.run([.integer(key), .integer(other)])
        }
    }

    private func apply(_ order: StoreSaveRequest.OrderChange, _ connection: SQLiteConnection) throws {
        guard let key = order.owner.primaryKey, let relationship = model.relationship(order.relationship, of: order.owner.entityName) else { return }
        let declaring = TableLayout.declaringEntity(of: order.relationship, from: order.owner.entityName, in: model)!
        // Core Data leaves gaps between order keys so one insertion need not renumber the rest.
        let positions = order.destinations.enumerated().map { Int64($0.offset + 1) * 1024 }
        if let join = schema.joinTable(for: .init(entity: declaring, name: order.relationship)) {
            let named = join.relationship == .init(entity: declaring, name: order.relationship)
            guard let orderColumn = named ? join.destinationOrderColumn : join.sourceOrderColumn else { return }
            let (mine, theirs) = named ? (join.sourceColumn, join.destinationColumn) : (join.destinationColumn, join.sourceColumn)
            let statement = try cachedStatement("UPDATE \(join.name) SET \(orderColumn) = ? WHERE \(mine) = ? AND \(theirs) = ?", connection)
            for (destination, position) in zip(order.destinations, positions) {
                guard let other = destination.primaryKey else { continue }
                try statement.run([.integer(position), .integer(key), .integer(other)])
            }
        } else if let inverse = model.inverse(of: relationship) {
            let inverseDeclaring = TableLayout.declaringEntity(of: inverse.name, from: relationship.destinationEntityName, in: model)!
            guard let orderColumn = schema.columnName(for: .orderKey(entity: inverseDeclaring, name: inverse.name)) else { return }
            let table = schema.entity(named: relationship.destinationEntityName)!.tableName
            let statement = try cachedStatement("UPDATE \(table) SET \(orderColumn) = ? WHERE Z_PK = ?", connection)
            for (destination, position) in zip(order.destinations, positions) {
                guard let other = destination.primaryKey else { continue }
                try statement.run([.integer(position), .integer(other)])
            }
        }
    }

    private func storedVersion(of id: ManagedObjectID, _ connection: SQLiteConnection) throws -> Int64? {
        guard let key = id.primaryKey, let plan = writePlans[id.entityName] else { return nil }
        guard case .integer(let version) = try cachedStatement("SELECT Z_OPT FROM \(plan.table) WHERE Z_PK = ?", connection).rows([.integer(key)]).first?.first else { return nil }
        return version
    }

    private func entityNumberValue(_ id: ManagedObjectID?) -> SQLiteValue {
        guard let id, let number = schema.entity(named: id.entityName)?.number else { return .null }
        return .integer(number)
    }

    /// Runs an INSERT or UPDATE for one object, turning a broken unique index into a
    /// uniqueness violation that names the object and the constraint.
    private func run(_ statement: SQLiteStatement, _ values: [SQLiteValue], for id: ManagedObjectID) throws {
        do {
            try statement.run(values)
        } catch let error as SQLiteError where error.code == SQLiteError.constraintUnique || error.code == SQLiteError.constraintPrimaryKey {
            throw StoreSaveError.uniquenessViolation(entity: id.entityName, properties: uniquenessProperties(in: error.message, entity: id.entityName), objectID: id)
        }
    }

    /// Steps a statement whose values are bound already; errors as `run`.
    private func runBound(_ statement: SQLiteStatement, for id: ManagedObjectID) throws {
        do {
            while try statement.step() {}
        } catch let error as SQLiteError where error.code == SQLiteError.constraintUnique || error.code == SQLiteError.constraintPrimaryKey {
            throw StoreSaveError.uniquenessViolation(entity: id.entityName, properties: uniquenessProperties(in: error.message, entity: id.entityName), objectID: id)
        }
    }

    /// The constraint behind "UNIQUE constraint failed: ZPRODUCT.ZSKU".
    func uniquenessProperties(in message: String, entity: String) -> [String] {
        let columns = Set(message.split(separator: ":").last.map { $0.split(separator: ",").compactMap { $0.split(separator: ".").last.map { String($0).trimmingCharacters(in: .whitespaces) } } } ?? [])
        for described in [model.entity(named: entity)].compactMap({ $0 }) + model.ancestors(of: entity) {
            for constraint in described.uniquenessConstraints {
                let constraintColumns = Set(constraint.compactMap { property in
                    schema.columnName(for: .attribute(entity: described.name, name: property)) ?? schema.columnName(for: .toOne(entity: described.name, name: property))
                })
                if constraintColumns == columns { return constraint }
            }
        }
        return columns.sorted()
    }
}

/// Precomputed per entity, so the row loop does no model lookups.
struct TableReadPlan: Sendable {
    /// `external`: kept as Core Data's external binary data in a SQLite file (`SQLiteExternalData`).
    struct Attribute: Sendable { let name: String; let type: AttributeType; let column: Int; let position: Int; var external = false }
    struct ToOne: Sendable { let name: String; let destination: String; let column: Int; let entityColumn: Int?; let position: Int }
    let entity: String
    let layout: EntityLayout
    let attributes: [Attribute]
    let toOne: [ToOne]
}

struct TableWritePlan: Sendable {
    /// A column's value: an attribute or to-one relationship, by name and by layout position.
    enum Kind: Sendable { case attribute(String, Int), toOne(String, Int), toOneEntity(String, Int) }
    /// `external`: an attribute kept as Core Data's external binary data in a SQLite file.
    struct Column: Sendable { let name: String; let kind: Kind; var external = false }
    let table: String
    let number: Int64
    let layout: EntityLayout
    let columns: [Column]
    let insertSQL: String
    /// The prepared INSERT, made on first use (the store serialises its connection).
    let insertStatement = StatementSlot()
    /// Join-table columns that hold this entity's keys, to clear when an object is deleted.
    let joinColumns: [(table: String, column: String)]
    /// Owner columns (to-many relationships with no inverse) that hold this entity's keys, set
    /// to NULL when an object is deleted.
    let ownerKeys: [TableLayout.OwnerKey]
    /// The columns of attributes kept as external binary data, by name: a row's files.
    var externalColumns: [String] { columns.filter(\.external).map(\.name) }
}

/// A place for a statement prepared later; used under the store's lock only.
final class StatementSlot: @unchecked Sendable {
    var statement: SQLiteStatement?
}

extension TableLayout {
    /// Read plans by entity number and write plans by entity name.
    func plans(for model: ManagedObjectModel) -> (read: [Int64: TableReadPlan], write: [String: TableWritePlan]) {
        var read: [Int64: TableReadPlan] = [:]
        var write: [String: TableWritePlan] = [:]
        // The join-table columns that hold each entity's keys: the source column for the
        // relationship's entity and those below it, the destination column for its destination
        // and those below; gathered once, in join-table order (asking every join table about
        // every entity took time in entities × join tables).
        var joinColumnsByEntity: [String: [(String, String)]] = [:]
        for join in joinTables {
            for source in model.hierarchy(from: join.relationship.entity) {
                joinColumnsByEntity[source.name, default: []].append((join.name, join.sourceColumn))
            }
            for destination in model.hierarchy(from: model.relationship(join.relationship.name, of: join.relationship.entity)!.destinationEntityName) {
                joinColumnsByEntity[destination.name, default: []].append((join.name, join.destinationColumn))
            }
        }
        // Each entity's owner keys, and its ancestors' (a filter of every key for each entity
        // made opening a store of 8,000 to-manys without inverse take 10 s).
        let ownerKeysByEntity = Dictionary(grouping: ownerKeys, by: \.relationship.entity)
        for entity in entities {
            let table = self.table(named: entity.tableName)!
            let positions = Dictionary(uniqueKeysWithValues: table.columns.enumerated().map { ($0.element.role, $0.offset) })
            var attributes: [TableReadPlan.Attribute] = []
            var toOne: [TableReadPlan.ToOne] = []
            var columns: [TableWritePlan.Column] = []
            let layout = model.layout(of: entity.name)!
            for attribute in model.attributes(of: entity.name) where !attribute.isTransient && attribute.type != .undefined {
                let declaring = TableLayout.declaringEntity(of: attribute.name, from: entity.name, in: model)!
                let role = ColumnRole.attribute(entity: declaring, name: attribute.name)
                let position = layout.attributeIndex(of: attribute.name)!
                attributes.append(.init(name: attribute.name, type: attribute.type, column: positions[role]!, position: position, external: attribute.isKeptExternally))
                columns.append(.init(name: columnName(for: role)!, kind: .attribute(attribute.name, position), external: attribute.isKeptExternally))
            }
            for relationship in model.relationships(of: entity.name) where !relationship.isToMany && !relationship.isTransient {
                let declaring = TableLayout.declaringEntity(of: relationship.name, from: entity.name, in: model)!
                let keyRole = ColumnRole.toOne(entity: declaring, name: relationship.name)
                let entityRole = ColumnRole.toOneEntity(entity: declaring, name: relationship.name)
                let position = layout.relationshipIndex(of: relationship.name)!
                toOne.append(.init(name: relationship.name, destination: relationship.destinationEntityName, column: positions[keyRole]!, entityColumn: positions[entityRole], position: position))
                columns.append(.init(name: columnName(for: keyRole)!, kind: .toOne(relationship.name, position)))
                if let name = columnName(for: entityRole) { columns.append(.init(name: name, kind: .toOneEntity(relationship.name, position))) }
            }
            read[entity.number] = TableReadPlan(entity: entity.name, layout: layout, attributes: attributes, toOne: toOne)
            let names = ["Z_PK", "Z_ENT", "Z_OPT"] + columns.map(\.name)
            let joinColumns = joinColumnsByEntity[entity.name] ?? []
            // Root first, as `ownerKeys` lists them (entity-number order, ancestors before subentities).
            let lineage = model.ancestors(of: entity.name).reversed().map(\.name) + [entity.name]
            write[entity.name] = TableWritePlan(
                table: entity.tableName, number: entity.number, layout: layout, columns: columns,
                insertSQL: "INSERT INTO \(entity.tableName) (\(names.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: names.count).joined(separator: ", ")))",
                joinColumns: joinColumns, ownerKeys: lineage.flatMap { ownerKeysByEntity[$0] ?? [] })
        }
        return (read, write)
    }
}
