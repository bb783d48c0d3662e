import Foundation

extension StoreType {
    /// The type of the store file at `url`, told from its first bytes: `SQLite format 3\0` for
    /// SQLite, an XML declaration or `<database>` (with `<database>` near the start) for XML,
    /// the binary store's magic bytes (`\x89LADE\r\n\x1a`) for binary.
    ///
    /// ```swift
    /// let type = try PersistentStoreCoordinator.StoreType(detectingFileAt: url)   // .xml
    /// ```
    public init(detectingFileAt url: URL) throws {
        let path = url.path
        var info = stat()
        if stat(path, &info) == 0 {
            switch info.st_mode & S_IFMT {
            case S_IFREG: break
            case S_IFDIR: throw StoreError(.notAStore, path: path, "is a directory, not a store file; give the store's file")
            default: throw StoreError(.notAStore, path: path, "is not a regular file (a device, pipe or socket), so it is not a store")
            }
        } else {
            // A symbolic link that leads nowhere (to nothing, or in a loop) says so.
            _ = try FileSystem.resolvingLink(url)
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw FileManager.default.fileExists(atPath: path)
                ? StoreError(.io, path: path, "cannot open the file to tell its store type; check its permissions")
                : StoreError(.notFound, path: path, "no store here; give a store type to create one")
        }
        defer { try? handle.close() }
        let prefix = [UInt8]((try? handle.read(upToCount: 4096)) ?? Data())
        guard !prefix.isEmpty else {
            throw StoreError(.notAStore, path: path, "the file is empty: it is not a store")
        }
        if prefix.starts(with: Array("SQLite format 3\u{0}".utf8)) {
            self = .sqlite
        } else if prefix.starts(with: BinaryStoreFile.magic) {
            self = .binary
        } else if Self.looksLikeXMLStore(prefix) {
            self = .xml
        } else if Self.startsLikeXML(prefix) {
            throw StoreError(.notAStore, path: path, "an XML file, but not a Core Data XML store (no <database> element near its start)")
        } else {
            let shown = prefix.prefix(8).map { String(format: "%02X", $0) }.joined(separator: " ")
            throw StoreError(.notAStore, path: path, "its first bytes (\(shown)) are not those of a SQLite, XML or binary store")
        }
    }

    private static func startsLikeXML(_ bytes: [UInt8]) -> Bool {
        var text = Substring(String(decoding: bytes, as: UTF8.self))
        if text.first == "\u{FEFF}" { text = text.dropFirst() }
        text = text.drop { $0.isWhitespace }
        return text.hasPrefix("<?xml") || text.hasPrefix("<!DOCTYPE") || text.hasPrefix("<database")
    }

    private static func looksLikeXMLStore(_ bytes: [UInt8]) -> Bool {
        startsLikeXML(bytes) && String(decoding: bytes, as: UTF8.self).contains("<database")
    }
}
