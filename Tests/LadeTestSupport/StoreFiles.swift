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
