import ArgumentParser
import Foundation
import Lade

/// Runs a command's work; a Lade error is printed as the one clear message it carries,
/// to standard error, and the process exits with code 1.
func reportingFailures(_ work: () throws -> Void) throws {
    do {
        try work()
    } catch let error as ModelError {
        FileHandle.standardError.write(Data("lade: error: \(error)\n".utf8))
        throw ExitCode.failure
    }
}
