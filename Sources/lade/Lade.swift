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
            Lade reads Core Data models (.xcdatamodeld, .xcdatamodel, or Lade's JSON model) \
            and works with stores in Core Data's own formats.

            \(LadeExit.summary)
            """,
        version: LadeVersion.string,
        subcommands: [Run.self, Validate.self, Seed.self, Convert.self, Meta.self, Fetch.self, Export.self, Inspect.self, Init.self])
}
