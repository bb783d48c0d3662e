import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One `lade` process run under the hostile-input suite's bounds: a wall-clock limit (the
/// process is killed with SIGKILL past it, and the run counts as a hang) and its own peak
/// resident memory, read from `wait4`'s resource usage, which `Process` does not give.
struct HostileRun {
    var status: Int32
    /// The signal that ended the process, if one did (a crash, or the hang limit's SIGKILL).
    var signal: Int32?
    var hung: Bool
    var peakResidentBytes: Int
    var seconds: Double
    var stdout: String
    var stderr: String

    /// Runs `lade ARGUMENTS` in `directory`; `input` (when given) is written to its standard
    /// input through a pipe, from a thread of its own, so that a full pipe cannot block the test.
    static func run(_ arguments: [String], in directory: URL, input: Data? = nil, limit: TimeInterval = 60) throws -> HostileRun {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("lade-hostile-\(UUID().uuidString)")
        let outPath = base.path + ".out", errPath = base.path + ".err"
        defer { unlink(outPath); unlink(errPath) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeDescriptors: [Int32] = [-1, -1]
        if input != nil {
            guard pipe(&pipeDescriptors) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            posix_spawn_file_actions_adddup2(&actions, pipeDescriptors[0], 0)
            posix_spawn_file_actions_addclose(&actions, pipeDescriptors[0])
            posix_spawn_file_actions_addclose(&actions, pipeDescriptors[1])
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        // The shell changes directory and replaces itself with lade, so the process measured is lade.
        let shell = ["/bin/sh", "-c", "cd -- \"$0\" && exec \"$@\"", directory.path, LadeProcess.binary.path]
        let argv = (shell + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let started = Date()
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, nil, argv, environ)
        guard spawned == 0 else { throw POSIXError(.init(rawValue: spawned) ?? .EIO) }

        var writer: Thread?
        if let input {
            close(pipeDescriptors[0])
            let descriptor = pipeDescriptors[1]
            writer = Thread {
                input.withUnsafeBytes { buffer in
                    var offset = 0
                    while offset < buffer.count {
                        let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                        if written <= 0 { break }
                        offset += written
                    }
                }
                close(descriptor)
            }
            Glibc.signal(SIGPIPE, SIG_IGN)
            writer?.start()
        }

        var status: Int32 = 0
        var usage = rusage()
        var hung = false
        while true {
            let reaped = wait4(pid, &status, WNOHANG, &usage)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { throw POSIXError(.init(rawValue: errno) ?? .ECHILD) }
            if Date().timeIntervalSince(started) > limit, !hung {
                hung = true
                kill(pid, SIGKILL)
            }
            usleep(2_000)
        }
        let seconds = Date().timeIntervalSince(started)
        let exited = (status & 0x7F) == 0
        let read = { (path: String) in String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data(), as: UTF8.self) }
        return HostileRun(
            status: exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), signal: exited ? nil : status & 0x7F,
            hung: hung, peakResidentBytes: Int(usage.ru_maxrss) * 1024, seconds: seconds,
            stdout: read(outPath), stderr: read(errPath))
    }

    /// Standard error's lines that say something (progress lines and blank lines left out).
    var errorLines: [String] {
        stderr.split(separator: "\n").map(String.init).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    }
}
