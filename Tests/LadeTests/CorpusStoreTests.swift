import Crypto
import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// Copies a corpus store (with its `-wal` and `-shm`) to a writable temporary folder.
func copyCorpusStore(_ relative: String, to directory: URL) throws -> URL {
    let source = Corpus.file(relative)
    let target = directory.appendingPathComponent(source.lastPathComponent)
    for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: source.path + suffix) {
        try copyWritable(atPath: source.path + suffix, toPath: target.path + suffix)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: target.path + suffix)
    }
    return target
}

func sha256(ofFile path: String) throws -> String {
    guard FileManager.default.fileExists(atPath: path) else { return "absent" }
    return SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path))).map { String(format: "%02x", $0) }.joined()
}

@Suite("Opening the stores Apple wrote", .needsCorpus)
struct CorpusStoreTests {
    static let allStores = [
        "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V1.sqlite",
        "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V2.sqlite",
        "alemar11/CoreDataPlus/Tests/Resources/SampleModel3/Fixtures/SampleModel3_V1.sqlite",
        "bignerdranch/CoreDataStack/Sample Model/Deprecated/TestModel.sqlite",
        "CoderDream/Core-Data-by-Tutorials/SourceCode/Core Data by Tutorials v6/09-multiple-managed-object-contexts/final/SurfJournal/SurfJournal/CoreDataSeed/SurfJournalModel.sqlite",
        "fruitsamples/iPhoneCoreDataRecipes/RecipeData/Recipes.sqlite",
        "magicalpanda/MagicalRecord/Samples/iOS/Resources/RecipeData/Recipes.sqlite",
    ]

    @Test("each store opens read-only with its model and every entity's count matches the rows", arguments: CorpusSchemaTests.pairs)
    func opensAndCounts(pair: CorpusSchemaTests.Pair) throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try copyCorpusStore(pair.store, to: temp)
        let model = try ManagedObjectModel(contentsOf: Corpus.file(pair.model), version: pair.version)
        let store = try SQLiteStore(url: url, model: model, readOnly: true)
        let facts = try StoreFacts(store: pair.store)
        var total = 0
        for entity in store.schema.entities {
            // Independent of the store's own query: group the raw table by Z_ENT.
            let raw = try store.withConnection { try $0.rows("SELECT COUNT(*) FROM \(entity.tableName) WHERE Z_ENT = ?", [.integer(entity.number)]) }
            #expect(try .integer(Int64(store.count(ofEntity: entity.name))) == raw.first?.first)
            total += try store.count(ofEntity: entity.name)
        }
        let tableRows = store.schema.tables.reduce(0) { $0 + (facts.rowCounts[$1.name] ?? 0) }
        #expect(total == tableRows)
        #expect(store.metadata[StoreMetadata.Key.storeUUID]?.stringValue == facts.uuid)
        print("store \(pair.testDescription): \(total) objects in \(store.schema.entities.count) entities, as in Apple's file")
    }

    @Test("a renamed entity maps by Z_ENT and its renaming identifier, not by Z_NAME")
    func renamedEntity() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try copyCorpusStore("alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V2.sqlite", to: temp)
        let base = Corpus.file("alemar11/CoreDataPlus/Tests/Resources/SampleModel")
        let model = try ManagedObjectModel(
            contentsOf: base.appendingPathComponent("SampleModel.xcdatamodeld"), version: "SampleModel2",
            compiledModel: base.appendingPathComponent("Fixtures/SampleModel.momd"))
        let store = try SQLiteStore(url: url, model: model, readOnly: true)
        #expect(store.storedEntityNames[3] == "ExpensiveSportCar")
        #expect(store.schema.entity(number: 3)?.name == "LuxuryCar")
        #expect(try store.count(ofEntity: "Car", includingSubentities: true) == 125)
    }

    @Test("a store made from another model version is refused, naming the entities that differ")
    func mismatchRefused() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try copyCorpusStore("alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V1.sqlite", to: temp)
        let base = Corpus.file("alemar11/CoreDataPlus/Tests/Resources/SampleModel")
        let bundle = base.appendingPathComponent("SampleModel.xcdatamodeld")
        // With Apple's hashes: the hashes decide.
        let withHashes = try ManagedObjectModel(contentsOf: bundle, version: "SampleModel2", compiledModel: base.appendingPathComponent("Fixtures/SampleModel.momd"))
        let hashed = #expect(throws: StoreError.self) { try SQLiteStore(url: url, model: withHashes, readOnly: true) }
        #expect(hashed?.kind == .modelMismatch(entities: ["Car", "ExpensiveSportCar", "LuxuryCar", "Person", "SportCar"]))
        #expect(hashed?.description.contains("version hashes differ for Car, ExpensiveSportCar, LuxuryCar, Person, SportCar") == true)
        // Without them: the tables and columns decide (V1 has ZCAR.ZCOLOR and ZPERSON.ZID).
        let plain = try ManagedObjectModel(contentsOf: bundle, version: "SampleModel2")
        let structural = #expect(throws: StoreError.self) { try SQLiteStore(url: url, model: plain, readOnly: true) }
        #expect(structural?.kind == .modelMismatch(entities: ["Car", "LuxuryCar", "Person", "SportCar"]))
        // And the right version opens.
        _ = try SQLiteStore(url: url, model: try ManagedObjectModel(contentsOf: bundle, version: "SampleModel"), readOnly: true)
    }

    @Test("opening read-only never writes the store or its -wal (SurfJournal keeps its data only in the -wal)")
    func readOnlyWritesNothing() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let pair = CorpusSchemaTests.pairs.last!
        let url = try copyCorpusStore(pair.store, to: temp)
        let before = (try sha256(ofFile: url.path), try sha256(ofFile: url.path + "-wal"))
        do {
            let store = try SQLiteStore(url: url, model: try ManagedObjectModel(contentsOf: Corpus.file(pair.model)), readOnly: true)
            #expect(try store.count(ofEntity: "JournalEntry") == 5000)
        }
        let after = (try sha256(ofFile: url.path), try sha256(ofFile: url.path + "-wal"))
        #expect(before == after)
        #expect(before.1 != "absent")
    }

    /// The `Z_PLIST` blob of a corpus store, read from a copy (a read-only open of the original
    /// could still need its `-shm`).
    static func storedMetadata(_ relative: String) throws -> Data {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try copyCorpusStore(relative, to: temp)
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        guard case .blob(let plist) = try connection.rows("SELECT Z_PLIST FROM Z_METADATA").first?.first else {
            throw PropertyListError("no Z_PLIST in \(relative)")
        }
        return plist
    }

    @Test("each store's metadata, as Core Data wrote it, written again by Lade reads back the same through Foundation and through Lade", arguments: allStores)
    func metadataRewritten(store relative: String) throws {
        let metadata = try PropertyListValue.decode(try Self.storedMetadata(relative))
        let rewritten = try metadata.binaryPropertyList()
        #expect(try BinaryPropertyListReader.read(rewritten) == metadata)
        #expect(PropertyListValue(foundation: try PropertyListSerialization.propertyList(from: rewritten, format: nil)) == metadata)
    }

    @Test("the digest of each store's version hashes equals its stored NSStoreModelVersionHashesDigest", arguments: allStores)
    func digest(store relative: String) throws {
        let metadata = try #require(try PropertyListValue.decode(try Self.storedMetadata(relative)).dictionaryValue)
        let url = Corpus.file(relative)
        let hashes = StoreMetadata.versionHashes(in: metadata)
        #expect(!hashes.isEmpty)
        if let stored = metadata[StoreMetadata.Key.versionHashesDigest]?.stringValue {
            #expect(StoreMetadata.digest(of: hashes).base64EncodedString() == stored)
            print("digest \(url.lastPathComponent): equal")
        } else {
            print("digest \(url.lastPathComponent): the store has none (Core Data \(metadata[StoreMetadata.Key.frameworkVersion]?.integerValue ?? 0) did not write it)")
        }
    }
}
