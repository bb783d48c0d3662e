import Foundation
import Testing
@testable import LadePipeline

/// When an import session commits (`CommitPolicy`): by time and by count on SQLite, once at the
/// end on a store whose every save writes the whole file, once and all or nothing for a seed.
@Suite("Commit policies: by time, by count, at the end, once")
struct CommitPolicyTests {
    @Test("periodic with a count: due once that many batches came since the last commit, however little time passed")
    func byCount() {
        let policy = CommitPolicy.periodic(seconds: 3_600, batches: 3)
        let now = DispatchTime.now()
        #expect(!policy.isDue(batchesSinceCommit: 2, lastCommit: now))
        #expect(policy.isDue(batchesSinceCommit: 3, lastCommit: now))
        #expect(policy.commitsOnStop)
    }

    @Test("periodic by time: due once the seconds passed since the last commit, however few batches came")
    func byTime() {
        let policy = CommitPolicy.periodic(seconds: 0.5, batches: nil)
        #expect(!policy.isDue(batchesSinceCommit: 1_000_000, lastCommit: .now()))
        #expect(policy.isDue(batchesSinceCommit: 1, lastCommit: .now() - 1.0))
    }

    @Test("at the end and once are never due after a batch; only once commits nothing on a stop")
    func atTheEnd() {
        let longAgo = DispatchTime.now() - 3_600.0
        for policy in [CommitPolicy.atEnd, .once] {
            #expect(!policy.isDue(batchesSinceCommit: 1_000_000, lastCommit: longAgo), "\(policy)")
        }
        #expect(CommitPolicy.atEnd.commitsOnStop)
        #expect(!CommitPolicy.once.commitsOnStop)
    }

    @Test("on a store several runs write at once (PostgreSQL), a batch that created destination objects commits at once, so another run does not wait on them until the next commit")
    func afterCreating() {
        let now = DispatchTime.now()
        let shared = CommitPolicy.periodic(seconds: 3_600, batches: nil, afterCreating: true)
        #expect(!shared.isDue(batchesSinceCommit: 1, lastCommit: now))
        #expect(shared.isDue(batchesSinceCommit: 1, lastCommit: now, createdDestinations: 2))
        #expect(!CommitPolicy.periodic(seconds: 3_600, batches: nil).isDue(batchesSinceCommit: 1, lastCommit: now, createdDestinations: 2))
    }

    @Test("lade run commits a SQLite store by the job's commitSeconds and commitEvery, an XML or binary store at the end",
          arguments: [("catalog.sqlite", CommitPolicy.periodic(seconds: 7, batches: 4)), ("catalog.xml", .atEnd), ("catalog.binary", .atEnd)])
    func run(store: String, expected: CommitPolicy) throws {
        let job = try PipelineFixtures.job("""
            kind: import
            model: \(PipelineFixtures.catalog.path)
            store: { path: \(store) }
            batch: { size: 100, commitEvery: 4, commitSeconds: 7 }
            source: categories.csv
            entity: Category
            key: [name]
            """)
        #expect(CommitPolicy.run(job) == expected)
    }

    @Test("lade run commits a PostgreSQL store every 10 s unless the job says (SQLite every 2 s); the job's commitSeconds wins on either")
    func storeDefaults() throws {
        func job(_ store: String, _ batch: String) throws -> Job {
            try PipelineFixtures.job("""
                kind: import
                model: \(PipelineFixtures.catalog.path)
                store: \(store)
                batch: \(batch)
                source: categories.csv
                entity: Category
                key: [name]
                """)
        }
        let postgreSQL = "{ type: postgresql, url: \"postgresql://lade@/lade?host=%2Ftmp&schema=s\" }"
        #expect(CommitPolicy.run(try job(postgreSQL, "{ size: 100 }")) == .periodic(seconds: 10, batches: nil, afterCreating: true))
        #expect(CommitPolicy.run(try job(postgreSQL, "{ size: 100, commitSeconds: 3 }")) == .periodic(seconds: 3, batches: nil, afterCreating: true))
        #expect(CommitPolicy.run(try job("{ path: catalog.sqlite }", "{ size: 100 }")) == .periodic(seconds: 2, batches: nil))
    }
}
