import Foundation
import LadeTestSupport
import LadeTestTraits
import Testing

/// One run per job on a PostgreSQL store (issue 43 §4.9): the run's advisory lock sits on a
/// session of its own, idle while the run works. A role's `idle_session_timeout` must not end
/// it (a second run of the job would then start while the first goes on), and a lock session
/// ended all the same (terminated) stops the run before its next commit.
@Suite("lade run on PostgreSQL: the run's lock is kept, or the run stops", .serialized, .slow)
struct PostgreSQLRunLockTests {
    let server: PostgresTestServer
    init() throws { server = try PostgresTestServer.fromEnvironment() }

    /// The key Lade's lock takes for a schema (FNV-1a of its name, as an int4).
    static func lockKey(_ text: String) -> Int32 {
        var hash: UInt32 = 0x811c_9dc5
        for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
        return Int32(bitPattern: hash)
    }

    /// Supplier rows `first..<first + count` as CSV lines (about 26 bytes each): the reader takes
    /// its input 256 KiB at a time, so a run commits while its FIFO stays open only past that.
    static func rows(from first: Int, count: Int) -> Data {
        Data((first..<(first + count)).map { String(format: "S-%06d,Supplier %06d\n", $0, $0) }.joined().utf8)
    }

    /// Writes `data` into `feed` on a thread of its own (a FIFO blocks its writer); a reader
    /// gone (the run ended) ends the write with EPIPE, not the test process with SIGPIPE.
    static func feed(_ feed: FileHandle, _ data: Data) -> Thread {
        signal(SIGPIPE, SIG_IGN)
        let thread = Thread { try? feed.write(contentsOf: data) }
        thread.start()
        return thread
    }

    /// Waits until the run has committed some rows and commits no more (its reader waits for
    /// input); the count then.
    func settled(_ schema: String, _ run: LadeChild) throws -> Int {
        var last = -1, since = Date()
        let deadline = Date().addingTimeInterval(90)
        while Date() < deadline && run.process.isRunning {
            let now = Int((try? suppliers(schema)) ?? "") ?? 0
            if now != last { (last, since) = (now, Date()) } else if now > 0 && Date().timeIntervalSince(since) > 1.5 { return now }
            usleep(100_000)
        }
        Issue.record("the run committed nothing, or did not settle: \(run.stderr)")
        return last
    }

    /// A FIFO job importing suppliers into `url`, a batch committed every 1,000 rows.
    func fifoJob(_ sandbox: ImportSandbox, url: String) throws -> String {
        let fifo = sandbox.url("feed.fifo").path
        try #require(mkfifo(fifo, 0o600) == 0)
        try sandbox.write("job.yaml", """
            kind: import
            model: \(ImportSandbox.catalogModel.path)
            store: { url: "\(url)" }
            source: { path: feed.fifo, format: csv }
            entity: Supplier
            key: code
            batch: { size: 1000, commitEvery: 1 }

            """)
        return fifo
    }

    func suppliers(_ schema: String) throws -> String {
        try server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZSUPPLIER\"")
    }

    @Test("a role's idle_session_timeout does not end the lock's session: a second run of the job, after the timeout, is turned away (exit 75)")
    func idleTimeoutKeepsTheLock() throws {
        let sandbox = try ImportSandbox()
        let schema = server.newSchemaName("lock_idle")
        let role = "lade_idle_\(schema.suffix(12).filter { $0.isLetter || $0.isNumber })".lowercased()
        _ = try server.psql("CREATE ROLE \(role) LOGIN SUPERUSER; ALTER ROLE \(role) SET idle_session_timeout = '1500ms'")
        defer {
            try? server.dropSchema(schema)
            _ = try? server.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '\(role)'")
            _ = try? server.psql("DROP ROLE IF EXISTS \(role)")
        }
        let url = server.storeURL(schema: schema).replacingOccurrences(of: "postgresql://\(server.user)@", with: "postgresql://\(role)@")
        try #require(url.contains(role))
        let fifo = try fifoJob(sandbox, url: url)
        let first = try LadeChild(["run", "job.yaml"], in: sandbox.directory)
        let feed = try #require(FileHandle(forWritingAtPath: fifo))
        _ = Self.feed(feed, Data("code,name\n".utf8) + Self.rows(from: 1, count: 12_000))
        _ = try settled(schema, first)
        // Past the role's timeout, the lock's session idle all along.
        Thread.sleep(forTimeInterval: 3)
        let second = try LadeChild(["run", "job.yaml"], in: sandbox.directory)
        let secondDeadline = Date().addingTimeInterval(20)
        while second.process.isRunning && Date() < secondDeadline { usleep(20_000) }
        if second.process.isRunning { second.send(SIGKILL) }
        #expect(second.finish() == 75, "the second run was not turned away: \(second.stderr)")
        try? feed.close()
        first.send(SIGKILL)
        _ = first.finish()
    }

    @Test("a lock whose session is terminated stops the run before its next commit (exit 69, saying so); what it committed stays")
    func terminatedLockStopsTheRun() throws {
        let sandbox = try ImportSandbox()
        let schema = server.newSchemaName("lock_lost")
        defer { try? server.dropSchema(schema) }
        let fifo = try fifoJob(sandbox, url: server.storeURL(schema: schema))
        let run = try LadeChild(["run", "job.yaml"], in: sandbox.directory)
        let feed = try #require(FileHandle(forWritingAtPath: fifo))
        _ = Self.feed(feed, Data("code,name\n".utf8) + Self.rows(from: 1, count: 12_000))
        let committed = try settled(schema, run)
        let terminated = try server.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND classid = (\(Self.lockKey(schema))::int4)::oid")
        #expect(terminated == "1")
        let writer = Self.feed(feed, Self.rows(from: 20_000, count: 12_000))
        let finished = Date().addingTimeInterval(120)
        while run.process.isRunning && Date() < finished { usleep(20_000) }
        if run.process.isRunning { run.send(SIGKILL) }
        let status = run.finish()
        while writer.isExecuting { usleep(10_000) }
        try? feed.close()
        #expect(status == 69, "\(run.stderr)")
        #expect(run.stderr.contains("lock on the server (one run per job) was lost"), "\(run.stderr)")
        #expect(try suppliers(schema) == String(committed))
    }
}
