import Foundation
import Lade
import Testing

/// No file lade writes in a run replaces a file it reads in that run, or anything that is not a
/// regular file: one test per writer (rejects, report, store, conversion destination and its
/// temporary files, export files). Devices and pipes are written as they are.
@Suite("Paths lade writes")
struct WritePathTests {
    static let model = ImportSandbox.catalogModel.path

    /// Reads a FIFO on a thread of its own until the writer closes it; `text` is what arrived.
    final class FIFOReader: @unchecked Sendable {
        let url: URL
        private let done = DispatchSemaphore(value: 0)
        private var received = Data()

        init(_ url: URL) throws {
            self.url = url
            try #require(mkfifo(url.path, 0o600) == 0, "mkfifo")
            let thread = Thread { [self] in
                if let handle = FileHandle(forReadingAtPath: url.path) {
                    received = handle.readDataToEndOfFile()
                }
                done.signal()
            }
            thread.start()
        }

        private var finished = false

        /// What arrived, once the writer closed the FIFO (waiting at most a minute, once).
        var text: String {
            if !finished {
                _ = done.wait(timeout: .now() + 60)
                finished = true
            }
            return String(decoding: received, as: UTF8.self)
        }

        var isStillFIFO: Bool {
            var info = stat()
            return lstat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO
        }
    }

    func suppliersJob(_ sandbox: ImportSandbox, rejects: String = "rejects.ndjson") throws {
        try sandbox.write("suppliers.csv", "code,email\nA1,a@b.example\nX1,not-an-email\n")
        try sandbox.job("source: suppliers.csv\nentity: Supplier\nkey: code\nonError: { policy: skip, rejects: \(rejects) }\n")
    }

    @Test("rejects written to a FIFO arrive whole and the FIFO stays a FIFO")
    func rejectsToFIFO() throws {
        let sandbox = try ImportSandbox()
        let fifo = try FIFOReader(sandbox.url("rejects.fifo"))
        try suppliersJob(sandbox, rejects: "rejects.fifo")
        let result = try HostileRun.run(["run", "job.yaml", "--quiet"], in: sandbox.directory)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.seconds < 30, "lade took \(result.seconds) s")
        #expect(fifo.text.contains("\"line\":3") && fifo.text.contains("not-an-email"), "\(fifo.text)")
        #expect(fifo.isStillFIFO)
    }

    @Test("a rejects file that is the job, the source or the store's -wal is refused before anything is written")
    func rejectsOverInputs() throws {
        for target in ["job.yaml", "suppliers.csv", "catalog.sqlite-wal", "./sub/../suppliers.csv"] {
            let sandbox = try ImportSandbox()
            try FileManager.default.createDirectory(at: sandbox.url("sub"), withIntermediateDirectories: true)
            try suppliersJob(sandbox, rejects: target)
            let before = try Data(contentsOf: sandbox.url("suppliers.csv"))
            let result = try sandbox.lade(["run", "job.yaml"])
            #expect(result.status == 1, "\(target): \(result.stderr)")
            #expect(result.stderr.contains("onError.rejects is the"), "\(target): \(result.stderr)")
            #expect(try Data(contentsOf: sandbox.url("suppliers.csv")) == before)
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path), "\(target): the run went ahead")
        }
    }

    @Test("a report to a FIFO or /dev/null is written as it is; a report over a hard link to the source is refused")
    func reports() throws {
        let sandbox = try ImportSandbox()
        try suppliersJob(sandbox)
        let fifo = try FIFOReader(sandbox.url("report.fifo"))
        let first = try sandbox.lade(["run", "job.yaml", "--quiet", "--report", "report.fifo"])
        #expect(first.status == 2, "\(first.stderr)")
        #expect(fifo.text.contains("\"status\""), "\(fifo.text)")
        #expect(fifo.isStillFIFO)

        let devNull = try sandbox.lade(["run", "job.yaml", "--quiet", "--force", "--report", "/dev/null"])
        #expect(devNull.status == 2, "\(devNull.stderr)")
        var info = stat()
        #expect(stat("/dev/null", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR, "/dev/null is no longer a device")

        try #require(link(sandbox.url("suppliers.csv").path, sandbox.url("alias.csv").path) == 0)
        let linked = try sandbox.lade(["run", "job.yaml", "--force", "--report", "alias.csv"])
        #expect(linked.status == 1)
        #expect(linked.stderr.contains("--report is the source"), "\(linked.stderr)")
        #expect(try String(contentsOf: sandbox.url("suppliers.csv"), encoding: .utf8).hasPrefix("code,email\n"))
    }

    @Test("a job whose store is its own source is refused")
    func storeIsSource() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("suppliers.csv", "code\nA1\n")
        try sandbox.job("store: { type: sqlite, path: suppliers.csv }\nsource: suppliers.csv\nentity: Supplier\nkey: code\n")
        let result = try sandbox.lade(["run", "job.yaml"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("the job's store is the source"), "\(result.stderr)")
        #expect(try String(contentsOf: sandbox.url("suppliers.csv"), encoding: .utf8) == "code\nA1\n")
    }

    @Test("lade convert refuses a FIFO destination and the source's own -wal, leaving the source as it was")
    func convertDestinations() throws {
        let sandbox = try ImportSandbox()
        try suppliersJob(sandbox)
        #expect(try sandbox.lade(["run", "job.yaml", "--quiet"]).status == 2)
        let before = try storeFileDigests(sandbox.store)
        try #require(mkfifo(sandbox.url("dest.fifo").path, 0o600) == 0)
        let fifo = try sandbox.lade(["convert", "catalog.sqlite", "dest.fifo", "--type", "xml", "--model", Self.model, "--overwrite"])
        #expect(fifo.status == 1)
        #expect(fifo.stderr.contains("device, pipe or socket"), "\(fifo.stderr)")
        var info = stat()
        #expect(lstat(sandbox.url("dest.fifo").path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO)
        let wal = try sandbox.lade(["convert", "catalog.sqlite", "catalog.sqlite-wal", "--type", "sqlite", "--model", Self.model, "--overwrite"])
        #expect(wal.status == 1)
        #expect(wal.stderr.contains("the source store's wal file"), "\(wal.stderr)")
        #expect(try storeFileDigests(sandbox.store) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).filter { $0.contains(".lade-") && !$0.hasSuffix("lade-lock") }.isEmpty)
    }

    @Test("lade export refuses an export file that is the store, and writes a FIFO as it is")
    func exports() throws {
        let sandbox = try ImportSandbox()
        try suppliersJob(sandbox)
        #expect(try sandbox.lade(["run", "job.yaml", "--quiet"]).status == 2)
        let before = try storeFileDigests(sandbox.store)
        let out = sandbox.url("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent("Supplier.ndjson").path, withDestinationPath: sandbox.store.path)
        let refused = try sandbox.lade(["export", "catalog.sqlite", "--model", Self.model, "--format", "ndjson", "--out", "out"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("the export file for Supplier is the store"), "\(refused.stderr)")
        #expect(try storeFileDigests(sandbox.store) == before)

        try FileManager.default.removeItem(at: out.appendingPathComponent("Supplier.ndjson"))
        let fifo = try FIFOReader(out.appendingPathComponent("Supplier.ndjson"))
        let written = try sandbox.lade(["export", "catalog.sqlite", "--model", Self.model, "--format", "ndjson", "--out", "out"])
        #expect(written.status == 0, "\(written.stderr)")
        #expect(fifo.text.contains("\"code\":\"A1\""), "\(fifo.text)")
        #expect(fifo.isStillFIFO)
    }
}
