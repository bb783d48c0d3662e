import Foundation

/// The few file-system calls crash safety needs, with errors that say which file failed.
enum FileSystem {
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
}
