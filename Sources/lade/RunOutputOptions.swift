import ArgumentParser
import Foundation
import Lade

/// What a job run prints and writes besides its work: `lade run` and `lade seed` share these.
struct RunOutputOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Print a progress line every N seconds (default: a progress bar on a terminal, nothing otherwise).", valueName: "N"))
    var progress: Double?

    @Option(help: ArgumentHelp("Write the run's report as JSON to FILE.", valueName: "FILE"))
    var report: String?

    @Flag(help: "Print nothing but errors.")
    var quiet = false

    func validate() throws {
        if let progress, progress <= 0 { throw ValidationError("--progress takes a number of seconds above 0") }
    }

    /// Writes the report to `--report FILE`, when given.
    func write(report json: () throws -> Data) throws {
        guard let report else { return }
        do {
            try json().write(to: URL(fileURLWithPath: report), options: .atomic)
        } catch {
            throw exitReporting(StoreError(.io, path: report, "cannot write the report: \(error.localizedDescription)"))
        }
    }

    /// Prints the run's summary unless `--quiet`.
    func summary(_ text: String) {
        if !quiet { print(text, terminator: "") }
    }
}
