import Foundation
import Testing
@testable import Lade

/// Issue 43 §2, the guide's "Binary Large Data Objects (BLOBs)": an attribute that allows
/// external storage is kept as Core Data keeps it in a SQLite store (docs/external-binary-data.md):
/// `01` + the bytes inline, `02` + a 36-character UUID + `00` naming a file in
/// `.<store>_SUPPORT/_EXTERNAL_DATA/`. Stores here are made to that encoding by hand (SQL and
/// files), as the sources describe Apple's, and by Lade's own writes.
@Suite("External binary data (Binary Large Data Objects): Core Data's markers and files in a SQLite store")
struct ExternalBinaryDataTests {
    static func model(external: Bool = true) throws -> ManagedObjectModel {
        try ManagedObjectModel(jsonData: Data("""
            {"format": "lade-model", "formatVersion": 1, "entities": [
              {"name": "Photo", "uniquenessConstraints": [["number"]], "attributes": [
                {"name": "number", "type": "Integer 64", "optional": false},
                {"name": "image", "type": "Binary", "externalStorage": \(external)}
              ], "relationships": []}
            ]}
            """.utf8))
    }

    /// Bytes that differ from position to position, so a byte lost or added shows.
    static func bytes(_ count: Int, seed: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ ($0 >> 8)) })
    }

    static let large = bytes(SQLiteExternalData.largestInline + 5_000, seed: 1)

    struct Sandbox {
        let directory: URL
        var name = "Photos"
        var store: URL { directory.appendingPathComponent("\(name).sqlite") }
        var dataFolder: URL { directory.appendingPathComponent(".\(name)_SUPPORT/_EXTERNAL_DATA") }

        init() throws { directory = try Fixtures.temporaryDirectory() }
        init(directory: URL, name: String) { (self.directory, self.name) = (directory, name) }

        func files() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: dataFolder.path)) ?? []).sorted()
        }

        func column(_ number: Int) throws -> SQLiteValue? {
            try SQLiteConnection(path: store.path, mode: .readOnly).rows("SELECT ZIMAGE FROM ZPHOTO WHERE ZNUMBER = \(number)").first?.first
        }

        /// A store of `model` holding, as Apple's stores hold them (written with SQL and files
        /// here): 1 inline, 2 in a file, 3 empty (`01` alone), 4 nil; its metadata Core Data's
        /// (framework version 1044, no key of Lade's).
        func appleStore(model: ManagedObjectModel) throws -> (inline: Data, external: Data) {
            try SQLiteStore.createFile(at: store, model: model)
            let inline = ExternalBinaryDataTests.bytes(1_000, seed: 2)
            let external = ExternalBinaryDataTests.large
            let name = "F50BB1A2-3202-46B9-BD64-63953D626D5E"
            try FileManager.default.createDirectory(at: dataFolder, withIntermediateDirectories: true)
            try external.write(to: dataFolder.appendingPathComponent(name))
            let connection = try SQLiteConnection(path: store.path, mode: .readWrite(create: false))
            let insert = try connection.prepare("INSERT INTO ZPHOTO (Z_PK, Z_ENT, Z_OPT, ZNUMBER, ZIMAGE) VALUES (?, 1, 1, ?, ?)")
            try insert.run([.integer(1), .integer(1), .blob(Data([1]) + inline)])
            try insert.run([.integer(2), .integer(2), .blob(Data([2]) + Data(name.utf8) + Data([0]))])
            try insert.run([.integer(3), .integer(3), .blob(Data([1]))])
            try insert.run([.integer(4), .integer(4), .null])
            try connection.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 4 WHERE Z_NAME = 'Photo'")
            try rewriteMetadata(connection) { metadata in
                metadata[StoreMetadata.Key.frameworkVersion] = .integer(1044)
                metadata[SQLiteExternalData.metadataKey] = nil
            }
            return (inline, external)
        }

        /// A context on a new store at `store`.
        func context(model: ManagedObjectModel) throws -> ManagedObjectContext {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .sqlite, at: store)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            return context
        }

        func rewriteMetadata(_ connection: SQLiteConnection, _ change: (inout [String: PropertyListValue]) -> Void) throws {
            var (_, metadata) = try SQLiteStore.readMetadata(connection, path: store.path)
            change(&metadata)
            try connection.prepare("UPDATE Z_METADATA SET Z_PLIST = ? WHERE Z_VERSION = 1").run([try SQLiteStore.encodedMetadata(metadata)])
        }

        func values(model: ManagedObjectModel) throws -> [Int64: Data?] {
            let store = try SQLiteStore(url: self.store, model: model, readOnly: true)
            var values: [Int64: Data?] = [:]
            for row in try store.fetch(StoreFetchRequest(entityName: "Photo")) {
                let attributes = row.attributes
                guard case .integer(let number)? = attributes["number"] else { continue }
                if case .binary(let data)? = attributes["image"] { values[number] = data } else { values[number] = .some(nil) }
            }
            return values
        }
    }

    @Test("a store in Apple's encoding reads inline, external, empty and nil values byte for byte")
    func readsAppleEncoding() throws {
        let sandbox = try Sandbox()
        let model = try Self.model()
        let (inline, external) = try sandbox.appleStore(model: model)
        let values = try sandbox.values(model: model)
        #expect(values[1] == .some(inline))
        #expect(values[2] == .some(external))
        #expect(values[3] == .some(Data()))
        #expect(values[4] == .some(nil))
        #expect(try SQLiteStore(url: sandbox.store, model: model, readOnly: true).damage(thorough: true).isEmpty)
    }

    @Test("Lade writes Core Data's form: 01 + bytes inline, a 38-byte reference to a flushed file above the threshold; replaced, nil and deleted values' files go after the save")
    func writesCoreDataForm() throws {
        let sandbox = try Sandbox()
        let model = try Self.model()
        let context = try sandbox.context(model: model)
        let small = Self.bytes(100, seed: 3)
        let ids = try context.performAndWait {
            let photos = try (1...3).map { number in
                let photo = try context.insertObject(forEntityName: "Photo")
                try photo.setValue(Int64(number), forKey: "number")
                return photo
            }
            try photos[0].setValue(small, forKey: "image")
            try photos[1].setValue(Self.large, forKey: "image")
            try photos[2].setValue(Self.bytes(SQLiteExternalData.largestInline + 1, seed: 4), forKey: "image")
            try context.save()
            return photos.map(\.objectID)
        }
        #expect(try sandbox.column(1) == .blob(Data([1]) + small))
        guard case .blob(let reference)? = try sandbox.column(2) else { Issue.record("no reference"); return }
        #expect(reference.count == 38 && reference.first == 2 && reference.last == 0)
        let name = try #require(String(bytes: reference.dropFirst().dropLast(), encoding: .ascii))
        #expect(UUID(uuidString: name) != nil && name == name.uppercased())
        #expect(try Data(contentsOf: sandbox.dataFolder.appendingPathComponent(name)) == Self.large)
        #expect(sandbox.files().count == 2, "one file per long value: \(sandbox.files())")
        #expect(SQLiteExternalData.largestInline == 128 * 1024)

        // Another long value replaces the file; nil and a deletion take theirs away.
        try context.performAndWait {
            try context.object(with: ids[1]).setValue(Self.bytes(200_000, seed: 5), forKey: "image")
            try context.object(with: ids[2]).setValue(nil, forKey: "image")
            try context.save()
        }
        #expect(sandbox.files().count == 1)
        #expect(!sandbox.files().contains(name))
        try context.performAndWait {
            context.delete(context.object(with: ids[1]))
            try context.save()
        }
        #expect(sandbox.files().isEmpty)
        let values = try sandbox.values(model: model)
        #expect(values[1] == .some(small) && values[3] == .some(nil) && values.count == 2)
    }

    @Test("a save refused by the store removes the files it wrote")
    func refusedSaveLeavesNoFile() throws {
        let sandbox = try Sandbox()
        let model = try Self.model()
        let context = try sandbox.context(model: model)
        try context.performAndWait {
            for seed in 0..<2 {
                let photo = try context.insertObject(forEntityName: "Photo")
                try photo.setValue(Int64(7), forKey: "number")
                try photo.setValue(Self.bytes(300_000, seed: seed), forKey: "image")
            }
            #expect(throws: (any Error).self) { try context.save() }
        }
        #expect(sandbox.files().isEmpty, "\(sandbox.files())")
        #expect(try SQLiteConnection(path: sandbox.store.path, mode: .readOnly).rows("SELECT COUNT(*) FROM ZPHOTO") == [[.integer(0)]])
    }

    @Test("a marker Lade does not know is refused with the table, row and column, never returned as bytes")
    func unknownMarker() throws {
        let sandbox = try Sandbox()
        let model = try Self.model()
        _ = try sandbox.appleStore(model: model)
        let connection = try SQLiteConnection(path: sandbox.store.path, mode: .readWrite(create: false))
        try connection.execute("UPDATE ZPHOTO SET ZIMAGE = X'03AABB' WHERE Z_PK = 3")
        let error = #expect(throws: StoreError.self) { try sandbox.values(model: model) }
        let text = "\(error.map { "\($0)" } ?? "")"
        #expect(text.contains("Photo.image") && text.contains("Z_PK 3") && text.contains("ZIMAGE") && text.contains("0x03"), "\(text)")
        let damage = try SQLiteStore(url: sandbox.store, model: model, readOnly: true).damage(thorough: true)
        #expect(damage.map(\.kind) == [.wrongType] && damage.first?.place == "Photo.image", "\(damage)")
    }

    @Test("a store moved without its support folder: the missing file is named, never empty data")
    func missingFile() throws {
        let sandbox = try Sandbox()
        let model = try Self.model()
        _ = try sandbox.appleStore(model: model)
        try FileManager.default.removeItem(at: sandbox.dataFolder.deletingLastPathComponent())
        let error = #expect(throws: StoreError.self) { try sandbox.values(model: model) }
        let text = "\(error.map { "\($0)" } ?? "")"
        #expect(text.contains("F50BB1A2-3202-46B9-BD64-63953D626D5E") && text.contains(".Photos_SUPPORT") && text.contains("Z_PK 2"), "\(text)")
        let damage = try SQLiteStore(url: sandbox.store, model: model, readOnly: true).damage(thorough: true)
        #expect(damage.map(\.kind) == [.missingExternalFile] && damage.first?.count == 1, "\(damage)")
    }

    @Test("a reference to a symbolic link is refused, not followed (a store from elsewhere could name any file of the reader's)")
    func symbolicLink() throws {
        let sandbox = try Sandbox()
        let model = try Self.model()
        _ = try sandbox.appleStore(model: model)
        let file = sandbox.dataFolder.appendingPathComponent("F50BB1A2-3202-46B9-BD64-63953D626D5E")
        let secret = sandbox.directory.appendingPathComponent("secret")
        try Data("not the store's".utf8).write(to: secret)
        try FileManager.default.removeItem(at: file)
        try FileManager.default.createSymbolicLink(at: file, withDestinationURL: secret)
        let error = #expect(throws: StoreError.self) { try sandbox.values(model: model) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("symbolic link"))
        let damage = try SQLiteStore(url: sandbox.store, model: model, readOnly: true).damage(thorough: true)
        #expect(damage.map(\.kind) == [.missingExternalFile], "\(damage)")
    }

    @Test("files no row names are reported, and removed by the repair; other files there are left alone")
    func orphans() throws {
        let sandbox = try Sandbox()
        let model = try Self.model()
        _ = try sandbox.appleStore(model: model)
        let orphan = UUID().uuidString, partial = ".\(UUID().uuidString).lade-partial"
        for name in [orphan, partial, "README"] { try Data([9]).write(to: sandbox.dataFolder.appendingPathComponent(name)) }
        let damage = try SQLiteStore(url: sandbox.store, model: model, readOnly: true).damage(thorough: true)
        #expect(damage.map(\.kind) == [.orphanExternalFile] && damage.first?.count == 2, "\(damage)")
        let removed = try SQLiteStore(url: sandbox.store, model: model).removeOrphanExternalFiles()
        #expect(removed == [partial, orphan].sorted())
        #expect(sandbox.files() == ["F50BB1A2-3202-46B9-BD64-63953D626D5E", "README"])
        #expect(try SQLiteStore(url: sandbox.store, model: model, readOnly: true).damage(thorough: true).isEmpty)
    }

    @Test("a store an earlier Lade wrote keeps its plain bytes: read and written as they are")
    func earlierLadeStore() throws {
        let sandbox = try Sandbox()
        let model = try Self.model()
        try SQLiteStore.createFile(at: sandbox.store, model: model)
        let connection = try SQLiteConnection(path: sandbox.store.path, mode: .readWrite(create: false))
        try sandbox.rewriteMetadata(connection) { $0[SQLiteExternalData.metadataKey] = nil }
        try connection.execute("INSERT INTO ZPHOTO (Z_PK, Z_ENT, Z_OPT, ZNUMBER, ZIMAGE) VALUES (1, 1, 1, 1, X'010203')")
        try connection.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Photo'")
        #expect(try sandbox.values(model: model)[1] == .some(Data([1, 2, 3])))
        let store = try SQLiteStore(url: sandbox.store, model: model)
        var save = StoreSaveRequest()
        let id = try store.newObjectIDs(for: "Photo", count: 1)[0]
        save.inserted = [.init(objectID: id, attributes: ["number": .integer(2), "image": .binary(Self.large)], toOne: [:])]
        try store.save(save)
        #expect(try sandbox.column(2) == .blob(Self.large))
        #expect(sandbox.files().isEmpty)
        #expect(store.metadata[SQLiteExternalData.metadataKey] == nil, "a metadata write keeps the store's kind")
    }

    @Test("a model that says otherwise than the store's own about external storage is refused, naming the attribute")
    func settingMismatch() throws {
        for (written, given) in [(true, false), (false, true)] {
            let sandbox = try Sandbox()
            try SQLiteStore.createFile(at: sandbox.store, model: try Self.model(external: written))
            let error = #expect(throws: StoreError.self) { try SQLiteStore(url: sandbox.store, model: try Self.model(external: given)) }
            #expect(error?.message.contains("Photo.image") == true && error?.message.contains("allowsExternalBinaryDataStorage") == true, "\(String(describing: error))")
        }
    }

    @Test("fetches test such a value for nil in SQL, and refuse comparing or sorting by it")
    func predicates() throws {
        let sandbox = try Sandbox()
        let model = try Self.model()
        _ = try sandbox.appleStore(model: model)
        let store = try SQLiteStore(url: sandbox.store, model: model, readOnly: true)
        #expect(try store.count(StoreFetchRequest(entityName: "Photo", predicate: FetchPredicate(format: "image != nil"))) == 3)
        #expect(try store.count(StoreFetchRequest(entityName: "Photo", predicate: FetchPredicate(format: "image == nil"))) == 1)
        #expect(throws: FetchPredicateError.self) {
            try store.fetch(StoreFetchRequest(entityName: "Photo", predicate: FetchPredicate(format: "image == %@", arguments: [.attribute(.binary(Data([1])))])))
        }
    }

    @Test("migratePersistentStore to a new location carries every value, and the files, into the new store's folder")
    func migrateToNewLocation() throws {
        let sandbox = try Sandbox()
        let model = try Self.model()
        _ = try sandbox.appleStore(model: model)
        let before = try sandbox.values(model: model)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: .sqlite, at: sandbox.store)
        let moved = sandbox.directory.appendingPathComponent("Moved.sqlite")
        try coordinator.migratePersistentStore(store, to: moved, type: .sqlite)
        let movedFiles = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.appendingPathComponent(".Moved_SUPPORT/_EXTERNAL_DATA").path)
        #expect(movedFiles.count == 1)
        let copy = Sandbox(directory: sandbox.directory, name: "Moved")
        #expect(try copy.values(model: model) == before)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).filter { $0.contains(".lade-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}
