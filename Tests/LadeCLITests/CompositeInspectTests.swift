import Foundation
import Testing

/// `lade inspect` on MomXML's Xcode 15 model (`Tests/Fixtures/MomXML`, MIT), which has composites.
@Suite("lade inspect shows composite attributes")
struct CompositeInspectTests {
    static let model = "Tests/Fixtures/MomXML/Model.xcdatamodeld"

    @Test("the text report lists each composite with its elements, and the attribute names its composite")
    func text() throws {
        let result = try LadeProcess.run(["inspect", Self.model])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("attribute1  Composite      optional, composite Composite"))
        #expect(result.stdout.contains("Composites (kept in in-memory stores only"))
        #expect(result.stdout.contains("    three  Composite   optional, composite Composite1"))
        #expect(result.stdout.contains("  Composite1 (no elements)"))
    }

    @Test("creating a SQLite store from it is refused naming Produit.attribute1, and no file is left")
    func initRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lade-composite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("Model.sqlite").path
        let result = try LadeProcess.run(["init", store, "--model", Self.model])
        #expect(result.status != 0)
        #expect(result.stderr.contains("Produit.attribute1"))
        #expect(result.stderr.contains("not known from any Apple-written store"))
        #expect(!FileManager.default.fileExists(atPath: store))
    }
}
