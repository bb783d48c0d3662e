// lade-bench: `make bench`. Generates a deterministic product data set (CSV, NDJSON, JSON
// array), then, in one invocation, times sqlite3's own `.import --csv` into the same table
// shape and `lade run` on each format (plus a forced re-run over unchanged data), alternating
// them round by round, and prints medians, rows/s, peak RSS and the ratio to sqlite3. A last
// line, a reference without a target, has sqlite3 import the rows lade wrote into lade's own
// table and indexes in WAL mode with lade's page cache: SQLite's cost alone on that layout.
//
//   lade-bench generate --rows N --out DIR
//   lade-bench run [--rows N] [--runs R] [--lade PATH] [--work DIR] [--formats csv,ndjson,json]
//   lade-bench postgresql [--rows N] [--runs R] [--lade PATH] [--work DIR]   (PostgreSQLBench.swift)
import Foundation
import Lade
import LadePipeline

//   lade-bench stack [--objects N] [--batch N]     (contexts alone: insert, save, reset; peak RSS)
//   lade-bench convert [--objects N] [--lade PATH] [--work DIR]   (make test-slow: conversions, exports, metadata)

// MARK: Arguments

let command = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "help"
let arguments = Array(CommandLine.arguments.dropFirst(2))
func option(_ name: String, _ fallback: String) -> String {
    guard let index = arguments.firstIndex(of: "--\(name)"), index + 1 < arguments.count else { return fallback }
    return arguments[index + 1]
}
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("lade-bench: \(message)\n".utf8))
    exit(1)
}

// MARK: Data

/// SplitMix64: small, fast, and the same sequence everywhere.
struct Random {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

struct Product {
    var sku: String, name: String, price: String, quantity: Int, active: Bool, createdAt: String, category: String, description: String
}

let words = ["alpha", "bravo", "Grüße", "naïve", "café", "日本", "straße", "ünïcödé", "quote\"d", "comma,ed", "delta", "echo",
             "foxtrot", "golf", "hotel", "India", "juliet", "kilo", "lima", "mike", "Ωmega", "señor", "smörgåsbord", "zebra"]
let categories = (0..<50).map { $0 % 7 == 0 ? "Catégorie \($0)" : "Category \($0)" }

func products(count: Int, seed: UInt64) -> (Int) -> Product {
    var random = Random(state: seed)
    // A permutation of 0..<count: unique keys in random order.
    var order = Array(0..<count)
    for index in stride(from: count - 1, to: 0, by: -1) { order.swapAt(index, random.below(index + 1)) }
    return { index in
        var random = Random(state: seed &+ UInt64(index) &* 0x2545_F491_4F6C_DD1D)
        var name = ""
        for w in 0..<(2 + random.below(3)) { name += (w == 0 ? "" : " ") + words[random.below(words.count)] }
        var description = ""
        let length = random.below(201)
        while description.utf8.count < length { description += words[random.below(words.count)] + " " }
        while description.utf8.count > length { description.removeLast() }
        let month = 1 + random.below(12), day = 1 + random.below(28)
        return Product(
            sku: String(format: "SKU-%08d", order[index]), name: name,
            price: "\(random.below(100_000)).\(String(format: "%02d", random.below(100)))", quantity: random.below(10_000),
            active: random.below(4) != 0,
            createdAt: String(format: "2024-%02d-%02dT%02d:%02d:%02dZ", month, day, random.below(24), random.below(60), random.below(60)),
            category: categories[random.below(categories.count)], description: description)
    }
}

func csvField(_ text: String) -> String {
    text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
}

func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

func generate(rows: Int, directory: URL) {
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let make = products(count: rows, seed: 0x1ADE_2026)
    let paths = ["csv", "ndjson", "json"].map { directory.appendingPathComponent("products.\($0)").path }
    let files = paths.map { fopen($0, "w")! }
    defer { files.forEach { fclose($0) } }
    fputs("sku,name,price,quantity,active,created_at,category,description\n", files[0])
    fputs("[\n", files[2])
    for index in 0..<rows {
        let p = make(index)
        fputs([p.sku, csvField(p.name), p.price, String(p.quantity), p.active ? "true" : "false", p.createdAt, csvField(p.category), csvField(p.description)].joined(separator: ",") + "\n", files[0])
        let object = "{\"sku\":\(jsonString(p.sku)),\"name\":\(jsonString(p.name)),\"price\":\(p.price),\"quantity\":\(p.quantity),\"active\":\(p.active),\"created_at\":\(jsonString(p.createdAt)),\"category\":\(jsonString(p.category)),\"description\":\(jsonString(p.description))}"
        fputs(object + "\n", files[1])
        fputs(object + (index + 1 < rows ? ",\n" : "\n"), files[2])
    }
    fputs("]\n", files[2])
}

/// The benchmark's import job: the generated products into `store` (a job's `store:` value).
func benchJob(store: String, source: URL, model: String, writer: String = "auto") -> String {
    """
    kind: import
    writer: \(writer)
    model: \(model)
    store: \(store)
    source: \(source.path)
    entity: Product
    key: sku
    batch: { size: 5000 }
    autoMatch: false
    fields:
      sku: sku
      name: name
      price: price
      stock: quantity
      active: active
      createdAt: { from: created_at, date: iso8601 }
      details: { from: description, empty: null }
    relationships:
      category: { from: category, match: name, create: true }

    """
}

// MARK: Measuring a process

struct Measurement {
    var seconds: Double
    var peakBytes: Int64
    /// CPU time in user space and in the kernel (the child's own, every thread, from `wait4`):
    /// beside the wall time they show how much of a run is its own work and how much I/O.
    var userSeconds: Double = 0
    var systemSeconds: Double = 0
    /// CPU time (user + system) of the child's busiest thread, from its last sample (every
    /// 0.1 s): near the wall time, that thread sets the pace and the others wait for it.
    var busiestThreadSeconds: Double = 0
}

/// CPU seconds (user + system) each thread of `pid` has used so far, by thread id
/// (`/proc/PID/task/TID/stat`, proc(5)); empty when the process is gone.
func threadSeconds(_ pid: pid_t) -> [Int: Double] {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return [:] }
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    var seconds: [Int: Double] = [:]
    for task in tasks {
        // The command name (in parentheses) may hold spaces: fields are counted after it, so
        // utime and stime, fields 14 and 15, are the 12th and 13th there.
        guard let id = Int(task), let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
        seconds[id] = (user + system) / ticks
    }
    return seconds
}

/// A process's peak resident set size so far, from `/proc/PID/status` (`VmHWM`, kB); nil when
/// it cannot be read (the process is gone).
func highWaterMark(_ pid: pid_t) -> Int64? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kilobytes = Int64(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return nil }
    return kilobytes * 1024
}

/// Runs a command, its output to a log file, and returns wall time and its peak RSS.
///
/// The peak is the child's own. `wait4`'s `ru_maxrss` is not enough alone: Linux keeps, across
/// `exec`, the high-water mark of the memory the child started in, which is this process's (a
/// spawned `/bin/true` reports this process's size). So when `ru_maxrss` is no more than this
/// process's own peak at the spawn, the child's `VmHWM`, polled every 2 ms while it runs, is
/// taken instead.
func measure(_ command: [String], log: URL, stdin: String? = nil) -> Measurement {
    var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, log.path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, log.path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
    let argv = command.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let inherited = highWaterMark(getpid()) ?? 0
    let start = DispatchTime.now()
    guard posix_spawnp(&pid, command[0], &actions, nil, argv, environ) == 0 else { fail("cannot start \(command[0])") }
    var status: Int32 = 0
    var usage = rusage()
    var polled: Int64 = 0
    var threads: [Int: Double] = [:]
    var polls = 0
    while true {
        let done = wait4(pid, &status, WNOHANG, &usage)
        if done == pid { break }
        if done < 0 && errno != EINTR { fail("waiting for \(command[0]): \(String(cString: strerror(errno)))") }
        if let mark = highWaterMark(pid) { polled = max(polled, mark) }
        if polls % 50 == 0 { threads.merge(threadSeconds(pid)) { _, now in now } }
        polls += 1
        usleep(2_000)
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    let exited = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    if exited != 0 && exited != 2 {
        fail("\(command.joined(separator: " ")) exited with \(exited); see \(log.path)")
    }
    // The child's own VmHWM, polled every 2 ms, is the measure: ru_maxrss starts from this
    // process's size at the spawn (shared until exec), so a small child such as sqlite3 was
    // reported at lade-bench's size. ru_maxrss only when the child was gone before a poll.
    let reported = Int64(usage.ru_maxrss) * 1024
    func cpu(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return Measurement(seconds: seconds, peakBytes: polled > 0 ? polled : (reported > inherited ? reported : 0),
                       userSeconds: cpu(usage.ru_utime), systemSeconds: cpu(usage.ru_stime), busiestThreadSeconds: threads.values.max() ?? 0)
}

/// Runs a command with its standard output into `output`; fails when it fails.
func run(_ command: [String], output: URL) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = command
    guard FileManager.default.createFile(atPath: output.path, contents: nil), let handle = try? FileHandle(forWritingTo: output) else { fail("cannot write \(output.path)") }
    defer { try? handle.close() }
    process.standardOutput = handle
    do { try process.run() } catch { fail("cannot start \(command[0]): \(error)") }
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { fail("\(command.joined(separator: " ")) exited with \(process.terminationStatus)") }
}

func removeStore(_ url: URL) {
    for suffix in ["", "-wal", "-shm", "-journal", ".lade-lock"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

// MARK: Commands

switch command {
case "generate":
    guard let rows = Int(option("rows", "1000000")) else { fail("--rows takes a number") }
    generate(rows: rows, directory: URL(fileURLWithPath: option("out", ".build/bench/data")))
case "run":
    guard let rows = Int(option("rows", "1000000")) else { fail("--rows takes a number") }
    let runs = max(1, Int(option("runs", "3")) ?? 3)
    let lade = URL(fileURLWithPath: option("lade", ".build/release/lade")).path
    let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    let work = URL(fileURLWithPath: option("work", ".build/bench"), relativeTo: root).standardizedFileURL
    let formats = option("formats", "csv,ndjson,json").split(separator: ",").map(String.init)
    let model = URL(fileURLWithPath: option("model", "samples/Catalog.xcdatamodeld"), relativeTo: root).standardizedFileURL.path
    let data = work.appendingPathComponent("data-\(rows)")
    guard FileManager.default.isExecutableFile(atPath: lade) else { fail("no lade binary at \(lade); build it with swift build -c release") }
    if !FileManager.default.fileExists(atPath: data.appendingPathComponent("products.json").path) {
        print("generating \(rows) rows in \(data.path) …")
        generate(rows: rows, directory: data)
    }
    let log = work.appendingPathComponent("bench.log")
    try? FileManager.default.removeItem(at: log)

    // sqlite3: the same table shape (columns and indexes of Lade's ZPRODUCT for these fields), one transaction.
    let sqliteDB = work.appendingPathComponent("sqlite3.db")
    let sqliteScript = work.appendingPathComponent("import.sql")
    try! """
        CREATE TABLE products (sku VARCHAR, name VARCHAR, price DECIMAL, quantity INTEGER, active INTEGER, created_at TIMESTAMP, category VARCHAR, description VARCHAR);
        CREATE UNIQUE INDEX products_sku ON products (sku);
        CREATE INDEX products_name ON products (name);
        CREATE INDEX products_category ON products (category);
        BEGIN;
        .import --csv --skip 1 \(data.appendingPathComponent("products.csv").path) products
        COMMIT;

        """.write(to: sqliteScript, atomically: true, encoding: .utf8)

    func job(_ format: String, writer: String = "auto") -> URL {
        let name = writer == "auto" ? format : "\(format)-\(writer)"
        let url = work.appendingPathComponent("bench-\(name).yaml")
        let store = work.appendingPathComponent("lade-\(name).sqlite")
        try! benchJob(store: "{ type: sqlite, path: \(store.path) }", source: data.appendingPathComponent("products.\(format)"), model: model, writer: writer)
            .write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    // A reference, not a target: sqlite3 itself putting the rows of lade's CSV store into the
    // same ZPRODUCT table and indexes, in WAL mode with the batch writer's default page cache
    // (`BatchSettings.defaultCacheMiB`), in one transaction, the model's fetch indexes made
    // after the rows as lade makes them when it loads an empty table
    // (`SQLiteStore.deferFetchIndexes`). What SQLite alone costs on the layout lade writes,
    // with lade's journal mode: the floor under the CSV line. (Empty CSV fields arrive as ''
    // where lade writes NULL.) Made from the first CSV run's store.
    let layoutCSV = work.appendingPathComponent("layout.csv")
    let layoutScript = work.appendingPathComponent("layout.sql")
    let layoutDB = work.appendingPathComponent("layout.db")
    let layoutCacheMiB = BatchSettings.defaultCacheMiB(writer: .batch)
    func prepareLayout() {
        let store = work.appendingPathComponent("lade-csv.sqlite").path
        run(["sqlite3", "-csv", store, "SELECT * FROM ZPRODUCT ORDER BY Z_PK"], output: layoutCSV)
        let schema = work.appendingPathComponent("layout-schema.sql")
        run(["sqlite3", store, "SELECT sql || ';' FROM sqlite_master WHERE tbl_name = 'ZPRODUCT' AND sql IS NOT NULL ORDER BY type DESC"], output: schema)
        // Without the table, .import would make one from the first row as a header: no reference.
        guard let tables = try? String(contentsOf: schema, encoding: .utf8), tables.contains("CREATE TABLE ZPRODUCT") else {
            fail("no ZPRODUCT table in \(store) to copy for the reference line")
        }
        guard let catalog = try? ManagedObjectModel(contentsOf: URL(fileURLWithPath: model)) else { fail("cannot read the model \(model)") }
        let deferred = Set(TableLayout(model: catalog).indexes.filter { $0.table == "ZPRODUCT" && $0.kind == .fetch }.map(\.name))
        let statements = tables.split(separator: "\n").map(String.init)
        func isDeferred(_ statement: String) -> Bool { deferred.contains { statement.hasPrefix("CREATE INDEX \($0) ") } }
        try! """
            PRAGMA journal_mode = WAL;
            PRAGMA cache_size = -\(layoutCacheMiB * 1024);
            \(statements.filter { !isDeferred($0) }.joined(separator: "\n"))
            BEGIN;
            .import --csv \(layoutCSV.path) ZPRODUCT
            \(statements.filter(isDeferred).joined(separator: "\n"))
            COMMIT;

            """.write(to: layoutScript, atomically: true, encoding: .utf8)
    }

    struct Line { let label: String; var results: [Measurement] = [] }
    // Each format with the default writer (auto: batch inserts here), CSV with writer: objects,
    // and a forced re-run of the CSV over its own unchanged store.
    var lines = [Line(label: "sqlite3 .import --csv")] + formats.map { Line(label: "lade run \($0)") }
        + [Line(label: "lade run csv, writer: objects"), Line(label: "lade run csv --force (re-run)"),
           Line(label: "reference: sqlite3 .import into lade's ZPRODUCT, WAL, \(layoutCacheMiB) MiB cache")]
    print("rows \(rows), \(runs) runs each, alternating; lade \(lade)")
    for round in 1...runs {
        removeStore(sqliteDB)
        lines[0].results.append(measure(["sqlite3", sqliteDB.path], log: log, stdin: sqliteScript.path))
        for (offset, format) in formats.enumerated() {
            let store = work.appendingPathComponent("lade-\(format).sqlite")
            removeStore(store)
            lines[1 + offset].results.append(measure([lade, "run", job(format).path, "--quiet"], log: log))
        }
        if formats.contains("csv") {
            let objects = work.appendingPathComponent("lade-csv-objects.sqlite")
            removeStore(objects)
            lines[lines.count - 3].results.append(measure([lade, "run", job("csv", writer: "objects").path, "--quiet"], log: log))
            lines[lines.count - 2].results.append(measure([lade, "run", job("csv").path, "--force", "--quiet"], log: log))
            if round == 1 { prepareLayout() }
            removeStore(layoutDB)
            lines[lines.count - 1].results.append(measure(["sqlite3", layoutDB.path], log: log, stdin: layoutScript.path))
        }
        print("  round \(round): " + lines.map { $0.results.last.map { String(format: "%.2fs", $0.seconds) } ?? "-" }.joined(separator: "  "))
    }
    let sqliteMedian = median(lines[0].results.map(\.seconds))
    let firstCSV = formats.contains("csv") ? median(lines[1].results.map(\.seconds)) : nil
    print("")
    // Issue 14's targets: CSV ≤ 1.0× sqlite3, NDJSON and JSON ≤ 1.2×, writer: objects ≤ 2.0×,
    // a forced re-run ≤ 0.5× the first CSV import; peak RSS ≤ 64 MiB on every line.
    func target(_ label: String) -> (String, (Double, Double?) -> Bool)? {
        if label.hasSuffix("(re-run)") { return ("≤ 0.50× first", { _, first in (first ?? .infinity) <= 0.5 }) }
        if label.contains("objects") { return ("≤ 2.00×", { ratio, _ in ratio <= 2.0 }) }
        if label == "lade run csv" { return ("≤ 1.00×", { ratio, _ in ratio <= 1.0 }) }
        if label.hasPrefix("lade run") { return ("≤ 1.20×", { ratio, _ in ratio <= 1.2 }) }
        return nil
    }
    print("| what | wall s (median) | user s | system s | busiest thread s | rows/s | peak RSS MiB (max) | vs sqlite3 | target (time; RSS ≤ 64 MiB) | met |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for line in lines where !line.results.isEmpty {
        let wall = median(line.results.map(\.seconds))
        let peak = Double(line.results.map(\.peakBytes).max() ?? 0) / 1_048_576
        var ratio = String(format: "%.2f×", wall / sqliteMedian)
        let ofFirst = line.label.hasSuffix("(re-run)") ? firstCSV.map { wall / $0 } : nil
        if let ofFirst { ratio += String(format: " (%.2f× first csv import)", ofFirst) }
        var goal = "", met = ""
        if let (text, check) = target(line.label) {
            goal = text
            met = check(wall / sqliteMedian, ofFirst) && peak <= 64 ? "yes" : "no"
        }
        let user = median(line.results.map(\.userSeconds)), system = median(line.results.map(\.systemSeconds))
        let busiest = median(line.results.map(\.busiestThreadSeconds))
        print(String(format: "| %@ | %.2f | %.2f | %.2f | %.2f | %.0f | %.1f | %@ | %@ | %@ |", line.label, wall, user, system, busiest, Double(rows) / wall, peak, ratio, goal, met))
    }
    print("\nall runs (s): " + lines.map { "\($0.label): " + $0.results.map { String(format: "%.2f", $0.seconds) }.joined(separator: ", ") }.joined(separator: "; "))
case "postgresql":
    guard let rows = Int(option("rows", "1000000")) else { fail("--rows takes a number") }
    let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    let work = URL(fileURLWithPath: option("work", ".build/bench"), relativeTo: root).standardizedFileURL
    let lade = URL(fileURLWithPath: option("lade", ".build/release/lade"), relativeTo: root).standardizedFileURL.path
    guard FileManager.default.isExecutableFile(atPath: lade) else { fail("no lade binary at \(lade); build it with swift build -c release") }
    let data = work.appendingPathComponent("data-\(rows)")
    if !FileManager.default.fileExists(atPath: data.appendingPathComponent("products.csv").path) {
        print("generating \(rows) rows in \(data.path) …")
        generate(rows: rows, directory: data)
    }
    PostgreSQLBench.run(rows: rows, runs: max(1, Int(option("runs", "3")) ?? 3), lade: lade, work: work, data: data,
                        model: URL(fileURLWithPath: option("model", "samples/Catalog.xcdatamodeld"), relativeTo: root).standardizedFileURL.path)
case "phases":
    do {
        try StackBench.phases(objects: Int(option("objects", "20000")) ?? 20000, store: URL(fileURLWithPath: option("store", ".build/bench/phases.sqlite")),
                              model: URL(fileURLWithPath: option("model", "samples/Catalog.xcdatamodeld")))
    } catch {
        fail("\(error)")
    }
case "stack":
    guard let objects = Int(option("objects", "1000000")), let batch = Int(option("batch", "5000")) else { fail("--objects and --batch take numbers") }
    do {
        try StackBench.run(objects: objects, batch: batch, store: URL(fileURLWithPath: option("store", ".build/bench/stack.sqlite")),
                           model: URL(fileURLWithPath: option("model", "samples/Catalog.xcdatamodeld")))
    } catch {
        fail("\(error)")
    }
case "convert":
    guard let objects = Int(option("objects", "1000000")) else { fail("--objects takes a number") }
    let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    let lade = URL(fileURLWithPath: option("lade", ".build/release/lade"), relativeTo: root).standardizedFileURL.path
    guard FileManager.default.isExecutableFile(atPath: lade) else { fail("no lade binary at \(lade); build it with swift build -c release") }
    do {
        let passed = try ConvertCheck.run(
            objects: objects, lade: lade, work: URL(fileURLWithPath: option("work", ".build/bench"), relativeTo: root).standardizedFileURL,
            modelPath: URL(fileURLWithPath: option("model", "samples/Catalog.xcdatamodeld"), relativeTo: root).standardizedFileURL.path)
        exit(passed ? 0 : 1)
    } catch {
        fail("\(error)")
    }
default:
    print("usage: lade-bench stack [--objects N] [--batch N] |  lade-bench generate --rows N --out DIR | lade-bench run [--rows N] [--runs R] [--lade PATH] [--work DIR] [--formats csv,ndjson,json] | lade-bench convert [--objects N] [--lade PATH] [--work DIR]")
}
