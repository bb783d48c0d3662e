import Foundation
import Lade

/// One writer per store: an exclusive `flock` on a lock file beside the store
/// (`catalog.sqlite.lade-lock`), held until the process ends or `release()`. A separate file,
/// because closing any descriptor of the SQLite file itself would drop SQLite's own locks.
///
/// ```swift
/// let lock = try StoreLock(store: url)     // throws StoreLock.Busy when another run holds it
/// defer { lock.release() }
/// ```
public final class StoreLock: @unchecked Sendable {
    /// Another process holds the store's lock.
    public struct Busy: Error, Sendable, CustomStringConvertible {
        public let store: String
        public let holder: String?
        public var description: String {
            "the store \(store) is locked by another lade run\(holder.map { " (\($0))" } ?? ""); try again when it has finished"
        }
    }

    public let path: String
    private var descriptor: Int32

    public init(store: URL) throws {
        path = store.path + ".lade-lock"
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

    public func release() {
        guard descriptor >= 0 else { return }
        _ = ftruncate(descriptor, 0)
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
