import ArgumentParser
import Foundation
import LadePipeline

/// The exit codes of `lade`, documented in the README and `lade help`.
enum LadeExit {
    static let success: Int32 = 0
    /// The run failed: a bad job, model, source or store, or a row under `policy: abort`.
    static let failure: Int32 = 1
    /// The run read its whole source but rejected some rows (see the rejects file).
    static let completedWithRejects: Int32 = 2
    /// `lade seed --check`: the store does not carry the seed's flag (or does not exist).
    static let notSeeded: Int32 = 3
    /// Arguments lade cannot use (ArgumentParser's code).
    static let usage: Int32 = 64
    /// The database server of a PostgreSQL store cannot be reached or refused the connection
    /// (`store.connection`): EX_UNAVAILABLE, not 75, so that a wrapper that takes 75 as "a run
    /// of this job is still going" does not hide an outage.
    static let unavailable: Int32 = 69
    /// Another lade run holds the store's lock.
    static let storeLocked: Int32 = 75
    /// Stopped by SIGINT (130) or SIGTERM (143) after committing; running again resumes.
    static func interrupted(_ signal: Int32) -> Int32 { 128 + signal }

    /// What lade does at SIGINT/SIGTERM during a run: says it is `finishing`; at a second
    /// signal, ends the process at once (every write path is safe to kill).
    static func stopSignal(finishing: String) -> StopSignals.Handler {
        { signal, again in
            if again {
                FileHandle.standardError.write(Data("lade: stopping now (second signal)\n".utf8))
                exit(interrupted(signal))
            }
            FileHandle.standardError.write(Data("\nlade: \(signal == SIGINT ? "interrupted" : "terminated"): \(finishing) (signal again to stop at once)\n".utf8))
        }
    }

    /// Prints a warning about a job's model (or anything else the run accepted but should say).
    static let printWarning: @Sendable (String) -> Void = { warning in
        FileHandle.standardError.write(Data("lade: warning: \(warning)\n".utf8))
    }

    /// Prints a note on what a command did besides its work (temporary files it removed).
    static let printNote: @Sendable (String) -> Void = { note in
        FileHandle.standardError.write(Data("lade: \(note)\n".utf8))
    }

    static let summary = """
        Exit codes: 0 success; 1 failure (bad job, model, source or store; a row under \
        policy: abort); 2 finished, with rejected rows; 3 not seeded (lade seed --check); 64 usage error; 69 the database \
        server unreachable or refusing the connection (store.connection); 75 store locked by \
        another run; 130/143 stopped by SIGINT/SIGTERM after a commit (run again to resume). \
        A failure is one line on standard error, lade: error: MESSAGE [CODE], the code stable \
        for scripts (store.damaged, model.unknownEntity, job, source, …; see the README, Errors).
        """
}
