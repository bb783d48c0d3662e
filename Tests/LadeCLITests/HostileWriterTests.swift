import Foundation
import Lade
import Testing

/// Hostile input, the two writers: seeded adversarial import jobs (keys repeated within and
/// across batches, keys differing only after a NUL byte or only by Unicode normalisation, empty
/// keys, rows the store refuses, relationships to present and missing destinations with and
/// without `create`, batch sizes 1 to 7, forced re-runs of changed rows) run once with
/// `writer: batch` and once with `writer: objects`, each into a fresh SQLite store. jobs/README.md
/// promises the same store but for `Z_OPT`: every table is compared row by row (every column but
/// `Z_OPT`, join tables, `Z_PRIMARYKEY`, the schema), with the metadata (checkpoints but their
/// time), the exit codes, the reports' counts, the rejects files and the error lines.
///
/// Every failure names its case's seed; `LADE_HOSTILE_SEED=N swift test --filter HostileWriter`
/// runs that case alone.
@Suite("Hostile input: the two writers on the same adversarial jobs", .slow)
struct HostileWriterTests {
    /// Forty in a row, and cases found by a longer run (1,600 seeds) that once differed:
    /// `create: true` under `mode: update` with a row missing a required value and no object
    /// (the reason given), and under `mode: insert` with a key's first row lacking its required
    /// owner and the next naming a new one (the owner created).
    static let seeds = HostileSeeds.select((0..<40).map { WriterCase.baseSeed + UInt64($0) } + [31_933, 33_229])

    @Test("both writers give the same tables, exit codes, counts, rejects and errors for the same adversarial job", arguments: seeds)
    func sameStore(seed: UInt64) throws {
        try WriterCase.generate(seed: seed).run()
    }

    @Test("a job with a to-many relationship: writer: batch refuses it before writing anything, naming why; writer: objects runs it")
    func toManyRefusedByBatch() throws {
        let sandbox = try ImportSandbox()
        try WriterCase.writeModel(sandbox)
        try sandbox.write("items.ndjson", "{\"key\":\"k1\",\"req\":\"r\"}\n{\"key\":\"k2\",\"req\":\"r\"}\n")
        try sandbox.write("owners.ndjson", "{\"code\":\"o1\",\"items\":\"k1|k2\"}\n{\"code\":\"o2\",\"items\":\"k2|nosuch\"}\n")
        for writer in ["batch", "objects"] {
            try sandbox.write("items-\(writer).yaml", "kind: import\nmodel: M.xcdatamodel\nstore: { type: sqlite, path: \(writer).sqlite }\nsource: items.ndjson\nentity: Item\nkey: key\nwriter: \(writer)\n")
            try sandbox.write("owners-\(writer).yaml", "kind: import\nmodel: M.xcdatamodel\nstore: { type: sqlite, path: \(writer).sqlite }\nsource: owners.ndjson\nentity: Owner\nkey: code\nwriter: \(writer)\n"
                              + "relationships:\n  items: { from: items, match: key }\n")
            #expect(try sandbox.lade(["run", "items-\(writer).yaml", "--quiet"]).status == 0)
        }
        let before = try storeFileDigests(sandbox.url("batch.sqlite"))
        let batch = try HostileRun.run(["run", "owners-batch.yaml"], in: sandbox.directory)
        #expect(batch.status == 64 || batch.status == 1, "\(batch.stderr)")
        let errors = batch.errorLines.filter { $0.hasPrefix("lade: error:") }
        #expect(errors.count == 1 && errors.first?.contains("to-many") == true, "\(batch.errorLines)")
        #expect(try storeFileDigests(sandbox.url("batch.sqlite")) == before)
        let objects = try HostileRun.run(["run", "owners-objects.yaml", "--quiet"], in: sandbox.directory)
        #expect(objects.status == 0, "\(objects.stderr)")
    }
}

/// One generated pair of runs: the job, its sources and the runs made of it.
struct WriterCase {
    static let baseSeed: UInt64 = 31_700

    /// Owners and their items: `Item.key` and `Owner.code` unique (the batch writer finds rows
    /// by their unique index), a pattern and a length on `name`, a required `req` without a
    /// default, a default on `note`.
    static let model = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Owner" representedClassName="Owner" syncable="YES">
                <attribute name="code" attributeType="String"/>
                <attribute name="label" optional="YES" attributeType="String"/>
                <relationship name="items" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Item" inverseName="owner" inverseEntity="Item"/>
                <uniquenessConstraints><uniquenessConstraint><constraint value="code"/></uniquenessConstraint></uniquenessConstraints>
            </entity>
            <entity name="Item" representedClassName="Item" syncable="YES">
                <attribute name="key" attributeType="String"/>
                <attribute name="name" optional="YES" attributeType="String" regularExpressionString="[a-z ]*" maxValueString="12"/>
                <attribute name="qty" optional="YES" attributeType="Integer 16" usesScalarValueType="YES"/>
                <attribute name="big" optional="YES" attributeType="Integer 64" usesScalarValueType="YES"/>
                <attribute name="amount" optional="YES" attributeType="Decimal"/>
                <attribute name="req" attributeType="String"/>
                <attribute name="note" optional="YES" attributeType="String" defaultValueString="n/a"/>
                <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Owner" inverseName="items" inverseEntity="Owner"/>
                <uniquenessConstraints><uniquenessConstraint><constraint value="key"/></uniquenessConstraint></uniquenessConstraints>
            </entity>
        </model>
        """

    static func writeModel(_ sandbox: ImportSandbox) throws {
        try FileManager.default.createDirectory(at: sandbox.url("M.xcdatamodel"), withIntermediateDirectories: true)
        try sandbox.write("M.xcdatamodel/contents", model)
    }

    /// A source field: absent, JSON null, or a JSON literal (text quoted, numbers bare).
    enum Field: Equatable {
        case absent
        case null
        case json(String)

        static func text(_ text: String) -> Field { .json(SourceText.json(text)) }
    }

    typealias Row = [(String, Field)]

    /// One `lade run` of the item job (after the owners', when there is one).
    struct Run {
        var rows: [Row]
        var force: Bool
    }

    var seed: UInt64
    var csv: Bool
    var batchSize: Int
    var commitEvery: Int?
    var policy: String
    var maxErrors: Int?
    var mode: String
    var relationship: (create: Bool, required: Bool)?
    var owners: [Row]?
    var runs: [Run]
    var storeRefusals: Bool

    var context: String {
        "seed \(seed) [\(csv ? "csv" : "ndjson"), size \(batchSize), commitEvery \(commitEvery.map(String.init) ?? "-"), \(policy)\(maxErrors.map { " max \($0)" } ?? ""), \(mode), "
            + "owner \(relationship.map { "create \($0.create) required \($0.required)" } ?? "none"), owners job \(owners != nil), runs \(runs.map { "\($0.rows.count)\($0.force ? "+force" : "")" }.joined(separator: ",")), store refusals \(storeRefusals)]"
    }

    static func generate(seed: UInt64) -> WriterCase {
        var random = SeededGenerator(seed: seed &* 0x9E37_79B9_7F4A_7C15)
        let csv = random.chance(25)
        let storeRefusals = random.chance(35)
        // NUL can be in a JSON string only; a CSV field holds it as it is, which its reader may refuse.
        var keys = ["k1", "k2", "k3", "k4", "K1", " k1", "k1 ", "caf\u{E9}", "cafe\u{301}", ""]
        if !csv { keys += ["A\u{0}B", "A\u{0}C", "A\u{0}"] }
        var codes = ["o1", "o2", "o3", "O1", "o1 "]
        if !csv { codes += ["o\u{0}x", "o\u{0}y"] }

        func field(_ choices: [(Int, Field)]) -> Field {
            let total = choices.reduce(0) { $0 + $1.0 }
            var pick = random.int(total)
            for (weight, value) in choices {
                if pick < weight { return value }
                pick -= weight
            }
            return .absent
        }
        func itemRow() -> Row {
            var row: Row = []
            row.append(("key", random.chance(4) ? field([(1, .absent), (1, .null), (1, .json("5"))]) : .text(random.pick(keys))))
            row.append(("name", field([(6, .text(random.pick(["ok", "fine one", "a b c"]))), (2, .text(random.pick(["BAD", "much too long a name", "x1"]))), (1, .text("")), (2, .absent)])))
            row.append(("qty", field([(6, .json(String(random.int(-300...300)))), (1, .json(random.pick(["40000", "-40000", "32767", "-32768"]))), (1, .json(random.pick(["1.5", "\"12\"", "\"twelve\""]))), (2, .absent)])))
            row.append(("big", field([(5, .json(String(random.int(-1_000_000...1_000_000)))), (1, .json(random.pick(["9223372036854775807", "-9223372036854775808", "9223372036854775808", "1e30"]))), (3, .absent)])))
            var amounts: [(Int, Field)] = [(5, .text(random.pick(["1.5", "-0.001", "19.99", "0", "123456789012345"]))), (1, .text("abc")), (3, .absent)]
            if storeRefusals { amounts.append((3, .text(random.pick([String(repeating: "1", count: 38), "1234567890123456", "0.1234567890123456"])))) }
            row.append(("amount", field(amounts)))
            row.append(("req", field([(8, .text(random.pick(["r", "r2", "é"]))), (1, .null), (1, .absent)])))
            row.append(("note", field([(3, .text(random.pick(["x", "y"]))), (1, .null), (4, .absent)])))
            row.append(("owner", field([(6, .text(random.pick(codes + ["missing1", "missing2"]))), (1, .text("")), (1, .null), (2, .absent)])))
            return row
        }

        var rows = (0..<random.int(4...14)).map { _ in itemRow() }
        // A key again, in the same batch or a later one.
        for _ in 0..<random.int(1...3) {
            var copy = itemRow()
            copy[0] = rows[random.int(rows.count)][0]
            rows.insert(copy, at: random.int(rows.count + 1))
        }
        var runs = [Run(rows: rows, force: false)]
        if random.chance(80) {
            // The same source changed and run again: rows changed, dropped, added and reordered.
            var changed = rows.filter { _ in !random.chance(20) }
            for index in changed.indices where random.chance(35) {
                var other = itemRow()
                other[0] = changed[index][0]
                changed[index] = other
            }
            changed += (0..<random.int(0...4)).map { _ in itemRow() }
            if random.chance(30) { changed.reverse() }
            runs.append(Run(rows: changed, force: random.chance(85)))
        }
        let owners: [Row]? = random.chance(60) ? codes.filter { _ in random.chance(60) }.map { code in
            [("code", .text(code)), ("label", random.chance(70) ? .text(random.pick(["L1", "L2"])) : .absent)]
        } : nil
        let mode = random.pick(["upsert", "upsert", "upsert", "insert", "update"])
        let create = random.chance(50)
        return WriterCase(
            seed: seed, csv: csv, batchSize: random.int(1...7), commitEvery: random.chance(50) ? random.int(1...3) : nil,
            policy: random.chance(80) ? "skip" : "abort", maxErrors: random.chance(30) ? random.int(1...4) : nil, mode: mode,
            relationship: random.chance(75) ? (create, random.chance(30)) : nil, owners: owners, runs: runs, storeRefusals: storeRefusals)
    }

    /// The rows as the source file: NDJSON (fields absent, null, or typed) or CSV (every column
    /// of every row; null and absent alike empty, text unquoted where it can be).
    func source(_ rows: [Row], columns: [String]) throws -> String {
        if !csv {
            return rows.map { row in "{" + row.compactMap { name, field in
                switch field {
                case .absent: nil
                case .null: "\"\(name)\":null"
                case .json(let text): "\"\(name)\":\(text)"
                }
            }.joined(separator: ",") + "}\n" }.joined()
        }
        var text = columns.joined(separator: ",") + "\n"
        for row in rows {
            let values = Dictionary(row, uniquingKeysWith: { a, _ in a })
            text += columns.map { name -> String in
                guard case .json(let literal)? = values[name] else { return "" }
                // A JSON string literal back to its text; a number stays as written.
                if literal.hasPrefix("\""), case .string(let decoded) = try! ExportJSON.parse(literal) { return SourceText.csv(decoded) }
                return literal
            }.joined(separator: ",") + "\n"
        }
        return text
    }

    func job(writer: String, entity: String, source: String, key: String, relationships: String) -> String {
        var text = "kind: import\nmodel: M.xcdatamodel\nstore: { type: sqlite, path: \(writer).sqlite }\nsource: \(source)\nentity: \(entity)\nkey: \(key)\n"
        text += "writer: \(writer)\nmode: \(entity == "Item" ? mode : "upsert")\n"
        text += "batch: { size: \(batchSize)\(commitEvery.map { ", commitEvery: \($0)" } ?? "") }\n"
        text += relationships
        if policy == "skip" {
            text += "onError: { policy: skip\(maxErrors.map { ", maxErrors: \($0)" } ?? ""), rejects: \(writer)-\(entity).rej }\n"
        } else {
            text += "onError: { policy: abort }\n"
        }
        return text
    }

    /// One run with each writer, compared.
    func runBoth(_ sandbox: ImportSandbox, job: String, name: String, force: Bool) throws {
        var results: [String: HostileRun] = [:]
        for writer in ["batch", "objects"] {
            let run = try HostileRun.run(["run", "\(job)-\(writer).yaml", "--report", "\(writer)-\(name).json"] + (force ? ["--force"] : []), in: sandbox.directory)
            #expect(!run.hung && run.signal == nil && !run.stderr.contains("Fatal error"), "\(context) \(name), \(writer): hung or crashed: \(run.stderr.suffix(600))")
            results[writer] = run
        }
        let batch = results["batch"]!, objects = results["objects"]!
        #expect(batch.status == objects.status, "\(context) \(name): exit \(batch.status) with batch, \(objects.status) with objects\n  batch: \(batch.stderr.suffix(500))\n  objects: \(objects.stderr.suffix(500))")
        func errors(_ run: HostileRun, _ writer: String) -> [String] {
            run.errorLines.filter { $0.hasPrefix("lade: error:") || $0.hasPrefix("lade: warning:") }
                .map { $0.replacingOccurrences(of: "\(writer).sqlite", with: "STORE").replacingOccurrences(of: "\(writer)-", with: "WRITER-") }
        }
        #expect(errors(batch, "batch") == errors(objects, "objects"), "\(context) \(name): error lines differ\n  batch:   \(errors(batch, "batch"))\n  objects: \(errors(objects, "objects"))")
        let reports = try ["batch", "objects"].map { writer -> [String: Any]? in
            guard let data = try? Data(contentsOf: sandbox.url("\(writer)-\(name).json")) else { return nil }
            var report = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            // What jobs/README.md says differs: which writer ran, its resets, and the run's own measures and paths.
            for key in ["writer", "writerReason", "resets", "seconds", "rowsPerSecond", "peakRSSBytes", "job", "store", "rejectsFile"] { report[key] = nil }
            return report
        }
        #expect((reports[0] == nil) == (reports[1] == nil), "\(context) \(name): a report from one writer only")
        if let a = reports[0], let b = reports[1] {
            func text(_ value: Any?) -> String {
                guard let value else { return "none" }
                let data = try? JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys, .fragmentsAllowed])
                return data.map { String(decoding: $0, as: UTF8.self) } ?? "\(value)"
            }
            let keys = Set(a.keys).union(b.keys).sorted().filter { text(a[$0]) != text(b[$0]) }
            #expect(keys.isEmpty, "\(context) \(name): the reports differ in \(keys.map { "\($0): batch \(text(a[$0])), objects \(text(b[$0]))" }.joined(separator: "; "))")
        }
    }

    func run() throws {
        let sandbox = try ImportSandbox()
        try Self.writeModel(sandbox)
        let ext = csv ? "csv" : "ndjson"
        if let owners {
            try sandbox.write("owners.\(ext)", try source(owners, columns: ["code", "label"]))
            for writer in ["batch", "objects"] {
                try sandbox.write("owners-\(writer).yaml", job(writer: writer, entity: "Owner", source: "owners.\(ext)", key: "code", relationships: ""))
            }
            try runBoth(sandbox, job: "owners", name: "owners", force: false)
            try compareStores(sandbox, after: "the owners' job")
        }
        var relationships = ""
        if let relationship {
            relationships = "relationships:\n  owner: { from: owner, match: code, create: \(relationship.create), required: \(relationship.required) }\n"
        }
        for writer in ["batch", "objects"] {
            try sandbox.write("items-\(writer).yaml", job(writer: writer, entity: "Item", source: "items.\(ext)", key: "key", relationships: relationships))
        }
        for (index, run) in runs.enumerated() {
            try sandbox.write("items.\(ext)", try source(run.rows, columns: ["key", "name", "qty", "big", "amount", "req", "note", "owner"]))
            try runBoth(sandbox, job: "items", name: "items\(index + 1)", force: run.force)
            try compareStores(sandbox, after: "items run \(index + 1)")
            if policy == "skip" {
                let texts = ["batch", "objects"].map { (try? String(contentsOf: sandbox.url("\($0)-Item.rej"), encoding: .utf8)) ?? "(none)" }
                if texts[0] != texts[1] {
                    let a = texts[0].split(separator: "\n"), b = texts[1].split(separator: "\n")
                    let first = zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
                    Issue.record("\(context) items run \(index + 1): the rejects files differ (\(a.count) and \(b.count) lines) from line \(first + 1):\n  batch:   \(first < a.count ? String(a[first]) : "(end)")\n  objects: \(first < b.count ? String(b[first]) : "(end)")")
                }
            }
        }
    }

    /// Every table of both stores row by row (`Z_OPT` left out), the schema, and the metadata
    /// (the store UUID and the checkpoints' times left out).
    func compareStores(_ sandbox: ImportSandbox, after: String) throws {
        let urls = ["batch", "objects"].map { sandbox.url("\($0).sqlite") }
        let exists = urls.map { FileManager.default.fileExists(atPath: $0.path) }
        #expect(exists[0] == exists[1], "\(context) after \(after): a store from one writer only")
        guard exists[0] && exists[1] else { return }
        let tables = try urls.map(Self.tables)
        for name in Set(tables[0].keys).union(tables[1].keys).sorted() {
            let a = tables[0][name] ?? ["(no such table)"], b = tables[1][name] ?? ["(no such table)"]
            guard a != b else { continue }
            let onlyBatch = a.filter { !b.contains($0) }, onlyObjects = b.filter { !a.contains($0) }
            Issue.record("\(context) after \(after): \(name) differs (\(a.count) rows with batch, \(b.count) with objects)\n  batch only:   \(onlyBatch.prefix(4))\n  objects only: \(onlyObjects.prefix(4))")
        }
        let metadata = try urls.map { url -> [String: PropertyListValue] in
            var metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
            metadata["NSStoreUUID"] = nil
            for (key, value) in metadata where key.hasPrefix("lade.import:") {
                if case .dictionary(var checkpoint) = value {
                    checkpoint["updatedAt"] = nil
                    metadata[key] = .dictionary(checkpoint)
                }
            }
            return metadata
        }
        if metadata[0] != metadata[1] {
            Issue.record("\(context) after \(after): the metadata differs: \(Self.differences(.dictionary(metadata[0]), .dictionary(metadata[1])).joined(separator: "; "))")
        }
        for url in urls { #expect(try StoreReading.integrityCheck(url) == "t'ok'", "\(context) after \(after): \(url.lastPathComponent) fails SQLite's integrity check") }
    }

    /// Where two property lists differ: key paths, each with both values.
    static func differences(_ a: PropertyListValue?, _ b: PropertyListValue?, at path: String = "") -> [String] {
        guard a != b else { return [] }
        if case .dictionary(let x)? = a, case .dictionary(let y)? = b {
            return Set(x.keys).union(y.keys).sorted().flatMap { differences(x[$0], y[$0], at: path.isEmpty ? $0 : path + "." + $0) }
        }
        return ["\(path): batch \(a.map { "\($0)" } ?? "none"), objects \(b.map { "\($0)" } ?? "none")"]
    }

    /// Each table's rows as text, every column but `Z_OPT` named, in rowid order; the schema as `sqlite_master`.
    static func tables(_ url: URL) throws -> [String: [String]] {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        var result: [String: [String]] = [:]
        result["sqlite_master"] = try connection.rows("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").map {
            $0.map(StoreReading.describe).joined(separator: " | ")
        }
        for table in try connection.tableNames() where table != "Z_METADATA" {
            let columns = try connection.rows("PRAGMA table_info(\"\(table)\")").compactMap { row -> String? in
                guard case .text(let name) = row[1], name != "Z_OPT" else { return nil }
                return name
            }
            let list = columns.map { "\"\($0)\"" }.joined(separator: ", ")
            result[table] = try connection.rows("SELECT \(list) FROM \"\(table)\" ORDER BY rowid").map { row in
                zip(columns, row).map { "\($0)=\(StoreReading.describe($1))" }.joined(separator: " ")
            }
        }
        return result
    }
}
