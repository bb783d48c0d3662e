import Foundation
import Lade
import Testing

/// `lade check`, and what fetch, export and convert do with a damaged store; and read-only
/// commands leaving a store's directory as they found it. Real processes on real files.
@Suite("lade check and damaged stores, run as a process")
struct CheckCommandTests {
    static let model = "samples/Catalog.xcdatamodeld"
    let tools = StoreToolsCLITests()

    func damage(_ store: String, _ statements: [String]) throws {
        let connection = try SQLiteConnection(path: store, mode: .readWrite(create: false))
        for statement in statements { try connection.execute(statement) }
    }

    @Test("a sound store: exit 0 and 'no damage found'; --json says damaged false")
    func soundStore() throws {
        let sandbox = try ImportSandbox()
        let store = try tools.filledStore(sandbox)
        let result = try LadeProcess.run(["check", store, "--model", Self.model])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "\(store): no damage found\n")
        let json = try LadeProcess.run(["check", store, "--model", Self.model, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["damaged"] as? Bool == false)
        #expect((object?["problems"] as? [Any])?.isEmpty == true)
    }

    @Test("a damaged store: exit 1, one line per problem with its count and first place")
    func damagedStore() throws {
        let sandbox = try ImportSandbox()
        let store = try tools.filledStore(sandbox)
        try damage(store, [
            "UPDATE ZPRODUCT SET Z_ENT = 99 WHERE ZSKU = 'AB-001'",
            "UPDATE ZPRODUCT SET ZCATEGORY = 777 WHERE ZSKU IN ('AB-002', 'AB-003')",
            "UPDATE ZPRODUCT SET ZSTOCK = 'lots' WHERE ZSKU = 'AB-003'",
        ])
        let result = try LadeProcess.run(["check", store, "--model", Self.model])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.contains("damaged (3 problems)"), "\(result.stdout)")
        #expect(result.stdout.contains("unknownEntity: ZPRODUCT: 1 row whose Z_ENT names no concrete entity of the model (first: Z_PK 1, Z_ENT 99)"), "\(result.stdout)")
        #expect(result.stdout.contains("danglingReference: Product.category: 2 references to objects that are not in the store (first: Z_PK 2 names Category Z_PK 777)"), "\(result.stdout)")
        #expect(result.stdout.contains("wrongType: Product.stock: 1 value that cannot be Integer 32"), "\(result.stdout)")
        let json = try LadeProcess.run(["check", store, "--model", Self.model, "--json"])
        #expect(json.status == 1)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let problems = object?["problems"] as? [[String: Any]] ?? []
        #expect(problems.map { $0["kind"] as? String } == ["unknownEntity", "danglingReference", "wrongType"])
        #expect(problems.map { $0["count"] as? Int } == [1, 2, 1])
    }

    @Test("fetch, export and convert refuse a damaged store with counts and write nothing, instead of dropping rows or printing nulls")
    func readersRefuse() throws {
        let sandbox = try ImportSandbox()
        let store = try tools.filledStore(sandbox)
        try damage(store, [
            "UPDATE ZPRODUCT SET Z_ENT = 99 WHERE ZSKU = 'AB-001'",
            "UPDATE ZPRODUCT SET ZCATEGORY = 777 WHERE ZSKU = 'AB-002'",
        ])
        // inspect still reports the store, and says what its counts leave out.
        let inspect = try LadeProcess.run(["inspect", store, "--model", Self.model])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(inspect.stdout.contains("Damage (not in the counts above") && inspect.stdout.contains("ZPRODUCT: 1 row whose Z_ENT names no concrete entity"), "\(inspect.stdout)")
        let fetch = try LadeProcess.run(["fetch", store, "--model", Self.model, "--entity", "Product", "--limit", "5"])
        #expect(fetch.status == 1)
        #expect(fetch.stderr.contains("the store is damaged") && fetch.stderr.contains("lade check"), "\(fetch.stderr)")
        #expect(fetch.stderr.hasSuffix("[store.damaged]\n"), "every error ends with its code: \(fetch.stderr)")
        let export = try LadeProcess.run(["export", store, "--model", Self.model, "--format", "ndjson", "--out", sandbox.url("export").path])
        #expect(export.status == 1)
        #expect(export.stderr.contains("1 row whose Z_ENT names no concrete entity") && export.stderr.contains("1 reference to an object that is not in the store"), "\(export.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.url("export/Product.ndjson").path))
        for type in ["xml", "binary", "sqlite"] {
            let destination = sandbox.url("copy.\(type)").path
            let convert = try LadeProcess.run(["convert", store, destination, "--model", Self.model, "--type", type])
            #expect(convert.status == 1, "\(type)")
            #expect(convert.stderr.contains("the store is damaged"), "\(convert.stderr)")
            #expect(!FileManager.default.fileExists(atPath: destination))
        }
    }

    @Test("inspect, fetch, export, check and meta get leave no -wal or -shm beside a store they only read")
    func readersLeaveDirectoryAsItWas() throws {
        let sandbox = try ImportSandbox()
        let store = try tools.filledStore(sandbox)
        func companions() -> [String] {
            ["-wal", "-shm", "-journal"].filter { FileManager.default.fileExists(atPath: store + $0) }
        }
        try #require(companions() == [], "the import left \(companions())")
        let commands: [[String]] = [
            ["inspect", store, "--model", Self.model],
            ["fetch", store, "--model", Self.model, "--entity", "Product"],
            ["export", store, "--model", Self.model, "--format", "csv", "--out", sandbox.url("export").path],
            ["check", store, "--model", Self.model],
            ["meta", "get", store],
        ]
        let before = try tools.digest(store)
        for command in commands {
            let result = try LadeProcess.run(command)
            #expect(result.status == 0, "\(command[0]): \(result.stderr)")
            #expect(companions() == [], "\(command[0]) left \(companions())")
        }
        #expect(try tools.digest(store) == before, "a read-only command changed the store file")
    }

    @Test("while another connection has the store open, a read-only command reads it and leaves that connection's -wal and -shm alone")
    func readerBesideAnotherConnection() throws {
        let sandbox = try ImportSandbox()
        let store = try tools.filledStore(sandbox)
        let other = try SQLiteConnection(path: store, mode: .readWrite(create: false))
        try other.execute("BEGIN IMMEDIATE")
        try other.execute("UPDATE ZPRODUCT SET ZSTOCK = 11 WHERE ZSKU = 'AB-001'")
        let fetch = try LadeProcess.run(["fetch", store, "--model", Self.model, "--entity", "Product", "--where", "sku == 'AB-001'", "--format", "csv"])
        #expect(fetch.status == 0, "\(fetch.stderr)")
        #expect(fetch.stdout.contains(",10,"), "the uncommitted change is not seen: \(fetch.stdout)")
        try other.execute("COMMIT")
        #expect(FileManager.default.fileExists(atPath: store + "-wal"))
        let again = try LadeProcess.run(["fetch", store, "--model", Self.model, "--entity", "Product", "--where", "sku == 'AB-001'", "--format", "csv"])
        #expect(again.stdout.contains(",11,"), "\(again.stdout)")
        #expect(FileManager.default.fileExists(atPath: store + "-wal") && FileManager.default.fileExists(atPath: store + "-shm"))
    }

    @Test("an unknown entity is one error with one code, from fetch, export and a job alike")
    func unknownEntityOneWay() throws {
        let sandbox = try ImportSandbox()
        let store = try tools.filledStore(sandbox)
        let fetch = try LadeProcess.run(["fetch", store, "--model", Self.model, "--entity", "Widget"])
        #expect(fetch.status == 1)
        #expect(fetch.stderr.contains("the model has no entity 'Widget'; its entities are ") && fetch.stderr.contains("Supplier"), "\(fetch.stderr)")
        #expect(fetch.stderr.hasSuffix("[model.unknownEntity]\n"), "\(fetch.stderr)")
        try sandbox.write("widgets.csv", "code\nA\n")
        try sandbox.job("source: widgets.csv\nentity: Widget\n", named: "widgets.yaml")
        let run = try sandbox.lade(["run", "widgets.yaml"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("the model has no entity 'Widget'; its entities are"), "\(run.stderr)")
        #expect(run.stderr.hasSuffix("[job]\n"), "\(run.stderr)")
    }
}

extension CheckCommandTests {
    @Test("a SQLite store with a dropped entity table and a dropped column: lade check reports them (missingTable, missingColumn), not SQLite's 'no such table'")
    func missingTablesAndColumns() throws {
        let sandbox = try ImportSandbox()
        let store = try tools.filledStore(sandbox)
        try damage(store, ["DROP TABLE ZSUPPLIER", "DROP INDEX IF EXISTS ZPRODUCT_ZSTOCK_INDEX", "ALTER TABLE ZPRODUCT DROP COLUMN ZSTOCK"])
        let result = try LadeProcess.run(["check", store, "--model", Self.model])
        #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("missingTable: ZSUPPLIER"), "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("missingColumn: ZPRODUCT") && result.stdout.contains("ZSTOCK"), "\(result.stdout) \(result.stderr)")
        #expect(!result.stderr.contains("no such table"), "\(result.stderr)")
    }
}
