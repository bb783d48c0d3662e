import ArgumentParser

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
    /// Another lade run holds the store's lock.
    static let storeLocked: Int32 = 75
    /// Stopped by SIGINT (130) or SIGTERM (143) after committing; running again resumes.
    static func interrupted(_ signal: Int32) -> Int32 { 128 + signal }

    static let summary = """
        Exit codes: 0 success; 1 failure (bad job, model, source or store; a row under \
        policy: abort); 2 finished, with rejected rows; 3 not seeded (lade seed --check); 64 usage error; 75 store locked by \
        another run; 130/143 stopped by SIGINT/SIGTERM after a commit (run again to resume).
        """
}
