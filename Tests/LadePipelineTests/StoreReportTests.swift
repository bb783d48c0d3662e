import Foundation
import Lade
import LadePipeline
import Testing

/// `lade inspect STORE --model MODEL`: which version of a model a store is read with.
@Suite("The store report's model version")
struct StoreReportTests {
    @Test("in a bundle of several versions, the store is read with the version that wrote it", arguments: ["Catalog", "Catalog 2"])
    func picksTheWritingVersion(version: String) throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("catalog.sqlite")
        try PipelineFixtures.catalogStore(.sqlite, at: store, version: version)
        let report = try StoreReport.reading(storeAt: store, modelAt: PipelineFixtures.catalog)
        #expect(report.versionMatch?.version == version)
        #expect(report.versionMatch?.needsMigration == (version != "Catalog 2"))
        // Counted with that version's entities: the first has no Image.
        #expect(report.entities.contains { $0.name == "Image" } == (version == "Catalog 2"), "\(report.entities)")
        #expect(report.entities.first { $0.name == "Category" }?.count == 2)
        #expect(report.mismatchError() == nil)
    }

    @Test("a version given is read with, without asking the store which version wrote it")
    func givenVersion() throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("catalog.xml")
        try PipelineFixtures.catalogStore(.xml, at: store, version: "Catalog 2")
        let report = try StoreReport.reading(storeAt: store, modelAt: PipelineFixtures.catalog, version: "Catalog 2")
        #expect(report.versionMatch == nil)
        #expect(report.entities.first { $0.name == "Category" }?.count == 2)
    }

    @Test("a store no version matches gives its metadata without counts, and the mismatch error names the path given")
    func noVersionMatches() throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("other.sqlite")
        let other = try ManagedObjectModel(entities: [EntityDescription(name: "Other", attributes: [AttributeDescription(name: "x", type: .string)])])
        try PersistentStoreCoordinator.createStore(at: store, type: .sqlite, model: other)
        let report = try StoreReport.reading(storeAt: store, modelAt: PipelineFixtures.catalog)
        #expect(report.versionMatch != nil && report.versionMatch?.version == nil)
        #expect(report.entities.isEmpty)
        #expect(report.storeType == "SQLite")
        let error = try #require(report.mismatchError(path: "other.sqlite"))
        #expect(error.code == "store.modelMismatch")
        #expect(error.path == "other.sqlite")
    }
}
