import ArgumentParser
import Foundation
import Lade

/// Runs a command's work; a Lade error is printed as the one clear message it carries,
/// to standard error, and the process exits with code 1.
func reportingFailures(_ work: () throws -> Void) rethrows {
    do {
        try work()
    } catch let error as ModelError {
        fail(error)
    } catch let error as StoreError {
        fail(error)
    }
}

private func fail(_ error: CustomStringConvertible) -> Never {
    FileHandle.standardError.write(Data("lade: error: \(error)\n".utf8))
    LadeCommand.exit(withError: ExitCode.failure)
}
