import Foundation

/// Writes a whole file so that a crash at any moment leaves either the old file or the new
/// one, never a mix: the new content goes to a temporary file beside the target, which is
/// flushed to disk (`fsync`) before it is renamed over the target (or, when creating, linked
/// into place, which fails instead of clobbering a file that appeared meanwhile); then the
/// directory is flushed so the rename itself survives a power cut. The one place where Lade
/// replaces a file this way: stores, their metadata, exports and reports.
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
/// read, and the target is untouched.
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
        let url = try FileSystem.resolvingLink(given)
        let path = url.path
        let directory = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw StoreError(.notFound, path: path, "the directory \(directory) does not exist; create it first")
        }
        let exists = FileManager.default.fileExists(atPath: path)
        if creating && exists {
            throw StoreError(.alreadyExists, path: path, "a file is already there; remove it or choose another path")
        }
        if exists && contents == .store {
            try FileSystem.requireWritableStore(url, directoryUse: "the new file is written there and renamed over the old one")
        }
        let temporary = directory + "/.\(url.lastPathComponent).lade-\(UUID().uuidString)"
        var mode: mode_t = 0o644
        var existing = stat()
        if !creating && stat(path, &existing) == 0 { mode = existing.st_mode & 0o7777 }
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw StoreError(.io, path: path, "cannot create a temporary file in \(directory) to write \(contents.name): \(String(cString: strerror(errno))); check that the directory is writable")
        }
        fchmod(descriptor, mode)
        var linkedOrRenamed = false
        defer {
            if !linkedOrRenamed || creating { unlink(temporary) }
        }
        do {
            let output = FileOutput(descriptor: descriptor, path: path, subject: contents.name)
            try body(output)
            try output.flush()
            guard fsync(descriptor) == 0 else { throw output.failure("cannot flush the new file to disk") }
        } catch {
            close(descriptor)
            throw error
        }
        guard close(descriptor) == 0 else {
            throw StoreError(.io, path: path, "cannot close the new file: \(String(cString: strerror(errno))); \(contents.name) is unchanged")
        }
        if creating {
            guard link(temporary, path) == 0 else {
                let code = errno
                if code == EEXIST { throw StoreError(.alreadyExists, path: path, "another process created a file here meanwhile") }
                throw StoreError(.io, path: path, "cannot move the new \(contents == .store ? "store" : "file") into place: \(String(cString: strerror(code)))")
            }
        } else {
            guard rename(temporary, path) == 0 else {
                throw StoreError(.io, path: path, "cannot move the new file into place: \(String(cString: strerror(errno))); \(contents.name) is unchanged")
            }
        }
        linkedOrRenamed = true
        try FileSystem.fsync(path: directory)
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
