import Foundation
import Testing
@testable import Lade
import LadeTestSupport
import LadeTestTraits

/// What Lade writes as a model cache (and as a `.mom`) reads back as the same model: a store
/// Lade makes opens with no model given, with the model it was made with.
@Suite("Model caches Lade writes read back as the same model")
struct ModelCacheRoundTripTests {
    /// Every difference between `model` and what its cache and its compiled form decode to.
    func roundTripDifferences(_ model: ManagedObjectModel, origin: String) throws -> [String] {
        let cached = try ManagedObjectModel(modelCache: try model.modelCacheBlob(), origin: origin + ", cache")
        let compiled = try ManagedObjectModel(compiledModel: try model.archivedModel(), origin: origin + ", .mom")
        // A cache names no version (a store has one model); a .mom is named by its file.
        return modelDifferences(compiled: cached, source: model, comparesVersionName: false).map { "cache: \($0)" }
            + modelDifferences(compiled: compiled, source: model, comparesVersionName: false).map { ".mom: \($0)" }
    }

    @Test("the sample models (Xcode and JSON) round-trip through a cache and a .mom")
    func samples() throws {
        for path in ["samples/Catalog.xcdatamodeld", "samples/Catalog.json"] {
            let url = Fixtures.root.appendingPathComponent(path)
            try #require(FileManager.default.fileExists(atPath: url.path), "\(path)")
            let versions = url.pathExtension == "xcdatamodeld" ? try ManagedObjectModel.versions(at: url).names.map { Optional($0) } : [nil]
            for version in versions {
                let model = try ManagedObjectModel(contentsOf: url, version: version)
                let differences = try roundTripDifferences(model, origin: "\(path) \(version ?? "")")
                #expect(differences == [], "\(path) \(version ?? "")")
            }
        }
    }

    @Test("every corpus model Lade reads round-trips through a cache and a .mom, or is refused by name", .needsCorpus)
    func corpus() throws {
        var roundTripped = 0, refused: [String] = [], unreadable = 0
        for directory in Corpus.modelDirectories() {
            let name = directory.path.replacingOccurrences(of: Corpus.root.path + "/", with: "")
            guard let model = try? ManagedObjectModel(contentsOf: directory) else { unreadable += 1; continue }
            do {
                let differences = try roundTripDifferences(model, origin: name)
                #expect(differences == [], "\(name)")
                roundTripped += 1
            } catch let error as ModelArchiveError {
                // What Lade cannot archive names the entity and property; a store of such a
                // model is not made (ModelCacheWriterTests).
                #expect(error.entity != nil, "\(name): \(error)")
                refused.append("\(name): \(error)")
            }
        }
        print("model cache round trip: \(roundTripped) corpus models round-tripped, \(refused.count) refused, \(unreadable) not read by Lade")
        for line in refused { print("  refused: \(line)") }
        #expect(roundTripped > 0)
        #expect(refused.count <= roundTripped / 10, "more than a tenth refused: \(refused)")
    }
}

extension ModelCacheRoundTripTests {
    @Test("a model read out of an Apple store's cache, written again as a cache, reads back the same", .needsCorpus,
          arguments: [
            "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V1.sqlite",
            "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V2.sqlite",
            "alemar11/CoreDataPlus/Tests/Resources/SampleModel3/Fixtures/SampleModel3_V1.sqlite",
            "alemar11/CoreDataPlus/Tests/Resources/SampleModel2/Fixtures/SampleModel2_V1.sqlite",
            "bignerdranch/CoreDataStack/Sample Model/Deprecated/TestModel.sqlite",
          ])
    func appleCacheRoundTrip(store: String) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = try CompiledModelTests.copy(store, into: directory)
        let carried = try #require(try ManagedObjectModel.modelCache(ofStoreAt: copy))
        // Apple's hashes come with the store's metadata, not in the archive (modelCache(ofStoreAt:)).
        let differences = try roundTripDifferences(carried, origin: store).filter { !$0.contains(": appleVersionHash: ") }
        #expect(differences == [], "\(store)")
    }
}
