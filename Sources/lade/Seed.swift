import ArgumentParser
import Foundation
import Lade
import LadePipeline

struct Seed: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load a seed job's default data into a store once, guarded by a metadata flag.",
        discussion: """
            Reads the seed job (kind: seed; see jobs/README.md). When the store's metadata lacks \
            the job's flag, loads every step in order (find-or-create by key, relationships by \
            key, to objects of earlier steps or already in the store) and sets the flag in the \
            same commit: one SQLite transaction, or one atomic write of an XML or binary store. \
            A store that carries the flag is left untouched ("already seeded", exit 0). A \
            missing store is created with the job's model. Any rejected row stops the seed and \
            nothing is written.

            Examples:
              lade seed jobs/seed-catalog.yaml
              lade seed jobs/seed-catalog.yaml --check     # exit 0 seeded, 3 not
              lade seed app-seed.yaml --momd App.momd      # Apple's hashes

            Exit codes: 0 seeded, or already seeded (with --check: seeded); 1 failure (a bad \
            job, model, source or store; a rejected row: nothing written); 3 not seeded \
            (--check only); 64 usage error; 75 store locked by another run; 130/143 stopped by \
            SIGINT/SIGTERM before the commit (nothing written).
            """)

    @Argument(help: ArgumentHelp("The seed job file.", valueName: "JOB"))
    var job: String

    @Flag(help: "Write nothing: say whether the store is seeded, by the exit code (0 seeded, 3 not seeded).")
    var check = false

    @Option(name: .customLong("momd"), help: ArgumentHelp("A compiled .momd of the job's model: the store's metadata takes Apple's entity version hashes from its VersionInfo.plist (overrides the job's model.momd).", valueName: "DIR"))
    var compiledModel: String?

    @OptionGroup var output: RunOutputOptions

    func run() throws {
        let result: SeedReport
        var reportKind: OutputFile.Kind?
        do {
            var loaded = try Job(contentsOf: URL(fileURLWithPath: job), displayPath: job)
            if let compiledModel { loaded.model.compiledModel = URL(fileURLWithPath: compiledModel) }
            reportKind = try output.checkReport(against: loaded)
            var options = SeedOptions(progressInterval: output.progress)
            options.onStopSignal = LadeExit.stopSignal(finishing: "stopping before the commit, writing nothing")
            options.onWarning = LadeExit.printWarning
            options.progressOutput = ProgressReporter.standardError
            let runner = SeedRunner(job: loaded, options: options)
            result = check ? try runner.check() : try runner.run()
        } catch {
            throw exitReporting(error)
        }
        try output.write(report: result.json, kind: reportKind)
        switch result.status {
        case .seeded, .alreadySeeded:
            output.summary(result.text())
        case .notSeeded:
            output.summary(result.text())
            throw ExitCode(LadeExit.notSeeded)
        case .interrupted(let signal):
            FileHandle.standardError.write(Data("lade: \(result.text())".utf8))
            throw ExitCode(LadeExit.interrupted(signal))
        case .aborted(let reason):
            FileHandle.standardError.write(Data("lade: error: \(reason)\nlade: not seeded: nothing was written\(result.storeCreated ? " (the new store was removed)" : "")\n".utf8))
            throw ExitCode(LadeExit.failure)
        }
    }
}
