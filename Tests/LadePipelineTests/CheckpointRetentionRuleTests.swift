import Foundation
import Lade
import Testing
@testable import LadePipeline

@Suite("Checkpoint retention: which finished checkpoints a commit drops")
struct CheckpointRetentionRuleTests {
    static let now = Date(timeIntervalSinceReferenceDate: 800_000_000)

    static func entry(_ entity: String, _ source: String, complete: Bool, daysAgo: Double) -> (String, PropertyListValue) {
        let checkpoint = Checkpoint(source: nil, resume: ResumePoint(byteOffset: 10, line: 2, recordIndex: 1), complete: complete,
                                    rejectsLength: 0, counts: ImportCounts(), updatedAt: now.addingTimeInterval(-daysAgo * 86_400))
        return (Checkpoint.metadataKey(entity: entity, source: URL(fileURLWithPath: source)), checkpoint.propertyList)
    }

    static let metadata: [String: PropertyListValue] = Dictionary(uniqueKeysWithValues: [
        entry("Product", "/feeds/p1.csv", complete: true, daysAgo: 5),
        entry("Product", "/feeds/p2.csv", complete: true, daysAgo: 4),
        entry("Product", "/feeds/p3.csv", complete: true, daysAgo: 3),
        entry("Product", "/feeds/p0.csv", complete: false, daysAgo: 400),
        entry("Supplier", "/feeds/s1.csv", complete: true, daysAgo: 200),
        entry("Supplier", "/feeds/s2.csv", complete: true, daysAgo: 1),
    ] + [("NSStoreType", .string("SQLite")), ("lade.other", .string("x"))])

    @Test("per entity, the newest finished checkpoints are kept, counting the running one; partial ones always stay")
    func byCount() {
        let running = Checkpoint.metadataKey(entity: "Product", source: URL(fileURLWithPath: "/feeds/p4.csv"))
        let expired = Checkpoint.expiredKeys(in: Self.metadata, keeping: running, retention: CheckpointRetention(keep: 2), now: Self.now)
        #expect(expired == ["lade.import:Product:/feeds/p1.csv", "lade.import:Product:/feeds/p2.csv"])
    }

    @Test("finished checkpoints older than maxAge are dropped whatever the count")
    func byAge() {
        let running = Checkpoint.metadataKey(entity: "Supplier", source: URL(fileURLWithPath: "/feeds/s2.csv"))
        let expired = Checkpoint.expiredKeys(in: Self.metadata, keeping: running, retention: CheckpointRetention(keep: 30, maxAge: 90 * 86_400), now: Self.now)
        #expect(expired == ["lade.import:Supplier:/feeds/s1.csv"])
    }

    @Test("a job reads checkpoints: keep and maxAgeDays")
    func jobField() throws {
        let job = try Job(parsing: """
            kind: import
            model: m.xcdatamodeld
            store: { path: s.sqlite }
            source: a.csv
            entity: Product
            checkpoints: { keep: 7, maxAgeDays: 2 }
            """, file: "job.yaml", directory: URL(fileURLWithPath: "/tmp"))
        #expect(job.checkpoints == CheckpointRetention(keep: 7, maxAge: 2 * 86_400))
    }
}
