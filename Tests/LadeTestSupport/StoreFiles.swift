import Crypto
import Foundation

/// The SHA-256 of a store file and of its `-wal`, to show a store was not written. An absent
/// or empty `-wal` reads "absent" alike: SQLite makes an empty one (and a `-shm`) beside a
/// WAL-mode store it only reads.
public func storeFileDigests(_ url: URL) throws -> [String] {
    try ["", "-wal"].map { suffix in
        let path = url.path + suffix
        guard let size = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int, size > 0 else { return "absent" }
        return SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path))).map { String(format: "%02x", $0) }.joined()
    }
}

/// Copies a file a test then writes (a corpus store, which `../shared` keeps read-only), and
/// makes the copy writable: Lade refuses to write a store file that has no write permission
/// (`store.readOnly`), for root as for anyone.
public func copyWritable(at source: URL, to destination: URL) throws {
    try FileManager.default.copyItem(at: source, to: destination)
    try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: destination.path)
}

/// `copyWritable(at:to:)` by paths.
public func copyWritable(atPath source: String, toPath destination: String) throws {
    try copyWritable(at: URL(fileURLWithPath: source), to: URL(fileURLWithPath: destination))
}
