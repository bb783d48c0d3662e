import Foundation

/// Writes a whole file so that a crash at any moment leaves either the old file or the new
/// one, never a mix: the new content goes to a temporary file beside the target
/// (`StagedFile`), which is flushed to disk (`fsync`) before it is renamed over the target
/// (or, when creating, linked into place, which fails instead of clobbering a file that
/// appeared meanwhile); then the directory is flushed so the rename itself survives a power
/// cut. What writes atomic stores, their metadata, exports and reports.
///
/// ```swift
/// try AtomicFileWriter.replace(url) { output in try output.write(Data("hello".utf8)) }
/// ```
///
/// A target that is a symbolic link is written through: the file at the end of the link is
/// replaced, and the temporary file made beside that file (`FileSystem.resolvingLink`), so the
/// link stays a link. An existing store file with no write permission
/// (`FileSystem.writeProtection(ofFile:)`), or in a directory this process cannot write, is
/// refused with `store.readOnly` before anything is created, though a rename would not need
/// the file's own permission.
///
/// A killed writer can leave its temporary file (`.<name>.lade-<UUID>`) behind; it is never
/// read, and the target is untouched (`StagedFile.removeInterruptedWrites(beside:)`).
package enum AtomicFileWriter {
    /// What is written: a store (refused when write-protected), or a file Lade writes for the
    /// user (a report, an export), which is replaced as the shell's `>` would.
    package enum Contents: Sendable {
        case store
        case file

        var name: String { self == .store ? "the store" : "the file" }
    }

    /// Replaces the file at `url` (which may not exist yet) with what `body` writes.
    package static func replace(_ url: URL, contents: Contents = .store, _ body: (FileOutput) throws -> Void) throws {
        try write(url, creating: false, contents: contents, body)
    }

    /// Creates the file at `url`, which must not exist, with what `body` writes.
    package static func create(_ url: URL, contents: Contents = .store, _ body: (FileOutput) throws -> Void) throws {
        try write(url, creating: true, contents: contents, body)
    }

    private static func write(_ given: URL, creating: Bool, contents: Contents, _ body: (FileOutput) throws -> Void) throws {
        let staged = try StagedFile(beside: given)
        let path = staged.target.path
        let exists = FileManager.default.fileExists(atPath: path)
        if creating && exists {
            throw StoreError(.alreadyExists, path: path, "a file is already there; remove it or choose another path")
        }
        if exists && contents == .store {
            try FileSystem.requireWritableStore(staged.target, directoryUse: "the new file is written there and renamed over the old one")
        }
        let descriptor = open(staged.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, StagedFile.newFileMode)
        guard descriptor >= 0 else {
            throw StoreError(.io, path: path, "cannot create a temporary file in \(staged.directory) to write \(contents.name): \(String(cString: strerror(errno))); check that the directory is writable")
        }
        fchmod(descriptor, StagedFile.newFileMode)
        defer { staged.remove() }
        do {
            let output = FileOutput(descriptor: descriptor, path: path, subject: contents.name)
            try body(output)
            try output.flush()
            // Flushed through the descriptor that wrote it, which is told of a failed write-back.
            guard fsync(descriptor) == 0 else { throw output.failure("cannot flush the new file to disk") }
        } catch {
            close(descriptor)
            throw error
        }
        guard close(descriptor) == 0 else {
            throw StoreError(.io, path: path, "cannot close the new file: \(String(cString: strerror(errno))); \(contents.name) is unchanged")
        }
        try staged.moveIntoPlace(creating ? .create : .replace, subject: contents.name, flushed: true)
    }
}

/// A new file made under a temporary name beside the path it is for, and moved there only when
/// complete: how every file Lade writes whole reaches its path (`AtomicFileWriter`'s, a new
/// SQLite store, a converted or migrated store), by one rule. The file's data is flushed to
/// disk (`fsync`); it is linked at its path (creating: a file that appeared there meanwhile is
/// never replaced) or renamed over it (replacing: it takes the replaced file's permissions);
/// its temporary name is removed; then the directory is flushed, so the move itself survives a
/// power cut. A crash at any moment leaves the old file (or none) or the new one, never a mix,
/// and at worst a temporary file nothing reads, which `removeInterruptedWrites(beside:)` removes.
///
/// ```swift
/// let staged = try StagedFile(beside: url)         // .catalog.sqlite.lade-<UUID>
/// defer { staged.remove() }
/// try build(at: staged.url)
/// try staged.moveIntoPlace(.create)
/// ```
///
/// A path that is a symbolic link is written through: the file at the end of the link is
/// replaced, and the temporary file made beside that file (`FileSystem.resolvingLink`), in the
/// directory it is renamed into, on the same file system.
package struct StagedFile: Sendable {
    /// The file to make or replace: the path given, its symbolic links resolved.
    package let target: URL
    /// The temporary file: `.NAME.lade-<UUID>` beside `target`.
    package let url: URL

    package var path: String { url.path }
    package var directory: String { target.deletingLastPathComponent().path }

    /// The permissions of a new file that replaces none.
    static let newFileMode: mode_t = 0o644

    /// Refuses a symbolic link that leads nowhere and a directory that does not exist.
    package init(beside given: URL) throws {
        target = try FileSystem.resolvingLink(given)
        let directory = target.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw StoreError(.notFound, path: target.path, "the directory \(directory) does not exist; create it first")
        }
        url = URL(fileURLWithPath: directory).appendingPathComponent(Self.prefixes(of: target.lastPathComponent)[0] + UUID().uuidString)
    }

    /// How the file reaches its path.
    package enum Placement: Sendable {
        /// Only where no file is: a file that appeared meanwhile is refused, never replaced.
        case create
        /// Over the file there, if any.
        case replace
    }

    /// Moves the complete, closed file into place (see the type's rule). It is refused, and
    /// nothing moved, while its `-wal` or `-journal` holds writes (a SQLite file closed
    /// uncleanly); its empty companions are removed first, as a file never takes companions to
    /// its new path. `subject` names what a failure leaves unchanged; `flushed` says the
    /// caller flushed the file already, through the descriptor that wrote it.
    package func moveIntoPlace(_ placement: Placement, subject: String = "the store", flushed: Bool = false) throws {
        let destination = target.path
        if let companion = FileSystem.companionHoldingWrites(path) {
            throw StoreError(.io, path: destination, "the new file's \(companion.rawValue) was not emptied when it was closed; nothing was moved into place, and \(subject) is unchanged")
        }
        FileSystem.removeCompanions(of: path)
        if !flushed { try FileSystem.fsync(path: path) }
        switch placement {
        case .create:
            guard link(path, destination) == 0 else {
                let code = errno
                if code == EEXIST { throw StoreError(.alreadyExists, path: destination, "another process created a file here meanwhile; nothing was written") }
                throw StoreError(.io, path: destination, "cannot move the new file into place: \(String(cString: strerror(code)))")
            }
            unlink(path)
        case .replace:
            var replaced = stat()
            if stat(destination, &replaced) == 0 { chmod(path, replaced.st_mode & 0o7777) }
            guard rename(path, destination) == 0 else {
                throw StoreError(.io, path: destination, "cannot move the new file into place: \(String(cString: strerror(errno))); \(subject) is unchanged")
            }
        }
        try FileSystem.fsync(path: directory)
    }

    /// Removes the temporary file and its companions: a write that failed or was given up.
    /// (After `moveIntoPlace`, there is nothing left to remove.)
    package func remove() {
        FileSystem.removeWithCompanions(path)
    }

    /// How the temporary files beside a file named `name` start: `.NAME.lade-`, and
    /// `..NAME.lade-` for one made beside such a file in turn (a SQLite store created, as every
    /// new store is, beside a temporary path it is itself made for).
    private static func prefixes(of name: String) -> [String] {
        [".\(name).lade-", "..\(name).lade-"]
    }

    /// Removes the temporary files that runs killed while writing the file at `url` left beside
    /// it (with their companions), and returns their names; for a file reached through a
    /// symbolic link, those beside the file it names as well, where they are made. Nothing
    /// ever reads them. Call it only while no other process writes that file.
    package static func removeInterruptedWrites(beside url: URL) -> [String] {
        let resolved = URL(fileURLWithPath: FileSystem.resolvedPath(url.path))
        var removed: [String] = []
        for place in resolved.path == url.path ? [url] : [url, resolved] {
            let directory = place.deletingLastPathComponent()
            let prefixes = prefixes(of: place.lastPathComponent)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { continue }
            for name in names.sorted() where prefixes.contains(where: name.hasPrefix) {
                let path = directory.appendingPathComponent(name).path
                // A folder: the support folder of a SQLite store being written (its external binary data).
                if unlink(path) == 0 || (name.hasSuffix("_SUPPORT") && (try? FileManager.default.removeItem(atPath: path)) != nil) { removed.append(name) }
            }
        }
        return removed
    }
}

/// Buffered writes to a file descriptor, with errors that name the store and say what to do.
package final class FileOutput {
    let descriptor: Int32
    let path: String
    /// "the store" or "the file": what a failure leaves unchanged.
    private let subject: String
    private var buffer: [UInt8] = []
    private static let capacity = 1 << 16

    init(descriptor: Int32, path: String, subject: String = "the store") {
        self.descriptor = descriptor
        self.path = path
        self.subject = subject
        buffer.reserveCapacity(Self.capacity)
    }

    package func write(_ bytes: some Collection<UInt8>) throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= Self.capacity { try flush() }
    }

    /// Writes out what is buffered.
    func flush() throws {
        var offset = 0
        while offset < buffer.count {
            let written = buffer.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw failure("cannot write the new file")
            }
            offset += written
        }
        buffer.removeAll(keepingCapacity: true)
    }

    func failure(_ what: String) -> StoreError {
        let code = errno
        let hint = code == ENOSPC ? " (the disk is full; free some space and save again)" : ""
        return StoreError(.io, path: path, "\(what): \(String(cString: strerror(code)))\(hint); \(subject) is unchanged")
    }
}
