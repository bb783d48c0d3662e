import Foundation
import Lade
import LadePipeline
import Testing

/// `lade migrate`'s work, in process: the lock, the sweep, the plan, the run and its check.
@Suite("The migrate runner")
struct MigrateRunnerTests {
    /// A folder with `catalog.xml`, written with samples/Catalog.xcdatamodeld's first version.
    func oldStore() throws -> (directory: URL, store: URL) {
        let directory = try PipelineFixtures.temporaryDirectory()
        let store = directory.appendingPathComponent("catalog.xml")
        try PipelineFixtures.catalogStore(.xml, at: store, version: "Catalog")
        return (directory, store)
    }

    func runner(_ store: URL, dryRun: Bool = false) -> MigrateRunner {
        MigrateRunner(store: store, bundle: PipelineFixtures.catalog, options: MigrateRunner.Options(dryRun: dryRun), displayPath: "catalog.xml")
    }

    func names(in directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    @Test("a dry run plans every step, writes nothing, makes no lock file and leaves what an interrupted run left")
    func dryRun() throws {
        let (directory, store) = try oldStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("left".utf8).write(to: directory.appendingPathComponent(".catalog.xml.lade-interrupted"))
        let before = try names(in: directory), bytes = try Data(contentsOf: store)
        let plan = try runner(store, dryRun: true).plan()
        #expect(!plan.writes)
        let text = plan.text()
        #expect(text.hasPrefix("catalog.xml: Catalog → Catalog 2 (lightweight, in place)\n"), "\(text)")
        #expect(text.hasSuffix("\ndry run: nothing was written\n"), "\(text)")
        #expect(try plan.run() == nil)
        #expect(try names(in: directory) == before)
        #expect(try Data(contentsOf: store) == bytes)
    }

    @Test("a run migrates, checks the result and counts its objects per entity; run again, it has nothing to do")
    func runThenNothing() throws {
        let (directory, store) = try oldStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plan = try runner(store).plan()
        #expect(plan.writes)
        let report = try #require(try plan.run())
        #expect(report.targetVersion == "Catalog 2" && report.steps == 1)
        let lines = report.text().split(separator: "\n").map(String.init)
        #expect(lines.first == "migrated: catalog.xml is at Catalog 2")
        #expect(lines.contains("  Category: 2"), "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("  Media:") }, "an abstract entity is not counted: \(lines)")
        #expect(try StoreVersionMatch(storeAt: store, bundle: PipelineFixtures.catalog).version == "Catalog 2")
        // The lock is released once the plan has run.
        try StoreLock(store: store).release()

        let again = try runner(store).plan()
        #expect(again.text() == "catalog.xml: already at Catalog 2; nothing to do\n")
        #expect(try again.run() == nil)
    }

    @Test("a run removes what an interrupted run left beside the store, and says so")
    func sweep() throws {
        let (directory, store) = try oldStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("left".utf8).write(to: directory.appendingPathComponent(".catalog.xml.lade-interrupted"))
        let notes = Notes()
        var runner = runner(store)
        runner.onNote = notes.add
        _ = try runner.plan()
        #expect(notes.all == ["removed 1 temporary file(s) an interrupted run left beside catalog.xml"])
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent(".catalog.xml.lade-interrupted").path))
    }

    @Test("while another run holds the store, a run and a dry run are turned away, and the store is left as it was")
    func busy() throws {
        let (directory, store) = try oldStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        let held = try StoreLock(store: store)
        defer { held.release() }
        let bytes = try Data(contentsOf: store)
        #expect(throws: StoreLock.Busy.self) { try runner(store).plan() }
        #expect(throws: StoreLock.Busy.self) { try runner(store, dryRun: true).plan() }
        #expect(try Data(contentsOf: store) == bytes)
    }
}

