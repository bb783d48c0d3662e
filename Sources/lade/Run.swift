import ArgumentParser
import Foundation
import Lade
import LadePipeline

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run an import job: a CSV, NDJSON or JSON source into a store, in batches.",
        discussion: """
            Reads the job file (YAML or JSON; see jobs/README.md), creates the store with the \
            job's model when it is missing, and imports the source in fixed-size batches: \
            objects are found by the job's key and updated, or created; relationships are \
            wired by key; bad rows stop the run (policy: abort) or go to the rejects file \
            (policy: skip). A checkpoint in the store's metadata, committed with each batch, \
            lets a killed run resume where it stopped; a finished source is not imported again \
            unless it changes (or --force). Rows go straight into a SQLite store as batch \
            inserts when the job allows it, otherwise through managed objects (the job's \
            writer: auto | batch | objects); the report says which writer ran and why. \
            Into an empty table, the model's fetch indexes on it are built once at the run's \
            last commit instead of row by row (jobs/README.md, "Indexes built after loading \
            an empty table"). A PostgreSQL store (store: { url: postgresql://USER@HOST:PORT/DATABASE?schema=NAME }) \
            is written through managed objects.

            Examples:
              lade run jobs/products.yaml
              lade run jobs/products.yaml --report out/report.json --progress 10
              zcat feed.ndjson.gz | lade run jobs/stdin-feed.yaml

            \(LadeExit.summary)
            """)

    @Argument(help: ArgumentHelp("The job file.", valueName: "JOB"))
    var job: String

    @Flag(help: "Import again even if the store says this source was imported already.")
    var force = false

    @OptionGroup var output: RunOutputOptions

    func run() throws {
        let result: ImportReport
        var reportKind: OutputFile.Kind?
        do {
            let loaded = try Job(contentsOf: URL(fileURLWithPath: job), displayPath: job)
            reportKind = try output.checkReport(against: loaded)
            var options = ImportOptions(force: force, progressInterval: output.progress, onWarning: LadeExit.printWarning)
            options.onStopSignal = LadeExit.stopSignal(finishing: "finishing the current batch and committing")
            options.progressOutput = ProgressReporter.standardError
            result = try ImportRunner(job: loaded, options: options).run()
        } catch {
            throw exitReporting(error)
        }
        try output.write(report: result.json, kind: reportKind)
        output.summary(result.text())
        switch result.status {
        case .completed, .alreadyImported: return
        case .completedWithRejects: throw ExitCode(LadeExit.completedWithRejects)
        case .interrupted(let signal): throw ExitCode(LadeExit.interrupted(signal))
        case .aborted(let reason):
            FileHandle.standardError.write(Data("lade: error: \(reason)\n".utf8))
            throw ExitCode(LadeExit.failure)
        }
    }
}

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a job against its model and its source's header, writing nothing.",
        discussion: """
            Reads the job, loads its model, checks the entity, key, fields and relationships \
            against it, opens the source to read its header (CSV) and checks the listed columns \
            exist, and, when the store exists, opens it read-only to check it matches the model.

            Example:
              lade validate jobs/products.yaml
            """)

    @Argument(help: ArgumentHelp("The job file.", valueName: "JOB"))
    var job: String

    func run() throws {
        do {
            let loaded = try Job(contentsOf: URL(fileURLWithPath: job), displayPath: job)
            print(try JobValidation(job: loaded).run().text(), terminator: "")
        } catch {
            throw exitReporting(error)
        }
    }
}

/// Prints a failure as lade's one-line error and picks its exit code.
