import Foundation
import Lade
import LadeTestSupport
import LadeTestTraits
import Testing

/// Persistent history through `lade` as a process: imports and seeds into a copy of Apple's
/// `SampleModel2_V1.sqlite` (which Core Data wrote with history tracking), `lade init --history`,
/// a job's `store: { history: true }`, and `lade history` listing and pruning.
@Suite("lade and persistent history, run as a process")
struct HistoryCLITests {
    /// A sandbox with the model as Lade JSON (`model.json`, see `SampleModel2`), Feedback rows
    /// (`feedback.csv`, `count` of them) and a copy of Apple's store (`apple.sqlite`).
    func sandbox(rows count: Int = 30) throws -> ImportSandbox {
        let sandbox = try ImportSandbox()
        try sandbox.write("model.json", try SampleModel2.v1().jsonData())
        var csv = "authorAlias,bookID,comment,rating\n"
        for index in 0..<count { csv += "alias \(index),\(UUID().uuidString),comment \(index),\(index % 5)\n" }
        try sandbox.write("feedback.csv", csv)
        if Corpus.isPresent {
            try copyWritable(at: Corpus.file(SampleModel2.v1Store), to: sandbox.url("apple.sqlite"))
        }
        return sandbox
    }

    func importJob(store: String, writer: String, extra: String = "") -> String {
        """
        model: model.json
        store: \(store)
        transactionAuthor: importer
        source: feedback.csv
        entity: Feedback
        writer: \(writer)
        batch: { size: 10, commitEvery: 1 }
        \(extra)
        """
    }

    /// The new transactions (after Apple's one): each with its author, context, bundle and
    /// process, and its changes; all Feedback inserts.
    func expectImported(_ store: URL, rows: Int, firstKey: Int64, after: Int64, commits: Int, author: String, context: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let transactions = try HistoryRows.transactions(store, after: after)
        #expect(transactions.count == commits, "one transaction per commit: \(transactions.map(\.number))", sourceLocation: sourceLocation)
        for transaction in transactions {
            #expect(transaction.author == author && transaction.context == context, "\(transaction)", sourceLocation: sourceLocation)
            #expect(transaction.bundle == "lade" && transaction.process == "lade", "\(transaction)", sourceLocation: sourceLocation)
        }
        let changes = try HistoryRows.changes(store, after: after)
        #expect(changes.allSatisfy { $0.type == 0 && $0.entity == 3 && $0.columns == nil }, "\(changes.prefix(5))", sourceLocation: sourceLocation)
        #expect(changes.map(\.key).sorted() == Array(firstKey..<(firstKey + Int64(rows))), sourceLocation: sourceLocation)
        #expect(Set(changes.map(\.transaction)) == Set(transactions.map(\.number)), "no transaction without changes", sourceLocation: sourceLocation)
    }

    @Test("an import of Feedback rows into Apple's store, by each writer, records one transaction per commit with the job's author", .needsCorpus, arguments: ["batch", "objects"])
    func importByEachWriter(writer: String) throws {
        let sandbox = try sandbox()
        try sandbox.job(importJob(store: "{ path: apple.sqlite }", writer: writer))
        let (result, _) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        try expectImported(sandbox.url("apple.sqlite"), rows: 30, firstKey: 445, after: 1, commits: 3, author: "importer", context: "lade import")
        #expect(try HistoryRows.maxima(sandbox.url("apple.sqlite"))[16002] == 4)
        #expect(try StoreReading.integrityCheck(sandbox.url("apple.sqlite")) == "t'ok'")
    }

    @Test("a seed into Apple's store records its one commit with the job's author", .needsCorpus, arguments: ["batch", "objects"])
    func seed(writer: String) throws {
        let sandbox = try sandbox(rows: 12)
        try sandbox.write("seed.yaml", """
            kind: seed
            flag: example.seeded
            model: model.json
            store: { path: apple.sqlite }
            transactionAuthor: seeder
            writer: \(writer)
            steps:
              - source: { path: feedback.csv }
                entity: Feedback

            """)
        let result = try sandbox.lade(["seed", "seed.yaml"])
        #expect(result.status == 0, "\(result.stderr)")
        try expectImported(sandbox.url("apple.sqlite"), rows: 12, firstKey: 445, after: 1, commits: 1, author: "seeder", context: "lade seed")
    }

    @Test("lade init --history and a job's store: { history: true } make stores that record history; lade history lists and prunes it")
    func createdWithHistory() throws {
        let sandbox = try sandbox()
        let made = try sandbox.lade(["init", "made.sqlite", "--model", "model.json", "--history"])
        #expect(made.status == 0 && made.stdout.contains("with persistent history"), "\(made.stderr)")
        try sandbox.job(importJob(store: "{ path: made.sqlite }", writer: "auto"), named: "made.yaml")
        #expect(try sandbox.run("made.yaml").result.status == 0)
        try expectImported(sandbox.url("made.sqlite"), rows: 30, firstKey: 1, after: 0, commits: 3, author: "importer", context: "lade import")

        try sandbox.job(importJob(store: "{ path: created.sqlite, history: true }", writer: "objects"), named: "created.yaml")
        let created = try sandbox.run("created.yaml").result
        #expect(created.status == 0, "\(created.stderr)")
        try expectImported(sandbox.url("created.sqlite"), rows: 30, firstKey: 1, after: 0, commits: 3, author: "importer", context: "lade import")

        let listed = try sandbox.lade(["history", "made.sqlite", "--after", "1", "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let transactions = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        #expect(transactions.map { $0["token"] as? Int } == [2, 3])
        let changes = transactions.flatMap { ($0["changes"] as? [[String: Any]]) ?? [] }
        #expect(changes.count == 20 && changes.allSatisfy { $0["type"] as? String == "insert" && $0["entity"] as? String == "Feedback" })
        #expect(transactions.allSatisfy { $0["author"] as? String == "importer" && $0["contextName"] as? String == "lade import" })
        let text = try sandbox.lade(["history", "made.sqlite"])
        #expect(text.stdout.contains("transaction 1 ") && text.stdout.contains("author importer") && text.stdout.contains("  insert  Feedback  1\n"), "\(text.stdout)")

        let pruned = try sandbox.lade(["history", "delete", "made.sqlite", "--before", "3"])
        #expect(pruned.status == 0 && pruned.stdout == "deleted 2 transactions and 20 changes\n", "\(pruned.stdout)\(pruned.stderr)")
        #expect(try HistoryRows.transactions(sandbox.url("made.sqlite")).map(\.number) == [3])
        let bad = try sandbox.lade(["history", "made.sqlite", "--after", "yesterday"])
        #expect(bad.status == 64, "\(bad.stderr)")
    }

    @Test("a negative token is read as the option's value (not as an option) and refused saying tokens start at 1; nothing is deleted")
    func negativeToken() throws {
        let sandbox = try sandbox()
        #expect(try sandbox.lade(["init", "made.sqlite", "--model", "model.json", "--history"]).status == 0)
        try sandbox.job(importJob(store: "{ path: made.sqlite }", writer: "auto"), named: "made.yaml")
        #expect(try sandbox.run("made.yaml").result.status == 0)
        for command in [["history", "delete", "made.sqlite", "--before", "-1"], ["history", "made.sqlite", "--after", "-1"],
                        ["history", "delete", "made.sqlite", "--before=-1"]] {
            let result = try sandbox.lade(command)
            #expect(result.status == 64, "\(command): \(result.stderr)")
            #expect(!result.stderr.contains("Missing value"), "\(command): \(result.stderr)")
            #expect(result.stderr.contains("'-1'") && result.stderr.contains("token"), "\(command): \(result.stderr)")
        }
        #expect(try HistoryRows.transactions(sandbox.url("made.sqlite")).map(\.number) == [1, 2, 3])
    }

    @Test("lade history delete takes the store's lock as every writing command does: while another run holds it, it exits 75 and deletes nothing")
    func deleteWaitsForTheLock() throws {
        let sandbox = try sandbox()
        #expect(try sandbox.lade(["init", "made.sqlite", "--model", "model.json", "--history"]).status == 0)
        try sandbox.job(importJob(store: "{ path: made.sqlite }", writer: "auto"), named: "made.yaml")
        #expect(try sandbox.run("made.yaml").result.status == 0)
        let before = try HistoryRows.transactions(sandbox.url("made.sqlite")).map(\.number)
        #expect(before == [1, 2, 3])
        // What another lade run (a migration, a conversion with --overwrite) holds: an flock on
        // <store>.lade-lock. Close-on-exec: a process another test starts meanwhile would
        // otherwise inherit the descriptor, and the lock with it, past the close below.
        let descriptor = open(sandbox.url("made.sqlite").path + ".lade-lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        #expect(descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        let locked = try sandbox.lade(["history", "delete", "made.sqlite", "--before", "3"])
        #expect(locked.status == 75, "\(locked.stdout)\(locked.stderr)")
        #expect(locked.stderr.contains("is locked by another lade run"), "\(locked.stderr)")
        #expect(try HistoryRows.transactions(sandbox.url("made.sqlite")).map(\.number) == before)
        close(descriptor)
        let pruned = try sandbox.lade(["history", "delete", "made.sqlite", "--before", "3"])
        #expect(pruned.status == 0, "\(pruned.stderr)")
        #expect(try HistoryRows.transactions(sandbox.url("made.sqlite")).map(\.number) == [3])
    }

    @Test("a store made without history gets no history tables from a run, and lade history and history: true say so")
    func withoutHistory() throws {
        let sandbox = try sandbox()
        #expect(try sandbox.lade(["init", "plain.sqlite", "--model", "model.json"]).status == 0)
        try sandbox.job(importJob(store: "{ path: plain.sqlite }", writer: "auto"))
        #expect(try sandbox.run().result.status == 0)
        try sandbox.job(importJob(store: "{ path: new.sqlite }", writer: "objects"), named: "new.yaml")
        #expect(try sandbox.run("new.yaml").result.status == 0)
        for store in ["plain.sqlite", "new.sqlite"] {
            #expect(try HistoryRows.tables(sandbox.url(store)).isDisjoint(with: ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]), "\(store)")
        }
        let listed = try sandbox.lade(["history", "plain.sqlite"])
        #expect(listed.status == 1 && listed.stderr.contains("[history.notTracked]"), "\(listed.stderr)")
        try sandbox.job(importJob(store: "{ path: plain.sqlite, history: true }", writer: "auto"), named: "asked.yaml")
        let asked = try sandbox.run("asked.yaml").result
        #expect(asked.status != 0 && asked.stderr.contains("[history.notTracked]"), "\(asked.stderr)")
        #expect(try HistoryRows.tables(sandbox.url("plain.sqlite")).isDisjoint(with: ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]))
        let xml = try sandbox.lade(["init", "x.xml", "--type", "xml", "--model", "model.json", "--history"])
        #expect(xml.status == 64, "\(xml.stderr)")
    }
}

extension HistoryCLITests {
    @Test("a store that keeps history but lacks ATRANSACTION or ACHANGE is refused for writing, naming the table, and lade check reports it", arguments: ["ATRANSACTION", "ACHANGE"])
    func missingHistoryTableRefused(table: String) throws {
        let sandbox = try sandbox()
        let made = try sandbox.lade(["init", "made.sqlite", "--model", "model.json", "--history"])
        #expect(made.status == 0, "\(made.stderr)")
        try SQLiteConnection(path: sandbox.url("made.sqlite").path, mode: .readWrite(create: false)).execute("DROP TABLE \(table)")
        try sandbox.job(importJob(store: "{ path: made.sqlite }", writer: "auto"), named: "made.yaml")
        let run = try sandbox.run("made.yaml").result
        #expect(run.status != 0)
        #expect(run.stderr.contains("history table missing") && run.stderr.contains(table), "\(run.stderr)")
        #expect(try StoreReading.integer(sandbox.url("made.sqlite"), "SELECT COUNT(*) FROM ZFEEDBACK") == 0, "rows written without history")
        let checked = try sandbox.lade(["check", "made.sqlite", "--model", "model.json"])
        #expect(checked.status != 0)
        #expect(checked.stdout.contains("historyTables") && checked.stdout.contains(table), "\(checked.stdout)\(checked.stderr)")
        // lade history names the one table that is gone, not all three.
        let listed = try sandbox.lade(["history", "made.sqlite"])
        #expect(listed.status != 0)
        #expect(listed.stderr.contains("its \(table) table is missing"), "\(listed.stderr)")
    }
}
