import Crypto
import Foundation
import Testing

@Suite("lade init and lade inspect STORE, run as a process")
struct StoreCLITests {
    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("lade-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func digest(_ path: String) throws -> String {
        guard FileManager.default.fileExists(atPath: path) else { return "absent" }
        return SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path))).map { String(format: "%02x", $0) }.joined()
    }

    @Test("lade init creates an empty store that lade inspect --json reports entity by entity")
    func initThenInspect() throws {
        let temp = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let store = temp.appendingPathComponent("catalog.sqlite").path
        let created = try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld"])
        #expect(created.status == 0, "\(created.stderr)")
        let inspected = try LadeProcess.run(["inspect", store, "--model", "samples/Catalog.xcdatamodeld", "--json"])
        #expect(inspected.status == 0, "\(inspected.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(inspected.stdout.utf8)) as? [String: Any])
        let entities = try #require(object["entities"] as? [[String: Any]])
        #expect(entities.map { $0["name"] as? String } == ["Category", "Media", "Image", "Video", "Product", "Supplier"])
        #expect(entities.allSatisfy { $0["count"] as? Int == 0 })
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["NSStoreType"] as? String == "SQLite")
        #expect(metadata["NSStoreUUID"] as? String != nil)

        let again = try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld"])
        #expect(again.status == 1)
        #expect(again.stderr.contains("already there"))
        let wrongVersion = try LadeProcess.run(["inspect", store, "--model", "samples/Catalog.xcdatamodeld", "--model-version", "Catalog"])
        #expect(wrongVersion.status == 1)
        #expect(wrongVersion.stderr.contains("does not match the model"))
    }

    @Test("an unsupported store type is a usage error")
    func unsupportedType() throws {
        let result = try LadeProcess.run(["init", "/tmp/never.sqlite", "--model", "samples/Catalog.xcdatamodeld", "--type", "cassette"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("is not one of sqlite, xml, binary or postgresql"))
    }

    @Test("inspecting a store Apple wrote counts its objects and leaves the file and its -wal as they were", .needsCorpus)
    func inspectAppleStore() throws {
        let temp = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let folder = Corpus.root.appendingPathComponent("CoderDream/Core-Data-by-Tutorials/SourceCode/Core Data by Tutorials v6/09-multiple-managed-object-contexts/final/SurfJournal/SurfJournal")
        let store = temp.appendingPathComponent("SurfJournalModel.sqlite").path
        for suffix in ["", "-wal", "-shm"] {
            try copyWritable(atPath: folder.appendingPathComponent("CoreDataSeed/SurfJournalModel.sqlite").path + suffix, toPath: store + suffix)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: store + suffix)
        }
        let before = [try digest(store), try digest(store + "-wal")]
        let result = try LadeProcess.run(["inspect", store, "--model", folder.appendingPathComponent("SurfJournalModel.xcdatamodeld").path, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let entities = try #require(object["entities"] as? [[String: Any]])
        #expect(entities.count == 1)
        #expect(entities.first?["name"] as? String == "JournalEntry")
        #expect(entities.first?["count"] as? Int == 5000)
        #expect([try digest(store), try digest(store + "-wal")] == before)
    }
}
