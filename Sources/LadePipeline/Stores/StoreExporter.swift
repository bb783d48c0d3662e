import Foundation
import Lade

/// `lade export`: every object of a store, one file per non-abstract entity, in NDJSON or CSV
/// (the format is specified in docs/export-format.md). Objects are read a batch at a time in
/// primary key order (`forEachBatch(ofEntity:batchSize:_:)`), so a store of millions of
/// objects is exported in bounded memory, and the same store contents give byte-identical
/// files.
///
/// ```swift
/// let store = try ReadOnlyStore.open(url, model: model)
/// let files = try StoreExporter(store: store).export(format: .ndjson, to: URL(fileURLWithPath: "out"))
/// files.map(\.url.lastPathComponent)   // ["Category.ndjson", "Image.ndjson", …]
/// ```
public struct StoreExporter {
    public enum Format: String, Sendable, CaseIterable {
        case ndjson, csv
    }

    /// One file written: the entity, where, and how many objects it holds.
    public struct ExportedFile: Sendable, Equatable {
        public let entity: String
        public let url: URL
        public let count: Int
    }

    public let store: PersistentStore
    /// How many objects are read (and their relationships looked up) at a time.
    public var batchSize: Int

    public init(store: PersistentStore, batchSize: Int = 1000) {
        self.store = store
        self.batchSize = batchSize
    }

    /// Writes `DIRECTORY/<Entity>.ndjson` (or `.csv`) for every non-abstract entity, in model
    /// order, creating the directory when missing. Each file is written under a temporary name
    /// beside its final one and renamed over it when complete, so an existing export is
    /// replaced whole or not at all.
    public func export(format: Format, to directory: URL) throws -> [ExportedFile] {
        try refuseDamage()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw StoreError(.io, path: directory.path, "cannot create the export directory: \(error.localizedDescription)")
        }
        return try store.model.entities.filter { !$0.isAbstract }.map { entity in
            let url = directory.appendingPathComponent("\(entity.name).\(format.rawValue)")
            let reads = store.url.map(OutputFile.storeFiles) ?? []
            let count: Int
            if try OutputFile.check(url, role: "the export file for \(entity.name)", reads: reads) == .stream {
                // A device or pipe is written as it is, never renamed over.
                guard let handle = FileHandle(forWritingAtPath: url.path) else {
                    throw StoreError(.io, path: url.path, "cannot open the export file for writing")
                }
                defer { try? handle.close() }
                count = try write(entity: entity.name, format: format) { text in try handle.write(contentsOf: Data(text.utf8)) }
            } else {
                count = try writeAtomically(url) { sink in try write(entity: entity.name, format: format, to: sink) }
            }
            return ExportedFile(entity: entity.name, url: url, count: count)
        }
    }

    /// The files written, for people: "wrote DIRECTORY/<Entity>.ndjson  N objects" a line, the
    /// counts aligned; `directory` is the export directory as the user gave it.
    public static func text(_ files: [ExportedFile], directory: String) -> String {
        let paths = files.map { (directory as NSString).appendingPathComponent($0.url.lastPathComponent) }
        let width = paths.map(\.count).max() ?? 0
        return zip(files, paths).map { file, path in
            "wrote " + path.padding(toLength: width, withPad: " ", startingAt: 0) + "  \(file.count) object\(file.count == 1 ? "" : "s")\n"
        }.joined()
    }

    /// Writes one entity's objects (exactly that entity, not its subentities) to `sink` and
    /// returns how many there were.
    @discardableResult
    public func export(entity: String, format: Format, to sink: (String) throws -> Void) throws -> Int {
        try refuseDamage()
        return try write(entity: entity, format: format, to: sink)
    }

    /// Rows an export would skip (an unknown `Z_ENT`) or print as nulls (a key naming no
    /// object) make the store refused, with counts, before anything is written.
    private func refuseDamage() throws {
        let damage = try store.damage(thorough: false)
        guard damage.isEmpty else { throw StoreError.damaged(damage, path: store.url.map(StoreLocation.displayName) ?? store.type) }
    }

    private func write(entity: String, format: Format, to sink: (String) throws -> Void) throws -> Int {
        let columns = try RecordColumns(model: store.model, entity: entity)
        let reader = StoreRecordReader(store: store)
        let names = columns.names
        let keys = names.map { ExportText.jsonString($0) + ":" }
        if format == .csv {
            try sink(names.map(ExportText.csvField).joined(separator: ",") + "\r\n")
        }
        var count = 0
        try store.forEachBatch(ofEntity: entity, batchSize: batchSize) { rows in
            var chunk = ""
            try reader.forEachRecord(of: rows, columns: columns) { record in
                switch format {
                case .ndjson:
                    chunk += "{"
                    for (index, cell) in record.enumerated() {
                        if index > 0 { chunk += "," }
                        chunk += keys[index] + cell.json
                    }
                    chunk += "}\n"
                case .csv:
                    chunk += record.map(\.csv).joined(separator: ",") + "\r\n"
                }
                // A few large records (the "one" side of a large one-to-many) go out as they come.
                if chunk.utf8.count > 1 << 20 {
                    try sink(chunk)
                    chunk = ""
                }
            }
            count += rows.count
            try sink(chunk)
        }
        return count
    }

    /// Runs `body` with a sink writing to a temporary file beside `url` (or beside the file a
    /// symbolic link there names), then renames the file over it; on failure the temporary
    /// file is removed and `url` left as it was.
    private func writeAtomically(_ url: URL, _ body: ((String) throws -> Void) throws -> Int) throws -> Int {
        var count = 0
        do {
            try AtomicFileWriter.replace(url, contents: .file) { output in
                count = try body { text in try output.write(text.utf8) }
            }
        } catch let error as StoreError {
            throw error
        } catch let error as FetchPredicateError {
            throw error
        } catch {
            throw StoreError(.io, path: url.path, "cannot write the export file: \(error.localizedDescription)")
        }
        return count
    }
}
