import Foundation
import Lade
import Testing

/// All or nothing, shown rather than argued: `lade seed` on a generated catalog is killed with
/// SIGKILL at fixed points, while it reads and maps the steps and while it commits; afterwards
/// the store must have the flag and every seed row, or neither, and a re-run must complete.
@Suite("lade seed killed with SIGKILL", .slow, .serialized)
struct SeedKillTests {
    static let flag = "com.example.generated.seed.v1"
    static let categories = 100
    static let products = 3_000

    enum Phase: String {
        /// At a fraction of the time a whole run takes to reach its commit.
        case reading
        /// At a fraction of the commit's duration after the run says it is committing.
        case committing
    }

    /// Fixed kill points: the same ones every run.
    static func points(_ type: String) -> [(Phase, Double)] {
        type == "sqlite"
            ? [(.reading, 0.02), (.reading, 0.4), (.reading, 0.9), (.committing, 0.0), (.committing, 0.3), (.committing, 0.6), (.committing, 0.9)]
            : [(.reading, 0.3), (.reading, 0.9), (.committing, 0.2), (.committing, 0.7)]
    }

    static func type(_ name: String) -> PersistentStoreCoordinator.StoreType {
        switch name {
        case "xml": .xml
        case "binary": .binary
        default: .sqlite
        }
    }

    /// What the store holds: nil when it has neither flag nor seed rows; true when it has the
    /// flag and all of them; a recorded issue (and false) for anything else.
    static func verify(_ store: URL, type: String, after what: String) throws -> Bool? {
        let counts = try SeedStoreContents.counts(store, type: Self.type(type))
        let metadata = FileManager.default.fileExists(atPath: store.path) ? try PersistentStoreCoordinator.metadataForPersistentStore(at: store) : [:]
        let flag = metadata[flag]
        switch (flag, counts) {
        case (nil, nil), (nil, (0, 0)?):
            return nil
        case (let value?, let counts?) where counts == (categories, products):
            let steps = value.dictionaryValue?["steps"]?.arrayValue?.compactMap { $0.dictionaryValue?["inserted"]?.integerValue }
            #expect(steps == [Int64(categories), Int64(products)], "\(what): the flag's counts \(String(describing: steps))")
            return true
        default:
            Issue.record("\(what): flag \(flag == nil ? "absent" : "present") with \(counts.map { "\($0.categories) categories, \($0.products) products" } ?? "no store")")
            return false
        }
    }

    @Test("SIGKILL at fixed points of a seed leaves the flag and every seed row, or neither; the re-run completes",
          arguments: ["sqlite", "xml", "binary"])
    func killed(type: String) throws {
        let workspace = try SeedWorkspace()
        defer { workspace.remove() }
        try workspace.generateCatalog(categories: Self.categories, products: Self.products)
        let job = try workspace.job("seed.yaml", workspace.generatedJob(flag: Self.flag, store: "catalog.\(type)", type: type))
        let store = workspace.out.appendingPathComponent("catalog.\(type)")
        let arguments = ["seed", job, "--progress", "3600"]

        // One whole run to time the phases.
        let calibration = try LadeChild(arguments)
        #expect(calibration.wait(forError: "lade seed: committing"), "\(calibration.stderr)")
        let reading = Date().timeIntervalSince(calibration.started)
        let committed = Date()
        #expect(calibration.finish() == 0, "\(calibration.stderr)")
        let commit = Date().timeIntervalSince(committed)
        #expect(try Self.verify(store, type: type, after: "the calibration run") == true)

        var outcomes: [String] = []
        var neitherAfterCommitStarted = 0
        for (phase, fraction) in Self.points(type) {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
            let child = try LadeChild(arguments)
            switch phase {
            case .reading:
                let wait = child.started.addingTimeInterval(reading * fraction).timeIntervalSinceNow
                if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            case .committing:
                #expect(child.wait(forError: "lade seed: committing"), "\(child.stderr)")
                usleep(UInt32(commit * fraction * 1_000_000))
            }
            let sent = child.send(SIGKILL)
            let status = child.finish()
            // A child that had just exited (not yet reaped) still takes the signal without
            // effect: what ended it is its status, not whether the signal was sent.
            let killed = sent && status == 128 + SIGKILL
            let what = "\(type), killed while \(phase.rawValue) at \(fraction)"
            #expect(killed || status == 0, "\(what): status \(status): \(child.stderr)")
            let state = try Self.verify(store, type: type, after: what)
            outcomes.append("\(phase.rawValue) \(fraction): \(killed ? "killed" : "had finished"), \(state.map { $0 ? "flag and rows" : "MIXED" } ?? "neither")")
            if killed && phase == .committing && state == nil { neitherAfterCommitStarted += 1 }

            let again = try LadeProcess.run(["seed", job])
            #expect(again.status == 0, "\(what), the re-run: \(again.stderr)")
            #expect(try Self.verify(store, type: type, after: "\(what), then run again") == true)
        }
        print("lade seed, \(type), reading \(String(format: "%.2f", reading)) s, commit \(String(format: "%.2f", commit)) s:\n  " + outcomes.joined(separator: "\n  "))
        // Kills did land inside the commit (after it began, before it was durable) and lost it all.
        #expect(neitherAfterCommitStarted > 0, "\(outcomes)")
    }
}
