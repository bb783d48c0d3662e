import Foundation

/// The few file-system calls crash safety needs, with errors that say which file failed.
package enum FileSystem {
    /// Flushes a file's (or a directory's) data to disk, so a rename or link that follows is durable.
    static func fsync(path: String) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else {
            throw StoreError(.io, path: path, "cannot open to flush it to disk: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        guard Foundation.fsync(descriptor) == 0 else {
            throw StoreError(.io, path: path, "cannot flush to disk: \(String(cString: strerror(errno)))")
        }
    }

    // MARK: Companion files

    /// The files SQLite keeps beside a database, named by the suffix added to its path. They
    /// belong to the file: they travel with it and go when it goes, and a new file moved to a
    /// path never takes over the old file's (a stale `-wal` would be read as the new file's).
    /// The one list of them.
    package enum Companion: String, CaseIterable, Sendable {
        /// Writes committed in WAL mode and not yet copied into the file.
        case wal = "-wal"
        /// The index of the `-wal`, shared by the connections that have the file open.
        case shm = "-shm"
        /// A rollback journal: the pages a transaction in progress changed, as they were.
        case journal = "-journal"

        /// Whether it may hold writes the file alone does not have (`-wal`, `-journal`).
        package var holdsWrites: Bool { self != .shm }

        /// Its path beside the file at `path`.
        package func path(beside path: String) -> String { path + rawValue }
    }

    /// Whether any companion of the file at `path` exists.
    package static func hasCompanions(_ path: String) -> Bool {
        Companion.allCases.contains { access($0.path(beside: path), F_OK) == 0 }
    }

    /// The first companion of the file at `path` that holds writes (`-wal` or `-journal`, not
    /// empty), or nil when the file alone holds everything.
    package static func companionHoldingWrites(_ path: String) -> Companion? {
        Companion.allCases.first { companion in
            var info = stat()
            return companion.holdsWrites && stat(companion.path(beside: path), &info) == 0 && info.st_size > 0
        }
    }

    /// Removes the companions of the file at `path` (not the file).
    package static func removeCompanions(of path: String) {
        for companion in Companion.allCases { unlink(companion.path(beside: path)) }
    }

    /// Removes the file at `path` and its companions.
    package static func removeWithCompanions(_ path: String) {
        unlink(path)
        removeCompanions(of: path)
    }

    /// Reads a whole input file that must be a regular file of at most `limit` bytes (a model,
    /// a mapping model): a device, pipe or socket would block or never end, so it is refused
    /// before it is opened for reading, as is a larger file. The reason, for the caller's error.
    static func readRegularFile(_ url: URL, limit: Int) -> Result<Data, ReadRefusal> {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            return .failure(ReadRefusal(errno == ENOENT ? "there is no file here" : "cannot read it: \(String(cString: strerror(errno)))"))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(ReadRefusal((info.st_mode & S_IFMT) == S_IFDIR ? "it is a directory, not a file" : "it is a device, pipe or socket, not a file"))
        }
        guard info.st_size <= limit else {
            return .failure(ReadRefusal("it is \(info.st_size) bytes, more than the \(limit) this kind of file is read up to"))
        }
        do {
            return .success(try Data(contentsOf: url))
        } catch {
            return .failure(ReadRefusal("cannot read it: \(error.localizedDescription)"))
        }
    }

    /// Why `readRegularFile` did not read a file.
    struct ReadRefusal: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    // MARK: Store files: symbolic links and write protection

    /// The file that a write to `url` must replace: `url` itself, or, when `url` is a symbolic
    /// link, the regular file at the end of its chain of links (an absolute path, every link
    /// resolved). Whatever replaces a file by writing a temporary file and renaming it (the
    /// atomic stores, a SQLite store moved into place, exports, reports) writes there, so the
    /// link stays a link, the file it names is the one changed, and the temporary file is made
    /// in that file's directory, on its file system, which a rename needs. A link that leads
    /// nowhere is refused rather than replaced: one to nothing, one in a loop, one to
    /// something other than a regular file.
    ///
    /// ```swift
    /// let target = try FileSystem.resolvingLink(URL(fileURLWithPath: "link.xml"))   // …/real/s.xml
    /// ```
    package static func resolvingLink(_ url: URL) throws -> URL {
        var info = stat()
        guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK else { return url }
        let path = url.path
        let named = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?"
        guard let resolved = realpath(path, nil) else {
            switch errno {
            case ENOENT:
                throw StoreError(.notFound, path: path, "is a symbolic link to \(named), which does not exist; lade writes through a link only into an existing file: point the link at one, or remove it")
            case ELOOP:
                throw StoreError(.io, path: path, "is a symbolic link in a loop of links (it names \(named)); point it at a file")
            default:
                throw StoreError(.io, path: path, "is a symbolic link to \(named), which cannot be followed: \(String(cString: strerror(errno)))")
            }
        }
        defer { free(resolved) }
        let target = String(cString: resolved)
        guard stat(target, &info) == 0 else {
            throw StoreError(.io, path: path, "is a symbolic link to \(target), which cannot be read: \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            let what = (info.st_mode & S_IFMT) == S_IFDIR ? "a directory" : "a device, pipe or socket"
            throw StoreError(.io, path: path, "is a symbolic link to \(target), which is \(what), not a file; point the link at a file")
        }
        return URL(fileURLWithPath: target)
    }

    /// `path` with its symbolic links resolved when it can be (a path that leads nowhere is
    /// returned as it is): where SQLite, which follows links, puts the `-wal` and `-shm` of a
    /// database opened through a link, and where a store's lock file goes.
    package static func resolvedPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Why the existing file at `path` must not be written, or nil when it may be (or is not
    /// there): this process may not write it, or nobody may. A file with no write bit in its
    /// mode (0444) is taken as write-protected even when permission bits would not stop this
    /// process (root), as `rm` asks before removing one: a store made read-only stays so for
    /// every user, and is never replaced by renaming a new file over it.
    package static func writeProtection(ofFile path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        if info.st_mode & 0o222 == 0 {
            return "the file has no write permission (mode \(String(info.st_mode & 0o7777, radix: 8)))"
        }
        guard access(path, W_OK) == 0 else { return "this process may not write the file (\(String(cString: strerror(errno))))" }
        return nil
    }

    /// Why this process cannot make files in the directory at `path`, or nil when it can.
    package static func writeProtection(ofDirectory path: String) -> String? {
        access(path.isEmpty ? "." : path, W_OK | X_OK) == 0 ? nil : "its directory \(path) is not writable (\(String(cString: strerror(errno))))"
    }

    /// Refuses, with `store.readOnly`, to write the existing store file at `url` (its links
    /// already resolved) when it or its directory is write-protected (`writeProtection(ofFile:)`):
    /// checked before anything is created, so a refused write leaves no file behind.
    /// `directoryUse` says why writing needs the directory (a new file renamed over the store,
    /// SQLite's `-wal` and `-shm`).
    package static func requireWritableStore(_ url: URL, directoryUse: String) throws {
        let path = url.path
        let reading = "it can still be read (reading writes nothing)"
        if let reason = writeProtection(ofFile: path) {
            var info = stat()
            let fix = stat(path, &info) == 0 && info.st_mode & 0o222 == 0 ? "make it writable (chmod u+w \(path))" : "run as a user who may write it"
            throw StoreError(.readOnly, path: path, "the store is read-only: \(reason); \(fix) to change it; \(reading)")
        }
        let directory = url.deletingLastPathComponent().path
        if let reason = writeProtection(ofDirectory: directory) {
            throw StoreError(.readOnly, path: path, "the store cannot be changed: \(reason), and \(directoryUse); make the directory writable to change the store; \(reading)")
        }
    }
}
