import Foundation
import Lade

/// `lade convert`: copies the store file at `source` (its type detected from the file, opened
/// read-only and never changed) into a new store of another type or at another place, holding
/// the destination's lock meanwhile (`PersistentStoreCoordinator.migrateStore(at:ofType:to:type:model:options:)`
/// does the copy: built beside the destination, moved into place only when complete).
///
/// ```swift
/// let report = try ConvertRunner(source: sqliteURL, destination: xmlURL, type: .xml, model: model).run()
/// print(report.text(), terminator: "")    // converted … : 120 objects, 30 to-many links, in 0.05 s
/// ```
public struct ConvertRunner: Sendable {
    public struct Options: Sendable {
        /// Replace a store already at the destination (by default it is refused).
        public var overwrite = false
        /// Objects read (and, into SQLite, written) at a time.
        public var batchSize = 5_000
        /// A progress line every N seconds; nil: a bar on a terminal, nothing otherwise
        /// (`ProgressReporter.mode(interval:)`).
        public var progressInterval: TimeInterval?
        /// Where progress goes; nil: nowhere.
        public var progressOutput: ProgressReporter.Output?

        public init(overwrite: Bool = false, batchSize: Int = 5_000, progressInterval: TimeInterval? = nil,
                    progressOutput: ProgressReporter.Output? = nil) {
            self.overwrite = overwrite
            self.batchSize = batchSize
            self.progressInterval = progressInterval
            self.progressOutput = progressOutput
        }
    }

    public let source: URL
    public let destination: URL
    public let type: PersistentStoreCoordinator.StoreType
    public let model: ManagedObjectModel
    public let options: Options
    /// The paths as the user gave them, for the report and notes.
    public let displaySource: String
    public let displayDestination: String
    /// Told what the run did besides the copy (temporary files it removed).
    public var onNote: (@Sendable (String) -> Void)?

    public init(source: URL, destination: URL, type: PersistentStoreCoordinator.StoreType, model: ManagedObjectModel,
                options: Options = Options(), displaySource: String? = nil, displayDestination: String? = nil) {
        self.source = source
        self.destination = destination
        self.type = type
        self.model = model
        self.options = options
        self.displaySource = displaySource ?? StoreLocation.displayName(of: source)
        self.displayDestination = displayDestination ?? StoreLocation.displayName(of: destination)
    }

    /// Takes the destination's lock (when its directory exists: no lade run may write there
    /// while it is replaced) and removes what an interrupted run left beside it, then copies.
    /// A PostgreSQL destination has no files beside it: it is written in one transaction.
    /// Throws `StoreLock.Busy` when another run holds the destination, and whatever the copy
    /// refuses (`store.alreadyExists` without `overwrite`, …).
    public func run() throws -> ConvertReport {
        let isFile = !StoreLocation(url: destination).isServer
        let lockable = !isFile || FileManager.default.fileExists(atPath: destination.deletingLastPathComponent().path)
        let lock = try lockable ? StoreLock(store: destination) : nil
        defer { lock?.release() }
        if lock != nil && isFile {
            let removed = PersistentStoreCoordinator.removeInterruptedWrites(beside: destination)
            if !removed.isEmpty { onNote?("removed \(removed.count) temporary file(s) an interrupted run left beside \(displayDestination)") }
        }
        let sourceType = try StoreLocation(url: source).serverType ?? PersistentStoreCoordinator.StoreType(detectingFileAt: source)
        let started = Date()
        let reporter = ProgressReporter(mode: ProgressReporter.mode(interval: options.progressInterval), label: "convert", unit: "objects",
                                        output: options.progressOutput)
        let summary = try PersistentStoreCoordinator.migrateStore(
            at: source, ofType: sourceType, to: destination, type: type, model: model,
            options: StoreMigrationOptions(overwrite: options.overwrite, batchSize: options.batchSize) { copied in
                reporter.update(rows: Int64(copied.objectCount), bytes: 0, totalBytes: nil)
            })
        reporter.finish()
        return ConvertReport(source: displaySource, sourceType: sourceType, destination: displayDestination, destinationType: type,
                             summary: summary, seconds: Date().timeIntervalSince(started))
    }
}

/// What a `lade convert` copied: objects in all and per entity, to-many links, and the time.
public struct ConvertReport: Sendable, Equatable {
    public let source: String
    public let sourceType: PersistentStoreCoordinator.StoreType
    public let destination: String
    public let destinationType: PersistentStoreCoordinator.StoreType
    public let summary: StoreMigrationSummary
    public let seconds: Double

    /// One line for the copy, then one per entity that has objects, by name.
    public func text() -> String {
        var out = ["converted \(source) (\(sourceType.rawValue)) to \(destination) (\(destinationType.rawValue)): \(summary.objectCount) objects, \(summary.relationshipLinks) to-many links, in \(String(format: "%.2f", seconds)) s"]
        for name in summary.objects.keys.sorted() where summary.objects[name]! > 0 {
            out.append("  \(name): \(summary.objects[name]!)")
        }
        return out.joined(separator: "\n") + "\n"
    }
}
