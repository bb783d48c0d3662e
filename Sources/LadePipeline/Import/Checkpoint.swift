import Crypto
import Foundation
import Lade

/// How far an import of one source has been committed, kept in the store's metadata and
/// written in the same transaction as the rows it counts, so a killed run resumes exactly
/// where its last commit ended and a finished one is not repeated.
///
/// The metadata key is `lade.import:<Entity>:<absolute source path>`; the value a dictionary
/// (see jobs/README.md, "Checkpoints").
package struct Checkpoint: Sendable, Equatable {
    /// What the source file was when the import started: a changed file is a new import.
    package struct SourceIdentity: Sendable, Equatable {
        package var path: String
        package var size: Int64
        /// Modification time, seconds since 1970.
        package var modified: Double
        /// SHA-256 of the first 64 KiB, hex.
        package var head: String

        /// Reads a file's identity; nil for standard input and for any source that is not a
        /// regular file (a pipe, FIFO or device such as `/dev/stdin`): such a stream can be read
        /// only once, by the reader, so it has no identity and cannot be resumed.
        package static func of(_ url: URL?) throws -> SourceIdentity? {
            guard let url else { return nil }
            var info = stat()
            guard stat(url.path, &info) == 0 else {
                throw StoreError(.notFound, path: url.path, "cannot read the source: \(String(cString: strerror(errno)))")
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else { return nil }
            guard let handle = FileHandle(forReadingAtPath: url.path) else {
                throw StoreError(.io, path: url.path, "cannot open the source for reading")
            }
            defer { try? handle.close() }
            let head = (try? handle.read(upToCount: 65_536)) ?? Data()
            let digest = SHA256.hash(data: head).map { String(format: "%02x", $0) }.joined()
            let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            return SourceIdentity(path: url.path, size: Int64(info.st_size), modified: modified, head: digest)
        }
    }

    package var source: SourceIdentity?
    /// Where the next run starts: after the last committed record.
    package var resume: ResumePoint
    /// True once the whole source was committed.
    package var complete: Bool
    /// The rejects file's length at the commit, so a resumed run drops rejects of lost batches.
    package var rejectsLength: Int64
    package var counts: ImportCounts
    package var updatedAt: Date

    package static let metadataKeyPrefix = "lade.import:"

    package static func metadataKey(entity: String, source: URL?) -> String {
        "\(metadataKeyPrefix)\(entity):\(source?.path ?? "-")"
    }

    /// The entity and source path a checkpoint key names; nil for other keys.
    package static func parseMetadataKey(_ key: String) -> (entity: String, source: String)? {
        guard key.hasPrefix(metadataKeyPrefix) else { return nil }
        let rest = key.dropFirst(metadataKeyPrefix.count)
        guard let colon = rest.firstIndex(of: ":") else { return nil }
        return (String(rest[..<colon]), String(rest[rest.index(after: colon)...]))
    }

    /// Every import checkpoint in a store's metadata, by key.
    package static func all(in metadata: [String: PropertyListValue]) -> [(key: String, entity: String, source: String, checkpoint: Checkpoint)] {
        metadata.compactMap { key, value in
            guard let (entity, source) = parseMetadataKey(key), let checkpoint = Checkpoint(value) else { return nil }
            return (key, entity, source, checkpoint)
        }.sorted { ($0.entity, $0.checkpoint.updatedAt, $0.key) < ($1.entity, $1.checkpoint.updatedAt, $1.key) }
    }

    /// The finished checkpoints `retention` drops from `metadata` (never `keeping`, the running
    /// source's): those older than its age limit, then all but the newest `keep` of each entity.
    package static func expiredKeys(in metadata: [String: PropertyListValue], keeping: String,
                                   retention: CheckpointRetention, now: Date = Date()) -> [String] {
        var expired: [String] = []
        var finished: [String: [(key: String, updatedAt: Date)]] = [:]
        for entry in all(in: metadata) where entry.key != keeping && entry.checkpoint.complete {
            if let maxAge = retention.maxAge, now.timeIntervalSince(entry.checkpoint.updatedAt) > maxAge {
                expired.append(entry.key)
            } else {
                finished[entry.entity, default: []].append((entry.key, entry.checkpoint.updatedAt))
            }
        }
        let runningEntity = parseMetadataKey(keeping)?.entity
        for (entity, entries) in finished {
            // The running source's checkpoint counts against its entity's `keep`.
            let room = max(0, retention.keep - (entity == runningEntity ? 1 : 0))
            let newestFirst = entries.sorted { ($0.updatedAt, $0.key) > ($1.updatedAt, $1.key) }
            expired += newestFirst.dropFirst(room).map(\.key)
        }
        return expired.sorted()
    }

    package var propertyList: PropertyListValue {
        var dictionary: [String: PropertyListValue] = [
            "rows": .integer(resume.recordIndex),
            "byteOffset": .integer(resume.byteOffset),
            "line": .integer(Int64(resume.line)),
            "complete": .bool(complete),
            "rejectsLength": .integer(rejectsLength),
            "updatedAt": .date(updatedAt),
            "counts": .dictionary([
                "inserted": .integer(Int64(counts.inserted)), "updated": .integer(Int64(counts.updated)),
                "unchanged": .integer(Int64(counts.unchanged)), "duplicates": .integer(Int64(counts.duplicates)),
                "existing": .integer(Int64(counts.existing)), "rejected": .integer(Int64(counts.rejected)),
                "unresolved": .integer(Int64(counts.unresolved)), "createdDestinations": .integer(Int64(counts.createdDestinations)),
            ]),
        ]
        if let source {
            dictionary["source"] = .dictionary([
                "path": .string(source.path), "size": .integer(source.size),
                "modified": .real(source.modified), "head": .string(source.head),
            ])
        }
        return .dictionary(dictionary)
    }

    package init(source: SourceIdentity?, resume: ResumePoint, complete: Bool, rejectsLength: Int64, counts: ImportCounts, updatedAt: Date = Date()) {
        self.source = source
        self.resume = resume
        self.complete = complete
        self.rejectsLength = rejectsLength
        self.counts = counts
        self.updatedAt = updatedAt
    }

    /// Reads a checkpoint written by `propertyList`; nil for anything else.
    package init?(_ value: PropertyListValue?) {
        guard case .dictionary(let dictionary)? = value,
              case .integer(let rows)? = dictionary["rows"], case .integer(let offset)? = dictionary["byteOffset"],
              case .integer(let line)? = dictionary["line"], case .bool(let complete)? = dictionary["complete"]
        else { return nil }
        resume = ResumePoint(byteOffset: offset, line: Int(line), recordIndex: rows)
        self.complete = complete
        if case .integer(let length)? = dictionary["rejectsLength"] { rejectsLength = length } else { rejectsLength = 0 }
        if case .date(let date)? = dictionary["updatedAt"] { updatedAt = date } else { updatedAt = .distantPast }
        var counts = ImportCounts()
        if case .dictionary(let stored)? = dictionary["counts"] {
            func number(_ key: String) -> Int { if case .integer(let value)? = stored[key] { Int(value) } else { 0 } }
            counts.inserted = number("inserted"); counts.updated = number("updated"); counts.unchanged = number("unchanged")
            counts.duplicates = number("duplicates"); counts.existing = number("existing"); counts.rejected = number("rejected")
            counts.unresolved = number("unresolved"); counts.createdDestinations = number("createdDestinations")
        }
        self.counts = counts
        if case .dictionary(let source)? = dictionary["source"], case .string(let path)? = source["path"],
           case .integer(let size)? = source["size"], case .real(let modified)? = source["modified"], case .string(let head)? = source["head"] {
            self.source = SourceIdentity(path: path, size: size, modified: modified, head: head)
        } else {
            self.source = nil
        }
    }
}
