import Foundation
import Lade
import Testing

/// `lade convert` and `lade meta set` killed with SIGKILL at fixed fractions of the time a
/// whole run takes: the source is always intact, and the destination is absent, or complete
/// and valid (with --overwrite: the old store or the new one, complete).
@Suite("lade convert and lade meta set killed with SIGKILL", .slow, .serialized)
struct StoreKillTests {
    static let products = 20_000
    static let categories = 50
    static let fractions = [0.05, 0.25, 0.5, 0.75, 0.95]

    /// A sandbox with `source.sqlite`: the generated products, imported by `lade run`.
    static func sandbox() throws -> ImportSandbox {
        let sandbox = try ImportSandbox()
        _ = try sandbox.write("products.csv", GeneratedProducts.csv(products))
        _ = try sandbox.job("""
            model: \(ImportSandbox.catalogModel.path)
            store: { type: sqlite, path: source.sqlite }
            \(GeneratedProducts.job(batchSize: 5000))
            """)
        let (result, _) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        return sandbox
    }


    /// Products and categories in the store at `url`, opened read-only (type detected), or nil
    /// when there is no file.
    static func counts(_ url: URL) throws -> (products: Int, categories: Int)? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let model = try ManagedObjectModel(contentsOf: ImportSandbox.catalogModel)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(at: url, readOnly: true)
        if store.type == "SQLite" { #expect(try StoreReading.integrityCheck(url) == "t'ok'") }
        return (try store.count(StoreFetchRequest(entityName: "Product")), try store.count(StoreFetchRequest(entityName: "Category")))
    }

    static func timed(_ arguments: [String], in directory: URL) throws -> TimeInterval {
        let started = Date()
        let result = try LadeProcess.run(arguments, in: directory)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return Date().timeIntervalSince(started)
    }

    /// Starts `arguments`, kills it with SIGKILL after `delay` seconds (if it still runs).
    /// True when the kill landed before the run finished.
    static func kill(_ arguments: [String], after delay: TimeInterval, in directory: URL) throws -> Bool {
        let running = try LadeChild(arguments, in: directory)
        usleep(useconds_t(delay * 1_000_000))
        let landed = running.process.isRunning
        running.send(SIGKILL)
        running.finish()
        return landed
    }

    @Test("SIGKILL during lade convert, for each destination type: the source is intact; the destination is absent, or complete and valid; a re-run completes",
          arguments: ["sqlite", "xml", "binary"])
    func convertKilled(type: String) throws {
        let sandbox = try Self.sandbox()
        let source = sandbox.url("source.sqlite")
        let sourceDigest = try storeFileDigests(source)
        let destination = sandbox.url("destination.\(type)")
        let arguments = ["convert", source.path, destination.path, "--model", ImportSandbox.catalogModel.path, "--batch-size", "1000"]
        let whole = try Self.timed(arguments, in: sandbox.directory)
        #expect(try Self.counts(destination)! == (Self.products, Self.categories))
        var absent = 0, complete = 0, landed = 0
        for fraction in Self.fractions {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: destination.path + suffix) }
            if try Self.kill(arguments, after: whole * fraction, in: sandbox.directory) { landed += 1 }
            #expect(try storeFileDigests(source) == sourceDigest, "killed at \(fraction): the source changed")
            if let counts = try Self.counts(destination) {
                #expect(counts == (Self.products, Self.categories), "killed at \(fraction): a partial destination \(counts)")
                complete += 1
            } else {
                absent += 1
            }
        }
        #expect(landed >= 3, "only \(landed) kills landed while lade convert ran (a whole run took \(whole) s)")
        #expect(absent >= 1, "no kill left the destination absent")
        // The temporary files of killed runs do not stand in the way of the next one.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: destination.path + suffix) }
        _ = try Self.timed(arguments, in: sandbox.directory)
        #expect(try Self.counts(destination)! == (Self.products, Self.categories))
        // …and the next run clears what the killed ones left beside the destination.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).filter { $0.hasPrefix(".destination.") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        print("convert to \(type): whole run \(String(format: "%.2f", whole)) s; \(landed) kills landed; destination absent \(absent), complete \(complete)")
    }

    @Test("SIGKILL during lade convert --overwrite: the old destination or the new one, whole, never a mix")
    func overwriteKilled() throws {
        let sandbox = try Self.sandbox()
        let source = sandbox.url("source.sqlite")
        let destination = sandbox.url("destination.sqlite")
        // The old destination: an empty store for the same model.
        let old = try LadeProcess.run(["init", destination.path, "--model", ImportSandbox.catalogModel.path])
        #expect(old.status == 0, "\(old.stderr)")
        let arguments = ["convert", source.path, destination.path, "--model", ImportSandbox.catalogModel.path, "--overwrite", "--batch-size", "1000"]
        let whole = try Self.timed(arguments, in: sandbox.directory)
        var outcomes: [String] = []
        for fraction in Self.fractions {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: destination.path + suffix) }
            #expect(try LadeProcess.run(["init", destination.path, "--model", ImportSandbox.catalogModel.path]).status == 0)
            _ = try Self.kill(arguments, after: whole * fraction, in: sandbox.directory)
            let counts = try #require(try Self.counts(destination), "killed at \(fraction): the destination is gone")
            #expect(counts == (0, 0) || counts == (Self.products, Self.categories), "killed at \(fraction): \(counts)")
            outcomes.append(counts.products == 0 ? "old" : "new")
        }
        #expect(outcomes.contains("old"), "\(outcomes)")
        print("convert --overwrite killed: \(outcomes)")
    }
}

extension StoreKillTests {
    static func metaValue(_ store: URL, _ key: String) throws -> PropertyListValue? {
        try PersistentStoreCoordinator.metadataForPersistentStore(at: store)[key]
    }

    @Test("SIGKILL during lade meta set, for each store type: the metadata is the old or the new, every object is there, the store opens",
          arguments: ["sqlite", "xml", "binary"])
    func metaSetKilled(type: String) throws {
        let sandbox = try Self.sandbox()
        let source = sandbox.url("source.sqlite")
        let store = sandbox.url("store.\(type)")
        if type == "sqlite" {
            try copyWritable(at: source, to: store)
            if FileManager.default.fileExists(atPath: source.path + "-wal") { try copyWritable(atPath: source.path + "-wal", toPath: store.path + "-wal") }
        } else {
            _ = try Self.timed(["convert", source.path, store.path, "--model", ImportSandbox.catalogModel.path], in: sandbox.directory)
        }
        let base = try PersistentStoreCoordinator.metadataForPersistentStore(at: store)
        let whole = try Self.timed(["meta", "set", store.path, "kill.test=first"], in: sandbox.directory)
        var outcomes: [String] = []
        var landed = 0
        // A whole run takes some 30 ms on SQLite, so under load a kill timed from one measured
        // run can come after the run ended: such a round is tried again at half the delay (at
        // most three times), each attempt checked like any other.
        var delays = Self.fractions.map { (delay: whole * $0, retries: 3) }
        var round = 0
        while !delays.isEmpty {
            let (delay, retries) = delays.removeFirst()
            defer { round += 1 }
            let fraction = delay / whole
            let value = "round \(round)"
            if try Self.kill(["meta", "set", store.path, "kill.test=\(value)", "kill.round=\(round)"], after: delay, in: sandbox.directory) {
                landed += 1
            } else if retries > 0 {
                delays.insert((delay / 2, retries - 1), at: 0)
            }
            let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: store)
            let test = metadata["kill.test"]?.stringValue
            let roundValue = metadata["kill.round"]?.stringValue
            // Both keys of the one set, or neither: never half a write.
            #expect((test == value && roundValue == String(round)) || (test != value && roundValue == (round == 0 ? nil : String(round - 1))),
                    "killed at \(fraction): kill.test \(test ?? "nil"), kill.round \(roundValue ?? "nil")")
            for key in base.keys where key != "kill.test" && key != "kill.round" { #expect(metadata[key] == base[key], "killed at \(fraction): \(key) changed") }
            #expect(try Self.counts(store)! == (Self.products, Self.categories))
            outcomes.append(test == value ? "new" : "old")
            // The next round starts from this round's value.
            if test != value {
                #expect(try LadeProcess.run(["meta", "set", store.path, "kill.test=\(value)", "kill.round=\(round)"], in: sandbox.directory).status == 0)
            }
        }
        #expect(landed >= 3, "only \(landed) kills landed while lade meta set ran")
        print("meta set on \(type) (whole run \(String(format: "%.2f", whole)) s): \(landed) kills landed; metadata after: \(outcomes)")
    }
}

extension StoreKillTests {
    /// A 256 KiB tmpfs at `directory`, or nil where this process may not mount one (not root,
    /// or in a container without the right): the test that needs it then skips.
    static func smallDisk(at directory: URL) -> Bool {
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=256k", "tmpfs", directory.path]
        mount.standardOutput = FileHandle.nullDevice
        mount.standardError = FileHandle.nullDevice
        guard (try? mount.run()) != nil else { return false }
        mount.waitUntilExit()
        return mount.terminationStatus == 0
    }

    static func unmount(_ directory: URL) {
        let umount = Process()
        umount.executableURL = URL(fileURLWithPath: "/bin/umount")
        umount.arguments = [directory.path]
        try? umount.run()
        umount.waitUntilExit()
    }

    @Test("a full disk: lade convert fails saying so, leaves nothing at the destination, and the source intact",
          .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/bin/mount")))
    func diskFull() throws {
        let sandbox = try Self.sandbox()
        let source = sandbox.url("source.sqlite")
        let sourceDigest = try storeFileDigests(source)
        let disk = sandbox.url("small-disk")
        guard Self.smallDisk(at: disk) else {
            print("skipped: cannot mount a small tmpfs here")
            return
        }
        defer { Self.unmount(disk) }
        for type in ["sqlite", "xml", "binary"] {
            let destination = disk.appendingPathComponent("destination.\(type)")
            let result = try LadeProcess.run(["convert", source.path, destination.path, "--model", ImportSandbox.catalogModel.path], in: sandbox.directory)
            #expect(result.status == 1, "\(type): \(result.stdout) \(result.stderr)")
            #expect(result.stderr.contains("full") || result.stderr.contains("No space left"), "\(type): \(result.stderr)")
            let left = try FileManager.default.contentsOfDirectory(atPath: disk.path).filter { !$0.hasSuffix(".lade-lock") }
            #expect(left.isEmpty, "\(type): files left on the full disk: \(left)")
            #expect(try storeFileDigests(source) == sourceDigest)
            print("\(type): \(result.stderr)")
        }
    }
}

extension StoreKillTests {
    @Test("an unwritable destination directory: lade convert, run as an unprivileged user, says so and writes nothing",
          .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func unwritableDirectory() throws {
        let sandbox = try Self.sandbox()
        let closed = sandbox.url("closed")
        try FileManager.default.createDirectory(at: closed, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: closed.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: sandbox.directory.path)
        // The unprivileged user must reach the binary and the model (a checkout under a
        // private home folder does not let it): else there is nothing to show here.
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        probe.arguments = ["--reuid", "65534", "--regid", "65534", "--clear-groups", LadeProcess.binary.path,
                           "inspect", ImportSandbox.catalogModel.path]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        try probe.run()
        probe.waitUntilExit()
        guard probe.terminationStatus == 0 else {
            print("skipped: an unprivileged user cannot run \(LadeProcess.binary.path) on the sandbox here")
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid", "65534", "--regid", "65534", "--clear-groups", LadeProcess.binary.path,
                             "convert", sandbox.url("source.sqlite").path, closed.appendingPathComponent("copy.xml").path,
                             "--model", ImportSandbox.catalogModel.path]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1, "\(stderr)")
        #expect(stderr.contains("Permission denied") && stderr.contains("directory"), "\(stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: closed.path).isEmpty)
    }

    /// Rows of the migrate kill tests: `LADE_MIGRATE_KILL_ROWS` (1,000,000 with a release
    /// binary, `LADE_BINARY=.build/release/lade`), else what keeps `make test` quick.
    static func killRows(mapping: Bool) -> Int64 {
        if let text = ProcessInfo.processInfo.environment["LADE_MIGRATE_KILL_ROWS"], let rows = Int64(text), rows > 0 { return rows }
        return mapping ? 40_000 : 400_000
    }

    @Test("SIGKILL during lade migrate, at five points, lightweight (every table rebuilt) and by a mapping model (the store rebuilt beside it): the store is whole at the old version or the new, every row there; a re-run completes",
          arguments: [false, true])
    func migrateKilled(mapping: Bool) throws {
        let sandbox = try ImportSandbox()
        let bundle = try MigrateCLITests().bundle(sandbox)
        let original = sandbox.url("original.sqlite")
        #expect(try LadeProcess.run(["init", original.path, "--model", bundle, "--model-version", "Things"]).status == 0)
        let rows = Self.killRows(mapping: mapping)
        let connection = try SQLiteConnection(path: original.path, mode: .readWrite(create: false))
        try connection.execute("""
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZNAME, ZCOUNT, ZCODE, ZOLD) \
            WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < \(rows)) \
            SELECT x, 1, 1, 'item ' || x, x % 30000, CASE WHEN x % 2 = 0 THEN 'C' || x END, 'old' FROM n
            """)
        try connection.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = \(rows)")
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let countSum = try connection.rows("SELECT SUM(ZCOUNT) FROM ZITEM").first?.first
        // The mapping model carries `count` (Integer 16 → 64) and leaves the rest to defaults.
        var arguments = ["migrate", "things.sqlite", "--model", bundle]
        if mapping {
            let document = MappingDocument(bundleName: "Things", from: "Things", to: "Things 2", entities: [
                .init(source: "Item", destination: "Item", attributes: ["count"]),
            ])
            try document.write(to: sandbox.url("Things.xcmappingmodel"))
            arguments += ["--mapping", "Things.xcmappingmodel"]
        }
        let store = sandbox.url("things.sqlite")
        func fresh() throws {
            for suffix in ["", "-wal", "-shm", ".lade-lock"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
            try copyWritable(at: original, to: store)
        }
        func expectWhole(_ model: ManagedObjectModel, _ label: String) throws {
            let opened = try SQLiteStore(url: store, model: model, readOnly: true)
            #expect(try opened.count(ofEntity: "Item") == Int(rows), "\(label)")
            #expect(try opened.damage(thorough: false) == [], "\(label)")
            #expect(try StoreReading.integrityCheck(store) == "t'ok'", "\(label)")
            #expect(try SQLiteConnection(path: store.path, mode: .readOnly).rows("SELECT SUM(ZCOUNT) FROM ZITEM").first?.first == countSum, "\(label)")
        }
        try fresh()
        let full = try Self.timed(arguments, in: sandbox.directory)
        var landed = 0
        for fraction in [0.1, 0.3, 0.5, 0.7, 0.9] {
            try fresh()
            if try Self.kill(arguments, after: full * fraction, in: sandbox.directory) { landed += 1 }
            let match = try StoreVersionMatch(storeAt: store, bundle: URL(fileURLWithPath: bundle))
            let version = try #require(match.version, "after a kill at \(fraction): \(match.mismatchDescription)")
            try expectWhole(try ManagedObjectModel(contentsOf: URL(fileURLWithPath: bundle), version: version), "after a kill at \(fraction) (\(version))")
            let rerun = try LadeProcess.run(arguments, in: sandbox.directory)
            #expect(rerun.status == 0, "\(rerun.stderr)")
            try expectWhole(try ManagedObjectModel(contentsOf: URL(fileURLWithPath: bundle)), "after the re-run")
            // Nothing left beside the store: the re-run removed what the kill left.
            let left = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).filter { $0.contains("lade-convert") }
            #expect(left.isEmpty, "\(left)")
        }
        #expect(landed >= 3, "only \(landed) of 5 kills landed while lade migrate ran (\(full) s)")
    }
}
