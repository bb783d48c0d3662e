import Foundation
import Testing
@testable import Lade

/// `migratePersistentStore(_:to:options:type:)` and `migrateStore(at:…)`: every object,
/// value and relationship arrives, in batches, between every pair of store types; the source
/// is never written; the destination appears whole or not at all.
@Suite("Store migration")
struct StoreMigrationTests {
    typealias StoreType = PersistentStoreCoordinator.StoreType

    static let types: [StoreType] = [.sqlite, .xml, .binary, .inMemory]
    static let pairs: [(StoreType, StoreType)] = types.flatMap { source in types.map { (source, $0) } }

    static func fileName(_ type: StoreType, _ stem: String) -> String {
        switch type {
        case .sqlite: "\(stem).sqlite"
        case .xml: "\(stem).xml"
        case .binary: "\(stem).binary"
        case .inMemory, .postgresql: stem
        }
    }


    @Test("every object, value and relationship arrives, for every pair of store types; the old store leaves the coordinator, the new one keeps its UUID", .slow,
          arguments: pairs)
    func everyPair(source sourceType: StoreType, destination destinationType: StoreType) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try EveryType.model()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let sourceURL = sourceType == .inMemory ? nil : directory.appendingPathComponent(Self.fileName(sourceType, "source"))
        let source = try coordinator.addPersistentStore(type: sourceType, at: sourceURL)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try EveryType.populate(context, items: 40)
        let before = try EveryType.snapshot(coordinator)
        let sourceDigest = try sourceURL.map(storeFileDigests)
        let metadata = coordinator.metadata(for: source)

        let destinationURL = destinationType == .inMemory ? nil : directory.appendingPathComponent(Self.fileName(destinationType, "destination"))
        // Small batches, so the copy takes many.
        let migrated = try coordinator.migratePersistentStore(source, to: destinationURL, options: .init(batchSize: 7), type: destinationType)

        #expect(migrated.type == (destinationType == .inMemory ? "InMemory" : destinationType.rawValue))
        #expect(migrated.identifier == source.identifier)
        #expect(coordinator.persistentStores.count == 1 && coordinator.persistentStores.first === migrated)
        #expect(migrated.metadata[StoreMetadata.Key.storeType]?.stringValue == migrated.type)
        for (key, value) in metadata where key != StoreMetadata.Key.storeType && key != StoreMetadata.Key.autoVacuumLevel {
            #expect(migrated.metadata[key] == value, "metadata \(key)")
        }
        let after = try EveryType.snapshot(coordinator)
        #expect(after == before, "\(after.differences(from: before).prefix(3).joined(separator: "\n"))")
        if let sourceURL { #expect(try storeFileDigests(sourceURL) == sourceDigest, "the source file was written") }

        // The file alone holds the store: a new stack reads the same objects, and new objects
        // get keys that collide with none of the copied ones.
        if let destinationURL {
            let walSize = FileManager.default.fileExists(atPath: destinationURL.path + "-wal")
                ? try FileManager.default.attributesOfItem(atPath: destinationURL.path + "-wal")[.size] as? Int : 0
            #expect(walSize == 0)
            let reopened = PersistentStoreCoordinator(managedObjectModel: model)
            try reopened.addPersistentStore(type: destinationType, at: destinationURL)
            #expect(try EveryType.snapshot(reopened) == before)
            let more = ManagedObjectContext(concurrencyType: .privateQueue)
            more.persistentStoreCoordinator = reopened
            try more.performAndWait {
                for index in 0..<3 {
                    for entity in ["Owner", "Item", "Passport"] {
                        let object = try more.insertObject(forEntityName: entity)
                        try object.setValue("new \(entity) \(index)", forKey: "name")
                    }
                }
                try more.save()
            }
            #expect(try EveryType.snapshot(reopened).objects.count == before.objects.count + 9)
        }
        // Files left beside the destination: none but the store (and SQLite's own -wal/-shm).
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".lade-") }
        #expect(leftovers.isEmpty, "temporary files left: \(leftovers)")
    }

    @Test("a store file converted SQLite → XML → binary → SQLite without a stack ends equal to the original, batch by batch")
    func roundTripWithoutStack() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try EveryType.model()
        let original = directory.appendingPathComponent("original.sqlite")
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .sqlite, at: original)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try EveryType.populate(context, seed: 7, items: 60)
        }
        let steps: [(String, StoreType)] = [("a.xml", .xml), ("b.binary", .binary), ("c.sqlite", .sqlite)]
        var previous = original
        for (name, type) in steps {
            let next = directory.appendingPathComponent(name)
            let summary = try PersistentStoreCoordinator.migrateStore(at: previous, to: next, type: type, model: model, options: .init(batchSize: 5))
            #expect(summary.objectCount > 60)
            previous = next
        }
        let first = try StoreDump(url: original, model: model)
        let last = try StoreDump(url: previous, model: model)
        #expect(first == last)
    }

    @Test("an existing destination is refused and left as it was; with overwrite it is replaced whole, its stale -wal with it")
    func existingDestination() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try EveryType.model()
        let source = directory.appendingPathComponent("source.sqlite")
        let destination = directory.appendingPathComponent("destination.sqlite")
        for (url, seed, items) in [(source, UInt64(1), 10), (destination, UInt64(2), 30)] {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try EveryType.populate(context, seed: seed, items: items)
        }
        // The destination's last save is still only in its -wal while its coordinator lives.
        let holder = PersistentStoreCoordinator(managedObjectModel: model)
        try holder.addPersistentStore(type: .sqlite, at: destination)
        let holderContext = ManagedObjectContext(concurrencyType: .privateQueue)
        holderContext.persistentStoreCoordinator = holder
        try holderContext.performAndWait {
            let owner = try holderContext.insertObject(forEntityName: "Owner")
            try owner.setValue("only in the wal", forKey: "name")
            try holderContext.save()
        }
        let destinationDigest = try storeFileDigests(destination)
        #expect(destinationDigest[1] != "absent")

        #expect {
            try PersistentStoreCoordinator.migrateStore(at: source, to: destination, type: .sqlite, model: model)
        } throws: { error in
            (error as? StoreError)?.kind == .alreadyExists && "\(error)".contains("overwrite")
        }
        #expect(try storeFileDigests(destination) == destinationDigest)

        let expected = try StoreDump(url: source, model: model)
        try PersistentStoreCoordinator.migrateStore(at: source, to: destination, type: .sqlite, model: model, options: .init(overwrite: true))
        #expect(try StoreDump(url: destination, model: model) == expected)
        // And over a SQLite file with an XML store.
        try PersistentStoreCoordinator.migrateStore(at: source, to: destination, type: .xml, model: model, options: .init(overwrite: true))
        #expect(try PersistentStoreCoordinator.StoreType(detectingFileAt: destination) == .xml)
        #expect(!FileManager.default.fileExists(atPath: destination.path + "-wal"))
        #expect(try StoreDump(url: destination, model: model) == expected)
    }

    @Test("a store file replaced with overwrite keeps its permissions, whatever type the new store has", arguments: [StoreType.sqlite, .xml, .binary])
    func overwriteKeepsPermissions(type: StoreType) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try EveryType.model()
        let source = directory.appendingPathComponent("source.sqlite")
        let destination = directory.appendingPathComponent(Self.fileName(type, "destination"))
        for url in [source, destination] {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: url == source ? .sqlite : type, at: url)
        }
        #expect(chmod(destination.path, 0o600) == 0)
        try PersistentStoreCoordinator.migrateStore(at: source, to: destination, type: type, model: model, options: .init(overwrite: true))
        let mode = try #require(FileManager.default.attributesOfItem(atPath: destination.path)[.posixPermissions] as? Int)
        #expect(String(mode, radix: 8) == "600")
    }

    @Test("a missing source, the source as its own destination, a missing directory and an in-memory target are refused with a reason")
    func refusals() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try EveryType.model()
        let source = directory.appendingPathComponent("source.xml")
        try XMLStore.create(at: source, model: model)
        let cases: [(URL, URL, StoreType, String)] = [
            (directory.appendingPathComponent("missing.sqlite"), directory.appendingPathComponent("out.xml"), .xml, "no store here"),
            (source, source, .xml, "the source itself"),
            (source, directory.appendingPathComponent("../\(directory.lastPathComponent)/source.xml"), .sqlite, "the source itself"),
            (source, directory.appendingPathComponent("no/such/dir/out.sqlite"), .sqlite, "does not exist"),
            (source, directory.appendingPathComponent("out"), .inMemory, "no file"),
        ]
        for (from, to, type, message) in cases {
            #expect(performing: {
                try PersistentStoreCoordinator.migrateStore(at: from, to: to, type: type, model: model, options: .init(overwrite: true))
            }, throws: { error in
                "\(error)".contains(message)
            })
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(left == ["source.xml"])
    }

    // MARK: The corpus

    @Test("each corpus SQLite store, copied to a temporary folder, goes SQLite → XML → binary → SQLite and ends equal; the copy it started from is untouched",
          .needsCorpus, arguments: CorpusSchemaTests.pairs)
    func corpusRoundTrip(_ pair: CorpusSchemaTests.Pair) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(contentsOf: Corpus.file(pair.model), version: pair.version)
        let original = directory.appendingPathComponent("original.sqlite")
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: Corpus.file(pair.store).path + suffix) {
            try copyWritable(atPath: Corpus.file(pair.store).path + suffix, toPath: original.path + suffix)
        }
        let originalDigest = try storeFileDigests(original)
        var previous = original
        for (name, type) in [("a.xml", StoreType.xml), ("b.binary", .binary), ("c.sqlite", .sqlite)] {
            let next = directory.appendingPathComponent(name)
            try PersistentStoreCoordinator.migrateStore(at: previous, to: next, type: type, model: model, options: .init(batchSize: 3))
            previous = next
        }
        #expect(try storeFileDigests(original) == originalDigest)
        let before = try StoreDump(url: original, model: model)
        let after = try StoreDump(url: previous, model: model)
        #expect(after == before)
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: original)
        let final = try PersistentStoreCoordinator.metadataForPersistentStore(at: previous)
        #expect(final == metadata)
    }

    @Test("what killed runs left beside a store is removed: their temporary stores, companions, and the temporary a new temporary store was made from; nothing else")
    func interruptedWritesRemoved() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let left = [".things.sqlite.lade-convert-A", ".things.sqlite.lade-convert-A-wal", ".things.sqlite.lade-convert-A-shm",
                    "..things.sqlite.lade-convert-B.lade-C", "..things.sqlite.lade-convert-B.lade-C-journal"]
        let kept = ["things.sqlite", "things.sqlite-wal", ".other.sqlite.lade-convert-D", "things.sqlite.lade-lock", ".things.sqlite.bak"]
        for name in left + kept { try Data().write(to: directory.appendingPathComponent(name)) }
        let removed = PersistentStoreCoordinator.removeInterruptedWrites(beside: directory.appendingPathComponent("things.sqlite"))
        #expect(removed.sorted() == left.sorted())
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == kept.sorted())
    }
}

/// Every object of a store file, read store-side, with object IDs replaced by their entity and
/// rank (the object's place in its entity's primary key order): equal for two stores that hold
/// the same objects, whatever keys each gave them.
struct StoreDump: Equatable, CustomStringConvertible {
    var lines: [String] = []
    var objectCount = 0

    init(url: URL, model: ManagedObjectModel) throws {
        let store = try PersistentStoreCoordinator.openStore(type: nil, at: url, model: model, readOnly: true)
        var ranks: [String: Int] = [:]
        for entity in model.entities {
            var rank = 0
            try store.forEachBatch(ofEntity: entity.name, batchSize: 1000) { rows in
                for row in rows {
                    ranks[Self.local(row.objectID)] = rank
                    rank += 1
                }
            }
        }
        func name(_ id: ManagedObjectID) -> String { "\(id.entityName)#\(ranks[Self.local(id)].map(String.init) ?? "missing \(id)")" }
        for entity in model.entities {
            try store.forEachBatch(ofEntity: entity.name, batchSize: 1000) { rows in
                for row in rows {
                    var parts = [name(row.objectID)]
                    for (key, value) in row.attributes.sorted(by: { $0.key < $1.key }) { parts.append("\(key)=\(value)") }
                    for relationship in model.relationships(of: entity.name) where !relationship.isTransient {
                        var destinations: [String]
                        if relationship.isToMany {
                            destinations = try store.relatedObjectIDs(of: row.objectID, relationship: relationship.name).map(name)
                            if !relationship.isOrdered { destinations.sort() }
                        } else {
                            destinations = row.toOne[relationship.name].map { [name($0)] } ?? []
                        }
                        if !destinations.isEmpty { parts.append("\(relationship.name)->\(destinations.joined(separator: ","))") }
                    }
                    lines.append(parts.joined(separator: " "))
                    objectCount += 1
                }
            }
        }
    }

    private static func local(_ id: ManagedObjectID) -> String {
        "\(id.entityName)/\(id.primaryKey ?? -1)"
    }

    var description: String { lines.prefix(20).joined(separator: "\n") }

}
