import Foundation
import Lade
import LadeTestSupport
import Testing

/// `lade run` into a PostgreSQL store, as processes, on the real test server: several workers
/// at once, and kills (SIGKILL, and the server stopped as by a power cut) then a re-run.
@Suite("lade run into PostgreSQL: workers and kills", .slow)
struct PostgreSQLImportTests {
    /// Rows of each worker's source (25 times as many for the kill test); `LADE_PG_ROWS=40000`
    /// makes the kill test's import 1,000,000 rows.
    static let rows = ProcessInfo.processInfo.environment["LADE_PG_ROWS"].flatMap { Int($0) } ?? 4_000

    /// A CSV of `count` products starting at key `first`, their stock telling which source wrote them.
    static func csv(first: Int, count: Int, stockBase: Int) -> String {
        var text = "sku,name,price,stock,category\n"
        for index in first..<(first + count) {
            text += "\(GeneratedProducts.sku(index)),\"Product \(index)\",\(index % 1000).\(index % 100),\(stockBase + index),C\(index % 50)\n"
        }
        return text
    }

    static func job(url: String, source: String, batchSize: Int = 250) -> String {
        """
        store: { type: postgresql, url: "\(url)" }
        \(GeneratedProducts.job(source: source, batchSize: batchSize))
        """
    }

    /// `SELECT` through psql, trimmed.
    static func value(_ server: PostgresTestServer, _ sql: String) throws -> String {
        try server.psql(sql).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A digest of every product (key, stock, price, name, category) of a store's schema.
    static func checksum(_ server: PostgresTestServer, schema: String) throws -> String {
        let q = PostgresTestServer.quotedIdentifier(schema)
        return try value(server, """
            SELECT count(*) || ':' || md5(string_agg(p."ZSKU" || '|' || p."ZSTOCK" || '|' || p."ZPRICE" || '|' || p."ZNAME" || '|' || c."ZNAME", ',' ORDER BY p."ZSKU"))
            FROM \(q)."ZPRODUCT" p LEFT JOIN \(q)."ZCATEGORY" c ON c."Z_PK" = p."ZCATEGORY"
            """)
    }

    @Test("four workers at once, sources overlapping by 10% of their keys: every key once, overlaps as the last write with Z_OPT advanced, four checkpoints, a fifth run of a running job exits 75")
    func fourWorkers() throws {
        let server = try PostgresTestServer.fromEnvironment()
        let schema = server.newSchemaName("workers")
        defer { try? server.dropSchema(schema) }
        let sandbox = try ImportSandbox()
        let url = server.storeURL(schema: schema)
        let initialized = try sandbox.lade(["init", "--model", ImportSandbox.catalogModel.path, url])
        try #require(initialized.status == 0, "\(initialized.stderr)")
        let count = Self.rows, step = count * 9 / 10
        var jobs: [String] = []
        for worker in 0..<4 {
            _ = try sandbox.write("products-\(worker).csv", Self.csv(first: worker * step, count: count, stockBase: worker * 10_000_000))
            try sandbox.job(Self.job(url: url, source: "products-\(worker).csv"), named: "job-\(worker).yaml")
            jobs.append("job-\(worker).yaml")
        }
        let children = try jobs.map { try LadeChild(["run", $0, "--progress", "0.01"], in: sandbox.directory) }
        // A second run of job 0 while the first holds its lock.
        _ = children[0].wait(until: { children[0].rowsReported > 0 })
        let fifth = try LadeChild(["run", jobs[0]], in: sandbox.directory)
        let fifthStatus = fifth.finish()
        let statuses = children.map { $0.finish() }
        #expect(statuses == [0, 0, 0, 0], "workers: \(statuses); \(children.map { $0.stderr.suffix(300) })")
        #expect(fifthStatus == 75, "a second run of a running job: \(fifthStatus) \(fifth.stderr.suffix(300))")
        #expect(fifth.stderr.contains("locked"), "\(fifth.stderr)")

        let q = PostgresTestServer.quotedIdentifier(schema)
        let keys = 3 * step + count
        #expect(try Self.value(server, "SELECT count(*) || '/' || count(DISTINCT \"ZSKU\") FROM \(q).\"ZPRODUCT\"") == "\(keys)/\(keys)")
        // Keys two sources share: the stock of one of them (the write committed last), written
        // twice, so Z_OPT 2; the others once, Z_OPT 1.
        var overlaps = 0
        for worker in 1..<4 {
            for index in (worker * step)..<((worker - 1) * step + count) {
                overlaps += 1
                if overlaps % 97 != 0 { continue }
                let row = try Self.value(server, "SELECT \"ZSTOCK\" || ',' || \"Z_OPT\" FROM \(q).\"ZPRODUCT\" WHERE \"ZSKU\" = '\(GeneratedProducts.sku(index))'")
                let mine = "\(worker * 10_000_000 + index)", theirs = "\((worker - 1) * 10_000_000 + index)"
                #expect(row == "\(mine),2" || row == "\(theirs),2", "overlapping key \(index): \(row)")
            }
        }
        #expect(overlaps == 3 * (count - step))
        #expect(try Self.value(server, "SELECT count(*) FROM \(q).\"ZPRODUCT\" WHERE \"Z_OPT\" = 2") == "\(overlaps)")
        #expect(try Self.value(server, "SELECT count(*) FROM \(q).\"ZCATEGORY\"") == "50")
        // Each job's checkpoint, a row of its own: complete, every row counted.
        for worker in 0..<4 {
            let checkpoint = try StoreReading.checkpoint(URL(string: url)!, entity: "Product", source: sandbox.url("products-\(worker).csv"))
            #expect(checkpoint?["complete"] == .bool(true), "job \(worker): \(String(describing: checkpoint))")
            #expect(checkpoint?["rows"]?.integer == Int64(count), "job \(worker)")
        }
        #expect(try Self.value(server, "SELECT count(*) FROM \(q).\"Z_LADECHECKPOINT\"") == "4")
    }

    @Test("SIGKILL at seeded points of an import, then the server stopped as by a power cut, then a re-run: every row once, the checksum of an uninterrupted run")
    func killsAndServerCrash() throws {
        let cluster = try PrivatePostgresCluster()
        defer { cluster.stop() }
        let server = cluster.server
        let sandbox = try ImportSandbox()
        // Enough rows that the batch writer is still running when each kill lands.
        let count = Self.rows * 25
        _ = try sandbox.write("products.csv", Self.csv(first: 0, count: count, stockBase: 0))
        // The reference: one uninterrupted run into a schema of its own.
        let reference = server.newSchemaName("reference")
        try sandbox.job(Self.job(url: server.storeURL(schema: reference), source: "products.csv"), named: "reference.yaml")
        let whole = try sandbox.lade(["run", "reference.yaml"])
        try #require(whole.status == 0, "\(whole.stderr)")
        let expected = try Self.checksum(server, schema: reference)

        let schema = server.newSchemaName("killed")
        let url = server.storeURL(schema: schema)
        try sandbox.job(Self.job(url: url, source: "products.csv"))
        let source = sandbox.url("products.csv")
        func committed() throws -> Int64 {
            guard let checkpoint = try? StoreReading.checkpoint(URL(string: url)!, entity: "Product", source: source) else { return 0 }
            return checkpoint["rows"]?.integer ?? -1
        }
        // First the server stopped under a running import, as by a power cut: the run fails with a
        // connection error, and after recovery the store holds what its checkpoint says.
        let child = try LadeChild(["run", "job.yaml", "--progress", "0.01"], in: sandbox.directory)
        _ = child.wait(until: { child.rowsReported >= count / 10 })
        try cluster.stopImmediately()
        let status = child.finish()
        #expect(status != 0, "the run went on without its server")
        #expect(child.stderr.contains("store.connection") || child.stderr.contains("connection"), "\(child.stderr.suffix(400))")
        try cluster.restart()
        let afterCrash = try committed()
        #expect(try Self.value(server, "SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZPRODUCT\"") == "\(afterCrash)", "after the crash the store holds what its checkpoint says")
        var random = SeededGenerator(seed: 20_261_128)
        var points: [Int64] = []
        let kills = Int(ProcessInfo.processInfo.environment["LADE_PG_KILLS"] ?? "") ?? 20
        for kill in 1...kills {
            let before = try committed()
            // Spread over the import, each at least 2% past the checkpoint and 5% before the end
            // (the batch writer is fast enough to finish a short remainder before a kill lands).
            let spread = count * kill / (kills + 2) + random.int(count / 50)
            let target = min(max(spread, Int(before) + count / 50), count - count / 20)
            let child = try LadeChild(["run", "job.yaml", "--progress", "0.01"], in: sandbox.directory)
            if child.wait(until: { child.rowsReported >= target }) { usleep(useconds_t(random.int(20_000))) }
            child.send(SIGKILL)
            child.finish()
            try #require(child.endedBySignal == SIGKILL, "kill \(kill): the run ended before the kill: \(child.stderr.suffix(300))")
            let after = try committed()
            #expect(after >= before, "kill \(kill): the checkpoint never goes back")
            // The store holds exactly the committed rows (keys come in the source's order).
            #expect(try Self.value(server, "SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZPRODUCT\"") == "\(after)", "kill \(kill)")
            points.append(after)
        }
        #expect(Set(points).count > 1, "the kills landed at different points: \(points)")
        let resumed = try sandbox.lade(["run", "job.yaml"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try Self.checksum(server, schema: schema) == expected)
        #expect(try Self.value(server, "SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZPRODUCT\" WHERE \"Z_OPT\" <> 1") == "0", "no row written twice")
    }

    @Test("lade convert SQLite → PostgreSQL cut off by the server's stop is store.connection, exit 69, saying the server went away and nothing was changed; the schema stays empty")
    func convertCutOffByServerStop() throws {
        let cluster = try PrivatePostgresCluster()
        defer { cluster.stop() }
        let server = cluster.server
        let sandbox = try ImportSandbox()
        // A SQLite source big enough that the conversion is still writing when the server stops.
        let count = Self.rows * 25
        _ = try sandbox.write("products.csv", Self.csv(first: 0, count: count, stockBase: 0))
        try sandbox.job(GeneratedProducts.job(source: "products.csv", batchSize: 5_000))
        let imported = try sandbox.lade(["run", "job.yaml"])
        try #require(imported.status == 0, "\(imported.stderr)")
        let schema = server.newSchemaName("convert_cut")
        let child = try LadeChild(["convert", "catalog.sqlite", server.storeURL(schema: schema), "--progress", "0.01"], in: sandbox.directory)
        try #require(child.wait(until: { child.stderr.contains("convert: ") }), "the conversion ended before the stop: \(child.stderr.suffix(300))")
        try cluster.stopImmediately()
        let status = child.finish()
        #expect(status == 69, "exit \(status): \(child.stderr.suffix(400))")
        let error = child.stderr.components(separatedBy: "\n").last { $0.hasPrefix("lade: error: ") } ?? ""
        #expect(error.contains("[store.connection]") && error.contains("lost") && error.contains("nothing"), "\(child.stderr.suffix(400))")
        #expect(!error.contains("SQLSTATE )"), "\(error)")
        try cluster.restart()
        #expect(try Self.value(server, "SELECT count(*) FROM pg_tables WHERE schemaname = \(PostgresTestServer.quotedLiteral(schema))") == "0", "the conversion was one transaction")
    }
}
