import Foundation
import Lade

/// The rejects file: one JSON object per rejected row (NDJSON), with the source file, line,
/// column, field, value, reason and the record as it was. Flushed to disk before each commit,
/// and its length kept in the checkpoint, so a resumed run cuts off the rejects of batches a
/// kill lost and writes them again: every rejected row appears exactly once.
final class RejectsFile {
    let url: URL
    private let source: String
    private var handle: FileHandle?
    private var pending = Data()
    /// A device, FIFO or socket: written as it is, with no length to keep or cut back to.
    private let isStream: Bool

    /// Opens the file for a run: a fresh run starts it empty; a resumed run keeps the first
    /// `resumeLength` bytes (what the last commit had written).
    /// A symbolic link is written through: the file it names is emptied or cut back, and the link stays.
    init(url given: URL, source: String, resumeLength: Int64?, kind: OutputFile.Kind = .regular) throws {
        let url = kind == .stream ? given : try FileSystem.resolvingLink(given)
        self.url = url
        self.source = source
        self.isStream = kind == .stream
        let manager = FileManager.default
        if isStream {
            // A device or pipe is written as it is: never removed, created or cut back.
            guard let handle = FileHandle(forWritingAtPath: url.path) else {
                throw StoreError(.io, path: url.path, "cannot open the rejects file for writing")
            }
            self.handle = handle
        } else if let resumeLength, manager.fileExists(atPath: url.path) {
            let handle = try Self.open(url)
            try handle.truncate(atOffset: UInt64(max(0, resumeLength)))
            try handle.seekToEnd()
            self.handle = handle
        } else if manager.fileExists(atPath: url.path) {
            try manager.removeItem(at: url)
        }
    }

    private static func open(_ url: URL) throws -> FileHandle {
        do {
            return try FileHandle(forUpdating: url)
        } catch {
            throw StoreError(.io, path: url.path, "cannot open the rejects file for writing")
        }
    }

    func append(_ rejects: [RejectedRow]) throws {
        for reject in rejects {
            var object: [String: Any] = ["file": source, "line": reject.line, "reason": reject.reason, "record": reject.raw]
            if let column = reject.column { object["column"] = column }
            if let field = reject.field { object["field"] = field }
            if let value = reject.value { object["value"] = value }
            pending.append(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            pending.append(0x0A)
        }
    }

    /// Writes what is pending and syncs it; returns the file's length (0 when there is none).
    func sync() throws -> Int64 {
        if !pending.isEmpty {
            if handle == nil {
                let directory = url.deletingLastPathComponent()
                try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                    throw StoreError(.io, path: url.path, "cannot create the rejects file")
                }
                handle = try Self.open(url)
            }
            do {
                try handle!.write(contentsOf: pending)
                if !isStream { try handle!.synchronize() }
            } catch {
                throw StoreError(.io, path: url.path, "cannot write the rejects file: \(error.localizedDescription)")
            }
            pending.removeAll(keepingCapacity: true)
        }
        guard let handle, !isStream else { return 0 }
        return Int64(try handle.offset())
    }

    /// The file's length once what is pending is written.
    var length: Int64 {
        get throws { (isStream ? 0 : try handle.map { Int64(try $0.offset()) } ?? 0) + Int64(pending.count) }
    }

    /// Cuts the file (and what is pending) back to `length`: the rejects of batches a run takes
    /// back are written again when they are redone.
    func truncate(to length: Int64) throws {
        let written = isStream ? 0 : try handle.map { Int64(try $0.offset()) } ?? 0
        if length >= written {
            pending.removeSubrange(Int(length - written)..<pending.count)
        } else {
            pending.removeAll()
            try handle?.truncate(atOffset: UInt64(length))
            try handle?.seekToEnd()
        }
    }

    func close() {
        try? handle?.close()
        handle = nil
    }
}
