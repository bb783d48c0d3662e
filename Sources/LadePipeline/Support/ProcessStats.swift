import Foundation

/// Figures about this process for reports.
public enum ProcessStats {
    /// The peak resident set size so far, in bytes.
    public static var peakResidentBytes: Int64 {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        return Int64(usage.ru_maxrss) * 1024  // kilobytes on Linux
    }
}
