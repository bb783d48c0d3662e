import Foundation
import Lade
import LadePipeline
import Testing

/// `lade convert`'s work, in process: the destination's lock and sweep, the copy, the summary.
@Suite("The convert runner")
struct ConvertRunnerTests {
    /// A folder with `catalog.sqlite` (two categories) and a runner copying it to `catalog.xml`.
    func fixture() throws -> (directory: URL, runner: ConvertRunner) {
        let directory = try PipelineFixtures.temporaryDirectory()
        let source = directory.appendingPathComponent("catalog.sqlite")
        try PipelineFixtures.catalogStore(.sqlite, at: source, version: "Catalog 2")
        let runner = ConvertRunner(source: source, destination: directory.appendingPathComponent("catalog.xml"), type: .xml,
                                   model: try PipelineFixtures.catalogModel(), displaySource: "a.sqlite", displayDestination: "b.xml")
        return (directory, runner)
    }

    @Test("the copy is summed up per entity under the paths given, and the destination's lock is released after")
    func copies() throws {
        let (directory, runner) = try fixture()
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = try runner.run()
        #expect(report.sourceType == .sqlite && report.destinationType == .xml)
        #expect(report.summary.objects["Category"] == 2 && report.summary.objectCount == 2)
        let lines = report.text().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first?.hasPrefix("converted a.sqlite (SQLite) to b.xml (XML): 2 objects, 0 to-many links, in ") == true, "\(lines)")
        #expect(Array(lines.dropFirst()) == ["  Category: 2", ""], "only entities with objects: \(lines)")
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: runner.destination)[StoreMetadata.Key.storeType] == .string("XML"))
        try StoreLock(store: runner.destination).release()
    }

    @Test("what an interrupted run left beside the destination is removed, and said")
    func sweep() throws {
        var (directory, runner) = try fixture()
        defer { try? FileManager.default.removeItem(at: directory) }
        let left = directory.appendingPathComponent(".catalog.xml.lade-interrupted")
        try Data("left".utf8).write(to: left)
        let notes = Notes()
        runner.onNote = notes.add
        _ = try runner.run()
        #expect(notes.all == ["removed 1 temporary file(s) an interrupted run left beside b.xml"])
        #expect(!FileManager.default.fileExists(atPath: left.path))
    }

    @Test("while another run holds the destination, nothing is written there")
    func busy() throws {
        let (directory, runner) = try fixture()
        defer { try? FileManager.default.removeItem(at: directory) }
        let held = try StoreLock(store: runner.destination)
        defer { held.release() }
        #expect(throws: StoreLock.Busy.self) { try runner.run() }
        #expect(!FileManager.default.fileExists(atPath: runner.destination.path))
    }
}
