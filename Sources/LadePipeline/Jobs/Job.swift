import Foundation
import Lade

/// A job file, read and checked for shape (`jobs/README.md` documents every field).
///
/// ```swift
/// let job = try Job(contentsOf: URL(fileURLWithPath: "jobs/products.yaml"))
/// job.steps[0].entity      // "Product"
/// ```
/// Paths in a job are relative to the job file's folder.
public struct Job: Sendable {
    public enum Kind: String, Sendable {
        /// `lade run`: one source into one entity, resumable.
        case `import`
        /// `lade seed`: steps loaded once per store, guarded by a metadata flag.
        case seed
    }

    public var kind: Kind
    /// The job file (display path as given).
    public var file: String
    public var model: ModelReference
    public var store: StoreReference
    /// One step for an import; the seed's steps in order.
    public var steps: [ImportStep]
    public var batch: BatchSettings
    public var onError: ErrorPolicy
    /// For seeds: the metadata key that marks a store as seeded.
    public var flag: String?
    /// For imports: how many finished checkpoints of other sources the store keeps.
    public var checkpoints: CheckpointRetention = .default
    /// For imports: how rows reach the store (`writer:`).
    public var writer: ImportWriterChoice = .auto
    /// What a store of an older model version gets (`migrate:`).
    public var migrate: JobMigration = .never
    /// Recorded as the author of each commit in a store that keeps persistent history
    /// (`transactionAuthor:`; the context's `transactionAuthor`).
    public var transactionAuthor: String?
}

/// What a job does with a store written by another version of its model (`migrate:`).
public enum JobMigration: String, Sendable, CaseIterable {
    /// Stop, naming `lade migrate`.
    case never
    /// Carry the store to the job's model version first, by lightweight migration, as Core
    /// Data does with `shouldMigrateStoreAutomatically` (the model must be a `.xcdatamodeld`).
    case automatic
}

/// How an import writes its rows (the job's `writer:`).
public enum ImportWriterChoice: String, Sendable, CaseIterable {
    /// Batch inserts when the job needs nothing only managed objects can do, else objects.
    case auto
    /// Batch inserts straight into the SQLite store (`BatchInsertSession`); a job that needs
    /// objects is refused, saying why.
    case batch
    /// Managed objects in a private-queue context, each batch saved into a transaction held
    /// open on a SQLite store and committed as the batch writer commits (an XML or binary
    /// store: one save at the end).
    case objects
}

extension Job {
    /// Every file the job reads, for ``OutputFile/check(_:role:reads:)``: the job file, the model
    /// (its whole bundle) and compiled model, each step's source, and the store with its companions.
    package var reads: [OutputFile.Read] {
        var reads = [OutputFile.Read(URL(fileURLWithPath: file), "the job file")]
        if !model.isCarriedByStore { reads.append(OutputFile.Read(model.url, "the model")) }
        if let compiled = model.compiledModel { reads.append(OutputFile.Read(compiled, "the compiled model")) }
        for step in steps {
            if let url = step.source.url { reads.append(OutputFile.Read(url, "the source")) }
        }
        return reads + OutputFile.storeFiles(store.url)
    }

    /// Refuses a store path that is one of the job's other files (its source, model or job).
    package func checkStorePath() throws {
        guard !store.location.isServer else { return }
        let others = reads.filter { !$0.what.hasPrefix("the store") }
        if try OutputFile.check(store.url, role: "the job's store", reads: others) == .stream {
            throw StoreError(.io, path: store.url.path, "the job's store is a device, pipe or socket; a store is a regular file")
        }
    }
}

/// How long the checkpoints of finished imports stay in a store's metadata. Each source path
/// has its own checkpoint key, so a feed with a dated file name would add a key every night;
/// finished checkpoints beyond `keep` per entity (the newest kept), or older than `maxAge`, are
/// dropped when a run commits. Unfinished checkpoints are kept: a later run resumes from them.
public struct CheckpointRetention: Sendable, Equatable {
    /// Finished checkpoints kept per entity, the newest first; the running source's always stays.
    public var keep: Int
    /// Finished checkpoints older than this are dropped; nil: no age limit.
    public var maxAge: TimeInterval?

    public init(keep: Int, maxAge: TimeInterval? = nil) {
        self.keep = keep
        self.maxAge = maxAge
    }

    public static let `default` = CheckpointRetention(keep: 30)
}

/// Where the model comes from: a `.xcdatamodeld`, `.xcdatamodel`, contents XML or JSON model.
public struct ModelReference: Sendable, Equatable {
    /// The model's file or bundle; for a model the store carries, the store's file.
    public var url: URL
    public var version: String?
    /// A compiled `.momd` whose `VersionInfo.plist` gives Apple's entity hashes.
    public var compiledModel: URL?
    /// Whether the model is the one the store at `url` carries (a job that names no model).
    public var isCarriedByStore: Bool

    public init(url: URL, version: String? = nil, compiledModel: URL? = nil) {
        self.url = url
        self.version = version
        self.compiledModel = compiledModel
        isCarriedByStore = false
    }

    /// The model the store at `store` carries in its `Z_MODELCACHE`.
    public static func carried(byStoreAt store: URL) -> ModelReference {
        var reference = ModelReference(url: store)
        reference.isCarriedByStore = true
        return reference
    }

    public func load() throws -> ManagedObjectModel {
        if isCarriedByStore { return try ManagedObjectModel(carriedByStoreAt: url) }
        return try ManagedObjectModel(contentsOf: url, version: version, compiledModel: compiledModel)
    }

    /// What the model is, for messages: its path, or the store's model cache.
    public var displayName: String {
        isCarriedByStore ? "the model \(StoreLocation(url: url).isServer ? "the store" : url.lastPathComponent) carries (Z_MODELCACHE)" : url.path
    }
}

/// The store a job writes.
public struct StoreReference: Sendable, Equatable {
    /// A store file's type, named as users name it (`PersistentStoreCoordinator.StoreType`).
    public typealias Kind = PersistentStoreCoordinator.StoreType

    public var kind: Kind
    public var url: URL
    /// A store the job creates gets Core Data's persistent history tables (`history: true`);
    /// a store that has them records history whatever this says.
    public var history = false

    public init(kind: Kind, url: URL, history: Bool = false) {
        self.kind = kind
        self.url = url
        self.history = history
    }

    /// Where the store is, for existence checks and messages.
    public var location: StoreLocation { StoreLocation(url: url) }

    /// How messages and reports show the store: its path, or its URL with any password as `***`.
    public var displayName: String { location.displayName }
}

/// One source loaded into one entity: the whole of an import job, one step of a seed.
public struct ImportStep: Sendable {
    public var source: SourceSettings
    public var entity: String
    /// Attributes that identify an object (find-or-create); empty: insert only.
    public var key: [String]
    public var mode: ImportMode
    /// Fields listed in the job, in file order.
    package var fields: [FieldSettings]
    /// Whether attributes not listed take a same-named column (camelCase ~ snake_case).
    package var autoMatch: Bool
    package var relationships: [RelationshipSettings]
    /// Where this step sits in the job file, for messages.
    public var location: String
}

public enum ImportMode: String, Sendable, CaseIterable {
    /// Find by key and update, or create (the default when a key is given).
    case upsert
    /// Create objects; with a key, rows whose object exists already are left alone.
    case insert
    /// Update objects found by key; a row whose object does not exist is rejected.
    case update
}

/// Where records come from and how to read them.
public struct SourceSettings: Sendable {
    /// A file, or nil for standard input (`path: "-"`).
    public var url: URL?
    /// As written in the job, for messages.
    public var displayPath: String
    package var format: SourceFormat
    package var gzip: Bool
    /// Strings read as null (default: the empty string).
    package var nulls: [String]
}

/// How one attribute gets its value.
package struct FieldSettings: Sendable {
    package enum Origin: Sendable, Equatable {
        /// A column (CSV) or key path (JSON).
        case field(FieldPath)
        /// The same text for every row, parsed for the attribute's type.
        case constant(String)
    }

    /// How an empty string is taken, overriding the source's `nulls` for this field.
    package enum EmptyRule: String, Sendable {
        case null, `default`, keep
    }

    package var attribute: String
    package var origin: Origin
    package var dateFormat: DateFormat?
    package var timeZone: TimeZone
    package var empty: EmptyRule?
    /// Whether the field was listed in the job (false: matched by name).
    package var listed: Bool
    /// Where it is in the job file, for messages.
    package var location: String
}

/// How dates are written in a source.
package enum DateFormat: Sendable, Equatable {
    /// `2024-03-01`, `2024-03-01T12:30:00Z`, with or without fraction and offset.
    case iso8601
    /// Seconds since 1970-01-01 UTC (fractions allowed).
    case unixSeconds
    /// Milliseconds since 1970-01-01 UTC.
    case unixMilliseconds
    /// A Unicode date pattern such as `dd.MM.yyyy HH:mm`, read in the field's time zone.
    case pattern(String)
}

/// How a relationship is wired from a row.
package struct RelationshipSettings: Sendable {
    package var relationship: String
    /// The column or key path holding the destination's key (or a list of keys, to-many).
    package var from: FieldPath
    /// The destination attribute the key is matched against.
    package var match: String
    /// Create the destination (with just its `match` attribute) when none has the key.
    package var create: Bool
    /// Reject the row when the destination is missing (otherwise the relationship stays
    /// empty and the row counts as unresolved).
    package var required: Bool
    /// For to-many from a text column: what separates the keys.
    package var separator: String
    package var location: String
}

/// Batches: the unit of work, how often the store commits, and how often the context resets.
public struct BatchSettings: Sendable, Equatable {
    public var size: Int
    /// Batches between store commits, when the job gives it: both writers then commit after
    /// this many batches or `commitSeconds`, whichever comes first; nil, by time alone. Each
    /// commit also carries the checkpoint.
    public var commitEvery: Int?
    /// Batches between resets of the object writer's context (each batch is saved into the
    /// open transaction first; a SQLite store's only), and of the batch writer's destination cache.
    public var resetEvery: Int
    /// Seconds between commits (at a batch's end), when the job gives it: a kill loses at most
    /// this much work, and fewer commits rewrite the key's index less often; otherwise the
    /// store's default (`commitSeconds(for:)`).
    public var commitSeconds: Double?
    /// SQLite's page cache for the store while the job runs, in MiB, when the job gives it;
    /// otherwise the writer's default (`cacheMiB(for:)`).
    public var cacheMiB: Int?

    public static let defaultCommitSeconds: Double = 2
    /// A PostgreSQL store's: each commit there also ends the batch writer's temporary tables
    /// and forgets its looked-up destinations, so the next batch makes and looks them up again
    /// (1,000,000 rows in `make bench`: first import 17.7 s with 2 s, 16.1 s with 10 s, medians
    /// of 7 alternating runs on a loaded 2-core machine).
    package static let postgreSQLCommitSeconds: Double = 10

    /// The seconds between commits of a run into `store`: the job's, else the store's default.
    package func commitSeconds(for store: StoreReference.Kind) -> Double {
        commitSeconds ?? (store == .postgresql ? Self.postgreSQLCommitSeconds : Self.defaultCommitSeconds)
    }
    package static let largestCacheMiB = 16384

    /// The page cache a job gets unless it says: 16 MiB with batch inserts, 12 MiB with
    /// managed objects, whose context holds a batch of objects besides (each peaks at or under
    /// 61 MiB on `make bench`'s 1,000,000 rows with the release build, which `make install`
    /// links statically; SQLite's own default is 2 MiB). With a random unique key every row
    /// touches index pages all over the file: the larger the cache, the fewer of them are read
    /// back and written out again (see `jobs/README.md`).
    package static func defaultCacheMiB(writer: ImportWriterChoice) -> Int {
        writer == .objects ? 12 : 16
    }

    /// The page cache a run with `writer` gets: the job's `cacheMiB`, else the writer's default.
    package func cacheMiB(for writer: ImportWriterChoice) -> Int {
        cacheMiB ?? Self.defaultCacheMiB(writer: writer)
    }

    public static let `default` = BatchSettings(size: 5000, resetEvery: 1)

    public init(size: Int, commitEvery: Int? = nil, resetEvery: Int) {
        self.size = size
        self.commitEvery = commitEvery
        self.resetEvery = resetEvery
    }
}

/// What happens to a row that cannot be imported.
public struct ErrorPolicy: Sendable, Equatable {
    public enum Policy: String, Sendable {
        /// Stop at the first bad row, keeping every batch committed before it.
        case abort
        /// Write bad rows to the rejects file and go on, up to `maxErrors`.
        case skip
    }

    public var policy: Policy
    public var maxErrors: Int
    /// The rejects file (NDJSON), for `skip`.
    public var rejects: URL?

    public static let abort = ErrorPolicy(policy: .abort, maxErrors: 0, rejects: nil)
}

extension TimeZone {
    /// UTC, the default for fields without `timeZone`, as a fixed offset: `TimeZone(identifier:
    /// "UTC")` loads ICU's zone data, which stays resident (6 MiB of a 64 MiB import).
    static let utc = TimeZone(secondsFromGMT: 0)!
}
