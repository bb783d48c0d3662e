import Foundation

/// The one place that maps a store type (``StoreType``, known to users as
/// `PersistentStoreCoordinator.StoreType`: the one table of store types) to what implements it:
/// opening or creating a store, its file format, its metadata read and written alone, a new
/// store written whole, the values it keeps exactly, a lightweight migration of its file.
/// Outside `Stores/`, code asks a type for these, or a store for a capability, and never names
/// a concrete store.
extension StoreType {
    /// The file format behind an atomic store type.
    var atomicFileFormat: AtomicStoreFileFormat.Type? {
        switch self {
        case .xml: XMLStoreFile.self
        case .binary: BinaryStoreFile.self
        case .sqlite, .inMemory, .postgresql: nil
        }
    }

    /// Opens the store of this type at `url` (none for the in-memory store, which is always
    /// new), or, `creating`, makes it empty there first for `model`.
    func openStore(at url: URL?, model: ManagedObjectModel, readOnly: Bool, creating: Bool) throws -> PersistentStore {
        if self == .inMemory { return try InMemoryStore(model: model) }
        guard let url else { throw Self.needsFile(self) }
        switch self {
        case .postgresql:
            let location = try Self.postgreSQLLocation(url)
            return creating ? try PostgreSQLStore.create(at: location, model: model) : try PostgreSQLStore(location: location, model: model, readOnly: readOnly)
        case .sqlite:
            return creating ? try SQLiteStore.create(at: url, model: model) : try SQLiteStore(url: url, model: model, readOnly: readOnly)
        case .xml:
            return creating ? try XMLStore.create(at: url, model: model) : try XMLStore(url: url, model: model, readOnly: readOnly)
        case .binary:
            return creating ? try BinaryStore.create(at: url, model: model) : try BinaryStore(url: url, model: model, readOnly: readOnly)
        case .inMemory:
            return try InMemoryStore(model: model)
        }
    }

    /// Creates the file of an empty store of this type for `model` at `url`, which must not
    /// exist yet, without opening it (opening a SQLite store reads its whole schema once more:
    /// time in the square of its tables); returns its `NSStoreType` and `NSStoreUUID`.
    /// With `history`, a SQLite or PostgreSQL store gets Core Data's persistent history tables;
    /// other types keep no history (as in Core Data) and are refused.
    func createFile(at url: URL, model: ManagedObjectModel, history: Bool = false) throws -> (type: String, identifier: String) {
        if self == .postgresql {
            return (PostgreSQLStore.storeType, try PostgreSQLStore.createStore(at: try Self.postgreSQLLocation(url), model: model, history: history))
        }
        if history && self != .sqlite {
            throw HistoryError(.unsupportedStoreType, path: url.path, "persistent history is kept by SQLite and PostgreSQL stores only (as in Core Data, which keeps it in SQLite stores), not \(rawValue) stores; create a SQLite or PostgreSQL store, or leave history out")
        }
        switch self {
        case .sqlite:
            return (StoreMetadata.sqliteStoreType, try SQLiteStore.createFile(at: url, model: model, history: history))
        case .xml, .binary:
            let format = atomicFileFormat!
            return (format.storeType, try AtomicStore.createFile(at: url, model: model, format: format))
        case .inMemory, .postgresql:
            throw StoreError(.wrongStoreType, path: url.path, "an in-memory store has no file to create; add one to a coordinator with the type .inMemory")
        }
    }

    /// The metadata of the store file of this type at `url`, reading only what holds it.
    func readMetadata(at url: URL) throws -> [String: PropertyListValue] {
        switch self {
        case .sqlite: return try SQLiteStore.readMetadata(at: url)
        case .postgresql: return try PostgreSQLStore.readMetadata(at: try Self.postgreSQLLocation(url))
        case .xml, .binary:
            let metadata = try atomicFileFormat!.readMetadata(at: url)
            try StoreMetadata.checkTypes(metadata, path: url.path, place: "the file's metadata")
            return metadata
        case .inMemory: throw Self.noFile(url)
        }
    }

    /// Replaces the metadata of the store file of this type at `url`, writing only the metadata.
    func writeMetadata(_ metadata: [String: PropertyListValue], at url: URL) throws {
        switch self {
        case .sqlite: try SQLiteStore.writeMetadata(metadata, at: url)
        case .postgresql: try PostgreSQLStore.writeMetadata(metadata, at: try Self.postgreSQLLocation(url))
        case .xml, .binary: try atomicFileFormat!.writeMetadata(metadata, at: url)
        case .inMemory: throw Self.noFile(url)
        }
    }

    // MARK: Persistent history

    /// The persistent history of the store of this type at `url` after `bound`: SQLite and
    /// PostgreSQL stores keep it; the others are refused (`history.unsupportedStoreType`).
    func history(at url: URL, after bound: PersistentHistory.Bound?) throws -> [PersistentHistory.Transaction] {
        switch self {
        case .sqlite: return try SQLiteHistory.transactions(at: url, after: bound)
        case .postgresql: return try PostgreSQLHistory.transactions(at: try Self.postgreSQLLocation(url), after: bound)
        case .xml, .binary, .inMemory: throw keepsNoHistory(url)
        }
    }

    /// Deletes the transactions before `bound` of the store of this type at `url`.
    func deleteHistory(at url: URL, before bound: PersistentHistory.Bound) throws -> PersistentHistory.Pruned {
        switch self {
        case .sqlite: return try SQLiteHistory.deleteTransactions(at: url, before: bound)
        case .postgresql: return try PostgreSQLHistory.deleteTransactions(at: try Self.postgreSQLLocation(url), before: bound)
        case .xml, .binary, .inMemory: throw keepsNoHistory(url)
        }
    }

    private func keepsNoHistory(_ url: URL) -> HistoryError {
        HistoryError(.unsupportedStoreType, path: url.path, "this is a \(rawValue) store; persistent history is kept by SQLite and PostgreSQL stores only (as in Core Data, which keeps it in SQLite stores)")
    }

    /// A writer of a new store of this type for `model`, at `url` (nil for the in-memory
    /// store), with `metadata` (its `NSStoreUUID` kept; `NSStoreType` and the type's own keys
    /// set by the writer). With `overwrite`, `finish()` replaces a store file there; else it
    /// refuses to replace any file.
    func wholeStoreWriter(at url: URL?, model: ManagedObjectModel, metadata: [String: PropertyListValue], overwrite: Bool) throws -> WholeStoreWriting {
        if self == .inMemory {
            return try AtomicStoreWriter(format: nil, at: nil, model: model, metadata: metadata, overwrite: false)
        }
        guard let url else { throw Self.needsFile(self) }
        switch self {
        case .sqlite: return try SQLiteStoreWriter(at: url, model: model, metadata: metadata, overwrite: overwrite)
        case .postgresql: return try PostgreSQLStoreWriter(at: try Self.postgreSQLLocation(url), model: model, metadata: metadata, overwrite: overwrite)
        case .xml, .binary, .inMemory: return try AtomicStoreWriter(format: atomicFileFormat, at: url, model: model, metadata: metadata, overwrite: overwrite)
        }
    }

    // MARK: Lightweight migration

    /// Carries the store of this type at `url` as `mapping` says (planned by
    /// `LightweightMigration`): a SQLite or PostgreSQL store with SQL in place, in one transaction; an XML
    /// or binary store through its objects, the file written anew. `progress` is told what
    /// is being done.
    func executeLightweightMigration(_ mapping: InferredMapping, at url: URL, progress: (@Sendable (String) -> Void)?) throws {
        switch self {
        case .sqlite:
            try mapping.executeOnSQLiteStore(at: url, progress: progress)
        case .xml, .binary:
            let format = atomicFileFormat!
            progress?("rewriting \(url.lastPathComponent) (\(format.storeType))")
            try mapping.executeOnAtomicStore(at: url, format: format)
        case .inMemory:
            throw Self.noFile(url)
        case .postgresql:
            try mapping.executeOnPostgreSQLStore(at: try Self.postgreSQLLocation(url), progress: progress)
        }
    }

    // MARK: Values kept exactly
    // Which values a store type cannot keep exactly, asked before anything is written: a SQLite
    // store holds a Decimal as a double, so one of more than 15 significant digits that no
    // double reads back as would come back rounded.
    // Its saves and batch inserts refuse such a value; `lade run` rejects the row that carries
    // it while mapping, with the same reason, before either writer sees it.

    /// Whether a store of this type keeps every value of `type` exactly (then `refusal(of:)`
    /// is nil for all of them, and need not be asked per value).
    ///
    /// ```swift
    /// PersistentStoreCoordinator.StoreType.sqlite.keepsEveryValue(of: .decimal)   // false
    /// PersistentStoreCoordinator.StoreType.xml.keepsEveryValue(of: .decimal)      // true
    /// ```
    public func keepsEveryValue(of type: AttributeType) -> Bool {
        switch self {
        case .sqlite: !SQLiteValueCoding.mayRefuse(type)
        case .postgresql: !PostgreSQLValueCoding.mayRefuse(type)
        case .xml, .binary, .inMemory: true
        }
    }

    /// Why a store of this type cannot keep `value` exactly (what follows the attribute's name
    /// in a message: "has 16 significant digits, and no double reads back as it; …"); nil when it can.
    ///
    /// ```swift
    /// PersistentStoreCoordinator.StoreType.sqlite.refusal(of: .decimal(Decimal(string: "9007199254740993")!))
    /// // "has 16 significant digits, and no double reads back as it; a SQLite store keeps …"
    /// ```
    public func refusal(of value: AttributeValue) -> String? {
        switch self {
        case .sqlite: SQLiteValueCoding.refusal(value)
        case .postgresql: PostgreSQLValueCoding.refusal(value)
        case .xml, .binary, .inMemory: nil
        }
    }

    /// The PostgreSQL store `url` names.
    private static func postgreSQLLocation(_ url: URL) throws -> PostgreSQLLocation {
        guard let location = try PostgreSQLLocation(url: url) else {
            throw StoreError(.invalidLocation, path: url.isFileURL ? url.path : PostgreSQLLocation.redact(url.absoluteString), "a PostgreSQL store is named by a URL: postgresql://USER@HOST:PORT/DATABASE?schema=NAME")
        }
        return location
    }

    private static func needsFile(_ type: Self) -> StoreError {
        StoreError(.notFound, path: type.rawValue, "a \(type.rawValue) store needs a file URL; use the type .inMemory for a store without a file")
    }

    private static func noFile(_ url: URL) -> StoreError {
        StoreError(.wrongStoreType, path: url.path, "an in-memory store has no file; ask its coordinator for its metadata (metadata(for:))")
    }
}

/// A store's file at a path, whatever its type.
enum StoreFiles {
    /// Readies the store file at `url` (when there is one) to be replaced by a new file renamed
    /// over it: refused when it is write-protected; a SQLite store's `-wal` emptied into it
    /// first (a stale `-wal` beside the new file would be read as the new file's, and the old
    /// store stays whole until the rename replaces it); then its companions removed.
    static func retire(_ given: URL) throws {
        guard FileManager.default.fileExists(atPath: given.path) else { return }
        // Through a symbolic link, the companions SQLite made are beside the file it names.
        let url = try FileSystem.resolvingLink(given)
        try FileSystem.requireWritableStore(url, directoryUse: "the new store is moved there over the old one")
        if (try? StoreType(detectingFileAt: url)) == .sqlite {
            try SQLiteStore.emptyWriteAheadLog(ofFileAt: url)
        }
        FileSystem.removeCompanions(of: url.path)
    }
}

/// What the stores of a type can do, read off the class that implements them (the
/// capabilities it answers), for decisions made before a store is open: a job's plan, its
/// writer, its commit policy.
extension StoreType {
    /// The class that implements stores of this type.
    var storeClass: any PersistentStore.Type {
        switch self {
        case .sqlite: SQLiteStore.self
        case .xml: XMLStore.self
        case .binary: BinaryStore.self
        case .inMemory: InMemoryStore.self
        case .postgresql: PostgreSQLStore.self
        }
    }

    /// Stores of this type hold saves in one transaction until told to commit (`HeldSaves`), so
    /// an import can commit every so often; the others are written whole at each save.
    package var holdsSaves: Bool { storeClass is any HeldSaves.Type }

    /// Stores of this type take rows straight into their tables (`BulkInserting`): an import's
    /// batch writer.
    package var bulkInserts: Bool { storeClass is any BulkInserting.Type }

    /// Stores of this type have a page cache to size and fetch indexes to defer while loading
    /// (`BulkLoading`).
    package var bulkLoads: Bool { storeClass is any BulkLoading.Type }

    /// Stores of this type keep Core Data's table layout (`TableLayout`: a table per
    /// inheritance hierarchy, entity numbers in `Z_ENT`, join tables for many-to-many and
    /// key-less to-manys): a lightweight migration plans its steps in those terms; the other
    /// stores keep objects with both sides of every relationship by name.
    package var keepsTableLayout: Bool {
        switch self {
        case .sqlite, .postgresql: true
        case .xml, .binary, .inMemory: false
        }
    }
}
