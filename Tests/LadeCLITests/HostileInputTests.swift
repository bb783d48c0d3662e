import Foundation
import Lade
import Testing

/// Hostile and unlucky input, as a user (or an attacker) hands it to the real `lade`: every case
/// ends with a clear error (exit 1 or 64, naming what and where) or with the right data, and never
/// with a crash, a hang (60 s), more than 1 GiB of memory, or a silent change to a file.
/// The focused regression tests of each fix live beside the code they test; this suite is the
/// project-level promise, one class of input per test.
@Suite("Hostile input")
struct HostileInputTests {
    static let memoryLimit = 1 << 30

    /// The bounds every case keeps, whatever it answers.
    func expectBounded(_ run: HostileRun, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!run.hung, "\(what): still running after \(Int(run.seconds)) s", sourceLocation: sourceLocation)
        #expect(run.signal == nil, "\(what): ended by signal \(run.signal ?? 0): \(run.stderr.suffix(400))", sourceLocation: sourceLocation)
        #expect(run.peakResidentBytes < Self.memoryLimit,
                "\(what): peak memory \(run.peakResidentBytes >> 20) MiB", sourceLocation: sourceLocation)
        #expect(!run.stderr.contains("Fatal error"), "\(what): \(run.stderr.suffix(400))", sourceLocation: sourceLocation)
    }

    /// A refusal: exit 1 or 64, and one `lade: error:` line that names `naming` (the file, field or value at fault).
    func expectRefused(_ run: HostileRun, naming: [String], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        expectBounded(run, what, sourceLocation: sourceLocation)
        #expect(run.status == 1 || run.status == 64, "\(what): exit \(run.status), \(run.stderr.suffix(400))", sourceLocation: sourceLocation)
        let errors = run.errorLines.filter { $0.hasPrefix("lade: error:") || $0.hasPrefix("Error:") }
        #expect(errors.count == 1, "\(what): expected one error line, got \(run.errorLines)", sourceLocation: sourceLocation)
        for name in naming {
            #expect(errors.first?.contains(name) == true, "\(what): the error does not name '\(name)': \(errors)", sourceLocation: sourceLocation)
        }
    }

    func lade(_ sandbox: ImportSandbox, _ arguments: [String], input: Data? = nil) throws -> HostileRun {
        try HostileRun.run(arguments, in: sandbox.directory, input: input)
    }

    func digest(_ url: URL) throws -> [String] { try storeFileDigests(url) }

    /// A store with a few suppliers, made by a plain import.
    func suppliersStore(_ sandbox: ImportSandbox, rows: [String] = ["ACME,Acme", "NORD,Nordwerk"]) throws {
        try sandbox.write("suppliers.csv", "code,name\n" + rows.joined(separator: "\n") + "\n")
        try sandbox.job("source: suppliers.csv\nentity: Supplier\nkey: code\n", named: "suppliers.yaml")
        let run = try lade(sandbox, ["run", "suppliers.yaml", "--quiet"])
        try #require(run.status == 0, "setting up the store: \(run.stderr)")
    }

    // MARK: Files lade writes

    @Test("a rejects file that names the store is refused, and the store is untouched")
    func rejectsOverStore() throws {
        let sandbox = try ImportSandbox()
        try suppliersStore(sandbox)
        let before = try digest(sandbox.store)
        try sandbox.write("more.csv", "code,email\nX1,not-an-email\n")
        try sandbox.job("source: more.csv\nentity: Supplier\nkey: code\nonError: { policy: skip, rejects: catalog.sqlite }\n")
        let run = try lade(sandbox, ["run", "job.yaml"])
        expectRefused(run, naming: ["catalog.sqlite"], "rejects = store")
        #expect(try digest(sandbox.store) == before)
    }

    @Test("a report that names the source is refused, and the source is untouched")
    func reportOverSource() throws {
        let sandbox = try ImportSandbox()
        let source = "code,name\nA1,Alpha\n"
        try sandbox.write("suppliers.csv", source)
        try sandbox.job("source: suppliers.csv\nentity: Supplier\nkey: code\n")
        let run = try lade(sandbox, ["run", "job.yaml", "--report", "./suppliers.csv"])
        expectRefused(run, naming: ["suppliers.csv"], "report = source")
        #expect(try String(contentsOf: sandbox.url("suppliers.csv"), encoding: .utf8) == source)
    }

    // MARK: Models

    @Test("an entity name carrying SQL is refused by lade init, and no database is created")
    func sqlInModelNames() throws {
        let sandbox = try ImportSandbox()
        let name = "X; ATTACH DATABASE 'pwned.db' AS p; CREATE TABLE p.t(x INTEGER)"
        try sandbox.write("contents", """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="\(name)" representedClassName="X" syncable="YES">
                    <attribute name="a" optional="YES" attributeType="String"/>
                </entity>
            </model>
            """)
        let run = try lade(sandbox, ["init", "new.sqlite", "--model", "contents"])
        expectRefused(run, naming: ["contents"], "SQL in an entity name")
        #expect(!FileManager.default.fileExists(atPath: sandbox.url("pwned.db").path))
        #expect(!FileManager.default.fileExists(atPath: sandbox.url("new.sqlite").path))
    }

    @Test("a model whose DTD expands an entity thousands of times is refused within bounds")
    func entityExpansionModel() throws {
        let sandbox = try ImportSandbox()
        let tenKiB = String(repeating: "x", count: 10_240)
        let references = String(repeating: "&big;", count: 10_000)
        try sandbox.write("contents", """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE model [<!ENTITY big "\(tenKiB)">]>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Thing" representedClassName="Thing" syncable="YES">
                    <attribute name="a" optional="YES" attributeType="String" defaultValueString="\(references)"/>
                </entity>
            </model>
            """)
        let run = try lade(sandbox, ["inspect", "contents"])
        expectRefused(run, naming: ["contents"], "entity expansion")
    }

    // MARK: Sources

    @Test("every row read from a pipe (/dev/stdin) is imported or counted")
    func sourceThroughPipe() throws {
        let sandbox = try ImportSandbox()
        var text = "code,name\n"
        for index in 0..<20_000 { text += "S\(index),Supplier \(index)\n" }
        try sandbox.job("source: { path: /dev/stdin, format: csv }\nentity: Supplier\nkey: code\n")
        let run = try lade(sandbox, ["run", "job.yaml", "--quiet"], input: Data(text.utf8))
        expectBounded(run, "pipe source")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZSUPPLIER") == 20_000)
    }

    @Test("duplicate CSV column names are refused by validate and run, naming the columns")
    func duplicateHeaders() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("suppliers.csv", "code,name,name\nA1,first,second\n")
        try sandbox.job("source: suppliers.csv\nentity: Supplier\nkey: code\n")
        expectRefused(try lade(sandbox, ["validate", "job.yaml"]), naming: ["suppliers.csv", "name"], "validate, duplicate header")
        expectRefused(try lade(sandbox, ["run", "job.yaml"]), naming: ["suppliers.csv", "name"], "run, duplicate header")
        if FileManager.default.fileExists(atPath: sandbox.store.path) {
            #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZSUPPLIER") == 0)
        }
        // Under auto-matching, two spellings of one attribute.
        try sandbox.write("suppliers.csv", "code,Name,NAME\nA1,first,second\n")
        expectRefused(try lade(sandbox, ["validate", "job.yaml"]), naming: ["suppliers.csv", "'Name' (column 2) and 'NAME' (column 3)"], "validate, two spellings")
    }

    @Test("an empty key list is refused with its place in the job")
    func emptyKey() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("suppliers.csv", "code,name\nA1,first\n")
        try sandbox.job("source: suppliers.csv\nentity: Supplier\nkey: []\n")
        expectRefused(try lade(sandbox, ["run", "job.yaml"]), naming: ["job.yaml"], "key: []")
    }

    @Test("a directory given as a job or a store says it is a directory")
    func directories() throws {
        let sandbox = try ImportSandbox()
        try FileManager.default.createDirectory(at: sandbox.url("folder"), withIntermediateDirectories: true)
        let job = try lade(sandbox, ["run", "folder"])
        expectRefused(job, naming: ["folder", "directory"], "job is a directory")
        let store = try lade(sandbox, ["meta", "get", "folder"])
        expectRefused(store, naming: ["folder", "directory"], "store is a directory")
    }

    // MARK: Values and keys

    @Test("keys that differ only after a NUL byte stay two objects and read back whole")
    func nulInKeys() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("suppliers.ndjson", "{\"code\": \"A\\u0000B\", \"name\": \"ab\\u0000cd\"}\n{\"code\": \"A\\u0000C\", \"name\": \"x\"}\n")
        try sandbox.job("source: suppliers.ndjson\nentity: Supplier\nkey: code\n")
        let run = try lade(sandbox, ["run", "job.yaml", "--quiet"])
        expectBounded(run, "NUL keys")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try StoreReading.integer(sandbox.store, "SELECT COUNT(*) FROM ZSUPPLIER") == 2)
        let fetch = try lade(sandbox, ["fetch", "catalog.sqlite", "--model", ImportSandbox.catalogModel.path,
                                       "--entity", "Supplier", "--format", "json", "--sort", "code"])
        expectBounded(fetch, "fetch NUL")
        #expect(fetch.stdout.contains("A\\u0000B") && fetch.stdout.contains("A\\u0000C") && fetch.stdout.contains("ab\\u0000cd"),
                "fetch printed: \(fetch.stdout.debugDescription)")
    }

    @Test("keys equal only under Unicode equivalence (NFC and NFD café) stay two objects")
    func canonicallyEquivalentKeys() throws {
        let sandbox = try ImportSandbox()
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        try sandbox.write("suppliers.csv", "code,name\n\(composed),composed\n\(decomposed),decomposed\n")
        try sandbox.job("source: suppliers.csv\nentity: Supplier\nkey: code\n")
        let run = try lade(sandbox, ["run", "job.yaml", "--quiet"])
        expectBounded(run, "NFC/NFD")
        #expect(run.status == 0, "\(run.stderr)")
        let codes = try StoreReading.column(sandbox.store, "SELECT hex(ZCODE) || ':' || ZNAME FROM ZSUPPLIER ORDER BY ZNAME")
        #expect(codes == [.text("636166C3A9:composed"), .text("63616665CC81:decomposed")])
    }

    @Test("a Double that overflows is rejected, never stored as infinity")
    func doubleOverflow() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.ndjson", """
            {"sku": "OK-1", "name": "fine", "weight": 1.5}
            {"sku": "BIG-1", "name": "too big", "weight": 1e400}

            """)
        try sandbox.job("source: products.ndjson\nentity: Product\nkey: sku\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        let run = try lade(sandbox, ["run", "job.yaml", "--quiet"])
        expectBounded(run, "1e400")
        #expect(run.status == 2, "\(run.stderr)")
        #expect(try StoreReading.column(sandbox.store, "SELECT ZSKU FROM ZPRODUCT ORDER BY ZSKU") == [.text("OK-1")])
        let rejects = try sandbox.rejectedRows()
        #expect(rejects.count == 1 && (rejects.first?["line"] as? Int) == 2, "\(rejects)")
    }

    @Test("meta set refuses nesting it could not read back, and the store stays usable")
    func deepMetadata() throws {
        let sandbox = try ImportSandbox()
        try suppliersStore(sandbox)
        let before = try digest(sandbox.store)
        for depth in [513, 60_000] {
            let value = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let run = try lade(sandbox, ["meta", "set", "catalog.sqlite", "deep=\(value)", "--json-values"])
            expectRefused(run, naming: ["deep"], "\(depth) levels")
        }
        #expect(try digest(sandbox.store) == before)
        let read = try lade(sandbox, ["meta", "get", "catalog.sqlite"])
        #expect(read.status == 0, "\(read.stderr)")
    }

    @Test("meta set --json-values with a null inside a value says a property list cannot hold null, at which path; nothing is written")
    func nullInsideMetadata() throws {
        let sandbox = try ImportSandbox()
        try suppliersStore(sandbox)
        let before = try digest(sandbox.store)
        let run = try lade(sandbox, ["meta", "set", "catalog.sqlite", "a={\"a\":[1,null]}", "--json-values"])
        expectRefused(run, naming: ["null", "property list", "a.a[1]"], "null inside a value")
        #expect(!run.stderr.contains("not JSON"), "\(run.stderr)")
        #expect(try digest(sandbox.store) == before)
    }

    /// The first piece of `secret` (three characters or longer, not all URL delimiters) that
    /// `shown` holds and the text around the secret in `written` does not.
    static func leakedPiece(of secret: String, in shown: String, written: String) -> String? {
        let characters = Array(secret)
        let context = written.replacingOccurrences(of: secret, with: "\u{0}")
        for length in stride(from: characters.count, through: 3, by: -1) {
            for start in 0...(characters.count - length) {
                let piece = String(characters[start..<start + length])
                if shown.contains(piece) && !context.contains(piece) && !piece.allSatisfy({ "@/?#%".contains($0) }) { return piece }
            }
        }
        return nil
    }

    @Test("a password written raw in a store URL (@ : / % ? & # unencoded) shows in no part on the command line, from a job, or in a report")
    func rawPasswordInURL() throws {
        let sandbox = try ImportSandbox()
        let password = "p@ss:w/rd%?&x#y"
        let written = [
            "postgresql://user:\(password)@127.0.0.1:1/db?schema=s",
            "postgresql://user:\(password)@127.0.0.1:1/db",
            "postgresql://user@127.0.0.1:1/db?schema=s&password=\(password)",
            "postgresql://user@127.0.0.1:1/db?password=\(password)&schema=s",
            "host=127.0.0.1 port=1 password=\(password) dbname=db",
        ]
        try sandbox.write("s.csv", "code,name\nA,a\n")
        for (index, url) in written.enumerated() {
            var outputs: [(String, String)] = []
            for command in [["inspect", url], ["fetch", url, "--entity", "Supplier"], ["meta", "get", url]] {
                let run = try lade(sandbox, command)
                expectBounded(run, "\(command[0]) \(url)")
                #expect(run.status != 0, "\(command[0]) \(url) succeeded")
                outputs.append(("\(command[0]) \(url)", run.stdout + run.stderr))
            }
            let escaped = url.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            try sandbox.job("source: s.csv\nentity: Supplier\nkey: code\nstore: { url: \"\(escaped)\" }\nonError: { policy: skip, rejects: rejects\(index).ndjson }\n",
                            named: "job\(index).yaml")
            for command in [["validate", "job\(index).yaml"], ["run", "job\(index).yaml", "--report", "report\(index).json"]] {
                let run = try lade(sandbox, command)
                expectBounded(run, "\(command[0]) \(url)")
                #expect(run.status != 0, "\(command[0]) \(url) succeeded")
                outputs.append(("\(command[0]) job with \(url)", run.stdout + run.stderr))
            }
            for name in ["report\(index).json", "rejects\(index).ndjson"] {
                if let text = try? String(contentsOf: sandbox.url(name), encoding: .utf8) { outputs.append((name, text)) }
            }
            for (what, text) in outputs {
                let leaked = Self.leakedPiece(of: password, in: text, written: url)
                #expect(leaked == nil, "\(what) shows '\(leaked ?? "")' of the password: \(text)")
            }
        }
    }

    @Test("an empty password in a store URL (user:@host) carries none: the command line takes it")
    func emptyPasswordInURL() throws {
        let sandbox = try ImportSandbox()
        let run = try lade(sandbox, ["inspect", "postgresql://user:@127.0.0.1:1/db?schema=s&connect_timeout=5"])
        expectBounded(run, "empty password")
        #expect(run.status == 69, "\(run.status): \(run.stderr)")
        #expect(!run.stderr.contains("carries a password"), "\(run.stderr)")
    }

    // MARK: Predicates

    @Test("MATCHES with a pattern that backtracks badly answers every row, or refuses naming the pattern")
    func catastrophicBacktracking() throws {
        let sandbox = try ImportSandbox()
        let names = [5, 25, 30, 35, 40].map { String(repeating: "a", count: $0) + "b" }
        try suppliersStore(sandbox, rows: names.enumerated().map { "S\($0.offset),\($0.element)" })
        let run = try lade(sandbox, ["fetch", "catalog.sqlite", "--model", ImportSandbox.catalogModel.path, "--entity", "Supplier",
                                     "--where", "name MATCHES '((a+)+c|a+b)'", "--format", "csv"])
        expectBounded(run, "backtracking")
        if run.status == 0 {
            #expect(run.stdout.split(whereSeparator: \.isNewline).count == 1 + names.count, "rows: \(run.stdout)")
        } else {
            expectRefused(run, naming: ["((a+)+c|a+b)"], "backtracking refused")
        }
    }

    @Test("a flat OR of 2,000 terms runs on SQLite")
    func wideDisjunction() throws {
        let sandbox = try ImportSandbox()
        try suppliersStore(sandbox, rows: (0..<50).map { "C\($0),n\($0)" })
        let predicate = (0..<2_000).map { "code == 'C\($0)'" }.joined(separator: " OR ")
        let run = try lade(sandbox, ["fetch", "catalog.sqlite", "--model", ImportSandbox.catalogModel.path, "--entity", "Supplier",
                                     "--where", predicate, "--format", "csv"])
        expectBounded(run, "wide OR")
        #expect(run.status == 0, "\(run.stderr.prefix(300))")
        #expect(run.stdout.split(whereSeparator: \.isNewline).count == 51, "\(run.stdout.prefix(300)) \(run.stderr.prefix(300))")
    }

    @Test("a predicate longer than a command line holds (190 KB) is read from a file with --where @FILE", .slow)
    func predicateFromFile() throws {
        let sandbox = try ImportSandbox()
        try suppliersStore(sandbox, rows: (0..<50).map { "C\($0),n\($0)" })
        try sandbox.write("predicate.txt", (0..<10_000).map { "code == 'C\($0)'" }.joined(separator: " OR ") + "\n")
        let run = try lade(sandbox, ["fetch", "catalog.sqlite", "--model", ImportSandbox.catalogModel.path, "--entity", "Supplier",
                                     "--where", "@predicate.txt", "--format", "csv"])
        expectBounded(run, "predicate file")
        #expect(run.status == 0, "\(run.stderr.prefix(300))")
        #expect(run.stdout.split(whereSeparator: \.isNewline).count == 51)
        expectRefused(try lade(sandbox, ["fetch", "catalog.sqlite", "--model", ImportSandbox.catalogModel.path, "--entity", "Supplier",
                                         "--where", "@missing.txt"]), naming: ["missing.txt"], "no predicate file")
    }

    // MARK: Size and damage

    /// A model of `count` entities, each with an attribute and a to-one relationship to the next
    /// (a table and an index each in a SQLite store), as Xcode's `contents`.
    static func wideModel(entities count: Int) -> String {
        var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<model type=\"com.apple.IDECoreDataModeler.DataModel\" documentVersion=\"1.0\">\n"
        for index in 0..<count {
            text += "<entity name=\"E\(index)\"><attribute name=\"a\" optional=\"YES\" attributeType=\"String\"/>"
                + "<relationship name=\"next\" optional=\"YES\" maxCount=\"1\" deletionRule=\"Nullify\" destinationEntity=\"E\((index + 1) % count)\"/></entity>\n"
        }
        return text + "</model>\n"
    }

    @Test("a model of 20,000 entities loads in time linear in its size (seconds, not minutes)", .slow)
    func wideModel() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("contents", Self.wideModel(entities: 20_000))
        let run = try lade(sandbox, ["inspect", "contents", "--json"])
        expectBounded(run, "20,000 entities")
        #expect(run.status == 0, "\(run.stderr.prefix(300))")
        // Quadratic work took 70 s here (debug build); linear work takes about 2 s.
        #expect(run.seconds < 20, "loading took \(run.seconds) s")
    }

    @Test("a store for a model of 20,000 entities is created and opened in time linear in its size", .slow)
    func wideStore() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("contents", Self.wideModel(entities: 20_000))
        let created = try lade(sandbox, ["init", "wide.sqlite", "--model", "contents"])
        expectBounded(created, "init of 20,000 entities")
        #expect(created.status == 0, "\(created.stderr.prefix(300))")
        // SQLite's CREATE statements each read the whole schema: made one by one, these 40,000
        // tables and indexes took 147 s in the sqlite3 shell alone; linear work takes seconds.
        #expect(created.seconds < 30, "lade init took \(created.seconds) s")
        let inspected = try lade(sandbox, ["inspect", "wide.sqlite", "--model", "contents"])
        expectBounded(inspected, "inspect of a store of 20,000 entities")
        #expect(inspected.status == 0, "\(inspected.stderr.prefix(300))")
        #expect(inspected.stdout.contains("E19999  0"), "\(inspected.stdout.suffix(300))")
        #expect(inspected.seconds < 30, "lade inspect took \(inspected.seconds) s")
        let connection = try SQLiteConnection(path: sandbox.url("wide.sqlite").path, mode: .readOnly)
        #expect(try connection.rows("PRAGMA integrity_check") == [[.text("ok")]])
        #expect(try connection.rows("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'") == [[.integer(20_003)]])
        #expect(try connection.rows("SELECT COUNT(*) FROM Z_PRIMARYKEY") == [[.integer(20_000)]])
    }

    @Test("a store with rows of an unknown entity and keys naming missing objects is refused with counts, never read with rows dropped")
    func damagedStore() throws {
        let sandbox = try ImportSandbox()
        try suppliersStore(sandbox, rows: (0..<6).map { "C\($0),n\($0)" })
        let connection = try SQLiteConnection(path: sandbox.store.path, mode: .readWrite(create: false))
        try connection.execute("UPDATE ZSUPPLIER SET Z_ENT = 42 WHERE ZCODE IN ('C1', 'C2', 'C3')")
        let model = ImportSandbox.catalogModel.path
        let fetch = try lade(sandbox, ["fetch", "catalog.sqlite", "--model", model, "--entity", "Supplier", "--limit", "5"])
        expectRefused(fetch, naming: ["catalog.sqlite", "Z_ENT", "lade check"], "fetch of a damaged store")
        let convert = try lade(sandbox, ["convert", "catalog.sqlite", "copy.xml", "--model", model])
        expectRefused(convert, naming: ["catalog.sqlite", "3 rows whose Z_ENT"], "convert of a damaged store")
        #expect(!FileManager.default.fileExists(atPath: sandbox.url("copy.xml").path))
        let check = try lade(sandbox, ["check", "catalog.sqlite", "--model", model])
        expectBounded(check, "check")
        #expect(check.status == 1)
        #expect(check.stdout.contains("ZSUPPLIER: 3 rows whose Z_ENT names no concrete entity of the model (first: Z_PK 2, Z_ENT 42)"), "\(check.stdout)")
    }

    /// Rewrites the plist of `store`'s `Z_METADATA` row with Foundation's own plist coder, as a
    /// hand or another tool would, with `change` applied.
    func rewriteMetadata(_ store: URL, _ change: (inout [String: Any]) -> Void) throws {
        let connection = try SQLiteConnection(path: store.path, mode: .readWrite(create: false))
        guard case .blob(let plist)? = try connection.rows("SELECT Z_PLIST FROM Z_METADATA WHERE Z_VERSION = 1").first?[0],
              var metadata = try PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any] else {
            throw StoreReadingError("no Z_PLIST in \(store.path)")
        }
        change(&metadata)
        let data = try PropertyListSerialization.data(fromPropertyList: metadata, format: .binary, options: 0)
        try connection.prepare("UPDATE Z_METADATA SET Z_PLIST = ? WHERE Z_VERSION = 1").run([.blob(data)])
    }

    @Test("a store whose metadata holds a key of the wrong type (NSStoreUUID a number, NSStoreModelVersionHashes a string) is refused by every command, naming the key, the type found and the type expected; nothing is written")
    func mistypedMetadata() throws {
        let cases: [(key: String, value: Any, found: String, expected: String)] = [
            ("NSStoreUUID", 42, "an integer", "a string"),
            ("NSStoreModelVersionHashes", "oops", "a string", "a dictionary"),
        ]
        for (key, value, found, expected) in cases {
            let sandbox = try ImportSandbox()
            try suppliersStore(sandbox)
            try rewriteMetadata(sandbox.store) { $0[key] = value }
            let before = try digest(sandbox.store)
            try sandbox.write("more.csv", "code,name\nZED,Zed\n")
            try sandbox.job("source: more.csv\nentity: Supplier\nkey: code\n", named: "more.yaml")
            let model = ImportSandbox.catalogModel.path
            let commands: [[String]] = [
                ["fetch", "catalog.sqlite", "--entity", "Supplier"],
                ["fetch", "catalog.sqlite", "--model", model, "--entity", "Supplier"],
                ["inspect", "catalog.sqlite"],
                ["export", "catalog.sqlite", "--format", "ndjson", "--out", "export"],
                ["convert", "catalog.sqlite", "copy.xml"],
                ["convert", "catalog.sqlite", "copy.sqlite", "--model", model],
                ["run", "more.yaml"],
                ["meta", "get", "catalog.sqlite"],
                ["meta", "set", "catalog.sqlite", "a=b"],
            ]
            for command in commands {
                let run = try lade(sandbox, command)
                expectRefused(run, naming: ["catalog.sqlite", key, found, expected], "\(key): \(command.prefix(2).joined(separator: " "))")
            }
            #expect(try digest(sandbox.store) == before, "\(key): the store changed")
            for name in ["copy.xml", "copy.sqlite", "export"] {
                #expect(!FileManager.default.fileExists(atPath: sandbox.url(name).path), "\(key): \(name) was written")
            }
        }
        // Nor does lade meta set write such metadata into a sound store.
        let sandbox = try ImportSandbox()
        try suppliersStore(sandbox)
        let before = try digest(sandbox.store)
        for (assignment, expected) in [("NSStoreModelVersionHashes=oops", "a dictionary"), ("NSStoreModelVersionHashesVersion=3", "an integer")] {
            let run = try lade(sandbox, ["meta", "set", "catalog.sqlite", assignment])
            expectRefused(run, naming: [String(assignment.prefix(while: { $0 != "=" })), "a string", expected], assignment)
        }
        #expect(try digest(sandbox.store) == before)
    }

    @Test("a model Xcode compiles with defaultValueString NO on an Integer 64 imports, and lade run and lade seed print the warning")
    func integerDefaultNO() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("contents", """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Thing" representedClassName="Thing" syncable="YES">
                    <attribute name="code" attributeType="String"/>
                    <attribute name="count" optional="YES" attributeType="Integer 64" defaultValueString="NO" usesScalarValueType="YES"/>
                </entity>
            </model>
            """)
        try sandbox.write("things.csv", "code\nA\nB\n")
        try sandbox.write("job.yaml", "kind: import\nmodel: contents\nstore: { path: things.sqlite }\nsource: things.csv\nentity: Thing\nkey: code\n")
        let run = try lade(sandbox, ["run", "job.yaml", "--quiet"])
        expectBounded(run, "Integer default NO")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("lade: warning:") && run.stderr.contains("'NO' is not a whole number; Core Data reads it as 0"), "\(run.stderr)")
        let rows = try SQLiteConnection(path: sandbox.url("things.sqlite").path, mode: .readOnly).rows("SELECT ZCODE, ZCOUNT FROM ZTHING ORDER BY ZCODE")
        #expect(rows == [[.text("A"), .integer(0)], [.text("B"), .integer(0)]])
        // lade seed sets up its job the same way, warnings included.
        try sandbox.write("seed.yaml", "kind: seed\nmodel: contents\nstore: { path: seeded.sqlite }\nflag: things.seeded\nsteps:\n  - { source: things.csv, entity: Thing, key: code }\n")
        let seed = try lade(sandbox, ["seed", "seed.yaml", "--quiet"])
        #expect(seed.status == 0, "\(seed.stderr)")
        #expect(seed.stderr.contains("lade: warning:") && seed.stderr.contains("'NO' is not a whole number; Core Data reads it as 0"), "\(seed.stderr)")
    }
}
