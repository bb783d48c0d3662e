import ArgumentParser
import Foundation
import Lade
import LadePipeline

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

    /// Checks `--report FILE` before the run, against every file the job reads: a report never
    /// replaces the store, the source, the job or the model, nor a device, pipe or socket.
    func checkReport(against job: Job) throws -> OutputFile.Kind? {
        guard let report else { return nil }
        do {
            return try OutputFile.check(URL(fileURLWithPath: report), role: "--report", reads: job.reads)
        } catch {
            throw exitReporting(error)
        }
    }

    /// Writes the report to `--report FILE`, when given (checked by `checkReport` first).
    func write(report json: () throws -> Data, kind: OutputFile.Kind?) throws {
        guard let report, let kind else { return }
        do {
            try OutputFile.write(try json(), to: URL(fileURLWithPath: report), kind: kind)
        } catch {
            throw exitReporting(StoreError(.io, path: report, "cannot write the report: \(error)"))
        }
    }

    /// Prints the run's summary unless `--quiet`.
    func summary(_ text: String) {
        if !quiet { print(text, terminator: "") }
    }
}
