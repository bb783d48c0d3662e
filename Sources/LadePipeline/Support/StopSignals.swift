import Foundation

/// SIGINT and SIGTERM asking a run to stop after its current batch. The library only
/// records them and tells `onSignal` (the signal, and whether one came before); what to print,
/// and whether a second signal ends the process at once (every write path is safe to kill),
/// is the caller's to decide: the CLI does both.
///
/// ```swift
/// let signals = StopSignals.install { signal, again in if again { exit(128 + signal) } }
/// if let signal = signals.received { … commit and stop … }
/// ```
public final class StopSignals: @unchecked Sendable {
    /// Told of each SIGINT or SIGTERM, on a queue of its own: the signal, and whether an
    /// earlier one was received.
    public typealias Handler = @Sendable (_ signal: Int32, _ again: Bool) -> Void

    // `received` is written on the signal queue and read by the runner: guarded by `lock`.
    private let lock = NSLock()
    private var signal: Int32?
    private var sources: [DispatchSourceSignal] = []

    package static func install(onSignal: Handler? = nil) -> StopSignals {
        let signals = StopSignals()
        let queue = DispatchQueue(label: "lade.signals")
        for number in [SIGINT, SIGTERM] {
            Foundation.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [weak signals] in
                guard let signals else { return }
                signals.lock.lock()
                let again = signals.signal != nil
                signals.signal = number
                signals.lock.unlock()
                onSignal?(number, again)
            }
            source.resume()
            signals.sources.append(source)
        }
        return signals
    }

    /// The signal received, if any.
    package var received: Int32? {
        lock.withLock { signal }
    }
}
