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
}
