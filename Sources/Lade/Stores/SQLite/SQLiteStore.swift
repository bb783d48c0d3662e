import Foundation

/// A store in a SQLite file laid out as Core Data lays it out (see `TableLayout`), so files
/// written by Core Data open here and files written here open in Core Data.
///
/// ```swift
/// let store = try SQLiteStore.create(at: url, model: model)        // a new, empty store
/// let same = try SQLiteStore(url: url, model: model, readOnly: true)
/// try same.count(ofEntity: "Product")
/// ```
///
/// A store serialises its own use of its connection, so it may be shared between queues.
package final class SQLiteStore: @unchecked Sendable {
    /// The store file.
    package let fileURL: URL
    package let model: ManagedObjectModel
    package let schema: TableLayout
    package let isReadOnly: Bool
    /// `Z_UUID`, also reported as `NSStoreUUID` in `metadata`.
    package let identifier: String
    /// Each `Z_ENT` row's name as the store records it: the entity's name when the store was
    /// made (Core Data keeps an old name after a rename).
    package let storedEntityNames: [Int64: String]

    let connection: SQLiteConnection
    let readPlans: [Int64: TableReadPlan]
    let writePlans: [String: TableWritePlan]
    private let lock = NSLock()
    private var currentMetadata: [String: PropertyListValue]
    private var statements: [String: SQLiteStatement] = [:]
    /// The `StoreTransaction` that holds the connection's transaction open, so that saves are
    /// written in it instead of committing: its number, and whether each save gets a savepoint
    /// (guarded by `lock`).
    var heldSaves: (generation: Int, undoable: Bool)?
    /// Store transactions begun so far: their numbers, so one that ended cannot end a later one.
    var heldSavesBegun = 0
    /// Fetch indexes a bulk load keeps out of the file (`deferFetchIndexes`), and whether the
    /// next commit builds them (guarded by `lock`).
    var deferredIndexes: [TableLayout.Index] = []
    var buildsDeferredIndexes = false
    /// Records persistent history in every commit, when the store has history tables
    /// (`SQLiteStore+History.swift`); nil for a store without them or opened read-only.
    var history: HistoryRecorder?
    /// The values of attributes kept as Core Data's external binary data: their markers and
    /// files (`SQLiteExternalData`); nil when the model has no such attribute.
    let externalData: SQLiteExternalData?
    /// `_LadeExternalBinaryData` as the store was opened with it: every metadata write keeps it
    /// so, as it says how the store's values are kept (`SQLiteExternalData.keepsMarkers`).
    private let externalDataKey: PropertyListValue?

    // MARK: Creating

    /// Creates an empty store for `model` at `url`, which must not exist yet.
    ///
    /// The file is built beside `url` and linked into place only when complete, so a crash
    /// leaves either no store or a whole one.
    @discardableResult
    package static func create(at url: URL, model: ManagedObjectModel, history: Bool = false) throws -> SQLiteStore {
        try create(at: url, model: model, identifier: nil, metadata: nil, history: history)
    }

    /// Creates an empty store with a given `Z_UUID` and metadata (a migration's destination
    /// keeps its source's); nil for a new UUID and Core Data's metadata for `model`.
    /// `supportFolder`: where its external binary data goes (default: Core Data's folder
    /// beside `url`; a store made under a temporary name is given the folder it is to have
    /// while it is made, `SQLiteStoreWriter`).
    static func create(at url: URL, model: ManagedObjectModel, identifier: String?, metadata given: [String: PropertyListValue]?,
                       history: Bool = false, supportFolder: URL? = nil) throws -> SQLiteStore {
        try createFile(at: url, model: model, identifier: identifier, metadata: given, history: history)
        return try SQLiteStore(url: url, model: model, supportFolder: supportFolder)
    }

    /// Creates an empty store for `model` at `url`, as `create(at:model:)` does, without
    /// opening it; returns its UUID (`NSStoreUUID`). Opening a store makes SQLite read its
    /// whole schema, which takes time in the square of its tables (34 s for 100,000).
    @discardableResult
    /// With `history`, the store gets Core Data's persistent history tables (`SQLiteHistory`),
    /// and every write to it records history.
    package static func createFile(at url: URL, model: ManagedObjectModel, history: Bool = false) throws -> String {
        try createFile(at: url, model: model, identifier: nil, metadata: nil, history: history)
    }

    @discardableResult
    static func createFile(at url: URL, model: ManagedObjectModel, identifier: String?, metadata given: [String: PropertyListValue]?,
                           history: Bool = false, schemaBatchSize: Int = schemaBatchSize) throws -> String {
        let path = url.path
        if let refusal = StoreError.refusingComposites(in: model, storeType: StoreMetadata.sqliteStoreType, path: path) { throw refusal }
        // A symbolic link that leads nowhere is refused as such, not linked over.
        _ = try FileSystem.resolvingLink(url)
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.alreadyExists, path: path, "a file is already there; remove it or choose another path")
        }
        // A derived attribute Lade keeps no triggers for is refused as such first.
        let schema = TableLayout(model: model)
        if let refusal = StoreError.refusingUnknownLayouts(of: schema, storeType: StoreMetadata.sqliteStoreType, path: path) { throw refusal }
        for derived in model.derivedAttributes where schema.derivedAttributeTriggers(for: derived, in: model) == nil {
            throw refusal(derived)
        }
        // Core Data's cache of the model, as Core Data writes one into every store it makes, so
        // the store opens with no model given; none for a model that cannot be archived.
        let modelCache = try model.modelCacheBlobIfArchivable()
        let temporary = try StagedFile(beside: url)
        defer { temporary.remove() }
        let uuid = identifier ?? UUID().uuidString
        do {
            let connection = try SQLiteConnection(path: temporary.path, mode: .readWrite(create: true))
            // Core Data's stores: 4 KiB pages, incremental auto-vacuum ("_NSAutoVacuumLevel" 2),
            // recorded in the file header with the first table; WAL comes with the tables.
            try connection.execute("PRAGMA page_size = 4096")
            try connection.execute("PRAGMA auto_vacuum = 2")
            var metadata = given ?? StoreMetadata.make(for: model, storeType: StoreMetadata.sqliteStoreType)
            // Every store Lade makes keeps external binary data in Core Data's form; one whose
            // metadata carries Core Data's framework version says so already (`keepsMarkers`).
            if !SQLiteExternalData.keepsMarkers(metadata) { metadata[SQLiteExternalData.metadataKey] = SQLiteExternalData.metadataValue }
            try createTables(of: schema, connection: connection, batchSize: schemaBatchSize) {
                let insert = try connection.prepare("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)")
                for entity in schema.entities {
                    try insert.run([.integer(entity.number), .text(entity.name), .integer(entity.superNumber)])
                }
                try connection.prepare("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)")
                    .run([.text(uuid), try encodedMetadata(metadata)])
                if let modelCache { try connection.prepare("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)").run([.blob(modelCache)]) }
                if history { try SQLiteHistory.create(for: model, connection) }
            }
            if !model.derivedAttributes.isEmpty {
                try connection.transaction { try installDerivedAttributeTriggers(schema: schema, model: model, connection: connection) }
            }
            // The connection closes here, the last one: its WAL goes into the file, which is
            // complete and closed before it is linked.
        } catch let error as SQLiteError {
            throw StoreError(path: path, sqlite: error)
        }
        try temporary.moveIntoPlace(.create)
        return uuid
    }

    /// How many CREATE statements `createTables` runs on one connection.
    static let schemaBatchSize = 2_000

    /// Makes the tables and indexes of `schema` in the new, empty file `connection` has open
    /// (its page size and auto-vacuum mode set), calls `fill` on `connection` in the
    /// transaction that made the system tables (`Z_PRIMARYKEY`, `Z_METADATA`), and turns WAL
    /// on (recorded in the file header): both while the schema SQLite holds is small, as
    /// either reads the whole of it otherwise (`journal_mode` took 38 s for 100,000 tables).
    ///
    /// SQLite reads its schema table through after every CREATE statement (to load the new
    /// table) and passes over every table it knows (to clear their foreign-key triggers), so
    /// one statement after another takes time in the square of their number: the 40,000
    /// tables and indexes of a 20,000-entity model took 147 s in the sqlite3 shell. Past
    /// `batchSize` statements they are made in batches instead, each table with its indexes,
    /// each batch on a connection that knows only that batch: once a batch is made, its rows
    /// of `sqlite_master` (which name the root pages SQLite allocated) are read and deleted
    /// (`writable_schema`), and when every batch is made they are written back in their
    /// order. The file is then what one statement after another would have made, but for the
    /// order of `sqlite_master`'s rows (each table with its indexes); `PRAGMA
    /// integrity_check` finds it sound.
    static func createTables(of schema: TableLayout, connection: SQLiteConnection, batchSize: Int = schemaBatchSize, fill: () throws -> Void) throws {
        let statements = schema.createStatements
        guard statements.count > batchSize else {
            try connection.transaction {
                for statement in statements { try connection.execute(statement) }
                try fill()
            }
            try connection.execute("PRAGMA journal_mode = WAL")
            return
        }
        var made: [[SQLiteValue]] = []
        var batch: [String] = []
        // The first batch on `connection` (a new file's page size and auto-vacuum mode are
        // written with its first table), the others each on a connection of its own.
        var batchConnection: SQLiteConnection? = connection
        func makeBatch() throws {
            let current = try batchConnection ?? SQLiteConnection(path: connection.path, mode: .readWrite(create: false))
            let first = batchConnection != nil
            batchConnection = nil
            try current.transaction {
                for statement in batch { try current.execute(statement) }
                if first { try fill() }
                made += try current.rows("SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master ORDER BY rowid")
                try current.allowSchemaWrites()
                try current.execute("PRAGMA writable_schema = ON")
                defer { try? current.execute("PRAGMA writable_schema = OFF") }
                try current.execute("DELETE FROM sqlite_master")
            }
            batch.removeAll(keepingCapacity: true)
        }
        // The system tables, first by table, all go in the first batch, where `fill` writes their rows.
        for (position, group) in schema.createStatementsByTable.enumerated() {
            if position >= TableLayout.systemTables.count && batch.count + group.count > batchSize { try makeBatch() }
            batch += group
        }
        try makeBatch()
        try connection.execute("PRAGMA journal_mode = WAL")
        // Written back on `connection`; the schema version it is given makes every connection,
        // this one too, read the schema again.
        try connection.transaction {
            try connection.allowSchemaWrites()
            try connection.execute("PRAGMA writable_schema = ON")
            defer { try? connection.execute("PRAGMA writable_schema = OFF") }
            let insert = try connection.prepare("INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES (?, ?, ?, ?, ?)")
            for row in made { try insert.run(row) }
            var version: Int64 = 0
            if case .integer(let current)? = try connection.rows("PRAGMA schema_version").first?.first { version = current }
            try connection.execute("PRAGMA schema_version = \(version + 1)")
        }
    }

    // MARK: Opening

    /// Opens an existing store with `model`, checking that the store was made from it: the
    /// entity numbering and names in `Z_PRIMARYKEY`, and the entity version hashes (or, for a
    /// store with Apple's hashes opened without them, the tables and columns themselves).
    /// A read-only store never writes to the file or its `-wal`.
    /// `supportFolder`: the folder of its external binary data (default: Core Data's,
    /// `.<name>_SUPPORT` beside the file).
    package init(url: URL, model: ManagedObjectModel, readOnly: Bool = false, supportFolder: URL? = nil) throws {
        let path = url.path
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.notFound, path: path, "no store here")
        }
        // Also a store Core Data wrote: its composite columns could not be read or written.
        if let refusal = StoreError.refusingComposites(in: model, storeType: StoreMetadata.sqliteStoreType, path: path) { throw refusal }
        self.fileURL = url
        self.model = model
        self.isReadOnly = readOnly
        self.schema = TableLayout(model: model)
        (readPlans, writePlans) = schema.plans(for: model)
        do {
            connection = try SQLiteConnection(path: path, mode: readOnly ? .readOnly : .readWrite(create: false))
            let tables = try connection.tableNames()
            guard tables.contains("Z_METADATA"), tables.contains("Z_PRIMARYKEY") else {
                throw StoreError(.notAStore, path: path, "this SQLite file has no Z_METADATA and Z_PRIMARYKEY tables: it is not a Core Data store")
            }
            let (uuid, metadata) = try Self.readMetadata(connection, path: path)
            identifier = uuid
            currentMetadata = metadata
            currentMetadata[StoreMetadata.Key.storeUUID] = .string(uuid)
            externalDataKey = metadata[SQLiteExternalData.metadataKey]
            externalData = model.keepsExternalBinaryData ? SQLiteExternalData(
                folder: SQLiteExternalData.dataFolder(in: supportFolder ?? SQLiteExternalData.supportFolder(ofStoreAt: url)),
                marked: SQLiteExternalData.keepsMarkers(metadata)) : nil
            guard metadata[StoreMetadata.Key.storeType]?.stringValue == StoreMetadata.sqliteStoreType else {
                throw StoreError(.wrongStoreType, path: path, "its metadata says store type '\(metadata[StoreMetadata.Key.storeType]?.stringValue ?? "none")', not SQLite")
            }
            storedEntityNames = try Self.readEntityNames(connection)
            if !readOnly { try Self.renameEarlierEntityColumns(schema: schema, connection: connection) }
            try Self.check(model: model, schema: schema, metadata: metadata, storedNames: storedEntityNames, connection: connection, path: path, tables: tables)
            if let refusal = try StoreError.refusingMissingRelationshipStorage(of: schema, tables: tables, path: path, columns: { table in
                Set(try connection.rows("PRAGMA table_info(\(TableLayout.quoted(table)))").compactMap { row -> String? in
                    if case .text(let name) = row[1] { return name.uppercased() } else { return nil } })
            }) { throw refusal }
            if let refusal = try Self.refusingExternalStorageMismatch(of: model, connection, tables: tables, path: path) { throw refusal }
            if !readOnly {
                if let damage = SQLiteHistory.missingTablesDamage(tables: tables, entityNumbers: storedEntityNames.keys) {
                    throw StoreError.damaged([damage], path: path)
                }
                try connection.execute("PRAGMA journal_mode = WAL")
                try Self.prepareDerivedAttributes(schema: schema, model: model, connection: connection)
                history = try HistoryRecorder.attach(to: connection, schema: schema, model: model, tables: tables)
            }
        } catch let error as SQLiteError {
            throw StoreError(path: path, sqlite: error)
        }
    }

    /// Lade before 2026-11-28 named the column that keeps a to-one destination's entity number
    /// `Z<n><NAME>`; Core Data names it `Z<n>_<NAME>` (`Z1_BOOK` in `SampleModel2_V1.sqlite`).
    /// A store opened for writing has such a column renamed in place (one statement per
    /// column, in one transaction; the values are untouched). Opened read-only, nothing is
    /// renamed, and reading its rows fails with SQLite's error naming the column it lacks.
    static func renameEarlierEntityColumns(schema: TableLayout, connection: SQLiteConnection) throws {
        var renames: [(table: String, from: String, to: String)] = []
        for table in schema.tables {
            let wanted = table.columns.filter { if case .toOneEntity = $0.role { true } else { false } }
            guard !wanted.isEmpty else { continue }
            let present = Set(try connection.rows("PRAGMA table_info(\(TableLayout.quoted(table.name)))").compactMap { row -> String? in
                if case .text(let name) = row[1] { return name.uppercased() }
                return nil
            })
            for column in wanted {
                guard let underscore = column.name.firstIndex(of: "_") else { continue }
                var earlier = column.name
                earlier.remove(at: underscore)
                // `Z<n><NAME>` is also Core Data's name of a to-many's owner column: one the
                // layout has is left as it is.
                if !present.contains(column.name.uppercased()) && present.contains(earlier.uppercased())
                    && !table.columns.contains(where: { $0.name.uppercased() == earlier.uppercased() }) {
                    renames.append((table.name, earlier, column.name))
                }
            }
        }
        guard !renames.isEmpty else { return }
        try connection.transaction {
            for rename in renames {
                try connection.execute("ALTER TABLE \(TableLayout.quoted(rename.table)) RENAME COLUMN \(TableLayout.quoted(rename.from)) TO \(TableLayout.quoted(rename.to))")
            }
        }
    }

    /// The metadata of the store file at `url` as Core Data reports it (`NSStoreUUID` from
    /// `Z_UUID`), read from the `Z_METADATA` row alone, whatever the size of the store.
    static func readMetadata(at url: URL) throws -> [String: PropertyListValue] {
        do {
            let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
            guard try connection.tableNames().contains("Z_METADATA") else {
                throw StoreError(.notAStore, path: url.path, "this SQLite file has no Z_METADATA table: it is not a Core Data store")
            }
            var (uuid, metadata) = try readMetadata(connection, path: url.path)
            metadata[StoreMetadata.Key.storeUUID] = .string(uuid)
            return metadata
        } catch let error as SQLiteError {
            throw StoreError(path: url.path, sqlite: error)
        }
    }

    /// Replaces the `Z_METADATA` row's plist in a transaction of its own; no other table is
    /// touched. `NSStoreUUID` stays in `Z_UUID`, as Core Data keeps it.
    static func writeMetadata(_ metadata: [String: PropertyListValue], at url: URL) throws {
        do {
            let connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
            try connection.transaction {
                _ = try readMetadata(connection, path: url.path)
                try connection.prepare("UPDATE Z_METADATA SET Z_PLIST = ? WHERE Z_VERSION = 1").run([try encodedMetadata(metadata)])
            }
        } catch let error as SQLiteError {
            throw StoreError(path: url.path, sqlite: error)
        }
    }

    /// `Z_PLIST` as Core Data writes it: the metadata as a binary plist, without `NSStoreUUID`.
    static func encodedMetadata(_ metadata: [String: PropertyListValue]) throws -> SQLiteValue {
        var stored = metadata
        stored[StoreMetadata.Key.storeUUID] = nil
        return .blob(try PropertyListValue.dictionary(stored).binaryPropertyList())
    }

    static func readMetadata(_ connection: SQLiteConnection, path: String) throws -> (String, [String: PropertyListValue]) {
        let rows = try connection.rows("SELECT Z_UUID, Z_PLIST FROM Z_METADATA WHERE Z_VERSION = 1")
        guard let row = rows.first, case .text(let uuid) = row[0] else {
            throw StoreError(.notAStore, path: path, "Z_METADATA has no row for version 1")
        }
        guard case .blob(let plist) = row[1], let decoded = try? PropertyListValue.decode(plist), let metadata = decoded.dictionaryValue else {
            throw StoreError(.notAStore, path: path, "Z_METADATA.Z_PLIST is not a property list dictionary")
        }
        try StoreMetadata.checkTypes(metadata, path: path, place: "Z_METADATA.Z_PLIST")
        return (uuid, metadata)
    }

    private static func readEntityNames(_ connection: SQLiteConnection) throws -> [Int64: String] {
        var names: [Int64: String] = [:]
        for row in try connection.rows("SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY") {
            if case .integer(let number) = row[0], case .text(let name) = row[1] { names[number] = name }
        }
        return names
    }

    private static func check(
        model: ManagedObjectModel, schema: TableLayout, metadata: [String: PropertyListValue],
        storedNames: [Int64: String], connection: SQLiteConnection, path: String, tables: Set<String>
    ) throws {
        // Rows map to entities by Z_ENT and the model's renaming identifiers, never by name alone.
        var differing: Set<String> = []
        for entity in schema.entities {
            let described = model.entity(named: entity.name)!
            guard let stored = storedNames[entity.number], stored == entity.name || stored == described.renamingIdentifier else {
                differing.insert(entity.name)
                continue
            }
        }
        for (number, name) in storedNames where schema.entity(number: number) == nil && !SQLiteHistory.isHistoryEntity(number, name: name) {
            differing.insert(name)
        }
        var detail = "entity numbering in Z_PRIMARYKEY"
        let hashesCompared: Bool
        if let hashes = StoreMetadata.entitiesWithDifferentHashes(in: metadata, model: model) {
            hashesCompared = true
            detail = "version hashes"
            differing.formUnion(hashes)
            if StoreMetadata.hasEarlierLadeHashes(metadata) {
                // An earlier Lade's hashes leave uniqueness constraints out: the store's unique
                // indexes tell which of the versions differing only in those wrote it.
                detail = "version hashes and unique indexes"
                let present = Set(try connection.rows("SELECT name FROM sqlite_master WHERE type = 'index'").compactMap { row -> String? in
                    if case .text(let name) = row[0] { return name } else { return nil } })
                let expected = schema.indexes.filter { $0.kind == .unique }
                let expectedNames = Set(expected.map(\.name))
                for index in expected where !present.contains(index.name) {
                    differing.formUnion(model.hierarchy(from: schema.table(named: index.table)?.rootEntity ?? "").map(\.name))
                }
                for name in present where name.hasPrefix("Z_") && name.contains("_UNIQUE_") && !expectedNames.contains(name) {
                    let owner = model.entities.filter { name.hasPrefix("Z_\($0.name)_UNIQUE_") }.max { $0.name.count < $1.name.count }
                    differing.insert(owner?.name ?? name)
                }
            }
        } else {
            // The store carries Apple's hashes and the model has only Lade's: compare what the
            // hashes stand for, the tables and columns.
            hashesCompared = false
            detail = "tables and columns (the model has no Apple hashes to compare; give its compiled .momd for a full check)"
            for table in schema.tables {
                let expected = Set(table.columns.map(\.name))
                let actual = tables.contains(table.name)
                    ? Set(try connection.rows("PRAGMA table_info(\(table.name))").compactMap { row -> String? in
                        if case .text(let name) = row[1] { return name } else { return nil } })
                    : []
                if expected != actual {
                    differing.formUnion(model.hierarchy(from: table.rootEntity).map(\.name))
                }
            }
            for join in schema.joinTables where !tables.contains(join.name) {
                differing.insert(join.relationship.entity)
            }
        }
        guard differing.isEmpty else {
            let names = differing.sorted()
            let layout = try layoutDifferences(schema: schema, connection: connection, tables: tables)
            let shown = layout.prefix(6).joined(separator: "; ") + (layout.count > 6 ? "; and \(layout.count - 6) more" : "")
            let layoutText = layout.isEmpty ? "the tables and columns are the model's" : "tables and columns: \(shown)"
            // A model without Apple's hashes whose entities are not those of the model the store
            // carries is another model, not this one uncompiled: no .momd would make it match.
            if !hashesCompared, let carried = try? ManagedObjectModel.modelCache(ofStoreAt: URL(fileURLWithPath: path)),
               let entities = entityDifference(carried: carried, named: model) {
                var error = StoreError(
                    .modelMismatch(entities: names), path: path,
                    "the store was written with another model (\(entities); \(layoutText)); the store carries its own model, in Z_MODELCACHE, which is read when no model is named")
                error.storeCarriesOtherModel = true
                throw error
            }
            throw StoreError(
                .modelMismatch(entities: names), path: path,
                "the store does not match the model (\(detail) differ for \(Self.listed(names)); \(layoutText)"
                    + "); open it with the model version it was made with, or migrate it to this version first")
        }
    }

    /// Names as the mismatch error lists them: the first `limit`, then how many more (a model
    /// cache naming 100,000 columns made an error of almost a megabyte).
    static func listed(_ names: [String], limit: Int = 20) -> String {
        names.prefix(limit).joined(separator: ", ") + (names.count > limit ? " and \(names.count - limit) more" : "")
    }

    /// The entities one model has and the other lacks, in words (`the store's model has Car,
    /// which the named model lacks; …`), or nil when both have the same entities.
    private static func entityDifference(carried: ManagedObjectModel, named: ManagedObjectModel) -> String? {
        let carriedNames = Set(carried.entityNames), namedNames = Set(named.entityNames)
        guard carriedNames != namedNames else { return nil }
        let storeOnly = carriedNames.subtracting(namedNames).sorted(), namedOnly = namedNames.subtracting(carriedNames).sorted()
        var sides: [String] = []
        if !storeOnly.isEmpty { sides.append("the store's model has \(listed(storeOnly)), which the named model lacks") }
        if !namedOnly.isEmpty { sides.append("the named model has \(listed(namedOnly)), which the store's lacks") }
        return sides.joined(separator: "; ")
    }

    /// How the store's tables and columns differ from the layout the model implies, one phrase
    /// each (`ZPRODUCT lacks column ZCOLOUR`), for the mismatch error.
    private static func layoutDifferences(schema: TableLayout, connection: SQLiteConnection, tables: Set<String>) throws -> [String] {
        func columns(_ table: String) throws -> Set<String> {
            Set(try connection.rows("PRAGMA table_info(\(TableLayout.quoted(table)))").compactMap { row -> String? in
                if case .text(let name) = row[1] { return name } else { return nil } })
        }
        var found: [String] = []
        var expectedTables = TableLayout.systemTables
        for table in schema.tables {
            expectedTables.insert(table.name)
            guard tables.contains(table.name) else { found.append("table \(table.name) is missing"); continue }
            let actual = try columns(table.name), expected = Set(table.columns.map(\.name))
            let missing = expected.subtracting(actual).sorted(), extra = actual.subtracting(expected).sorted()
            if !missing.isEmpty { found.append("\(table.name) lacks column\(missing.count == 1 ? "" : "s") \(listed(missing))") }
            if !extra.isEmpty { found.append("\(table.name) has column\(extra.count == 1 ? "" : "s") \(listed(extra)) the model does not") }
        }
        for join in schema.joinTables {
            expectedTables.insert(join.name)
            if !tables.contains(join.name) { found.append("join table \(join.name) is missing") }
        }
        for table in tables.subtracting(expectedTables).sorted() where !table.hasPrefix("sqlite_") && !table.hasPrefix("ACH") && !table.hasPrefix("ATRANSACTION") {
            found.append("table \(table) is not in the model")
        }
        return found
    }

    // MARK: Metadata

    /// The store's metadata as Core Data reports it, `NSStoreUUID` included.
    package var metadata: [String: PropertyListValue] {
        lock.withLock { currentMetadata }
    }

    // MARK: Reading

    /// The number of objects whose entity is exactly `entity` (or, with `includingSubentities`,
    /// that entity or one below it).
    package func count(ofEntity entity: String, includingSubentities: Bool = false) throws -> Int {
        guard let mapped = schema.entity(named: entity) else { throw UnknownEntityError(entity, in: model) }
        let numbers = includingSubentities ? model.hierarchy(from: entity).map { schema.entity(named: $0.name)!.number } : [mapped.number]
        let sql = "SELECT COUNT(*) FROM \(mapped.tableName) WHERE Z_ENT IN (\(numbers.map(String.init).joined(separator: ", ")))"
        return try withConnection { connection in
            guard case .integer(let count) = try connection.rows(sql).first?.first else { return 0 }
            return Int(count)
        }
    }

    /// Runs `body` with the store's connection, one caller at a time; SQLite errors become
    /// `StoreError`s naming this store.
    func withConnection<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        do {
            return try body(connection)
        } catch let error as SQLiteError {
            throw StoreError(path: fileURL.path, sqlite: error)
        }
    }

    /// A prepared statement kept for reuse (the connection is held, so this is confined).
    func cachedStatement(_ sql: String, _ connection: SQLiteConnection) throws -> SQLiteStatement {
        if let statement = statements[sql] { return statement }
        if statements.count > 256 { statements.removeAll() }
        let statement = try connection.prepare(sql)
        statements[sql] = statement
        return statement
    }

    // MARK: Migration

    /// Raises each hierarchy's `Z_MAX` to its largest `Z_PK`, after rows were inserted with keys
    /// of their own (a conversion keeps its source's keys).
    func adoptPrimaryKeys() throws {
        try withConnection { connection in
            try connection.transaction {
                for entity in schema.entities where entity.name == entity.rootName {
                    try connection.prepare("UPDATE Z_PRIMARYKEY SET Z_MAX = MAX(Z_MAX, (SELECT IFNULL(MAX(Z_PK), 0) FROM \(entity.tableName))) WHERE Z_ENT = ?")
                        .run([.integer(entity.number)])
                }
            }
        }
    }

    /// The largest `Z_PK` of each inheritance hierarchy, by root entity name.
    func largestPrimaryKeys() throws -> [String: Int64] {
        try withConnection { connection in
            var result: [String: Int64] = [:]
            for entity in schema.entities where entity.name == entity.rootName {
                if case .integer(let largest) = try connection.rows("SELECT IFNULL(MAX(Z_PK), 0) FROM \(entity.tableName)").first?.first {
                    result[entity.name] = largest
                }
            }
            return result
        }
    }

    /// Starts a read transaction: every read until `endReading()` sees the store as it was now,
    /// whatever other connections commit meanwhile.
    func beginReading() throws {
        try withConnection { connection in
            try connection.execute("BEGIN DEFERRED")
            // A read starts the snapshot; BEGIN DEFERRED alone takes none.
            _ = try connection.rows("SELECT COUNT(*) FROM Z_METADATA")
        }
    }

    func endReading() throws {
        try withConnection { try $0.execute("COMMIT") }
    }

    /// How much of the store's pages SQLite keeps in memory, in KiB (`PRAGMA cache_size`;
    /// SQLite's default is 2,000 KiB). A bulk write whose indexes outgrow the cache reads
    /// every page it touches back from the file and writes it out again to make room: an
    /// import of 1,000,000 rows with a random unique key made 1.98 million `pwrite` and 1.88
    /// million `pread` calls with the default, 1.31 and 1.12 million with 12 MiB (`lade run`,
    /// counted with `perf stat`). Memory grows by up to this much.
    /// `kibibytes` must be at least 1 and fit SQLite's 32-bit setting.
    package func setPageCacheSize(kibibytes: Int) throws {
        precondition(kibibytes > 0 && kibibytes <= Int(Int32.max), "a page cache of \(kibibytes) KiB")
        try withConnection { try $0.execute("PRAGMA cache_size = -\(kibibytes)") }
    }

    /// SQLite's `PRAGMA data_version`: differs between two calls when another connection
    /// committed a change to the store in between.
    package func dataVersion() throws -> Int64 {
        try withConnection { connection in
            guard case .integer(let version)? = try connection.rows("PRAGMA data_version").first?.first else {
                throw StoreError(.io, path: fileURL.path, "PRAGMA data_version gave no number")
            }
            return version
        }
    }

    /// Copies the pages of the `-wal` beside the store file at `url`, if it has one, into the
    /// file and empties it, so the file alone holds the whole store; refused while another
    /// process has the store open.
    static func emptyWriteAheadLog(ofFileAt url: URL) throws {
        guard FileManager.default.fileExists(atPath: FileSystem.Companion.wal.path(beside: url.path)) else { return }
        do {
            let connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
            let rows = try connection.rows("PRAGMA wal_checkpoint(TRUNCATE)")
            if case .integer(let busy) = rows.first?.first, busy != 0 {
                throw StoreError(.io, path: url.path, "the store is in use by another process; try again when it is closed")
            }
        } catch let error as SQLiteError {
            throw StoreError(path: url.path, sqlite: error)
        }
    }

    /// Copies every page from the `-wal` into the main file and empties the `-wal`, so the
    /// file alone holds the whole store.
    func checkpoint() throws {
        try withConnection { connection in
            let rows = try connection.rows("PRAGMA wal_checkpoint(TRUNCATE)")
            if case .integer(let busy) = rows.first?.first, busy != 0 {
                throw StoreError(.io, path: fileURL.path, "another connection keeps the store's -wal from being checkpointed; close it and try again")
            }
        }
    }

    func replaceMetadata(_ metadata: [String: PropertyListValue]) {
        lock.withLock { currentMetadata = metadata }
    }

    /// Writes `metadata` into the `Z_METADATA` row, in the transaction open on `connection`
    /// (call inside `withConnection`; `NSStoreUUID` stays in `Z_UUID`). After the commit, call
    /// `metadataCommitted`.
    func writeMetadataRow(_ metadata: [String: PropertyListValue], _ connection: SQLiteConnection) throws {
        var metadata = metadata
        metadata[SQLiteExternalData.metadataKey] = externalDataKey
        try cachedStatement("UPDATE Z_METADATA SET Z_PLIST = ? WHERE Z_VERSION = 1", connection).run([try Self.encodedMetadata(metadata)])
    }

    /// The store's copy of its metadata after a commit that wrote `metadata` (with the store's
    /// `NSStoreUUID`, which the row keeps apart).
    func metadataCommitted(_ metadata: [String: PropertyListValue]) {
        var metadata = metadata
        metadata[StoreMetadata.Key.storeUUID] = .string(identifier)
        metadata[SQLiteExternalData.metadataKey] = externalDataKey
        replaceMetadata(metadata)
    }

    /// `replaceMetadata` for code inside `withConnection`, which holds the lock already.
    func replaceMetadataHoldingLock(_ metadata: [String: PropertyListValue]) {
        currentMetadata = metadata
    }

    /// Whether the `StoreTransaction` begun as number `generation` holds the store's
    /// transaction open still.
    package func isHoldingSaves(_ generation: Int) -> Bool { lock.withLock { heldSaves?.generation == generation } }
}

extension SQLiteStore: HeldSaves, BulkLoading {}
