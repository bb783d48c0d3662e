import Foundation
@_exported import LadeTestSupport
@_exported import LadeTestTraits

/// Runs the built `lade` binary as a real process.
enum LadeProcess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The `lade` built beside the test bundle, or `LADE_BINARY` when set.
    static let binary: URL = {
        if let path = ProcessInfo.processInfo.environment["LADE_BINARY"] { return URL(fileURLWithPath: path) }
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = testBinary.deletingLastPathComponent()
        // Inside an .xctest bundle directory on some platforms; beside it on Linux.
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("lade")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return root.appendingPathComponent(".build/debug/lade")
    }()

    static func run(_ arguments: [String], in directory: URL = root) throws -> Result {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        // Standard error goes to a file so that neither stream can fill up and block the child.
        let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("lade-stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errorFile) }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: errorFile)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let errData = try Data(contentsOf: errorFile)
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }
}

/// A `lade` child process that runs while the test watches it, to signal or kill it mid-run;
/// its output goes to files.
final class LadeChild {
    let process = Process()
    let stdoutFile: URL
    let stderrFile: URL
    let started = Date()

    init(_ arguments: [String], in directory: URL = LadeProcess.root, environment: [String: String] = [:]) throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("lade-child-\(UUID().uuidString)")
        stdoutFile = base.appendingPathExtension("out")
        stderrFile = base.appendingPathExtension("err")
        for file in [stdoutFile, stderrFile] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        process.executableURL = LadeProcess.binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.standardOutput = try FileHandle(forWritingTo: stdoutFile)
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: stdoutFile)
        try? FileManager.default.removeItem(at: stderrFile)
    }

    var stdout: String { (try? String(contentsOf: stdoutFile, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "" }

    /// Waits until standard error contains `text` (true), or the process ends first (false).
    func wait(forError text: String, timeout: TimeInterval = 120) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stderr.contains(text) { return true }
            if !process.isRunning { return stderr.contains(text) }
            usleep(1000)
        }
        return false
    }

    /// Sends `signal` unless the process has ended; true when it was still running.
    @discardableResult
    func send(_ signal: Int32) -> Bool {
        guard process.isRunning else { return false }
        return kill(process.processIdentifier, signal) == 0
    }

    /// Waits for the end; the exit status, or 128 + the signal that ended it.
    @discardableResult
    func finish() -> Int32 {
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    /// The row count of its last `--progress` line so far (`products.csv: 12,345 rows, …`).
    /// Reads only the end of its standard error, as it is polled often while the child runs.
    var rowsReported: Int {
        guard let handle = try? FileHandle(forReadingFrom: stderrFile) else { return 0 }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()) ?? 0
        try? handle.seek(toOffset: size > 512 ? size - 512 : 0)
        let tail = String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
        for line in tail.split(separator: "\n").reversed() {
            guard let colon = line.range(of: ": "), let rows = line[colon.upperBound...].range(of: " rows, ") else { continue }
            if let count = Int(line[colon.upperBound..<rows.lowerBound].filter(\.isNumber)) { return count }
        }
        return 0
    }

    /// Waits until `condition` holds or the process ends; true when the condition held while it still ran.
    func wait(until condition: () -> Bool, timeout: TimeInterval = 120) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return process.isRunning }
            if !process.isRunning { return false }
            usleep(5_000)
        }
        return false
    }

    var endedBySignal: Int32? {
        process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil
    }
}
