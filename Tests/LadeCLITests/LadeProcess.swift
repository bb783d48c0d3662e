import Foundation
@_exported import LadeTestSupport

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
