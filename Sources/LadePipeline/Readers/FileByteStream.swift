#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A file or standard input read with plain `read(2)` calls, in the large pieces the reader asks for.
///
/// ```swift
/// let file = try FileByteStream(path: "products.csv")
/// let stdin = FileByteStream.standardInput()
/// ```
package final class FileByteStream: ByteStream {
    /// The path it was opened from, or "stdin".
    package let path: String
    private let descriptor: Int32
    private let ownsDescriptor: Bool
    private let isRegularFile: Bool
    private let size: Int64?
    private var consumed: Int64 = 0

    /// Opens a file for reading and tells the kernel it will be read sequentially.
    ///
    /// Throws a ``ReaderError`` of kind ``ReaderError/Kind/io`` naming the file and the system's reason.
    package convenience init(path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw ReaderError(.io, file: path, found: "cannot open the source: \(reason)",
                              expected: "check the source path; relative paths in a job file start at the job file's folder")
        }
        var status = stat()
        if fstat(descriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR {
            close(descriptor)
            throw ReaderError(.io, file: path, found: "the source is a directory", expected: "name a file")
        }
        self.init(fileDescriptor: descriptor, path: path, closeOnDeinit: true)
        #if os(Linux)
        _ = posix_fadvise(descriptor, 0, 0, Int32(POSIX_FADV_SEQUENTIAL))
        #endif
    }

    /// Reads from an open descriptor (a pipe, a socket, a file), closing it at the end only when asked.
    package init(fileDescriptor: Int32, path: String, closeOnDeinit: Bool = false) {
        self.descriptor = fileDescriptor
        self.path = path
        self.ownsDescriptor = closeOnDeinit
        var status = stat()
        if fstat(fileDescriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG {
            isRegularFile = true
            size = Int64(status.st_size)
            // An inherited descriptor may not be at the start: count from where it is.
            let position = lseek(fileDescriptor, 0, SEEK_CUR)
            consumed = position > 0 ? Int64(position) : 0
        } else {
            isRegularFile = false
            size = nil
        }
    }

    /// Standard input, left open at the end.
    package static func standardInput() -> FileByteStream {
        FileByteStream(fileDescriptor: 0, path: "stdin")
    }

    deinit {
        if ownsDescriptor { close(descriptor) }
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        while true {
            let count = systemRead(descriptor, base, buffer.count)
            if count >= 0 {
                consumed += Int64(count)
                return count
            }
            if errno == EINTR { continue }
            let reason = String(cString: strerror(errno))
            throw ReaderError(.io, file: path, found: "cannot read the source at byte \(consumed): \(reason)",
                              expected: "check the disk or the program writing to it")
        }
    }

    package var bytesRead: Int64 { consumed }

    package var totalBytes: Int64? { size }

    package func seek(to offset: Int64) throws -> Bool {
        guard isRegularFile else { return false }
        guard lseek(descriptor, off_t(offset), SEEK_SET) >= 0 else {
            let reason = String(cString: strerror(errno))
            throw ReaderError(.io, file: path, found: "cannot seek to byte \(offset): \(reason)", expected: "")
        }
        consumed = offset
        return true
    }
}

// `read` inside the class names the method; this names the system call.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
