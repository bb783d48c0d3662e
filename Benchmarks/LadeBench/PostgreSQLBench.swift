import Foundation

/// `lade-bench postgresql`: `lade run` into a PostgreSQL store beside `psql \copy` of the same
/// rows into a table of the same definition (columns and indexes of the store's ZPRODUCT) on
/// the same server, round by round; then 1, 2 and 4 workers, each a shard of the source as its
/// own job, into one store at once. Prints medians, ratios, rows/s and peak RSS per worker.
///
/// The server is the one `LADE_TEST_POSTGRES_*` names (make bench starts a private one with
/// scripts/with-pg-test-cluster).
enum PostgreSQLBench {
    struct Server {
        let socket: String, port: String, user: String, database: String
        static func fromEnvironment() -> Server {
            let environment = ProcessInfo.processInfo.environment
            guard let socket = environment["LADE_TEST_POSTGRES_SOCKET"], let port = environment["LADE_TEST_POSTGRES_PORT"] else {
                fail("the PostgreSQL lines need a server: run them through make bench (scripts/with-pg-test-cluster starts one)")
            }
            return Server(socket: socket, port: port, user: environment["LADE_TEST_POSTGRES_USER"] ?? "lade", database: environment["LADE_TEST_POSTGRES_DATABASE"] ?? "lade")
        }
        func url(schema: String) -> String {
            let host = socket.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? socket
            return "postgresql://\(user)@/\(database)?host=\(host)&port=\(port)&schema=\(schema)"
        }
        var psql: [String] { ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", socket, "-p", port, "-U", user, "-d", database] }
    }

    static func run(rows: Int, runs: Int, lade: String, work: URL, data: URL, model: String) {
        let server = Server.fromEnvironment()
        let log = work.appendingPathComponent("bench-postgresql.log")
        try? FileManager.default.removeItem(at: log)
        func sql(_ text: String) {
            let script = work.appendingPathComponent("pg.sql")
            try! text.write(to: script, atomically: true, encoding: .utf8)
            let result = measure(server.psql + ["-f", script.path], log: log)
            _ = result
        }
        func job(_ name: String, schema: String, source: URL) -> URL {
            let url = work.appendingPathComponent("bench-pg-\(name).yaml")
            try! benchJob(store: "{ type: postgresql, url: \"\(server.url(schema: schema))\" }", source: source, model: model)
                .write(to: url, atomically: true, encoding: .utf8)
            return url
        }
        let csv = data.appendingPathComponent("products.csv")
        // Shards for the workers' lines: the CSV split by line, each with the header.
        let shards = [2, 4].reduce(into: [Int: [URL]]()) { result, count in result[count] = split(csv, into: count, work: work) }

        struct Line { let label: String; var results: [Measurement] = []; var busy: [Double] = [] }
        var copyLine = Line(label: "psql \\copy into the same table definition")
        var first = Line(label: "lade run csv into PostgreSQL")
        var rerun = Line(label: "lade run csv --force (re-run)")
        var workers: [Int: Line] = [1: Line(label: "1 worker"), 2: Line(label: "2 workers"), 4: Line(label: "4 workers")]
        print("\nPostgreSQL (\(server.socket), port \(server.port)): rows \(rows), \(runs) runs each, alternating")
        for round in 1...runs {
            sql("DROP SCHEMA IF EXISTS bench_lade CASCADE; DROP SCHEMA IF EXISTS bench_copy CASCADE;")
            first.results.append(measure([lade, "run", job("first", schema: "bench_lade", source: csv).path, "--quiet"], log: log))
            rerun.results.append(measure([lade, "run", job("first", schema: "bench_lade", source: csv).path, "--force", "--quiet"], log: log))
            // The rows lade wrote, as CSV, copied by psql into an empty table of ZPRODUCT's
            // definition (LIKE … INCLUDING ALL: columns, defaults, indexes), in one transaction.
            let rowsCSV = work.appendingPathComponent("pg-rows.csv")
            if round == 1 {
                sql("\\copy (SELECT * FROM bench_lade.\"ZPRODUCT\" ORDER BY \"Z_PK\") TO '\(rowsCSV.path)' WITH (FORMAT csv)")
            }
            sql("CREATE SCHEMA bench_copy; CREATE TABLE bench_copy.\"ZPRODUCT\" (LIKE bench_lade.\"ZPRODUCT\" INCLUDING ALL);")
            let copyScript = work.appendingPathComponent("pg-copy.sql")
            try! "BEGIN;\n\\copy bench_copy.\"ZPRODUCT\" FROM '\(rowsCSV.path)' WITH (FORMAT csv)\nCOMMIT;\n".write(to: copyScript, atomically: true, encoding: .utf8)
            copyLine.results.append(measure(server.psql + ["-f", copyScript.path], log: log))
            for count in [1, 2, 4] {
                let schema = "bench_workers"
                sql("DROP SCHEMA IF EXISTS \(schema) CASCADE;")
                // The store made first, so the workers do not race to make it.
                _ = measure([lade, "init", "--model", model, server.url(schema: schema)], log: log)
                let sources = count == 1 ? [csv] : shards[count]!
                let jobs = sources.enumerated().map { job("w\(count)-\($0.offset)", schema: schema, source: $0.element) }
                let before = MachineCPU.now()
                workers[count]!.results.append(measureTogether(jobs.map { [lade, "run", $0.path, "--quiet"] }, log: log))
                if let before, let after = MachineCPU.now() { workers[count]!.busy.append(after.busyShare(since: before)) }
            }
            print("  round \(round): copy \(String(format: "%.2f", copyLine.results.last!.seconds))s  first \(String(format: "%.2f", first.results.last!.seconds))s  re-run \(String(format: "%.2f", rerun.results.last!.seconds))s  workers " + [1, 2, 4].map { String(format: "%.2fs", workers[$0]!.results.last!.seconds) }.joined(separator: "/"))
        }
        sql("DROP SCHEMA IF EXISTS bench_lade CASCADE; DROP SCHEMA IF EXISTS bench_copy CASCADE; DROP SCHEMA IF EXISTS bench_workers CASCADE;")
        let copyMedian = median(copyLine.results.map(\.seconds))
        print("\n| what | wall s (median) | rows/s | peak RSS MiB per process (max) | vs psql \\copy | target | met |")
        print("|---|---:|---:|---:|---:|---|---|")
        func row(_ line: Line, target: Double?) {
            let wall = median(line.results.map(\.seconds)), peak = Double(line.results.map(\.peakBytes).max() ?? 0) / 1_048_576
            let met = target.map { wall / copyMedian <= $0 && peak <= 64 ? "yes" : "no" } ?? ""
            print(String(format: "| %@ | %.2f | %.0f | %.1f | %.2f× | %@ | %@ |", line.label, wall, Double(rows) / wall, peak, wall / copyMedian,
                         target.map { String(format: "≤ %.1f×, RSS ≤ 64 MiB", $0) } ?? "", met))
        }
        row(copyLine, target: nil)
        row(first, target: 1.3)
        row(rerun, target: 1.0)
        var previous = 0.0
        for count in [1, 2, 4] {
            let line = workers[count]!
            let rate = Double(rows) / median(line.results.map(\.seconds))
            row(line, target: nil)
            // How busy the machine's cores were (server included): with every core busy, more
            // workers can only share the same CPU.
            let busy = line.busy.isEmpty ? "" : String(format: " (all %d cores %.0f%% busy, median)", ProcessInfo.processInfo.activeProcessorCount, 100 * median(line.busy))
            print("  \(count) worker\(count == 1 ? "" : "s"): \(String(format: "%.0f", rate)) rows/s\(busy)\(rate >= previous ? "" : " — FEWER than with fewer workers")")
            previous = rate
        }
        print("\nall runs (s): " + ([copyLine, first, rerun] + [1, 2, 4].map { workers[$0]! }).map { "\($0.label): " + $0.results.map { String(format: "%.2f", $0.seconds) }.joined(separator: ", ") }.joined(separator: "; "))
    }

    /// The CSV split by line into `count` files, each with the header.
    static func split(_ csv: URL, into count: Int, work: URL) -> [URL] {
        let outputs = (0..<count).map { work.appendingPathComponent("products-\(count)-\($0).csv") }
        if outputs.allSatisfy({ FileManager.default.fileExists(atPath: $0.path) }) { return outputs }
        guard let input = fopen(csv.path, "r") else { fail("cannot read \(csv.path)") }
        defer { fclose(input) }
        let files = outputs.map { fopen($0.path, "w")! }
        defer { files.forEach { fclose($0) } }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        var index = -1
        // A quoted field may hold a newline; the generator writes none (names and descriptions
        // are words), so a line is a record.
        while getline(&line, &capacity, input) > 0 {
            if index < 0 { files.forEach { fputs(line, $0) } } else { fputs(line, files[index % count]) }
            index += 1
        }
        free(line)
        return outputs
    }

    /// Runs commands at once; the wall time until the last ends, and the largest peak RSS.
    static func measureTogether(_ commands: [[String]], log: URL) -> Measurement {
        let start = DispatchTime.now()
        // A thread each (not concurrentPerform, which runs as many at once as there are cores).
        final class Results: @unchecked Sendable {
            let lock = NSLock()
            var values: [Measurement] = []
        }
        let results = Results()
        let group = DispatchGroup()
        for command in commands {
            group.enter()
            Thread {
                let result = measure(command, log: log)
                results.lock.withLock { results.values.append(result) }
                group.leave()
            }.start()
        }
        group.wait()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        return Measurement(seconds: seconds, peakBytes: results.values.map(\.peakBytes).max() ?? 0)
    }
}

/// The machine's CPU time from /proc/stat (every core, in clock ticks): busy and all.
struct MachineCPU {
    let busy: Double, total: Double

    /// Now; nil where /proc/stat cannot be read (not Linux).
    static func now() -> MachineCPU? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return nil }
        // user nice system idle iowait irq softirq steal …
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 5 else { return nil }
        let total = fields.prefix(8).reduce(0, +)
        return MachineCPU(busy: total - fields[3] - fields[4], total: total)
    }

    /// The share of the time since `earlier` the cores were busy (0…1).
    func busyShare(since earlier: MachineCPU) -> Double {
        let total = self.total - earlier.total
        return total > 0 ? (busy - earlier.busy) / total : 0
    }
}
