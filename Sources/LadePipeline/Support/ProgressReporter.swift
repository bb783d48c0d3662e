import Foundation

/// Progress of a long run: a bar redrawn in place on a terminal (rows, rows/s, percent of the
/// source's bytes, time left), a plain line every N seconds when asked (`--progress N`),
/// otherwise nothing. The text goes to `output`, which the caller gives (the CLI writes it to
/// standard error); without one the library writes nothing. Used from one thread at a time.
public final class ProgressReporter: @unchecked Sendable {
    /// Where progress text goes: bars come with a carriage return and no newline.
    public typealias Output = @Sendable (String) -> Void

    package enum Mode: Equatable, Sendable {
        case bar
        case lines(every: TimeInterval)
        case quiet
    }

    private let mode: Mode
    private let label: String
    private let unit: String
    private let started = Date()
    private var lastOutput = Date.distantPast
    private var drewBar = false

    private let output: Output?

    /// `unit` names what is counted ("rows", "objects"); nothing is shown without `output`.
    package init(mode: Mode, label: String, unit: String = "rows", output: Output?) {
        self.mode = output == nil ? .quiet : mode
        self.label = label
        self.unit = unit
        self.output = output
    }

    /// `.bar` when standard error is a terminal, else `.lines` when an interval is given, else quiet.
    package static func mode(interval: TimeInterval?) -> Mode {
        if let interval { return .lines(every: interval) }
        return isatty(STDERR_FILENO) == 1 ? .bar : .quiet
    }

    package func update(rows: Int64, bytes: Int64, totalBytes: Int64?) {
        let now = Date()
        switch mode {
        case .quiet: return
        case .bar: guard now.timeIntervalSince(lastOutput) >= 0.2 else { return }
        case .lines(let every): guard now.timeIntervalSince(lastOutput) >= every else { return }
        }
        lastOutput = now
        let elapsed = max(now.timeIntervalSince(started), 0.001)
        let rate = Double(rows) / elapsed
        var text = "\(label): \(Self.grouped(rows)) \(unit), \(Self.grouped(Int64(rate))) \(unit)/s"
        var fraction: Double?
        if let totalBytes, totalBytes > 0 {
            let done = min(1, Double(bytes) / Double(totalBytes))
            fraction = done
            text += String(format: ", %.0f%%", done * 100)
            if done > 0.01 { text += ", \(Self.duration(elapsed * (1 - done) / done)) left" }
        }
        switch mode {
        case .bar:
            let width = 24
            let filled = Int((fraction ?? 0) * Double(width))
            let bar = fraction == nil ? "" : "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] "
            output?("\r\u{1B}[2K\(bar)\(text)")
            drewBar = true
        case .lines:
            output?("\(text)\n")
        case .quiet:
            break
        }
    }

    package func finish() {
        if drewBar { output?("\r\u{1B}[2K") }
    }

    /// A line about the run's progress that is not a count ("committing …"), shown whenever
    /// progress is (a bar or lines), never in quiet mode.
    package static func note(_ text: String, interval: TimeInterval?, output: Output?) {
        guard mode(interval: interval) != .quiet else { return }
        output?("\(text)\n")
    }

    /// The CLI's output: standard error.
    public static let standardError: Output = { FileHandle.standardError.write(Data($0.utf8)) }

    static func grouped(_ number: Int64) -> String {
        let digits = String(number)
        var out = ""
        for (index, character) in digits.reversed().enumerated() {
            if index > 0 && index % 3 == 0 && character != "-" { out.append(",") }
            out.append(character)
        }
        return String(out.reversed())
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        return total >= 3600 ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60) : String(format: "%d:%02d", total / 60, total % 60)
    }
}
