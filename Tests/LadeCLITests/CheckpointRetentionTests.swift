import Foundation
import Lade
import Testing

@Suite("Import checkpoints stay bounded", .eachWriter)
struct CheckpointRetentionTests {
    @Test("a feed with a dated file name keeps only the newest finished checkpoints, listed by lade meta checkpoints")
    func datedFeed() throws {
        let sandbox = try ImportSandbox()
        try sandbox.job("""
            source: feed.csv
            entity: Supplier
            key: code
            checkpoints: { keep: 3 }

            """)
        let job = try String(contentsOf: sandbox.url("job.yaml"), encoding: .utf8)
        for night in 1...5 {
            let name = "suppliers-2026-11-0\(night).csv"
            try sandbox.write(name, "code,name\nN\(night),night \(night)\n")
            try sandbox.write("night.yaml", job.replacingOccurrences(of: "source: feed.csv", with: "source: \(name)"))
            let result = try sandbox.lade(["run", "night.yaml", "--quiet"])
            #expect(result.status == 0, "\(result.stderr)")
        }
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: sandbox.store)
        let kept = metadata.keys.filter { $0.hasPrefix("lade.import:") }.sorted()
        #expect(kept == (3...5).map { "lade.import:Supplier:" + sandbox.url("suppliers-2026-11-0\($0).csv").path })
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZSUPPLIER") == 5)

        let listing = try sandbox.lade(["meta", "checkpoints", "catalog.sqlite"])
        #expect(listing.status == 0, "\(listing.stderr)")
        let lines = listing.stdout.split(separator: "\n")
        #expect(lines.count == 4, "\(listing.stdout)")
        #expect(lines.first?.hasPrefix("ENTITY") == true)
        #expect(lines.dropFirst().allSatisfy { $0.contains("Supplier") && $0.contains("complete") })
        #expect(lines.last?.hasSuffix("suppliers-2026-11-05.csv") == true)
        let json = try sandbox.lade(["meta", "checkpoints", "catalog.sqlite", "--json"])
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(objects.map { $0["rows"] as? Int } == [1, 1, 1])
    }

    @Test("keep must be a positive number")
    func badKeep() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("feed.csv", "code\nA\n")
        try sandbox.job("source: feed.csv\nentity: Supplier\nkey: code\ncheckpoints: { keep: 0 }\n")
        let result = try sandbox.lade(["validate", "job.yaml"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("job.yaml:7:22: checkpoints.keep"), "\(result.stderr)")
    }
}
