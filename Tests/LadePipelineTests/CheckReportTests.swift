import Foundation
import Lade
import LadePipeline
import Testing

/// `lade check`'s report, in process.
@Suite("The check report")
struct CheckReportTests {
    @Test("a sound store: not damaged, 'no damage found', and JSON with no problems")
    func sound() throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("catalog.sqlite")
        try PipelineFixtures.catalogStore(.sqlite, at: store, version: "Catalog 2")
        let report = try CheckReport(checkingStoreAt: store, model: try PipelineFixtures.catalogModel(), path: "catalog.sqlite")
        #expect(!report.damaged)
        #expect(report.text() == "catalog.sqlite: no damage found\n")
        #expect(try report.json() == #"{"damaged":false,"problems":[],"store":"catalog.sqlite"}"#)
    }

    @Test("an XML store too damaged to open is the report's answer, not a failure: an object of an abstract entity")
    func tooDamagedToOpen() throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("catalog.xml")
        let model = try PipelineFixtures.catalogModel()
        let context = try privateContext(model: model, store: store, type: .xml)
        try context.performAndWait {
            try context.insertObject(forEntityName: "Image").setValue(URL(string: "https://example.com/a.png")!, forKey: "url")
            try context.save()
        }
        // The image made a Media, which is abstract: the store does not open.
        let text = try String(contentsOf: store, encoding: .utf8)
        #expect(text.contains(#"type="IMAGE""#))
        try Data(text.replacingOccurrences(of: #"type="IMAGE""#, with: #"type="MEDIA""#).utf8).write(to: store)
        #expect { try ReadOnlyStore.open(store, model: model) } throws: { ($0 as? StoreError)?.code == "store.damaged" }

        let report = try CheckReport(checkingStoreAt: store, model: model, path: "catalog.xml")
        #expect(report.damaged)
        #expect(report.problems.map(\.kind) == [.unknownEntity], "\(report.problems)")
        #expect(report.text().hasPrefix("catalog.xml: damaged (1 problem)\n  unknownEntity: "), "\(report.text())")
    }

    @Test("a store that is not a store is thrown, not reported")
    func notAStore() throws {
        let directory = try PipelineFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("notes.sqlite")
        try Data("not a store".utf8).write(to: file)
        #expect(throws: (any Error).self) { try CheckReport(checkingStoreAt: file, model: try PipelineFixtures.catalogModel()) }
    }
}
