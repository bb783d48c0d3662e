import Foundation
import Testing

/// A condition on a suite or a test that skips it for a stated reason and counts what it
/// skipped: Swift Testing prints each skip (`Suite "…" skipped: "reason"`), and when the test
/// process exits a line per reason gives the number of tests skipped
/// (`lade tests: 41 tests skipped: coredata-corpus absent …`).
///
/// The lanes are conditions rather than Swift Testing tags because a tag cannot skip anything,
/// and `swift test` cannot select by tag: in Swift 6.3 `--filter` and `--skip` match test names
/// only. `.slow` is the mark a tag would have been.
public struct SkipTrait: TestTrait, SuiteTrait {
    /// Why the test is skipped, printed with each skip and in the count.
    let reason: String
    /// Whether to skip, asked once for the suite and once for each test in it.
    let skips: @Sendable () -> Bool

    /// A suite's condition holds for every test in it, so each test is counted.
    public var isRecursive: Bool { true }

    public func prepare(for test: Test) async throws {
        guard skips() else { return }
        if !test.isSuite { SkipCount.shared.add(test.id, reason: reason) }
        // ConditionTrait's own `prepare` throws what makes Swift Testing skip rather than fail.
        try await ConditionTrait.disabled(Comment(rawValue: reason)).prepare(for: test)
    }
}

extension Trait where Self == SkipTrait {
    /// Too slow for `make test-fast` (it sets `LADE_TEST_LANE=fast`): skipped there, run by
    /// `make test`. For a test that takes 2 seconds or more alone (`--no-parallel`), or a suite
    /// made of such tests.
    public static var slow: Self {
        SkipTrait(reason: "slow; make test-fast (LADE_TEST_LANE=fast) leaves it out, make test runs it") {
            ProcessInfo.processInfo.environment["LADE_TEST_LANE"] == "fast"
        }
    }

    /// Reads the Core Data corpus (``Corpus``): skipped when it is absent.
    public static var needsCorpus: Self {
        SkipTrait(reason: "coredata-corpus absent (looked in \(Corpus.root.path); LADE_CORPUS names another place)") {
            !Corpus.isPresent
        }
    }
}

/// The tests skipped in this process, by reason; printed once, at exit.
final class SkipCount: @unchecked Sendable {
    static let shared = SkipCount()
    private let lock = NSLock()
    private var skipped: [String: Set<Test.ID>] = [:]

    func add(_ test: Test.ID, reason: String) {
        lock.withLock {
            // Swift Testing prints its summary line and returns; the count follows it at exit.
            if skipped.isEmpty { atexit { SkipCount.shared.report() } }
            skipped[reason, default: []].insert(test)
        }
    }

    private func report() {
        let lines = lock.withLock {
            skipped.sorted { $0.key < $1.key }.map { reason, tests in
                "lade tests: \(tests.count) test\(tests.count == 1 ? "" : "s") skipped: \(reason)\n"
            }
        }
        FileHandle.standardError.write(Data(lines.joined().utf8))
    }
}
