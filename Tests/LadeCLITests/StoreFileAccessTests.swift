import Crypto
import Foundation
import Lade
import Testing

/// Stores reached through symbolic links, and stores lade may not write: a write goes to the
/// file a link names and the link stays; the lock is taken on that file; a write-protected
/// store is refused with `store.readOnly` and nothing is made beside it, while reading it works
/// and leaves nothing.
@Suite("Stores behind symbolic links, and read-only stores")
struct StoreFileAccessTests {
    static let catalog = ImportSandbox.catalogModel.path

    /// `X.xcdatamodeld`: V1 with `Item.key`, V2 (current) adding `Item.b` (as the issue's repro).
    func twoVersions(_ sandbox: ImportSandbox) throws -> String {
        let bundle = sandbox.url("X.xcdatamodeld")
        try MigrateCLITests.writeVersion("V1", of: bundle, #"<entity name="Item"><attribute name="key" optional="YES" attributeType="String"/></entity>"#)
        try MigrateCLITests.writeVersion("V2", of: bundle, #"<entity name="Item"><attribute name="key" optional="YES" attributeType="String"/><attribute name="b" optional="YES" attributeType="String"/></entity>"#, current: true)
        return bundle.path
    }

    func isLink(_ url: URL, to target: String) -> Bool {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) == target
    }

    func digest(_ url: URL) throws -> String {
        SHA256.hash(data: try Data(contentsOf: url)).map { String(format: "%02x", $0) }.joined()
    }

    func listing(_ directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    func mode(_ url: URL) -> mode_t {
        var info = stat()
        return stat(url.path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    // MARK: Symbolic links

    @Test("lade migrate of an XML or binary store through a symbolic link migrates the file it names and keeps the link", arguments: ["xml", "binary"])
    func migrateThroughLink(type: String) throws {
        let sandbox = try ImportSandbox()
        let bundle = try twoVersions(sandbox)
        try FileManager.default.createDirectory(at: sandbox.url("real"), withIntermediateDirectories: true)
        let made = try sandbox.lade(["init", "real/s.\(type)", "--model", bundle, "--model-version", "V1", "--type", type])
        try #require(made.status == 0, "\(made.stderr)")
        try FileManager.default.createSymbolicLink(atPath: sandbox.url("link.\(type)").path, withDestinationPath: "real/s.\(type)")

        let migrated = try sandbox.lade(["migrate", "link.\(type)", "--model", bundle])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(isLink(sandbox.url("link.\(type)"), to: "real/s.\(type)"), "the link was replaced by a file")
        let inspected = try sandbox.lade(["inspect", "real/s.\(type)", "--model", bundle])
        #expect(inspected.stdout.contains("Model version: V2 (current)"), "\(inspected.stdout)\(inspected.stderr)")
        // Nothing left beside the link; the lock file beside the file it names.
        #expect(try listing(sandbox.directory) == ["X.xcdatamodeld", "link.\(type)", "real"])
        #expect(try listing(sandbox.url("real")) == ["s.\(type)", "s.\(type).lade-lock"])
    }

    /// A Catalog XML store at `real/catalog.xml`, reached as `store.xml`, and a job importing two suppliers into it.
    func linkedXMLStore(_ sandbox: ImportSandbox, source: String = "suppliers.csv") throws {
        try FileManager.default.createDirectory(at: sandbox.url("real"), withIntermediateDirectories: true)
        let made = try sandbox.lade(["init", "real/catalog.xml", "--model", Self.catalog, "--type", "xml"])
        try #require(made.status == 0, "\(made.stderr)")
        try FileManager.default.createSymbolicLink(atPath: sandbox.url("store.xml").path, withDestinationPath: "real/catalog.xml")
        try sandbox.write("suppliers.csv", "code,email\nA1,a@b.example\nB2,b@b.example\n")
        try sandbox.job("store: { type: xml, path: store.xml }\nsource: \(source)\nentity: Supplier\nkey: code\n")
    }

    func suppliers(_ sandbox: ImportSandbox, _ store: String) throws -> String {
        let fetched = try sandbox.lade(["fetch", store, "--model", Self.catalog, "--entity", "Supplier", "--sort", "code", "--format", "csv"])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        return fetched.stdout
    }

    @Test("lade run into an XML store through a symbolic link writes the file it names and keeps the link")
    func runThroughLink() throws {
        let sandbox = try ImportSandbox()
        try linkedXMLStore(sandbox)
        let run = try sandbox.lade(["run", "job.yaml", "--quiet"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(isLink(sandbox.url("store.xml"), to: "real/catalog.xml"), "the link was replaced by a file")
        let rows = try suppliers(sandbox, "real/catalog.xml")
        #expect(rows.contains("A1") && rows.contains("B2"), "\(rows)")
        #expect(try listing(sandbox.url("real")) == ["catalog.xml", "catalog.xml.lade-lock"])
    }

    @Test("a run through a symbolic link and a run on the file it names exclude each other: the second exits 75")
    func lockThroughLink() throws {
        let sandbox = try ImportSandbox()
        try #require(mkfifo(sandbox.url("feed.fifo").path, 0o600) == 0)
        try linkedXMLStore(sandbox, source: "{ path: feed.fifo, format: csv }")
        try sandbox.job("store: { type: xml, path: real/catalog.xml }\nsource: suppliers.csv\nentity: Supplier\nkey: code\n", named: "direct.yaml")

        // The first run takes the lock, then waits for the FIFO's writer.
        let child = try LadeChild(["run", "job.yaml", "--quiet"], in: sandbox.directory)
        let locked = child.wait(until: {
            ["store.xml.lade-lock", "real/catalog.xml.lade-lock"].contains { name in
                ((try? String(contentsOf: sandbox.url(name), encoding: .utf8)) ?? "").contains("pid \(child.process.processIdentifier) ")
            }
        }, timeout: 60)
        try #require(locked, "the first run never took its lock: \(child.stderr)")

        let direct = try sandbox.lade(["run", "direct.yaml", "--quiet"])
        #expect(direct.status == 75, "\(direct.stdout)\(direct.stderr)")
        #expect(direct.stderr.contains("locked by another lade run (pid \(child.process.processIdentifier) since"), "\(direct.stderr)")
        let migrate = try sandbox.lade(["meta", "set", "real/catalog.xml", "x=1"])
        #expect(migrate.status == 75, "\(migrate.stderr)")

        if let handle = FileHandle(forWritingAtPath: sandbox.url("feed.fifo").path) {
            handle.write(Data("code,email\nC3,c@b.example\n".utf8))
            try? handle.close()
        }
        #expect(child.finish() == 0, "\(child.stderr)")
        #expect(isLink(sandbox.url("store.xml"), to: "real/catalog.xml"))
        #expect(try suppliers(sandbox, "store.xml").contains("C3"))
    }

    @Test("lade convert --overwrite onto a SQLite store through a symbolic link replaces the file it names, with no -wal or -shm left beside it or the link")
    func convertOverLinkedSQLite() throws {
        let sandbox = try ImportSandbox()
        try linkedXMLStore(sandbox)
        #expect(try sandbox.lade(["run", "job.yaml", "--quiet"]).status == 0)
        try FileManager.default.createDirectory(at: sandbox.url("db"), withIntermediateDirectories: true)
        #expect(try sandbox.lade(["init", "db/catalog.sqlite", "--model", Self.catalog]).status == 0)
        try FileManager.default.createSymbolicLink(atPath: sandbox.url("out.sqlite").path, withDestinationPath: "db/catalog.sqlite")

        let converted = try sandbox.lade(["convert", "store.xml", "out.sqlite", "--model", Self.catalog, "--overwrite"])
        #expect(converted.status == 0, "\(converted.stderr)")
        #expect(isLink(sandbox.url("out.sqlite"), to: "db/catalog.sqlite"), "the link was replaced by a file")
        let rows = try suppliers(sandbox, "db/catalog.sqlite")
        #expect(rows.contains("A1") && rows.contains("B2"), "\(rows)")
        #expect(try listing(sandbox.url("db")) == ["catalog.sqlite", "catalog.sqlite.lade-lock"])
        #expect(!(try listing(sandbox.directory)).contains { $0.hasPrefix("out.sqlite") && $0 != "out.sqlite" })
    }

    @Test("a SQLite store through a symbolic link: lade run writes the file it names and keeps the link; reading through the link leaves no -wal or -shm")
    func sqliteThroughLink() throws {
        let sandbox = try ImportSandbox()
        try FileManager.default.createDirectory(at: sandbox.url("real"), withIntermediateDirectories: true)
        try #require(try sandbox.lade(["init", "real/catalog.sqlite", "--model", Self.catalog]).status == 0)
        try FileManager.default.createSymbolicLink(atPath: sandbox.url("store.sqlite").path, withDestinationPath: "real/catalog.sqlite")
        try sandbox.write("suppliers.csv", "code,email\nA1,a@b.example\nB2,b@b.example\n")
        try sandbox.job("store: { type: sqlite, path: store.sqlite }\nsource: suppliers.csv\nentity: Supplier\nkey: code\n")

        let run = try sandbox.lade(["run", "job.yaml", "--quiet"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(isLink(sandbox.url("store.sqlite"), to: "real/catalog.sqlite"))
        for command in [["fetch", "store.sqlite", "--model", Self.catalog, "--entity", "Supplier"], ["inspect", "store.sqlite", "--model", Self.catalog], ["check", "store.sqlite", "--model", Self.catalog]] {
            let read = try sandbox.lade(command)
            #expect(read.status == 0, "\(command[0]): \(read.stderr)")
            #expect(try listing(sandbox.url("real")) == ["catalog.sqlite", "catalog.sqlite.lade-lock"], "\(command[0])")
        }
        #expect(try listing(sandbox.directory) == ["job.yaml", "real", "store.sqlite", "suppliers.csv"])
        #expect(try suppliers(sandbox, "real/catalog.sqlite").contains("B2"))
    }

    @Test("an export file, a report and a rejects file that are symbolic links are written through: the files they name hold the output, the links stay")
    func outputsThroughLinks() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("suppliers.csv", "code,email\nA1,a@b.example\nX1,not-an-email\n")
        try sandbox.job("source: suppliers.csv\nentity: Supplier\nkey: code\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        try FileManager.default.createDirectory(at: sandbox.url("out"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: sandbox.url("kept"), withIntermediateDirectories: true)
        for name in ["Supplier.ndjson", "report.json", "rejects.ndjson"] { try sandbox.write("kept/\(name)", "old\n") }
        try FileManager.default.createSymbolicLink(atPath: sandbox.url("out/Supplier.ndjson").path, withDestinationPath: "../kept/Supplier.ndjson")
        try FileManager.default.createSymbolicLink(atPath: sandbox.url("report.json").path, withDestinationPath: "kept/report.json")
        try FileManager.default.createSymbolicLink(atPath: sandbox.url("rejects.ndjson").path, withDestinationPath: "kept/rejects.ndjson")

        let run = try sandbox.lade(["run", "job.yaml", "--quiet", "--report", "report.json"])
        #expect(run.status == 2, "\(run.stderr)")
        let exported = try sandbox.lade(["export", "catalog.sqlite", "--model", Self.catalog, "--format", "ndjson", "--out", "out"])
        #expect(exported.status == 0, "\(exported.stderr)")

        #expect(isLink(sandbox.url("out/Supplier.ndjson"), to: "../kept/Supplier.ndjson"))
        #expect(isLink(sandbox.url("report.json"), to: "kept/report.json"))
        #expect(isLink(sandbox.url("rejects.ndjson"), to: "kept/rejects.ndjson"))
        #expect(try String(contentsOf: sandbox.url("kept/Supplier.ndjson"), encoding: .utf8).contains("\"code\":\"A1\""))
        #expect(try String(contentsOf: sandbox.url("kept/report.json"), encoding: .utf8).contains("\"status\""))
        #expect(try String(contentsOf: sandbox.url("kept/rejects.ndjson"), encoding: .utf8).contains("not-an-email"))
        #expect(try listing(sandbox.url("out")).filter { $0.hasPrefix(".") } == [], "a temporary file left in out")
    }

    @Test("a symbolic link to nothing, or in a loop, is refused as such, not replaced", arguments: ["xml", "sqlite"])
    func brokenLinks(type: String) throws {
        let sandbox = try ImportSandbox()
        try FileManager.default.createSymbolicLink(atPath: sandbox.url("dangling.\(type)").path, withDestinationPath: "missing/s.\(type)")
        try FileManager.default.createSymbolicLink(atPath: sandbox.url("loop.\(type)").path, withDestinationPath: "loop.\(type)")
        let dangling = try sandbox.lade(["init", "dangling.\(type)", "--model", Self.catalog, "--type", type])
        #expect(dangling.status == 1)
        #expect(dangling.stderr.contains("is a symbolic link to missing/s.\(type), which does not exist"), "\(dangling.stderr)")
        let loop = try sandbox.lade(["init", "loop.\(type)", "--model", Self.catalog, "--type", type])
        #expect(loop.status == 1)
        #expect(loop.stderr.contains("loop of links"), "\(loop.stderr)")
        #expect(isLink(sandbox.url("dangling.\(type)"), to: "missing/s.\(type)") && isLink(sandbox.url("loop.\(type)"), to: "loop.\(type)"))
        #expect(try listing(sandbox.directory) == ["dangling.\(type)", "loop.\(type)"])
    }

    // MARK: Read-only stores

    /// A SQLite Catalog store with two suppliers, then made read-only (0444).
    func readOnlySQLiteStore(_ sandbox: ImportSandbox) throws {
        try sandbox.write("suppliers.csv", "code,email\nA1,a@b.example\nB2,b@b.example\n")
        try sandbox.job("source: suppliers.csv\nentity: Supplier\nkey: code\n")
        try #require(try sandbox.lade(["run", "job.yaml", "--quiet"]).status == 0)
        try sandbox.write("more.csv", "code,email\nC3,c@b.example\n")
        try sandbox.job("source: more.csv\nentity: Supplier\nkey: code\n", named: "more.yaml")
        try #require(chmod(sandbox.store.path, 0o444) == 0)
    }

    @Test("a read-only SQLite store (0444) is refused for writing with store.readOnly and nothing made beside it; lade fetch reads it and leaves nothing")
    func readOnlySQLite() throws {
        let sandbox = try ImportSandbox()
        try readOnlySQLiteStore(sandbox)
        let files = try listing(sandbox.directory)
        let before = try digest(sandbox.store)

        let run = try sandbox.lade(["run", "more.yaml", "--quiet"])
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("\(sandbox.store.path): the store is read-only: the file has no write permission (mode 444)"), "\(run.stderr)")
        #expect(run.stderr.contains("[store.readOnly]"), "\(run.stderr)")
        #expect(try digest(sandbox.store) == before)
        #expect(try listing(sandbox.directory) == files, "nothing made beside the store")

        let rows = try suppliers(sandbox, "catalog.sqlite")
        #expect(rows.contains(",A1,") && rows.contains(",B2,") && !rows.contains(",C3,"), "\(rows)")
        #expect(try listing(sandbox.directory) == files, "reading made files beside the store")
    }

    @Test("a read-only SQLite store whose -wal holds changes is read with them (not as the file alone)")
    func readOnlySQLiteWithPendingWAL() throws {
        let sandbox = try ImportSandbox()
        try readOnlySQLiteStore(sandbox)
        try #require(chmod(sandbox.store.path, 0o644) == 0)
        // A copy taken while a connection holds a change in the -wal only (as a copied app container can be).
        try FileManager.default.createDirectory(at: sandbox.url("copy"), withIntermediateDirectories: true)
        let copy = sandbox.url("copy/catalog.sqlite")
        do {
            let connection = try SQLiteConnection(path: sandbox.store.path, mode: .readWrite(create: false))
            try connection.execute("PRAGMA wal_autocheckpoint = 0")
            try connection.execute("UPDATE ZSUPPLIER SET ZEMAIL = 'changed@b.example'")
            try FileManager.default.copyItem(at: sandbox.store, to: copy)
            try FileManager.default.copyItem(atPath: sandbox.store.path + "-wal", toPath: copy.path + "-wal")
        }
        try #require(chmod(copy.path, 0o444) == 0)
        let rows = try suppliers(sandbox, "copy/catalog.sqlite")
        #expect(rows.contains("changed@b.example") && !rows.contains("a@b.example"), "\(rows)")
    }

    @Test("a read-only XML or binary store (0444) is not migrated by renaming over it: store.readOnly, the file as it was", arguments: ["xml", "binary"])
    func readOnlyAtomicMigrate(type: String) throws {
        let sandbox = try ImportSandbox()
        let bundle = try twoVersions(sandbox)
        let store = sandbox.url("s.\(type)")
        try #require(try sandbox.lade(["init", store.path, "--model", bundle, "--model-version", "V1", "--type", type]).status == 0)
        try #require(chmod(store.path, 0o444) == 0)
        let before = try digest(store)
        let files = try listing(sandbox.directory)

        let migrated = try sandbox.lade(["migrate", store.path, "--model", bundle])
        #expect(migrated.status == 1, "\(migrated.stdout)\(migrated.stderr)")
        #expect(migrated.stderr.contains("the store is read-only") && migrated.stderr.contains("[store.readOnly]"), "\(migrated.stderr)")
        #expect(try digest(store) == before)
        #expect(mode(store) == 0o444)
        #expect(try listing(sandbox.directory) == files)
        #expect(try sandbox.lade(["inspect", store.path, "--model", bundle]).stdout.contains("Model version: V1"))
    }

    @Test("lade migrate --dry-run in a directory lade may not write (0555) plans the migration and makes nothing, not even the lock file")
    func dryRunInReadOnlyDirectory() throws {
        let sandbox = try ImportSandbox()
        let bundle = try twoVersions(sandbox)
        try FileManager.default.createDirectory(at: sandbox.url("ro"), withIntermediateDirectories: true)
        try #require(try sandbox.lade(["init", "ro/s.sqlite", "--model", bundle, "--model-version", "V1"]).status == 0)
        try #require(chmod(sandbox.url("ro").path, 0o555) == 0)
        defer { chmod(sandbox.url("ro").path, 0o755) }
        let files = try listing(sandbox.url("ro"))

        let dryRun = try sandbox.lade(["migrate", "ro/s.sqlite", "--model", bundle, "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(dryRun.stdout.contains("V1 → V2") && dryRun.stdout.contains("dry run: nothing was written"), "\(dryRun.stdout)")
        #expect(try listing(sandbox.url("ro")) == files)
    }

    // MARK: As a user permission bits stop

    /// Whether tests can run lade as `nobody` (they run as root, whom permission bits do not stop).
    static var nobodyAvailable: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")
    }

    /// `lade ARGUMENTS` run as `nobody` in `directory`.
    func ladeAsNobody(_ arguments: [String], in directory: URL) throws -> LadeProcess.Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
        process.arguments = ["-u", "nobody", "--", LadeProcess.binary.path] + arguments
        process.currentDirectoryURL = directory
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Small outputs: read one after the other once the process has ended.
        process.waitUntilExit()
        return LadeProcess.Result(
            status: process.terminationStatus,
            stdout: String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
            stderr: String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }

    @Test("as a user who may not write it: a root-owned SQLite store is refused for writing with store.readOnly and no -wal or -shm; lade fetch reads it and leaves nothing",
          .enabled(if: nobodyAvailable))
    func readOnlySQLiteAsNobody() throws {
        let sandbox = try ImportSandbox()
        try readOnlySQLiteStore(sandbox)
        // The directory is open to all, so SQLite could make its -wal and -shm there (and lade
        // its lock file, which root's run made and nobody could not open otherwise).
        try #require(chmod(sandbox.directory.path, 0o777) == 0)
        try #require(chmod(sandbox.store.path, 0o644) == 0)
        try FileManager.default.removeItem(at: sandbox.url("catalog.sqlite.lade-lock"))
        let files = try listing(sandbox.directory)

        let run = try ladeAsNobody(["run", "more.yaml", "--quiet"], in: sandbox.directory)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("the store is read-only: this process may not write the file") && run.stderr.contains("[store.readOnly]"), "\(run.stderr)")
        #expect(try listing(sandbox.directory) == files, "nothing made beside the store")

        let fetched = try ladeAsNobody(["fetch", "catalog.sqlite", "--model", Self.catalog, "--entity", "Supplier", "--format", "csv"], in: sandbox.directory)
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(fetched.stdout.contains("A1") && fetched.stdout.contains("B2"), "\(fetched.stdout)")
        #expect(try listing(sandbox.directory) == files, "reading made files beside the store")
    }

    @Test("as a user who may not write the directory: lade migrate --dry-run works and makes nothing", .enabled(if: nobodyAvailable))
    func dryRunAsNobody() throws {
        let sandbox = try ImportSandbox()
        let bundle = try twoVersions(sandbox)
        for type in ["sqlite", "xml"] {
            try #require(try sandbox.lade(["init", "s.\(type)", "--model", bundle, "--model-version", "V1", "--type", type]).status == 0)
        }
        let files = try listing(sandbox.directory)
        for type in ["sqlite", "xml"] {
            let dryRun = try ladeAsNobody(["migrate", "s.\(type)", "--model", bundle, "--dry-run"], in: sandbox.directory)
            #expect(dryRun.status == 0, "\(type): \(dryRun.stderr)")
            #expect(dryRun.stdout.contains("dry run: nothing was written"), "\(type): \(dryRun.stdout)")
            let migrate = try ladeAsNobody(["migrate", "s.\(type)", "--model", bundle], in: sandbox.directory)
            #expect(migrate.status == 1 && migrate.stderr.contains("[store.readOnly]"), "\(type): \(migrate.stderr)")
        }
        #expect(try listing(sandbox.directory) == files)
    }
}
