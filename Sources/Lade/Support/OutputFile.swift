import Foundation

/// A file Lade is about to write (a report, a rejects file, an export, a store), checked against
/// every file the same run reads, so that no path a user gives can replace the store, its
/// `-wal` or `-shm`, the source, the job or the model, and never renamed over something that
/// is not a regular file (a symbolic link is written through, and stays a link).
///
/// ```swift
/// let kind = try OutputFile.check(URL(fileURLWithPath: "out/report.json"), role: "--report",
///                                 reads: [.init(store, "the store")])
/// try OutputFile.write(data, to: url, kind: kind)
/// ```
package enum OutputFile {
    /// How a checked path is written.
    package enum Kind: Sendable, Equatable {
        /// Absent, or a regular file: written beside it and renamed into place.
        case regular
        /// A character device, FIFO or socket (`/dev/null`, `/dev/stdout`, a pipe): written as it is,
        /// never created, truncated, removed or renamed over.
        case stream
    }

    /// A file (or a folder, such as a model bundle) the run reads.
    package struct Read: Sendable {
        package var url: URL
        package var what: String
        package init(_ url: URL, _ what: String) {
            self.url = url
            self.what = what
        }
    }

    /// The store's file and its companions, as reads: the store itself, `-wal`, `-shm`, `-journal` and the lock file
    /// (for a store reached through a symbolic link, those beside the file it names as well: where they are made).
    package static func storeFiles(_ store: URL) -> [Read] {
        // A store on a database server (postgresql://…) has no files.
        guard store.isFileURL else { return [] }
        let resolved = FileSystem.resolvedPath(store.path)
        let bases = resolved == store.path ? [store.path] : [store.path, resolved]
        return [Read(store, "the store")] + bases.flatMap { base in
            (FileSystem.Companion.allCases.map(\.rawValue) + [".lade-lock"]).map { Read(URL(fileURLWithPath: base + $0), "the store's \($0.dropFirst()) file") }
        }
    }

    /// Checks `url` before anything is written; throws naming `role` and what it would overwrite.
    package static func check(_ url: URL, role: String, reads: [Read]) throws -> Kind {
        let path = url.path
        var info = stat()
        let exists = stat(path, &info) == 0
        if exists && (info.st_mode & S_IFMT) == S_IFDIR {
            throw StoreError(.io, path: path, "\(role) names a directory; give a file path")
        }
        let target = canonical(url)
        for read in reads {
            var readInfo = stat()
            let sameFile = exists && stat(read.url.path, &readInfo) == 0
                && readInfo.st_dev == info.st_dev && readInfo.st_ino == info.st_ino
                && (readInfo.st_mode & S_IFMT) == S_IFREG
            let readPath = canonical(read.url)
            let inside = target == readPath || target.hasPrefix(readPath.hasSuffix("/") ? readPath : readPath + "/")
            if sameFile || inside {
                throw StoreError(.io, path: path, "\(role) is \(read.what) (\(read.url.path)); lade never writes over a file it reads: choose another path")
            }
        }
        // A symbolic link is written through to the file it names (and one that leads nowhere refused now).
        guard exists else {
            _ = try FileSystem.resolvingLink(url)
            return .regular
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            _ = try FileSystem.resolvingLink(url)
            return .regular
        case S_IFCHR, S_IFIFO, S_IFSOCK: return .stream
        default: throw StoreError(.io, path: path, "\(role) names something that is neither a file nor a device; give a file path")
        }
    }

    /// Writes `data` to a checked path: a regular file through a temporary file beside it (or,
    /// for a symbolic link, beside the file it names), flushed and renamed into place; a stream as it is.
    package static func write(_ data: Data, to url: URL, kind: Kind) throws {
        switch kind {
        case .regular:
            try AtomicFileWriter.replace(url, contents: .file) { try $0.write(data) }
        case .stream:
            let descriptor = open(url.path, O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw StoreError(.io, path: url.path, "cannot open for writing: \(String(cString: strerror(errno)))")
            }
            defer { close(descriptor) }
            try data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 && errno == EINTR { continue }
                    guard written > 0 else {
                        throw StoreError(.io, path: url.path, "cannot write: \(String(cString: strerror(errno)))")
                    }
                    offset += written
                }
            }
        }
    }

    /// The path with its folder's symbolic links and `.`/`..` resolved (the last component kept
    /// as it is when the file does not exist yet), so two spellings of one path compare equal.
    static func canonical(_ url: URL) -> String {
        let standardized = url.standardizedFileURL
        if let resolved = realpath(standardized.path, nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        let parent = standardized.deletingLastPathComponent()
        guard let resolved = realpath(parent.path, nil) else { return standardized.path }
        defer { free(resolved) }
        return (String(cString: resolved) as NSString).appendingPathComponent(standardized.lastPathComponent)
    }
}
