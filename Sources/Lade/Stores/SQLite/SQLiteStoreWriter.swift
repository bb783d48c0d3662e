import Foundation

/// Writes a new SQLite store whole (`WholeStoreWriting`): the store is made beside its path
/// (`StagedFile`), filled a transaction per batch, its keys' counters set and its `-wal`
/// emptied into the file, then closed and moved into place. Rows keep the keys they are given
/// (SQLite's count per hierarchy, so an atomic store's, unique across entities, fit as they are).
///
/// External binary data (`SQLiteExternalData`) is written meanwhile into a support folder of
/// the temporary file's own (`..NAME.lade-<UUID>_SUPPORT`); when the store is finished its files
/// are moved into the store's `.NAME_SUPPORT/_EXTERNAL_DATA` (each file's name a new UUID, so
/// none is replaced) before the store file is, and the files of a store it replaces are
/// removed after. A crash at any moment leaves each store file beside every file it names, and
/// at worst files no store names (`lade check` reports them, its repair removes them).
final class SQLiteStoreWriter: WholeStoreWriting {
    private let temporary: StagedFile
    private var built: SQLiteStore?
    private let model: ManagedObjectModel
    private let overwrite: Bool
    private var finished = false
    /// The temporary file's support folder, where its external binary data is written.
    private let stagedSupport: URL

    /// A writer of a store at `url` with `metadata` (its `NSStoreUUID` made the store's
    /// `Z_UUID`; a new one when it has none).
    init(at url: URL, model: ManagedObjectModel, metadata given: [String: PropertyListValue], overwrite: Bool) throws {
        if let refusal = StoreError.refusingComposites(in: model, storeType: StoreMetadata.sqliteStoreType, path: url.path) { throw refusal }
        if let refusal = StoreError.refusingUnknownLayouts(of: TableLayout(model: model), storeType: StoreMetadata.sqliteStoreType, path: url.path) { throw refusal }
        var metadata = given
        metadata[StoreMetadata.Key.storeType] = .string(StoreMetadata.sqliteStoreType)
        metadata[StoreMetadata.Key.autoVacuumLevel] = metadata[StoreMetadata.Key.autoVacuumLevel] ?? .string("2")
        temporary = try StagedFile(beside: url)
        stagedSupport = temporary.target.deletingLastPathComponent().appendingPathComponent(".\(temporary.url.lastPathComponent)_SUPPORT")
        do {
            built = try SQLiteStore.create(at: temporary.url, model: model, identifier: metadata[StoreMetadata.Key.storeUUID]?.stringValue, metadata: metadata,
                                           supportFolder: stagedSupport)
        } catch {
            temporary.remove()
            try? FileManager.default.removeItem(at: stagedSupport)
            throw error
        }
        self.model = model
        self.overwrite = overwrite
    }

    var store: PersistentStore { open }

    private var open: SQLiteStore {
        guard let built else { preconditionFailure("the new store for \(temporary.target.path) was finished or discarded") }
        return built
    }

    var keysUniqueAcrossEntities: Bool { false }
    var firstKey: Int64 { 1 }

    func toManyWriting(of relationship: RelationshipDescription) -> ToManyWriting {
        model.tableLayoutToManyWriting(of: relationship)
    }

    func write(_ objects: [WholeStoreObject]) throws {
        try filling { try $0.save(StoreSaveRequest(inserting: objects)) }
    }

    func writeToMany(_ destinations: [WholeStoreObject.ToMany]) throws {
        try filling { try $0.save(StoreSaveRequest(linking: destinations, in: model)) }
    }

    func writeHistory(_ rows: HistoryTableRows) throws {
        try filling { try $0.writeHistoryTableRows(rows) }
    }

    func finish() throws -> PersistentStore? {
        try filling { store in
            try store.adoptPrimaryKeys()
            try store.checkpoint()
        }
        // Closed here (the last reference): the file alone holds the store.
        built = nil
        let replacing = overwrite && FileManager.default.fileExists(atPath: temporary.target.path)
        let dataFolder = SQLiteExternalData.dataFolder(in: SQLiteExternalData.supportFolder(ofStoreAt: temporary.target))
        // The replaced store's files: no row of the new store names them.
        let replacedFiles = replacing ? ((try? FileManager.default.contentsOfDirectory(atPath: dataFolder.path)) ?? []).filter(SQLiteExternalData.isFileName) : []
        try moveExternalData(into: dataFolder)
        if replacing { try StoreFiles.retire(temporary.target) }
        try temporary.moveIntoPlace(replacing ? .replace : .create, subject: "the store there")
        finished = true
        for name in replacedFiles { unlink(dataFolder.appendingPathComponent(name).path) }
        return nil
    }

    /// Moves the new store's external files into `folder` (made if need be) and flushes it,
    /// then removes the temporary support folder.
    private func moveExternalData(into folder: URL) throws {
        let staged = SQLiteExternalData.dataFolder(in: stagedSupport)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: staged.path), !names.isEmpty else {
            try? FileManager.default.removeItem(at: stagedSupport)
            return
        }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw StoreError(.io, path: folder.path, "cannot make the folder of the store's external binary data: \(error.localizedDescription); nothing was moved into place")
        }
        for name in names where !name.hasSuffix(SQLiteExternalData.partialSuffix) {
            guard rename(staged.appendingPathComponent(name).path, folder.appendingPathComponent(name).path) == 0 else {
                throw StoreError(.io, path: folder.path, "cannot move an external binary data file into the store's folder: \(String(cString: strerror(errno))); the store there is unchanged")
            }
        }
        try FileSystem.fsync(path: folder.path)
        try FileSystem.fsync(path: folder.deletingLastPathComponent().path)
        try? FileManager.default.removeItem(at: stagedSupport)
    }

    func discard() {
        guard !finished else { return }
        built = nil
        temporary.remove()
        try? FileManager.default.removeItem(at: stagedSupport)
    }

    /// Runs a write into the new store; one that failed for want of space says so, and that
    /// nothing was moved into place.
    private func filling(_ body: (SQLiteStore) throws -> Void) throws {
        do {
            try body(open)
        } catch let error as StoreError {
            if case .sqlite(let code) = error.kind, code & 0xFF == 13 {
                throw StoreError(.io, path: temporary.target.path, "the disk is full; free some space and try again: the source is unchanged and nothing was written here (\(error.message))")
            }
            throw error
        }
    }
}
