import Foundation
import Lade

/// One writer per store: an exclusive `flock` on a lock file beside the store
/// (`catalog.sqlite.lade-lock`), held until the process ends or `release()`. A separate file,
/// because closing any descriptor of the SQLite file itself would drop SQLite's own locks.
/// For a store reached through a symbolic link, the lock file is beside the file the link
/// names, so a run through the link and a run on the file itself exclude each other.
///
/// ```swift
/// let lock = try StoreLock(store: url)     // throws StoreLock.Busy when another run holds it
/// defer { lock.release() }
/// ```
///
/// A command that only reads (`lade migrate --dry-run`) takes `StoreLock.forReading(store:)`
/// instead, which creates nothing.
public final class StoreLock: @unchecked Sendable {
    /// Another process holds the store's lock.
    public struct Busy: Error, Sendable, CustomStringConvertible {
        public let store: String
        public let holder: String?
        public var description: String {
            "the store \(store) is locked by another lade run\(holder.map { " (\($0))" } ?? ""); try again when it has finished"
        }
    }

    package let path: String
    private var descriptor: Int32
    private let exclusive: Bool
    /// For a PostgreSQL store: the advisory lock held instead of a lock file.
    private var serverLock: PostgreSQLAdvisoryLock?

    /// Takes the writer's lock for `scope` on the store at `url`. A store file has one lock
    /// whatever the scope (one writer per file). A PostgreSQL store, which many runs may write at
    /// once, has one lock per scope (a job's checkpoint key: one run per job), an advisory lock
    /// on the server (`PostgreSQLAdvisoryLock`), so runs on other machines are excluded too.
    package convenience init(store url: URL, scope: String) throws {
        guard StoreType(locationOf: url) == .postgresql, let location = try PostgreSQLLocation(url: url) else {
            try self.init(store: url)
            return
        }
        do {
            let lock = try PostgreSQLAdvisoryLock(location: location, scope: scope)
            self.init(path: location.redacted, descriptor: -1)
            serverLock = lock
        } catch let busy as PostgreSQLAdvisoryLock.Busy {
            throw Busy(store: "\(location.redacted) (\(scope))", holder: busy.holder)
        }
    }

    /// Takes the writer's lock. A store that exists but cannot be written (no write permission,
    /// or a directory this process cannot write: `FileSystem.requireWritableStore`) is refused
    /// here with `store.readOnly`, before the lock file is made, so a refused run leaves nothing.
    package init(store: URL) throws {
        if StoreType(locationOf: store) == .postgresql, let location = try PostgreSQLLocation(url: store) {
            // The whole store's own lock, for commands that write it as a whole.
            let lock: PostgreSQLAdvisoryLock
            do { lock = try PostgreSQLAdvisoryLock(location: location, scope: "lade.store") } catch let busy as PostgreSQLAdvisoryLock.Busy {
                throw Busy(store: location.redacted, holder: busy.holder)
            }
            path = location.redacted
            descriptor = -1
            exclusive = false
            serverLock = lock
            return
        }
        let file = try FileSystem.resolvingLink(store)
        if FileManager.default.fileExists(atPath: file.path) {
            try FileSystem.requireWritableStore(file, directoryUse: "writing the store makes files there (its lock file, and a new file renamed over it or SQLite's -wal and -shm)")
        }
        path = file.path + ".lade-lock"
        exclusive = true
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw StoreError(.io, path: path, "cannot create the lock file: \(String(cString: strerror(errno))); lade needs to write in the store's directory (check its permissions)")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            close(descriptor)
            descriptor = -1
            throw Busy(store: store.path, holder: holder?.isEmpty == false ? holder : nil)
        }
        // Who holds it, for the message another run prints.
        let note = "pid \(getpid()) since \(ISO8601Date.format(Date()))\n"
        _ = ftruncate(descriptor, 0)
        _ = note.withCString { pwrite(descriptor, $0, strlen($0), 0) }
    }

    /// For a PostgreSQL store's lock: throws `store.connection` when its session ended (another
    /// run may hold the lock now), so the run stops before it commits; nothing for a lock file,
    /// which the process holds until it ends.
    package func verify() throws {
        guard let serverLock else { return }
        do { try serverLock.verify() } catch {
            throw StoreError(.connection, path: path, "this run's lock on the server (one run per job) was lost: its session ended (terminated, or the server restarted), so another run may be writing; the run stops before its next commit, keeping what it committed; run it again")
        }
    }

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
        exclusive = false
    }

    /// For a command that only reads the store: a shared lock on its lock file when that file
    /// exists, so a run writing the store meanwhile turns the reader away (`Busy`) and readers
    /// never wait for each other; nil when there is no lock file (no run is writing the store).
    /// Nothing is created or written, so it works in a directory this process cannot write.
    package static func forReading(store: URL) throws -> StoreLock? {
        guard store.isFileURL else { return nil }
        let path = try FileSystem.resolvingLink(store).path + ".lade-lock"
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        guard flock(descriptor, LOCK_SH | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            close(descriptor)
            throw Busy(store: store.path, holder: holder?.isEmpty == false ? holder : nil)
        }
        return StoreLock(path: path, descriptor: descriptor)
    }

    /// Runs `body`, which writes the store at `url` in place without a stack (`lade meta set`,
    /// `lade history delete`), holding the store's lock, so that no run that writes the store
    /// (or replaces its file: a migration, a conversion with `--overwrite`) runs meanwhile. A
    /// missing file is `store.notFound`, and no lock file is made for it. A PostgreSQL store
    /// takes no lock: such a write is one transaction on the server.
    package static func whileHeld<T>(store url: URL, _ body: () throws -> T) throws -> T {
        if StoreLocation(url: url).isServer { return try body() }
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError(.notFound, path: url.path, "no store here; check the path")
        }
        let lock = try StoreLock(store: url)
        defer { lock.release() }
        return try body()
    }

    package func release() {
        serverLock?.release()
        serverLock = nil
        guard descriptor >= 0 else { return }
        if exclusive { _ = ftruncate(descriptor, 0) }
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
