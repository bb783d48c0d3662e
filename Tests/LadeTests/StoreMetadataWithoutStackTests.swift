import Crypto
import Foundation
import Testing
@testable import Lade

@Suite("Store metadata without a stack")
struct StoreMetadataWithoutStackTests {
    static let fileTypes: [StoreType] = [.sqlite, .xml, .binary]

    /// A populated store of `type`, closed (its coordinator gone), and the metadata it had.
    static func closedStore(_ type: StoreType, items: Int = 6) throws -> (AtomicTestStack, [String: PropertyListValue], EveryType.Snapshot) {
        let stack = try AtomicTestStack(type)
        try EveryType.populate(stack.context(), items: items)
        let metadata = try #require(stack.coordinator.persistentStores.first).metadata
        return (stack, metadata, try EveryType.snapshot(stack.coordinator))
    }

    /// SHA-256 of the store file and of its -wal, if any.
    static func fileDigest(_ url: URL) throws -> [String] {
        try ["", "-wal"].map { try sha256(ofFile: url.path + $0) }
    }

    @Test("reads a store's metadata, NSStoreType and NSStoreUUID included, with the type detected or given", arguments: fileTypes)
    func reads(type: StoreType) throws {
        let (stack, expected, _) = try Self.closedStore(type)
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: stack.url) == expected)
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(ofType: type, at: stack.url) == expected)
        #expect(expected["NSStoreType"] == .string(type.rawValue))
        #expect(expected["NSStoreUUID"]?.stringValue?.count == 36)
        let other: StoreType = type == .xml ? .binary : .xml
        let error = #expect(throws: StoreError.self) { try PersistentStoreCoordinator.metadataForPersistentStore(ofType: other, at: stack.url) }
        #expect(error?.kind == .wrongStoreType)
        #expect(error?.message == "this is a \(type.rawValue) store, not \(other.rawValue); give the type \(type.rawValue) or none (it is detected)")
    }

    @Test("sets and deletes user keys; a stack opened afterwards sees them, and every object is as it was", arguments: fileTypes)
    func setsAndDeletes(type: StoreType) throws {
        let (stack, original, objects) = try Self.closedStore(type)
        var metadata = original
        metadata["seeded"] = .bool(true)
        metadata["import"] = .dictionary(["rows": .integer(1_000_000), "source": .string("products.csv ✓"), "digest": .data(Data([1, 2, 3]))])
        metadata["ratio"] = .real(0.25)
        metadata["steps"] = .array([.string("a"), .integer(2)])
        try PersistentStoreCoordinator.setMetadata(metadata, forPersistentStoreOfType: type, at: stack.url)
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: stack.url) == metadata)
        metadata["seeded"] = nil
        metadata["ratio"] = nil
        try PersistentStoreCoordinator.setMetadata(metadata, at: stack.url)
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: stack.url) == metadata)
        let reopened = try stack.reopened()
        #expect(try #require(reopened.persistentStores.first).metadata == metadata)
        #expect(try EveryType.snapshot(reopened) == objects)
    }

    @Test("refuses to change or remove NSStoreType or NSStoreUUID, and leaves the file untouched", arguments: fileTypes)
    func reservedKeys(type: StoreType) throws {
        let (stack, original, _) = try Self.closedStore(type)
        let before = try Self.fileDigest(stack.url)
        let changes: [(String, PropertyListValue?, String)] = [
            ("NSStoreType", .string("Binary2"), "NSStoreType belongs to the stack and cannot be changed (it is '\(type.rawValue)')"),
            ("NSStoreType", nil, "NSStoreType belongs to the stack and cannot be removed"),
            ("NSStoreUUID", .string(UUID().uuidString), "NSStoreUUID belongs to the stack and cannot be changed"),
            ("NSStoreUUID", nil, "NSStoreUUID belongs to the stack and cannot be removed"),
        ]
        for (key, value, message) in changes {
            var metadata = original
            metadata[key] = value
            metadata["user"] = .string("kept out too")
            let error = #expect(throws: StoreError.self) { try PersistentStoreCoordinator.setMetadata(metadata, at: stack.url) }
            #expect(error?.kind == .reservedMetadataKey)
            #expect(error?.message.hasPrefix(message) == true, "\(error?.message ?? "")")
        }
        #expect(try Self.fileDigest(stack.url) == before)
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: stack.url) == original)
    }

    /// SHA-256 of every table's rows (and of the schema), read with a fresh connection.
    static func tableDigests(_ url: URL) throws -> [String: String] {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        var digests: [String: String] = [:]
        for table in try connection.tableNames().sorted() + ["sqlite_master"] {
            // Each row's digest, sorted, so the order rows come back in does not matter.
            let rows = try connection.rows("SELECT * FROM \(table)").map { row -> Data in
                var hasher = SHA256()
                for value in row {
                    switch value {
                    case .null: hasher.update(data: Data([0]))
                    case .integer(let number): hasher.update(data: Data([1]) + withUnsafeBytes(of: number) { Data($0) })
                    case .real(let number): hasher.update(data: Data([2]) + withUnsafeBytes(of: number.bitPattern) { Data($0) })
                    case .text(let text): hasher.update(data: Data([3]) + Data(text.utf8) + Data([0]))
                    case .blob(let bytes): hasher.update(data: Data([4]) + withUnsafeBytes(of: bytes.count) { Data($0) } + bytes)
                    }
                }
                return Data(hasher.finalize())
            }
            var hasher = SHA256()
            for row in rows.sorted(by: { $0.lexicographicallyPrecedes($1) }) { hasher.update(data: row) }
            digests[table] = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        }
        return digests
    }

    /// Sets metadata on the SQLite store at `url` without a stack and checks that only the
    /// Z_METADATA row's plist changed; `name` says which store in a failure.
    static func setMetadataTouchesOnlyZMetadata(_ name: String, at url: URL) throws {
        let before = try tableDigests(url)
        let uuidBefore = try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT Z_UUID FROM Z_METADATA")
        var metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
        metadata["lade.test"] = .string("set without a stack")
        try PersistentStoreCoordinator.setMetadata(metadata, at: url)
        let after = try tableDigests(url)
        #expect(Set(after.keys) == Set(before.keys))
        let changed = after.keys.filter { after[$0] != before[$0] }.sorted()
        #expect(changed == ["Z_METADATA"], "\(name): \(changed)")
        let row = try #require(try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT Z_UUID, Z_PLIST FROM Z_METADATA").first)
        #expect([row[0]] == uuidBefore.first)
        guard case .blob(let plist) = row[1] else { Issue.record("Z_PLIST is not a blob"); return }
        let stored = try #require(try PropertyListValue.decode(plist).dictionaryValue)
        #expect(stored["NSStoreUUID"] == nil && stored["lade.test"] == .string("set without a stack"))
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: url) == metadata)
    }

    @Test("on SQLite, setting metadata changes the Z_METADATA row's plist and no other table; Z_UUID stays")
    func sqliteTouchesOnlyZMetadata() throws {
        let (stack, _, _) = try Self.closedStore(.sqlite, items: 24)
        try Self.setMetadataTouchesOnlyZMetadata("generated", at: stack.url)
    }

    @Test("on the SQLite stores Apple wrote, setting metadata changes the Z_METADATA row's plist and no other table; Z_UUID stays",
          .needsCorpus)
    func sqliteTouchesOnlyZMetadataOfAppleStores() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        for relative in CorpusStoreTests.allStores {
            let directory = temp.appendingPathComponent(UUID().uuidString)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Self.setMetadataTouchesOnlyZMetadata(relative, at: try copyCorpusStore(relative, to: directory))
        }
        print("metadata set on \(CorpusStoreTests.allStores.count) SQLite stores Apple wrote; only Z_METADATA changed in each")
    }

    @Test("on XML, setting metadata rewrites only <databaseInfo>: the objects stream through unchanged")
    func xmlKeepsObjects() throws {
        let (stack, original, _) = try Self.closedStore(.xml, items: 12)
        func body(_ url: URL) throws -> Substring {
            let text = try String(contentsOf: url, encoding: .utf8)
            return text[try #require(text.range(of: "</databaseInfo>")).upperBound...]
        }
        let before = try body(stack.url)
        var metadata = original
        metadata["note"] = .string("<&> ✓")
        try PersistentStoreCoordinator.setMetadata(metadata, at: stack.url)
        #expect(try body(stack.url) == before)
        #expect(try String(contentsOf: stack.url, encoding: .utf8).contains("<string>&lt;&amp;&gt; ✓</string>"))
    }

    @Test("on an XML store Apple wrote, setting metadata keeps every object, the UUID and the next object ID", .needsCorpus)
    func xmlKeepsAppleObjects() throws {
        let file = try #require(XMLStoreCorpusTests.files.first)
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("apple.xml")
        try copyWritable(at: Corpus.file(file), to: url)
        let raw = try RawXMLStore(url)
        var appleMetadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
        appleMetadata["note"] = .string("added")
        try PersistentStoreCoordinator.setMetadata(appleMetadata, at: url)
        let again = try RawXMLStore(url)
        #expect(again.objects == raw.objects && again.uuid == raw.uuid && again.nextObjectID == raw.nextObjectID)
        #expect(try XMLStore(url: url, model: raw.inferredModel(), readOnly: true).metadata == appleMetadata)
    }

    /// The best of five timings of `body`, in seconds.
    static func time(_ body: () throws -> Void) rethrows -> Double {
        var best = Double.infinity
        for _ in 0..<5 {
            let start = DispatchTime.now().uptimeNanoseconds
            try body()
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        return best
    }

    @Test("reading the metadata of a 200,000-object store costs what it costs for an empty one", arguments: fileTypes)
    func costIndependentOfSize(type: StoreType) throws {
        let empty = try AtomicTestStack(type)
        let large = try AtomicTestStack(type)
        let count = 200_000
        switch type {
        case .sqlite:
            let store = try #require(large.coordinator.persistentStores.first as? SQLiteStore)
            let entity = try #require(store.schema.entity(named: "Tag"))
            try store.withConnection { connection in
                try connection.execute("""
                    WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < \(count))
                    INSERT INTO \(entity.tableName) (Z_PK, Z_ENT, Z_OPT, ZNAME) SELECT x, \(entity.number), 1, 'tag ' || x FROM n
                    """)
            }
        case .xml:
            // Objects appended after the header; and the last one broken, which a parse that
            // went past the header would report.
            let text = try String(contentsOf: large.url, encoding: .utf8)
            let objects = (0..<count).map { #"    <object type="TAG" id="z\#(200 + $0)"><attribute name="name" type="string">tag \#($0)</attribute></object>"# }
            try Data((text.replacingOccurrences(of: "</database>", with: "") + objects.joined(separator: "\n") + "\n    <object type=").utf8).write(to: large.url)
        default:
            // A body of 20 MB that is not zlib data, which reading the body would report.
            var random = SeededGenerator(seed: 11)
            let block = random.bytes(1 << 16)
            let handle = try FileHandle(forWritingTo: large.url)
            try handle.seekToEnd()
            for _ in 0..<320 { try handle.write(contentsOf: block) }
            try handle.close()
        }
        let size = try FileManager.default.attributesOfItem(atPath: large.url.path)[.size] as! Int
        let emptyTime = try Self.time { _ = try PersistentStoreCoordinator.metadataForPersistentStore(at: empty.url) }
        let largeTime = try Self.time { _ = try PersistentStoreCoordinator.metadataForPersistentStore(at: large.url) }
        #expect(largeTime < emptyTime * 5 + 0.005, "empty \(emptyTime) s, \(size) bytes \(largeTime) s")
        print("metadata read, \(type.rawValue): empty store \(String(format: "%.2f", emptyTime * 1000)) ms; \(count)-object store of \(size / 1_000_000) MB \(String(format: "%.2f", largeTime * 1000)) ms")
    }

    @Test("a file that is not a store, is empty, is missing, or an in-memory type is refused with a reason")
    func refusals() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cases: [(String, Data?, StoreType?, String)] = [
            ("text.txt", Data("hello, world".utf8), nil, "its first bytes (68 65 6C 6C 6F 2C 20 77) are not those of a SQLite, XML or binary store"),
            ("empty", Data(), nil, "the file is empty: it is not a store"),
            ("plist.xml", Data(#"<?xml version="1.0"?><plist version="1.0"><dict/></plist>"#.utf8), nil, "an XML file, but not a Core Data XML store"),
            ("missing.sqlite", nil, nil, "no store here"),
            ("missing.xml", nil, .xml, "no store here"),
            ("memory", Data("x".utf8), .inMemory, "an in-memory store has no file"),
        ]
        for (name, contents, type, message) in cases {
            let url = directory.appendingPathComponent(name)
            if let contents { try contents.write(to: url) }
            let error = #expect(throws: StoreError.self) { try PersistentStoreCoordinator.metadataForPersistentStore(ofType: type, at: url) }
            #expect(error?.message.hasPrefix(message) == true, "\(name): \(error?.message ?? "")")
            #expect(error?.path == url.path)
        }
    }

    @Test("a store's type is told from its first bytes", arguments: fileTypes)
    func detection(type: StoreType) throws {
        let stack = try AtomicTestStack(type)
        #expect(try StoreType(detectingFileAt: stack.url) == type)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: stack.model)
        let error = #expect(throws: StoreError.self) { try coordinator.addPersistentStore(type: type == .sqlite ? .xml : .sqlite, at: stack.url) }
        #expect(error?.kind == .wrongStoreType)
    }
}
