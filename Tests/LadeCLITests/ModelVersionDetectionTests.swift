import Foundation
import Lade
import Testing

/// `lade inspect STORE --model BUNDLE` tells which version of a versioned model wrote the store
/// and whether it needs migrating: by hashes, or by the layout each version implies.
@Suite("Which model version wrote a store")
struct ModelVersionDetectionTests {
    static let catalog = "samples/Catalog.xcdatamodeld"

    func inspectJSON(_ arguments: [String]) throws -> (LadeProcess.Result, [String: Any]) {
        let result = try LadeProcess.run(["inspect"] + arguments + ["--json"])
        let object = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]) ?? [:]
        return (result, object)
    }

    @Test("a store Lade wrote with the older version: that version, migration needed; with the current one: current, none needed")
    func ladeStores() throws {
        let sandbox = try ImportSandbox()
        let old = sandbox.url("old.sqlite").path, new = sandbox.url("new.sqlite").path
        #expect(try LadeProcess.run(["init", old, "--model", Self.catalog, "--model-version", "Catalog"]).status == 0)
        #expect(try LadeProcess.run(["init", new, "--model", Self.catalog]).status == 0)
        let (oldResult, oldReport) = try inspectJSON([old, "--model", Self.catalog])
        #expect(oldResult.status == 0, "\(oldResult.stderr)")
        #expect(oldReport["modelVersion"] as? String == "Catalog")
        #expect(oldReport["currentModelVersion"] as? String == "Catalog 2")
        #expect(oldReport["migrationNeeded"] as? Bool == true)
        #expect((oldReport["entities"] as? [Any])?.isEmpty == false, "counted with the version that wrote it")
        let (_, newReport) = try inspectJSON([new, "--model", Self.catalog])
        #expect(newReport["modelVersion"] as? String == "Catalog 2")
        #expect(newReport["migrationNeeded"] as? Bool == false)
        let text = try LadeProcess.run(["inspect", old, "--model", Self.catalog])
        #expect(text.stdout.contains("Model version: Catalog (the current version is Catalog 2: migration needed)"), "\(text.stdout)")
    }

    @Test("a store no version matches: modelVersion null, the closest version and what differs, exit 1")
    func noMatch() throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("other.sqlite")
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Thing", attributes: [AttributeDescription(name: "a", type: .string)])])
        try SQLiteStore.create(at: store, model: model)
        let (result, report) = try inspectJSON([store.path, "--model", Self.catalog])
        #expect(result.status == 1)
        #expect(report["modelVersion"] is NSNull, "\(report)")
        let closest = report["closestModelVersion"] as? [String: Any]
        #expect(closest?["version"] as? String != nil)
        #expect(result.stderr.contains("no version of the model matches the store; the closest is"), "\(result.stderr)")
        #expect(result.stderr.hasSuffix("[store.modelMismatch]\n"))
    }

    @Test("Apple's stores: CoreDataPlus SampleModel_V1 and _V2 are told apart by layout, and by Apple's hashes with the .momd",
          .needsCorpus, arguments: [("SampleModel_V1.sqlite", "SampleModel"), ("SampleModel_V2.sqlite", "SampleModel2")])
    func appleStores(_ store: String, _ version: String) throws {
        let base = Corpus.root.appendingPathComponent("alemar11/CoreDataPlus/Tests/Resources/SampleModel")
        let path = base.appendingPathComponent("Fixtures/\(store)").path
        let bundle = base.appendingPathComponent("SampleModel.xcdatamodeld").path
        let (byLayout, layoutReport) = try inspectJSON([path, "--model", bundle])
        #expect(byLayout.status == 0, "\(byLayout.stderr)")
        #expect(layoutReport["modelVersion"] as? String == version)
        let (byHashes, hashReport) = try inspectJSON([path, "--model", bundle, "--momd", base.appendingPathComponent("Fixtures/SampleModel.momd").path])
        #expect(byHashes.status == 0, "\(byHashes.stderr)")
        #expect(hashReport["modelVersion"] as? String == version)
        #expect(hashReport["matchingModelVersions"] as? [String] == [version], "Apple's hashes single out one version")
    }

    @Test("a bundle without .xccurrentversion: inspect names the store's version and says the bundle names no current one, never '?'")
    func noCurrentVersion() throws {
        let sandbox = try ImportSandbox()
        // Named so that no version carries the bundle's name (Xcode's first version, taken as current).
        let bundle = sandbox.url("Shop.xcdatamodeld")
        try FileManager.default.copyItem(at: LadeProcess.root.appendingPathComponent(Self.catalog), to: bundle)
        try FileManager.default.removeItem(at: bundle.appendingPathComponent(".xccurrentversion"))
        let store = sandbox.url("old.sqlite").path
        let created = try LadeProcess.run(["init", store, "--model", bundle.path, "--model-version", "Catalog"])
        #expect(created.status == 0, "\(created.stderr)")
        let text = try LadeProcess.run(["inspect", store, "--model", bundle.path])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("Model version: Catalog (the bundle names no current version: it has no .xccurrentversion)"), "\(text.stdout)")
        #expect(!text.stdout.contains("version is ?"), "\(text.stdout)")
        let (result, report) = try inspectJSON([store, "--model", bundle.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(report["modelVersion"] as? String == "Catalog")
        #expect(report["currentModelVersion"] is NSNull, "\(report)")
        #expect(report["migrationNeeded"] is NSNull, "no current version to migrate to: \(report)")
    }
}
