import Foundation

/// Core Data's external binary data in a SQLite store (`allowsExternalBinaryDataStorage`),
/// as `docs/external-binary-data.md` gives the evidence for it. The column of such an
/// attribute holds, for a value that is not nil, a marker byte first:
///
/// ```
/// inline:    01 <value bytes ...>                 the value itself follows
/// external:  02 <36-character UUID, ASCII> 00     the value is in a file of that name
/// ```
///
/// and the files are in `.<store name without extension>_SUPPORT/_EXTERNAL_DATA/` beside the
/// store file, holding the value's bytes only. Only SQLite files keep values so: the other
/// stores (XML, binary, in-memory, PostgreSQL) keep the bytes themselves, so a conversion reads
/// the value here and writes it there whole.
///
/// Writing (Lade's choices where the evidence says nothing, `docs/external-binary-data.md`):
/// a value of more than `largestInline` bytes goes to a file, written under a temporary name,
/// flushed to disk, renamed to its UUID and the folder flushed, before the row that names it is
/// written, so a committed row never names a file that is not on disk. A file the transaction
/// made is removed when the transaction is rolled back; a file whose row was deleted or given
/// another value is removed after the commit. A run killed between the two leaves a file no
/// row names, which `lade check` reports and its repair removes (`orphans`), never one a row names.
///
/// A store an earlier Lade wrote (its `NSPersistenceFrameworkVersion` Lade's 0, and no
/// `_LadeExternalBinaryData` key) holds such values as plain bytes, with no marker: it is read
/// and written as it is (`marked` false), and a conversion to a new SQLite store writes Core
/// Data's form. Used under the store's lock only.
final class SQLiteExternalData: @unchecked Sendable {
    static let inlineMarker: UInt8 = 0x01
    static let fileMarker: UInt8 = 0x02
    /// A reference: the marker, 36 characters of UUID, and a NUL.
    static let referenceLength = 38
    /// Values longer than this go to a file. Lade's choice: Core Data's threshold is not
    /// documented, and the experiments disagree (1 MB in 2011, 128 KB in 2015, "about 100 KB"
    /// in 2022; `docs/external-binary-data.md`, row 11). Reading never depends on it.
    static let largestInline = 128 * 1024
    /// The metadata key that says a store Lade wrote keeps Core Data's form, with its value.
    static let metadataKey = "_LadeExternalBinaryData"
    static let metadataValue = PropertyListValue.string("CoreData")
    /// How the temporary name of a file being written ends (`.<UUID>.lade-partial`).
    static let partialSuffix = ".lade-partial"

    /// `_EXTERNAL_DATA` in the store's support folder.
    let folder: URL
    /// Whether values are kept in Core Data's form (false: an earlier Lade's plain bytes).
    let marked: Bool
    /// Files written by the transaction that is open, by name, in order.
    private var written: [String] = []
    /// Files the open transaction's rows no longer name: removed after its commit.
    private var released: [String] = []

    init(folder: URL, marked: Bool) {
        self.folder = folder
        self.marked = marked
    }

    /// Core Data's support folder of the store file at `url`: `.<name without extension>_SUPPORT`
    /// beside it (`MyApp.sqlite` → `.MyApp_SUPPORT`), the file's symbolic links resolved.
    static func supportFolder(ofStoreAt url: URL) -> URL {
        let resolved = URL(fileURLWithPath: FileSystem.resolvedPath(url.path))
        let name = resolved.deletingPathExtension().lastPathComponent
        return resolved.deletingLastPathComponent().appendingPathComponent(".\(name)_SUPPORT")
    }

    /// The folder of external files in a support folder.
    static func dataFolder(in support: URL) -> URL { support.appendingPathComponent("_EXTERNAL_DATA") }

    /// Whether a store with `metadata` keeps Core Data's form: every store but one an earlier
    /// Lade wrote (framework version 0 and no `metadataKey`).
    static func keepsMarkers(_ metadata: [String: PropertyListValue]) -> Bool {
        metadata[metadataKey] != nil || metadata[StoreMetadata.Key.frameworkVersion] != .integer(StoreMetadata.ladeFrameworkVersion)
    }

    // MARK: Reading

    /// What a column holds for an attribute kept so.
    enum Stored: Equatable {
        case value(Data)
        case file(String)
    }

    /// The stored form of a column: nil for NULL; `Unreadable` for anything that is not a
    /// marker's form (another first byte, a reference that is not a UUID, text, numbers).
    static func parse(_ column: SQLiteValue) throws(SQLiteValueCoding.Unreadable) -> Stored? {
        switch column {
        case .null: return nil
        case .blob(let bytes):
            guard let marker = bytes.first else {
                throw SQLiteValueCoding.Unreadable(held: "an empty BLOB, with no marker of Core Data's external storage (0x01 inline, 0x02 a file)")
            }
            switch marker {
            case inlineMarker: return .value(Data(bytes.dropFirst()))
            case fileMarker:
                var name = bytes.dropFirst()
                if name.last == 0 { name = name.dropLast() }
                guard name.count == 36, let text = String(bytes: name, encoding: .ascii), UUID(uuidString: text) != nil else {
                    throw SQLiteValueCoding.Unreadable(held: "a BLOB of \(bytes.count) bytes marked 0x02 (a file) whose name is not a UUID")
                }
                return .file(text)
            default:
                throw SQLiteValueCoding.Unreadable(held: "a BLOB of \(bytes.count) bytes whose first byte 0x\(String(format: "%02X", marker)) is not a marker of Core Data's external storage (0x01 inline, 0x02 a file)")
            }
        default:
            throw SQLiteValueCoding.Unreadable(column)
        }
    }

    /// A missing or unreadable external file, named, with what to do.
    struct MissingFile: Error {
        let path: String
        let reason: String
    }

    /// The value a column holds: the bytes inline, or the file's contents.
    func value(of column: SQLiteValue, as type: AttributeType) throws -> AttributeValue? {
        guard marked else { return try SQLiteValueCoding.decode(column, as: type) }
        switch try Self.parse(column) {
        case nil: return nil
        case .value(let data)?: return .binary(data)
        case .file(let name)?: return .binary(try contents(of: name))
        }
    }

    /// The bytes of the external file `name`: a regular file, read whole. A symbolic link is
    /// refused, not followed: a store from elsewhere could name any file of the reader's.
    func contents(of name: String) throws(MissingFile) -> Data {
        let url = folder.appendingPathComponent(name)
        var info = stat()
        if lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK {
            throw MissingFile(path: url.path, reason: "it is a symbolic link, and Lade reads only files kept in the folder itself")
        }
        switch FileSystem.readRegularFile(url, limit: Int(Int32.max)) {
        case .success(let data): return data
        case .failure(let refusal): throw MissingFile(path: url.path, reason: refusal.description)
        }
    }

    /// Whether the external file `name` is there, a regular file (not a symbolic link).
    func hasFile(_ name: String) -> Bool {
        var info = stat()
        return lstat(folder.appendingPathComponent(name).path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// Whether `name` is a file name Core Data gives external data: a UUID.
    static func isFileName(_ name: String) -> Bool { name.count == 36 && UUID(uuidString: name) != nil }

    // MARK: Writing

    /// The column for `value`: Core Data's form (a file for a long value, written and flushed
    /// now), or, in an earlier Lade's store, the bytes themselves.
    func column(for value: AttributeValue?) throws -> SQLiteValue {
        guard marked, case .binary(let data)? = value, data.count > Self.largestInline else { return Self.inlineColumn(for: value, marked: marked) }
        let name = UUID().uuidString
        try writeFile(name, data)
        written.append(name)
        var reference = Data([Self.fileMarker])
        reference.append(contentsOf: Array(name.utf8))
        reference.append(0)
        return .blob(reference)
    }

    /// The column for `value` kept inline whatever its length (a model's default, which
    /// every new row shares: no file of its own): the marker and the bytes, or, unmarked, the bytes.
    static func inlineColumn(for value: AttributeValue?, marked: Bool) -> SQLiteValue {
        guard marked, case .binary(let data)? = value else { return SQLiteValueCoding.encode(value) }
        var bytes = Data(capacity: data.count + 1)
        bytes.append(inlineMarker)
        bytes.append(data)
        return .blob(bytes)
    }

    /// Notes that a row no longer names what `column` named (it was deleted or given another
    /// value): its file, if any, is removed after the commit.
    func release(_ column: SQLiteValue) {
        guard marked, case .file(let name)? = try? Self.parse(column) else { return }
        released.append(name)
    }

    private func writeFile(_ name: String, _ data: Data) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let partial = folder.appendingPathComponent(".\(name)\(Self.partialSuffix)").path
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw StoreError(.io, path: partial, "cannot create a file for an external value: \(String(cString: strerror(errno))); check that \(folder.path) is writable")
        }
        do {
            let output = FileOutput(descriptor: descriptor, path: partial, subject: "the store")
            try output.write(data)
            try output.flush()
            guard fsync(descriptor) == 0 else {
                throw StoreError(.io, path: partial, "cannot flush an external value to disk: \(String(cString: strerror(errno)))")
            }
            close(descriptor)
        } catch {
            close(descriptor)
            unlink(partial)
            throw error
        }
        guard rename(partial, folder.appendingPathComponent(name).path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(partial)
            throw StoreError(.io, path: folder.path, "cannot name an external value's file: \(reason)")
        }
        try FileSystem.fsync(path: folder.path)
    }

    // MARK: Transactions

    /// Where the open transaction's files stand, for a savepoint to go back to.
    struct Mark { let written: Int; let released: Int }

    var mark: Mark { Mark(written: written.count, released: released.count) }

    /// A savepoint was rolled back: the files written since `mark` are removed, and those
    /// released since then are named again.
    func rollBack(to mark: Mark) {
        while written.count > mark.written { unlink(folder.appendingPathComponent(written.removeLast()).path) }
        released.removeSubrange(min(mark.released, released.count)...)
    }

    /// The transaction was rolled back: every file it wrote is removed.
    func rolledBack() { rollBack(to: Mark(written: 0, released: 0)) }

    /// The transaction committed: the files its rows no longer name are removed.
    func committed() {
        for name in released { unlink(folder.appendingPathComponent(name).path) }
        written.removeAll()
        released.removeAll()
    }
}

extension SQLiteStore {
    /// The refusal of a model that says otherwise than the store's own model (`Z_MODELCACHE`,
    /// which Core Data and Lade write into every store) about which attributes are kept as
    /// external binary data. Version hashes leave the setting out, so a store opens with
    /// either; but the column holds Core Data's markers for one and the bytes themselves for
    /// the other, and reading it the other way would add or take bytes silently. Nil when they
    /// agree, or the store carries no model it can read.
    static func refusingExternalStorageMismatch(of model: ManagedObjectModel, _ connection: SQLiteConnection, tables: Set<String>, path: String) throws -> StoreError? {
        let binary = model.entities.flatMap { entity in
            entity.attributes.filter { !$0.isTransient && ($0.type == .binary || $0.type == .transformable) }.map { (entity.name, $0) }
        }
        guard !binary.isEmpty, tables.contains("Z_MODELCACHE"),
              case .blob(let blob)? = try connection.rows("SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 1").first?.first,
              let carried = try? ManagedObjectModel(modelCache: blob, origin: path + ", Z_MODELCACHE") else { return nil }
        var differing: [String] = []
        for (entity, attribute) in binary {
            guard let stored = carried.entity(named: entity)?.attributes.first(where: { $0.name == attribute.name }),
                  stored.type == attribute.type, stored.isKeptExternally != attribute.isKeptExternally else { continue }
            differing.append("\(entity).\(attribute.name) (the store \(stored.isKeptExternally ? "keeps it as external binary data" : "keeps its bytes in the column"), the model \(attribute.isKeptExternally ? "allows" : "does not allow") external storage)")
        }
        guard !differing.isEmpty else { return nil }
        return StoreError(.unsupportedModel, path: path,
                          "the model differs from the store's own (its Z_MODELCACHE) in allowsExternalBinaryDataStorage for \(differing.joined(separator: "; ")): the values would be misread; give the model the store was written with (the setting is not part of the version hashes, so both open), or open it without a model to use the one it carries")
    }
}
