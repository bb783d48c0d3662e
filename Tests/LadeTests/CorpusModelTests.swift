import Foundation
import Testing
@testable import Lade

/// Models and stores written by Apple's tools (`../shared/coredata-corpus`). Skipped when absent.
@Suite("The Core Data corpus", .needsCorpus)
struct CorpusModelTests {
    @Test("every contents model in the corpus loads; every legacy elements model is refused")
    func everyModel() throws {
        var loaded = 0
        var refused = 0
        for directory in Corpus.modelDirectories() {
            switch ModelLoader.contentsKind(of: directory) {
            case .contents:
                #expect(throws: Never.self, "\(directory.path)") { _ = try ManagedObjectModel(contentsOf: directory) }
                loaded += 1
            case .legacyElements:
                let error = #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: directory) }
                #expect(error?.description.contains("Open the model in a current Xcode and save it") == true, "\(directory.path)")
                refused += 1
            case nil:
                Issue.record("\(directory.path) holds neither contents nor elements")
            }
        }
        print("corpus: loaded \(loaded) contents models, refused \(refused) legacy elements models")
        #expect(loaded >= 40)
        #expect(refused == 4)
    }

    @Test("every bundle lists its versions and loads its current one (or is refused as legacy)")
    func everyBundle() throws {
        let walker = FileManager.default.enumerator(at: Corpus.root, includingPropertiesForKeys: nil)
        var bundles = 0
        while let url = walker?.nextObject() as? URL {
            guard url.pathExtension == "xcdatamodeld" else { continue }
            bundles += 1
            let versions = try ManagedObjectModel.versions(at: url)
            #expect(!versions.names.isEmpty)
            let current = try #require(versions.current, "\(url.path) has no current version")
            let legacy = ModelLoader.contentsKind(of: url.appendingPathComponent(current + ".xcdatamodel")) == .legacyElements
            if legacy {
                #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: url) }
            } else {
                #expect(try ManagedObjectModel(contentsOf: url).versionName == current)
            }
        }
        #expect(bundles >= 30)
    }

    @Test("the compiled .momd hashes equal those in the metadata of the store Apple wrote with that model version")
    func compiledHashesMatchStores() throws {
        let cases: [(model: String, version: String, momd: String, store: String)] = [
            ("alemar11/CoreDataPlus/Tests/Resources/SampleModel/SampleModel.xcdatamodeld", "SampleModel",
             "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel.momd",
             "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V1.sqlite"),
            ("alemar11/CoreDataPlus/Tests/Resources/SampleModel/SampleModel.xcdatamodeld", "SampleModel2",
             "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel.momd",
             "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V2.sqlite"),
            ("alemar11/CoreDataPlus/Tests/Resources/SampleModel3/SampleModel3.xcdatamodeld", "SampleModel3",
             "alemar11/CoreDataPlus/Tests/Resources/SampleModel3/Fixtures/SampleModel3.momd",
             "alemar11/CoreDataPlus/Tests/Resources/SampleModel3/Fixtures/SampleModel3_V1.sqlite"),
        ]
        for item in cases {
            let model = try ManagedObjectModel(
                contentsOf: Corpus.file(item.model), version: item.version,
                compiledModel: Corpus.file(item.momd))
            #expect(model.hasAppleVersionHashes)
            let expected = try StoreFacts(store: item.store).entityHashes
            #expect(!expected.isEmpty)
            #expect(model.versionHashes.mapValues { $0.base64EncodedString() } == expected, "\(item.store)")
            print("momd \(item.momd.split(separator: "/").last!) [\(item.version)]: \(expected.count) entity hashes equal the store's")
        }
    }

    @Test("a compiled model for another version is refused, naming the entities that have no hash")
    func compiledModelMismatch() throws {
        let error = #expect(throws: ModelError.self) {
            try ManagedObjectModel(
                contentsOf: Corpus.file("alemar11/CoreDataPlus/Tests/Resources/SampleModel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel"),
                compiledModel: Corpus.file("alemar11/CoreDataPlus/Tests/Resources/SampleModel3/Fixtures/SampleModel3.momd"))
        }
        #expect(error?.description.contains("no hashes for model version 'SampleModel2'") == true)
        let wrongVersion = #expect(throws: ModelError.self) {
            try ManagedObjectModel(
                contentsOf: Corpus.file("alemar11/CoreDataPlus/Tests/Resources/SampleModel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel"),
                compiledModel: Corpus.file("alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel.momd"))
                .withAppleVersionHashes(["Car": Data(count: 32)], source: "test")
        }
        #expect(wrongVersion?.description.contains("has no version hash for entities LuxuryCar, Person, SportCar") == true)
    }
}

/// Facts read off a corpus store by the corpus's own tools (`expected/<store>.*`).
struct StoreFacts {
    /// Table name → column names, in declaration order.
    var tables: [String: [String]] = [:]
    /// `Z_PRIMARYKEY` rows: entity number, name, super.
    var primaryKeyRows: [(entity: Int, name: String, superEntity: Int)] = []
    var entityHashes: [String: String] = [:]
    /// `NSPersistenceFrameworkVersion`: the Core Data build that wrote the store.
    var frameworkVersion = 0
    /// Rows per table, as read by the corpus's tools (with the `-wal` applied).
    var rowCounts: [String: Int] = [:]
    /// `Z_METADATA.Z_UUID`.
    var uuid: String?

    init(store: String) throws {
        let base = Corpus.file("expected/" + store)
        let schema = try String(contentsOf: URL(fileURLWithPath: base.path + ".schema.sql"), encoding: .utf8)
        for statement in schema.components(separatedBy: ";") {
            let text = statement.trimmingCharacters(in: .whitespacesAndNewlines)
            guard text.hasPrefix("CREATE TABLE "), let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")") else { continue }
            let name = text.dropFirst("CREATE TABLE ".count).prefix { $0 != " " && $0 != "(" }
            let columns = text[text.index(after: open)..<close].split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.hasPrefix("PRIMARY KEY") }
                .map { String($0.prefix { $0 != " " }) }
            tables[String(name)] = columns
        }
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: base.path + ".summary.json"))) as? [String: Any]
        rowCounts = summary?["row_counts"] as? [String: Int] ?? [:]
        for row in summary?["Z_PRIMARYKEY"] as? [[Any]] ?? [] {
            primaryKeyRows.append((row[0] as! Int, row[1] as! String, row[2] as! Int))
        }
        let metadata = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: base.path + ".metadata.json"))) as? [[String: Any]]
        entityHashes = metadata?.first?["entity_hashes_base64"] as? [String: String] ?? [:]
        uuid = metadata?.first?["Z_UUID"] as? String
        frameworkVersion = (metadata?.first?["plist"] as? [String: Any])?["NSPersistenceFrameworkVersion"] as? Int ?? 0
    }
}
