import ArgumentParser
import Foundation
import Lade
import LadePipeline

/// Runs a command's work and returns what it gives; any error is reported by
/// `exitReporting(_:)`: one line on standard error, and the exit code for it.
func reportingFailures<Result>(_ work: () throws -> Result) throws -> Result {
    do {
        return try work()
    } catch {
        throw exitReporting(error)
    }
}

/// The one way lade reports a failure: `lade: error: MESSAGE[; HINT] [CODE]` on standard error
/// (the message names what and where; the hint, what to do next with lade, from the code
/// (`Hint`); the code is `LadeError.code`), and the exit code: 75 when another run holds the
/// store's lock, 69 when a database server cannot be reached (`store.connection`), 1 otherwise. An `ExitCode` passes through as it is.
func exitReporting(_ error: Error) -> ExitCode {
    if let exit = error as? ExitCode { return exit }
    let message: String
    switch error {
    case let lade as LadeError: message = "\(lade.description)" + (Hint.text(for: lade).map { "; \($0)" } ?? "") + " [\(lade.code)]"
    case let described as CustomStringConvertible: message = described.description
    default: message = error.localizedDescription
    }
    FileHandle.standardError.write(Data("lade: error: \(message)\n".utf8))
    if error is StoreLock.Busy { return ExitCode(LadeExit.storeLocked) }
    if let store = error as? StoreError, store.kind == .connection { return ExitCode(LadeExit.unavailable) }
    return ExitCode(LadeExit.failure)
}
