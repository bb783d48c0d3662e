import Foundation

/// SIGINT and SIGTERM asking a run to stop after its current batch. A second signal ends the
/// process at once (every write path is safe to kill).
///
/// ```swift
/// let signals = StopSignals.install()
/// if let signal = signals.received { … commit and stop … }
/// ```
public final class StopSignals: @unchecked Sendable {
    // `received` is written on the signal queue and read by the runner: guarded by `lock`.
    private let lock = NSLock()
    private var signal: Int32?
    private var sources: [DispatchSourceSignal] = []

    public static func install() -> StopSignals {
        let signals = StopSignals()
        let queue = DispatchQueue(label: "lade.signals")
        for number in [SIGINT, SIGTERM] {
            Foundation.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [weak signals] in
                guard let signals else { return }
                signals.lock.lock()
                let second = signals.signal != nil
                signals.signal = number
                signals.lock.unlock()
                if second {
                    FileHandle.standardError.write(Data("lade: stopping now (second signal)\n".utf8))
                    exit(128 + number)
                }
                FileHandle.standardError.write(Data("\nlade: \(number == SIGINT ? "interrupted" : "terminated"): finishing the current batch and committing (signal again to stop at once)\n".utf8))
            }
            source.resume()
            signals.sources.append(source)
        }
        return signals
    }

    /// The signal received, if any.
    public var received: Int32? {
        lock.withLock { signal }
    }
}
