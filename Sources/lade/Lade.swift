import ArgumentParser
import Foundation
import Lade
import LadePipeline

/// The `lade` command: parses arguments and hands the work to the libraries.
@main
struct LadeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lade",
        abstract: "Core Data's persistence stack on Linux, and batch jobs on top of it.",
        discussion: """
            Lade reads Core Data models (.xcdatamodeld, .xcdatamodel, a compiled .momd or \
            .mom, or Lade's JSON model) and works with stores in Core Data's own formats; a \
            SQLite store that carries its model (Z_MODELCACHE) needs none named.

            \(LadeExit.summary)
            """,
        version: LadeVersion.string,
        subcommands: [Run.self, Validate.self, Seed.self, Convert.self, Migrate.self, Meta.self, Fetch.self, Export.self, Inspect.self, Check.self, Init.self, History.self])

    /// SIGINT and SIGTERM reach lade even when the process that started it had them blocked
    /// (a blocked mask is inherited): a run waiting on a FIFO must still end when asked to.
    static func main() {
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        sigprocmask(SIG_UNBLOCK, &stopSignals, nil)
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            exit(withError: error)
        }
    }
}
