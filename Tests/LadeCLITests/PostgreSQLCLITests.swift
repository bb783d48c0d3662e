import Foundation
import Testing

/// `lade` against the private PostgreSQL test server: a store URL wherever a store goes, on the
/// command line and in jobs, and its password never shown.
@Suite("lade with a PostgreSQL store URL, run as a process")
struct PostgreSQLCLITests {
    let server: PostgresTestServer

    init() throws {
        server = try PostgresTestServer.fromEnvironment()
    }

    /// A new schema for one test, dropped when `body` ends.
    func withSchema(_ label: String, _ body: (String) throws -> Void) throws {
        let schema = server.newSchemaName(label)
        defer { try? server.dropSchema(schema) }
        try body(schema)
    }

    /// A shipped job's text with its store line replaced by `store`.
    func shippedJob(_ name: String, store: String) throws -> String {
        let text = try String(contentsOf: LadeProcess.root.appendingPathComponent("jobs/\(name)"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix("store:") ? "store: \(store)" : String(line)
        }
        return lines.joined(separator: "\n")
    }

    func lines(ofFilesIn directory: URL) throws -> [String: String] {
        var files: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            files[name] = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
        }
        return files
    }

    @Test("lade convert --overwrite onto a PostgreSQL store replaces the store's own tables only: a table of the user's in its schema stays; a view elsewhere on the store refuses it, named, and nothing changes")
    func overwriteReplacesOnlyTheStore() throws {
        try withSchema("cli_overwrite") { schema in
            let store = server.storeURL(schema: schema)
            let s = PostgresTestServer.quotedIdentifier(schema)
            let view = "v_" + schema
            #expect(try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld"]).status == 0)
            _ = try server.psql("CREATE TABLE \(s).notes (x int); INSERT INTO \(s).notes VALUES (7)")
            _ = try server.psql("CREATE VIEW public.\(PostgresTestServer.quotedIdentifier(view)) AS SELECT \"Z_NAME\" FROM \(s).\"Z_PRIMARYKEY\"")
            defer { _ = try? server.psql("DROP VIEW IF EXISTS public.\(PostgresTestServer.quotedIdentifier(view))") }
            let sandbox = try ImportSandbox()
            let source = sandbox.url("source.sqlite").path
            #expect(try LadeProcess.run(["init", source, "--model", "samples/Catalog.xcdatamodeld"]).status == 0)
            let uuid = try server.psql("SELECT \"Z_UUID\" FROM \(s).\"Z_METADATA\"")

            let refused = try LadeProcess.run(["convert", source, store, "--model", "samples/Catalog.xcdatamodeld", "--overwrite"])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains(view), "\(refused.stderr)")
            #expect(try server.psql("SELECT \"Z_UUID\" FROM \(s).\"Z_METADATA\"") == uuid, "the store changed")
            #expect(try server.psql("SELECT count(*) FROM public.\(PostgresTestServer.quotedIdentifier(view))") != "0")

            _ = try server.psql("DROP VIEW public.\(PostgresTestServer.quotedIdentifier(view))")
            let replaced = try LadeProcess.run(["convert", source, store, "--model", "samples/Catalog.xcdatamodeld", "--overwrite"])
            #expect(replaced.status == 0, "\(replaced.stderr)")
            #expect(try server.psql("SELECT \"Z_UUID\" FROM \(s).\"Z_METADATA\"") != uuid, "not replaced")
            #expect(try server.psql("SELECT x FROM \(s).notes") == "7", "the user's table went with the store")
            #expect(try LadeProcess.run(["check", store]).status == 0)
        }
    }

    @Test("lade init makes a store in a schema; meta, inspect, fetch, export and check read it by its URL")
    func initAndRead() throws {
        try withSchema("cli_init") { schema in
            let store = server.storeURL(schema: schema)
            let created = try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld"])
            #expect(created.status == 0, "\(created.stderr)")
            #expect(created.stdout.contains("created \(store): PostgreSQL store for 6 entities"), "\(created.stdout)")
            #expect(try server.psql("SELECT count(*) FROM pg_tables WHERE schemaname = \(PostgresTestServer.quotedLiteral(schema))") != "0")

            let again = try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld"])
            #expect(again.status == 1, "\(again.stdout)")

            let get = try LadeProcess.run(["meta", "get", store, "NSStoreType"])
            #expect(get.status == 0, "\(get.stderr)")
            #expect(get.stdout == "NSStoreType = \"PostgreSQL\"\n")
            let set = try LadeProcess.run(["meta", "set", store, "importedBy=nightly"])
            #expect(set.status == 0, "\(set.stderr)")
            #expect(try LadeProcess.run(["meta", "get", store, "importedBy", "--json"]).stdout.contains("\"importedBy\" : \"nightly\""))
            let deleted = try LadeProcess.run(["meta", "delete", store, "importedBy"])
            #expect(deleted.status == 0, "\(deleted.stderr)")
            #expect(try LadeProcess.run(["meta", "checkpoints", store]).status == 0)

            // No model named: the one the store carries (its Z_MODELCACHE).
            let inspected = try LadeProcess.run(["inspect", store, "--json"])
            #expect(inspected.status == 0, "\(inspected.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(inspected.stdout.utf8)) as? [String: Any])
            #expect(object["store"] as? String == store)
            let entities = try #require(object["entities"] as? [[String: Any]])
            #expect(entities.count == 6 && entities.allSatisfy { $0["count"] as? Int == 0 })
            #expect((object["metadata"] as? [String: Any])?["NSStoreType"] as? String == "PostgreSQL")
            let withModel = try LadeProcess.run(["inspect", store, "--model", "samples/Catalog.xcdatamodeld"])
            #expect(withModel.status == 0, "\(withModel.stderr)")

            let fetched = try LadeProcess.run(["fetch", store, "--entity", "Product"])
            #expect(fetched.status == 0, "\(fetched.stderr)")
            #expect(fetched.stdout.contains("(0 objects)"))
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("lade-pg-export-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: out) }
            let exported = try LadeProcess.run(["export", store, "--format", "ndjson", "--out", out.path])
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(try lines(ofFilesIn: out)["Product.ndjson"] == "")
            let checked = try LadeProcess.run(["check", store, "--json"])
            #expect(checked.status == 0, "\(checked.stdout) \(checked.stderr)")
            #expect(checked.stdout.contains("\"damaged\":false"))
        }
    }

    @Test("lade convert SQLite → PostgreSQL → SQLite gives back the same objects, exported byte for byte")
    func convertRoundTrip() throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        try withSchema("cli_convert") { schema in
            let store = server.storeURL(schema: schema)
            let job = try workspace.job("seed.yaml", try shippedJob("seed-catalog.yaml", store: "{ type: sqlite, path: ../out/catalog.sqlite }"))
            let seeded = try LadeProcess.run(["seed", job])
            #expect(seeded.status == 0, "\(seeded.stderr)")
            let source = workspace.out.appendingPathComponent("catalog.sqlite").path
            let back = workspace.out.appendingPathComponent("back.sqlite").path

            let there = try LadeProcess.run(["convert", source, store])
            #expect(there.status == 0, "\(there.stderr)")
            #expect(there.stdout.contains("to \(store) (PostgreSQL): 25 objects"), "\(there.stdout)")
            let refused = try LadeProcess.run(["convert", source, store, "--type", "postgresql"])
            #expect(refused.status == 1 && refused.stderr.contains("store.alreadyExists"), "\(refused.stderr)")
            let replaced = try LadeProcess.run(["convert", source, store, "--type", "postgresql", "--overwrite"])
            #expect(replaced.status == 0, "\(replaced.stderr)")
            let wrongType = try LadeProcess.run(["convert", source, store, "--type", "xml"])
            #expect(wrongType.status == 64 && wrongType.stderr.contains("names a postgresql store"), "\(wrongType.stderr)")

            let returned = try LadeProcess.run(["convert", store, back])
            #expect(returned.status == 0, "\(returned.stderr)")
            #expect(returned.stdout.contains("converted \(store) (PostgreSQL) to \(back) (SQLite): 25 objects"), "\(returned.stdout)")

            var exports: [[String: String]] = []
            for (index, name) in [source, store, back].enumerated() {
                let out = workspace.out.appendingPathComponent("export-\(index)")
                let exported = try LadeProcess.run(["export", name, "--format", "ndjson", "--out", out.path])
                #expect(exported.status == 0, "\(exported.stderr)")
                exports.append(try lines(ofFilesIn: out))
            }
            #expect(exports[0]["Product.ndjson"]?.split(separator: "\n").count == 10)
            #expect(exports[1] == exports[0])
            #expect(exports[2] == exports[0])
        }
    }

    @Test("lade convert refuses a PostgreSQL destination that is its source, however the URL is spelled, and leaves it as it was")
    func convertOntoItself() throws {
        try withSchema("cli_self") { schema in
            let store = server.storeURL(schema: schema)
            #expect(try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld"]).status == 0)
            let respelled = "postgres://\(server.user)@/\(server.database)?port=\(server.port)&schema=\(schema)&host="
                + (server.socketDirectory.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            for destination in [store, respelled] {
                let result = try LadeProcess.run(["convert", store, destination, "--overwrite"])
                #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
                #expect(result.stderr.contains("\(destination): the destination is the source itself") && result.stderr.contains("[store.alreadyExists]"), "\(result.stderr)")
            }
            #expect(try LadeProcess.run(["meta", "get", store, "NSStoreType"]).stdout.contains("PostgreSQL"))
        }
    }

    @Test("lade run imports a shipped job into a PostgreSQL store with the batch writer, and through managed objects; a second run has nothing to do")
    func runJobTwice() throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        try withSchema("cli_run") { schema in
            let store = server.storeURL(schema: schema)
            let suppliers = try workspace.job("suppliers.yaml", try shippedJob("suppliers.yaml", store: "{ url: \"\(store)\" }"))
            let products = try workspace.job("products.yaml", try shippedJob("products.yaml", store: "{ type: postgresql, url: \"\(store)\" }")
                .replacingOccurrences(of: "rejects: ../out/products.rejects.ndjson", with: "rejects: ../out/rejects.ndjson"))
            let validated = try LadeProcess.run(["validate", products])
            #expect(validated.status == 0, "\(validated.stderr)")
            #expect(validated.stdout.contains("store \(store): will be created with the model"), "\(validated.stdout)")
            #expect(validated.stdout.contains("writer: batch"), "\(validated.stdout)")

            let first = try LadeProcess.run(["run", suppliers])
            #expect(first.status == 0, "\(first.stderr)")
            let report = workspace.out.appendingPathComponent("report.json")
            let imported = try LadeProcess.run(["run", products, "--report", report.path])
            #expect([0, 2].contains(imported.status), "\(imported.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
            #expect(json["store"] as? String == store)
            let count = try server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZPRODUCT\"")
            #expect(Int(count) ?? 0 > 2000, "\(count)")

            let again = try LadeProcess.run(["run", products])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stdout.contains("already and has not changed"), "\(again.stdout)")
            #expect(try server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZPRODUCT\"") == count)
            let forced = try LadeProcess.run(["run", products, "--force"])
            #expect([0, 2].contains(forced.status), "\(forced.stderr)")
            #expect(try server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZPRODUCT\"") == count)
            let fetched = try LadeProcess.run(["fetch", store, "--entity", "Supplier", "--format", "json"])
            #expect(fetched.status == 0 && fetched.stdout.components(separatedBy: "\"code\"").count == 9, "\(fetched.stdout) \(fetched.stderr)")

            // The objects writer over the same store: a forced re-run changes nothing.
            let objects = try workspace.job("objects.yaml", try shippedJob("suppliers.yaml", store: "{ url: \"\(store)\" }") + "\nwriter: objects\n")
            let throughObjects = try LadeProcess.run(["run", objects, "--force"])
            #expect(throughObjects.status == 0, "\(throughObjects.stderr)")
            #expect(throughObjects.stdout.contains("writer: objects"), "\(throughObjects.stdout)")
            #expect(try server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZPRODUCT\"") == count)
        }
    }

    @Test("a job that names no model runs with the one a PostgreSQL store carries")
    func carriedModelJob() throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        try withSchema("cli_carried") { schema in
            let store = server.storeURL(schema: schema)
            #expect(try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld"]).status == 0)
            let text = try shippedJob("suppliers.yaml", store: "{ url: \"\(store)\" }")
                .split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("model:") }.joined(separator: "\n")
            let job = try workspace.job("suppliers.yaml", text)
            let validated = try LadeProcess.run(["validate", job])
            #expect(validated.status == 0, "\(validated.stderr)")
            #expect(validated.stdout.contains("model the model the store carries (Z_MODELCACHE)"), "\(validated.stdout)")
            #expect(!validated.stdout.contains("the model lade carries"), "\(validated.stdout)")
            let imported = try LadeProcess.run(["run", job])
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZSUPPLIER\"") == "8")
        }
    }

    @Test("lade seed seeds a PostgreSQL store once")
    func seedOnce() throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        try withSchema("cli_seed") { schema in
            let store = server.storeURL(schema: schema)
            let job = try workspace.job("seed.yaml", try shippedJob("seed-catalog.yaml", store: "{ url: \"\(store)\" }"))
            #expect(try LadeProcess.run(["seed", job, "--check"]).status == 3)
            let seeded = try LadeProcess.run(["seed", job])
            #expect(seeded.status == 0, "\(seeded.stderr)")
            let again = try LadeProcess.run(["seed", job])
            #expect(again.status == 0 && again.stdout.contains("already seeded"), "\(again.stdout) \(again.stderr)")
            #expect(try LadeProcess.run(["seed", job, "--check"]).status == 0)
            #expect(try server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZPRODUCT\"") == "10")
        }
    }

    @Test("a password in a store URL on the command line is refused as a usage error, and never printed")
    func passwordOnCommandLine() throws {
        let schema = server.newSchemaName("cli_pw")
        let withPassword = server.tcpURL(schema: schema, password: server.password)
        let parameter = server.tcpURL(schema: schema) + "&password=" + server.password
        for url in [withPassword, parameter] {
            let commands: [[String]] = [
                ["init", url, "--model", "samples/Catalog.xcdatamodeld"], ["meta", "get", url], ["meta", "set", url, "a=b"],
                ["meta", "delete", url, "a"], ["meta", "checkpoints", url], ["inspect", url], ["fetch", url, "--entity", "Product"],
                ["export", url, "--format", "ndjson", "--out", "/tmp/never"], ["check", url], ["history", url],
                ["history", "delete", url, "--before", "1"], ["migrate", url, "--model", "samples/Catalog.xcdatamodeld"],
                ["convert", url, "/tmp/never.sqlite"], ["convert", "/tmp/never.sqlite", url],
            ]
            for command in commands {
                let result = try LadeProcess.run(command)
                #expect(result.status == 64, "\(command[0]): \(result.stderr)")
                #expect(result.stderr.contains("~/.pgpass") && result.stderr.contains("PGPASSWORD"), "\(command[0]): \(result.stderr)")
                #expect(!(result.stdout + result.stderr).contains(server.password), "\(command[0]) printed the password")
            }
        }
        #expect(try server.psql("SELECT count(*) FROM pg_namespace WHERE nspname = \(PostgresTestServer.quotedLiteral(schema))") == "0")
    }

    @Test("a job file may carry the password in its URL: the run works over TCP, and no output or report shows the password")
    func passwordInJob() throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        try withSchema("cli_jobpw") { schema in
            let url = server.tcpURL(schema: schema, user: server.passwordUser, password: server.password)
            let job = try workspace.job("suppliers.yaml", try shippedJob("suppliers.yaml", store: "{ type: postgresql, url: \"\(url)\" }"))
            let report = workspace.out.appendingPathComponent("report.json")
            var outputs: [String] = []
            let validated = try LadeProcess.run(["validate", job])
            #expect(validated.status == 0, "\(validated.stderr)")
            let imported = try LadeProcess.run(["run", job, "--report", report.path, "--progress", "0.01"])
            #expect(imported.status == 0, "\(imported.stderr)")
            let shown = url.replacingOccurrences(of: ":" + server.password + "@", with: ":***@")
            #expect(imported.stdout.contains(shown), "\(imported.stdout)")
            outputs += [validated.stdout, validated.stderr, imported.stdout, imported.stderr, try String(contentsOf: report, encoding: .utf8)]
            let again = try LadeProcess.run(["run", job])
            outputs += [again.stdout, again.stderr]
            #expect(try server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZSUPPLIER\"") == "8")

            // The server down: the error names the URL, without its password.
            let down = url.replacingOccurrences(of: "127.0.0.1:\(server.port)", with: "127.0.0.1:1")
            let downJob = try workspace.job("down.yaml", try shippedJob("suppliers.yaml", store: "{ url: \"\(down)\" }"))
            let failed = try LadeProcess.run(["run", downJob])
            #expect(failed.status == 69, "\(failed.stderr)")
            #expect(failed.stderr.contains("[store.connection]"), "\(failed.stderr)")
            outputs += [failed.stdout, failed.stderr]
            // A wrong schema name in the URL: the job error shows the URL without its password.
            let badJob = try workspace.job("bad.yaml", try shippedJob("suppliers.yaml", store: "{ url: \"\(url.replacingOccurrences(of: "schema=", with: "schema=pg_"))\" }"))
            let bad = try LadeProcess.run(["validate", badJob])
            #expect(bad.status == 1 && bad.stderr.contains("bad.yaml:"), "\(bad.stderr)")
            outputs += [bad.stdout, bad.stderr]
            for output in outputs { #expect(!output.contains(server.password), "printed the password: \(output)") }
        }
    }

    @Test("a server that is down is store.connection, exit 69, for every command that reads or writes a store")
    func serverDown() throws {
        let url = "postgresql://\(server.user)@127.0.0.1:1/\(server.database)?schema=down&connect_timeout=5"
        for command in [["meta", "get", url], ["inspect", url], ["fetch", url, "--entity", "Product", "--model", "samples/Catalog.xcdatamodeld"],
                        ["init", url, "--model", "samples/Catalog.xcdatamodeld"], ["check", url, "--model", "samples/Catalog.xcdatamodeld"]] {
            let result = try LadeProcess.run(command)
            #expect(result.status == 69, "\(command[0]): \(result.stderr)")
            #expect(result.stderr.contains("lade: error: ") && result.stderr.contains("cannot connect") && result.stderr.contains("[store.connection]"), "\(command[0]): \(result.stderr)")
        }
    }

    @Test("a schema named with a quote and a statement is only a name")
    func hostileSchema() throws {
        let schema = "x\"; DROP SCHEMA public CASCADE; --" + String(server.newSchemaName("h").suffix(8))
        defer { try? server.dropSchema(schema) }
        let store = server.storeURL(schema: schema)
        let created = try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld"])
        #expect(created.status == 0, "\(created.stderr)")
        let get = try LadeProcess.run(["meta", "get", store, "NSStoreType"])
        #expect(get.status == 0 && get.stdout.contains("PostgreSQL"), "\(get.stderr)")
        #expect(try server.psql("SELECT count(*) FROM pg_namespace WHERE nspname IN ('public', \(PostgresTestServer.quotedLiteral(schema)))") == "2")
    }

    @Test("a URL written with a raw quote and space (not percent-encoded) names the schema it reads as, its other parts as given")
    func rawQuoteInURL() throws {
        let schema = "q\"uote x" + String(server.newSchemaName("r").suffix(8))
        defer { try? server.dropSchema(schema) }
        let encoded = server.storeURL(schema: "placeholder")
        let raw = encoded.replacingOccurrences(of: "schema=placeholder", with: "schema=" + schema)
        #expect(raw.contains("%2F") && raw.contains("\""))
        let created = try LadeProcess.run(["init", raw, "--model", "samples/Catalog.xcdatamodeld"])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout.contains("created \(raw): PostgreSQL store"), "\(created.stdout)")
        let get = try LadeProcess.run(["meta", "get", raw, "NSStoreType"])
        #expect(get.status == 0 && get.stdout.contains("PostgreSQL"), "\(get.stderr)")
        #expect(try server.psql("SELECT count(*) FROM pg_namespace WHERE nspname = \(PostgresTestServer.quotedLiteral(schema))") == "1")
    }

    @Test("a schema without a store is store.notFound, with the lade init that makes one")
    func missingStore() throws {
        let store = server.storeURL(schema: server.newSchemaName("cli_missing"))
        for command in [["inspect", store], ["meta", "get", store], ["fetch", store, "--entity", "Product", "--model", "samples/Catalog.xcdatamodeld"]] {
            let result = try LadeProcess.run(command)
            #expect(result.status == 1, "\(command[0]): \(result.stderr)")
            #expect(result.stderr.contains("[store.notFound]") && result.stderr.contains("`lade init '\(store)' --model MODEL` creates a store in that schema"), "\(command[0]): \(result.stderr)")
        }
    }

    @Test("a store of another model version: the hint names the store's URL, quoted, and no lade migrate (refused on PostgreSQL)")
    func mismatchHint() throws {
        try withSchema("cli_mismatch") { schema in
            let store = server.storeURL(schema: schema)
            #expect(try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld"]).status == 0)
            let result = try LadeProcess.run(["fetch", store, "--entity", "Product", "--model", "samples/Catalog.xcdatamodeld", "--model-version", "Catalog"])
            #expect(result.status == 1 && result.stderr.contains("[store.modelMismatch]"), "\(result.stderr)")
            #expect(result.stderr.contains("`lade inspect '\(store)' --model BUNDLE` says which version wrote it"), "\(result.stderr)")
            #expect(!result.stderr.contains("lade migrate"), "\(result.stderr)")
        }
    }

    @Test("history of a PostgreSQL store made without it says it keeps none; migrate plans one by its URL (the library decides what it can carry)")
    func historyNotTrackedMigratePlanned() throws {
        try withSchema("cli_refused") { schema in
            let store = server.storeURL(schema: schema)
            #expect(try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld"]).status == 0)
            let history = try LadeProcess.run(["history", store])
            #expect(history.status == 1 && history.stderr.contains("[history.notTracked]"), "\(history.stderr)")

            let current = try LadeProcess.run(["migrate", store, "--model", "samples/Catalog.xcdatamodeld"])
            #expect(current.status == 0 && current.stdout == "\(store): already at Catalog 2; nothing to do\n", "\(current.stdout) \(current.stderr)")
        }
        try withSchema("cli_older") { schema in
            let store = server.storeURL(schema: schema)
            #expect(try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld", "--model-version", "Catalog"]).status == 0)
            let planned = try LadeProcess.run(["migrate", store, "--model", "samples/Catalog.xcdatamodeld", "--dry-run"])
            #expect(planned.status == 0, "\(planned.stderr)")
            #expect(planned.stdout.hasPrefix("\(store): Catalog → Catalog 2 (") && planned.stdout.hasSuffix("dry run: nothing was written\n"), "\(planned.stdout)")
            #expect(try LadeProcess.run(["meta", "get", store, "NSStoreType"]).status == 0)
        }
    }

    @Test("lade init --history makes a PostgreSQL store that records history; runs by each writer record one transaction per commit; lade history lists and prunes it by its URL")
    func history() throws {
        try withSchema("cli_history") { schema in
            let store = server.storeURL(schema: schema)
            let sandbox = try ImportSandbox()
            try sandbox.write("model.json", try SampleModel2.v1().jsonData())
            for writer in ["batch", "objects"] {
                var csv = "authorAlias,bookID,comment,rating\n"
                for index in 0..<30 { csv += "\(writer) \(index),\(UUID().uuidString),comment \(index),\(index % 5)\n" }
                try sandbox.write("\(writer).csv", csv)
            }
            let made = try sandbox.lade(["init", store, "--model", "model.json", "--history"])
            #expect(made.status == 0 && made.stdout.contains("with persistent history"), "\(made.stdout)\(made.stderr)")
            for writer in ["batch", "objects"] {
                try sandbox.job("""
                    model: model.json
                    store: { url: "\(store)" }
                    transactionAuthor: importer
                    source: \(writer).csv
                    entity: Feedback
                    writer: \(writer)
                    batch: { size: 10, commitEvery: 1 }
                    """, named: "\(writer).yaml")
                let run = try sandbox.run("\(writer).yaml").result
                #expect(run.status == 0, "\(writer): \(run.stderr)")
            }
            let listed = try sandbox.lade(["history", store, "--after", "3", "--json"])
            #expect(listed.status == 0, "\(listed.stderr)")
            let transactions = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
            #expect(transactions.map { $0["token"] as? Int } == [4, 5, 6])
            let changes = transactions.flatMap { ($0["changes"] as? [[String: Any]]) ?? [] }
            #expect(changes.count == 30 && changes.allSatisfy { $0["type"] as? String == "insert" && $0["entity"] as? String == "Feedback" })
            #expect(transactions.allSatisfy { $0["author"] as? String == "importer" && $0["contextName"] as? String == "lade import" && $0["bundleID"] as? String == "lade" })
            let text = try sandbox.lade(["history", store])
            #expect(text.stdout.contains("transaction 1 ") && text.stdout.contains("author importer") && text.stdout.contains("  insert  Feedback  1\n"), "\(text.stdout)")
            let pruned = try sandbox.lade(["history", "delete", store, "--before", "4"])
            #expect(pruned.status == 0 && pruned.stdout == "deleted 3 transactions and 30 changes\n", "\(pruned.stdout)\(pruned.stderr)")
            let left = try sandbox.lade(["history", store, "--json"])
            let remaining = try #require(try JSONSerialization.jsonObject(with: Data(left.stdout.utf8)) as? [[String: Any]])
            #expect(remaining.map { $0["token"] as? Int } == [4, 5, 6])
            // A session that is not Lade's cannot write the store unrecorded.
            #expect(throws: (any Error).self) { try server.psql("DELETE FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZFEEDBACK\"") }

            // A job's store: { history: true } makes a new store with history, and refuses one without.
            try withSchema("cli_history_job") { other in
                let created = server.storeURL(schema: other)
                try sandbox.job("""
                    model: model.json
                    store: { url: "\(created)", history: true }
                    source: batch.csv
                    entity: Feedback
                    batch: { size: 10, commitEvery: 1 }
                    """, named: "created.yaml")
                let run = try sandbox.run("created.yaml").result
                #expect(run.status == 0, "\(run.stderr)")
                let listed = try sandbox.lade(["history", created, "--json"])
                let made = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
                #expect(made.map { $0["token"] as? Int } == [1, 2, 3], "\(listed.stdout)\(listed.stderr)")
            }
            try withSchema("cli_history_plain") { other in
                let plain = server.storeURL(schema: other)
                #expect(try sandbox.lade(["init", plain, "--model", "model.json"]).status == 0)
                try sandbox.job("""
                    model: model.json
                    store: { url: "\(plain)", history: true }
                    source: batch.csv
                    entity: Feedback
                    """, named: "plain.yaml")
                let refused = try sandbox.run("plain.yaml").result
                #expect(refused.status == 1 && refused.stderr.contains("history.notTracked"), "\(refused.stderr)")
            }
        }
    }

    @Test("a job's store: url for PostgreSQL, path for files; the wrong one is refused at its line and column")
    func jobStoreKeys() throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        let store = server.storeURL(schema: "never")
        let cases: [(String, String)] = [
            ("{ type: sqlite, url: \"\(store)\" }", "a 'url' names a postgresql store, not a sqlite one"),
            ("{ type: postgresql, path: ../out/x.sqlite }", "a postgresql store is named by its 'url'"),
            ("{ path: \"\(store)\" }", "a postgresql:// URL goes in 'url', not 'path'"),
            ("{ url: ../out/x.sqlite }", "expected a PostgreSQL URL"),
            ("{ type: postgresql }", "a postgresql store needs its 'url'"),
            ("{ url: \"postgresql://lade@/lade\" }", "names no schema"),
        ]
        for (index, (line, message)) in cases.enumerated() {
            let job = try workspace.job("job\(index).yaml", try shippedJob("suppliers.yaml", store: line))
            let result = try LadeProcess.run(["validate", job])
            #expect(result.status == 1, "\(line): \(result.stdout)")
            #expect(result.stderr.contains("job\(index).yaml:4:") && result.stderr.contains(message), "\(line): \(result.stderr)")
        }
    }

    @Test("converting over a PostgreSQL store prints Lade's own lines only, not the server's notices (DROP SCHEMA … CASCADE)")
    func noServerNotices() throws {
        try withSchema("cli_notices") { schema in
            let store = server.storeURL(schema: schema)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lade-notices-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("source.sqlite").path
            #expect(try LadeProcess.run(["init", file, "--model", "samples/Catalog.xcdatamodeld"]).status == 0)
            #expect(try LadeProcess.run(["convert", file, store]).status == 0)
            let again = try LadeProcess.run(["convert", file, store, "--overwrite"])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(!again.stderr.contains("NOTICE") && !again.stdout.contains("NOTICE"), "\(again.stderr)")
        }
    }

    @Test("two lade init at once on one new schema: one makes the store, the other waits and says it already exists (never the server's pg_namespace unique violation)")
    func twoInitsAtOnce() throws {
        for attempt in 0..<5 {
            try withSchema("cli_init_race") { schema in
                let store = server.storeURL(schema: schema)
                let children = try (0..<2).map { _ in try LadeChild(["init", store, "--model", "samples/Catalog.xcdatamodeld"]) }
                let statuses = children.map { $0.finish() }
                let errors = children.map(\.stderr)
                #expect(statuses.sorted() == [0, 1], "attempt \(attempt): \(statuses) \(errors)")
                for error in errors where !error.isEmpty {
                    #expect(error.contains("[store.alreadyExists]") && !error.contains("pg_namespace"), "attempt \(attempt): \(error)")
                }
            }
        }
    }

    @Test("two lade run at once into one new schema: one makes the store, the other waits and imports into it; both succeed")
    func twoRunsCreateOneStore() throws {
        let sandbox = try ImportSandbox()
        for worker in 0..<2 {
            _ = try sandbox.write("products-\(worker).csv", PostgreSQLImportTests.csv(first: worker * 100, count: 100, stockBase: worker * 1000))
        }
        for attempt in 0..<5 {
            try withSchema("cli_run_race") { schema in
                for worker in 0..<2 {
                    try sandbox.job(PostgreSQLImportTests.job(url: server.storeURL(schema: schema), source: "products-\(worker).csv"), named: "job-\(worker).yaml")
                }
                let children = try (0..<2).map { try LadeChild(["run", "job-\($0).yaml"], in: sandbox.directory) }
                let statuses = children.map { $0.finish() }
                #expect(statuses == [0, 0], "attempt \(attempt): \(statuses) \(children.map(\.stderr))")
                #expect(try server.psql("SELECT count(*) FROM \(PostgresTestServer.quotedIdentifier(schema)).\"ZPRODUCT\"") == "200", "attempt \(attempt)")
            }
        }
    }

    @Test("lade check on a PostgreSQL store whose entity table was dropped, and a column of another, reports both as damage (exit 1), not the server's 'relation does not exist'")
    func checkFindsMissingTablesAndColumns() throws {
        try withSchema("cli_check_layout") { schema in
            let store = server.storeURL(schema: schema)
            let made = try LadeProcess.run(["init", store, "--model", "samples/Catalog.xcdatamodeld"])
            try #require(made.status == 0, "\(made.stderr)")
            let q = PostgresTestServer.quotedIdentifier(schema)
            try server.psql("DROP TABLE \(q).\"ZSUPPLIER\"; ALTER TABLE \(q).\"ZPRODUCT\" DROP COLUMN \"ZSTOCK\"")
            let result = try LadeProcess.run(["check", store, "--model", "samples/Catalog.xcdatamodeld"])
            #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
            #expect(result.stdout.contains("missingTable: ZSUPPLIER"), "\(result.stdout) \(result.stderr)")
            #expect(result.stdout.contains("missingColumn: ZPRODUCT") && result.stdout.contains("ZSTOCK"), "\(result.stdout) \(result.stderr)")
            #expect(!result.stderr.contains("does not exist"), "\(result.stderr)")
        }
    }

    @Test("a 100 KB application_name in the store URL is refused up front naming the parameter and PostgreSQL's 63 bytes, not reported as an unreachable or crashed server")
    func overlongApplicationName() throws {
        try withSchema("cli_appname") { schema in
            let url = server.storeURL(schema: schema) + "&application_name=" + String(repeating: "x", count: 100_000)
            let result = try LadeProcess.run(["meta", "get", url, "NSStoreType"])
            #expect(result.status != 69 && result.status != 0, "exit \(result.status): \(result.stderr.prefix(400))")
            #expect(result.stderr.contains("application_name") && result.stderr.contains("63 bytes") && result.stderr.contains("[store.invalidLocation]"), "\(result.stderr.prefix(400))")
            #expect(!result.stderr.contains("store.connection"), "\(result.stderr.prefix(400))")
            #expect(result.stderr.utf8.count < 2_000, "the message repeats the 100 KB value: \(result.stderr.utf8.count) bytes")
            // 63 bytes is PostgreSQL's own limit, and accepted.
            let fits = try LadeProcess.run(["init", server.storeURL(schema: schema) + "&application_name=" + String(repeating: "y", count: 63), "--model", "samples/Catalog.xcdatamodeld"])
            #expect(fits.status == 0, "\(fits.stderr.prefix(400))")
        }
    }

    @Test("a database whose encoding is LATIN1 is refused when a store is made or written there, naming the encoding and how to make a UTF8 one; a lade run there is refused so too, not failed by one row with €")
    func latin1DatabaseRefused() throws {
        let database = server.newSchemaName("latin1")
        try server.psql("CREATE DATABASE \(PostgresTestServer.quotedIdentifier(database)) ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
        defer { _ = try? server.psql("DROP DATABASE IF EXISTS \(PostgresTestServer.quotedIdentifier(database))") }
        let url = server.storeURL(schema: "feed").replacingOccurrences(of: "@/\(server.database)?", with: "@/\(database)?")
        try #require(url.contains(database))
        let made = try LadeProcess.run(["init", url, "--model", "samples/Catalog.xcdatamodeld"])
        #expect(made.status == 1, "exit \(made.status): \(made.stdout) \(made.stderr)")
        #expect(made.stderr.contains("LATIN1") && made.stderr.contains("UTF8") && made.stderr.contains("CREATE DATABASE"), "\(made.stderr)")
        let sandbox = try ImportSandbox()
        _ = try sandbox.write("products.csv", "sku,name,price,stock,category\nA-1,Plain,1.00,1,C1\nA-2,Costs 5 €,2.00,2,C1\n")
        try sandbox.job(PostgreSQLImportTests.job(url: url, source: "products.csv"))
        let run = try sandbox.lade(["run", "job.yaml"])
        #expect(run.status == 1 && run.stderr.contains("LATIN1") && !run.stderr.contains("SQLSTATE 22P05"), "exit \(run.status): \(run.stderr)")
    }
}
