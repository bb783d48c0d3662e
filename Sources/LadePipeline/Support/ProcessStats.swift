import Foundation

/// Figures about this process for reports.
package enum ProcessStats {
    /// The peak resident set size so far, in bytes: `VmHWM` from `/proc/self/status`, the
    /// process's own. (`getrusage`'s `ru_maxrss`, the fallback, also counts the memory of the
    /// process that started this one when it was larger: Linux keeps that high-water mark
    /// across `exec`.)
    package static var peakResidentBytes: Int64 {
        if let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
           let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
           let kilobytes = Int64(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") {
            return kilobytes * 1024
        }
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        return Int64(usage.ru_maxrss) * 1024  // kilobytes on Linux
    }
}
