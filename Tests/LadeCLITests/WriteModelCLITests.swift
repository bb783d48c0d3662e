import Foundation
import Testing

/// `lade inspect STORE --write-model DIR.xcdatamodel`: the model an Apple SQLite store carries
/// (its `Z_MODELCACHE`), written as Xcode's model folder, is a model the store converts to XML
/// and back with, as a user who has only the store does it.
@Suite("lade inspect --write-model")
struct WriteModelCLITests {
    /// A writable copy of a corpus store (with its `-wal` and `-shm` when it has them).
    func copy(_ relative: String, to store: URL) throws {
        let source = Corpus.file(relative).path
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: source + suffix) {
            try copyWritable(atPath: source + suffix, toPath: store.path + suffix)
        }
    }

    func export(_ store: URL, model: [String], to out: URL, in sandbox: ImportSandbox) throws -> [String: [String]] {
        let exported = try LadeProcess.run(["export", store.path, "--format", "ndjson", "--out", out.path] + model, in: sandbox.directory)
        #expect(exported.status == 0, "\(exported.stderr)")
        return try ConvertRoundTripTests.canonical(out)
    }

    @Test("a store's own model, written as Xcode's, converts the store to XML and back to the same objects", .slow, .needsCorpus,
          arguments: StoreCarriedModelCLITests.cachedStores.map(\.store))
    func convertWithWrittenModel(store corpusStore: String) throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("store.sqlite")
        try copy(corpusStore, to: store)
        let before = try storeFileDigests(store)
        let written = try LadeProcess.run(["inspect", "store.sqlite", "--write-model", "M.xcdatamodel"], in: sandbox.directory)
        #expect(written.status == 0, "\(written.stderr)")
        #expect(written.stdout.contains("M.xcdatamodel/contents"), "\(written.stdout)")
        #expect(try storeFileDigests(store) == before, "the store changed")
        let model = ["--model", sandbox.url("M.xcdatamodel").path]
        for (from, to) in [("store.sqlite", "store.xml"), ("store.xml", "back.sqlite")] {
            let converted = try LadeProcess.run(["convert", from, to] + model, in: sandbox.directory)
            #expect(converted.status == 0, "\(from) → \(to): \(converted.stderr)")
        }
        let original = try export(store, model: [], to: sandbox.url("export-original"), in: sandbox)
        let back = try export(sandbox.url("back.sqlite"), model: model, to: sandbox.url("export-back"), in: sandbox)
        #expect(original.keys.sorted() == back.keys.sorted())
        for entity in original.keys.sorted() {
            let (first, last) = (original[entity] ?? [], back[entity] ?? [])
            #expect(first == last, "\(entity): \(first.count) vs \(last.count) objects; first difference: \(zip(first, last).first { $0 != $1 }.map { "\($0.0)\n  vs \($0.1)" } ?? "(counts)")")
        }
        // back.sqlite carries the written model, and it reads as the same model again.
        let again = try LadeProcess.run(["inspect", "back.sqlite", "--write-model", "Again.xcdatamodel"], in: sandbox.directory)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: sandbox.url("Again.xcdatamodel/contents")) == Data(contentsOf: sandbox.url("M.xcdatamodel/contents")))
        #expect(try storeFileDigests(store) == before, "the store changed")
        print("\(corpusStore): \(original.values.map(\.count).reduce(0, +)) objects in \(original.count) entities through the written model")
    }

    @Test("an existing folder is refused unless --overwrite; nothing is written over what is read; no temporary is left", .needsCorpus)
    func outputPaths() throws {
        let sandbox = try ImportSandbox()
        try copy("alemar11/CoreDataPlus/Tests/Resources/SampleModel3/Fixtures/SampleModel3_V1.sqlite", to: sandbox.url("store.sqlite"))
        let first = try LadeProcess.run(["inspect", "store.sqlite", "--write-model", "M.xcdatamodel"], in: sandbox.directory)
        #expect(first.status == 0, "\(first.stderr)")
        let contents = sandbox.url("M.xcdatamodel/contents")
        let written = try Data(contentsOf: contents)
        #expect(String(decoding: written, as: UTF8.self).contains(#"<model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0""#))

        try Data("old".utf8).write(to: contents)
        let again = try LadeProcess.run(["inspect", "store.sqlite", "--write-model", "M.xcdatamodel"], in: sandbox.directory)
        #expect(again.status == 1)
        #expect(again.stderr.contains("already there") && again.stderr.contains("--overwrite"), "\(again.stderr)")
        #expect(try Data(contentsOf: contents) == Data("old".utf8))

        try Data().write(to: sandbox.url("M.xcdatamodel/notes.txt"))
        let overwritten = try LadeProcess.run(["inspect", "store.sqlite", "--write-model", "M.xcdatamodel", "--overwrite"], in: sandbox.directory)
        #expect(overwritten.status == 0, "\(overwritten.stderr)")
        #expect(try Data(contentsOf: contents) == written)
        #expect(FileManager.default.fileExists(atPath: sandbox.url("M.xcdatamodel/notes.txt").path), "--overwrite replaces the contents file only")

        // A model file as input: the folder's own model, written again, is the same bytes.
        let fromModel = try LadeProcess.run(["inspect", "M.xcdatamodel", "--write-model", "N.xcdatamodel"], in: sandbox.directory)
        #expect(fromModel.status == 0, "\(fromModel.stderr)")
        #expect(try Data(contentsOf: sandbox.url("N.xcdatamodel/contents")) == written)

        let overItself = try LadeProcess.run(["inspect", "M.xcdatamodel", "--write-model", "M.xcdatamodel", "--overwrite"], in: sandbox.directory)
        #expect(overItself.status == 1)
        #expect(overItself.stderr.contains("never writes over a file it reads"), "\(overItself.stderr)")

        let notAFolder = try sandbox.write("F.xcdatamodel", "a file")
        let onFile = try LadeProcess.run(["inspect", "store.sqlite", "--write-model", "F.xcdatamodel", "--overwrite"], in: sandbox.directory)
        #expect(onFile.status == 1)
        #expect(try String(contentsOf: notAFolder, encoding: .utf8) == "a file")

        for arguments in [["--write-model", "M.json"], ["--write-model", "X.xcdatamodel", "--json"], ["--overwrite"],
                          ["--write-model", "X.xcdatamodel", "--model", "M.xcdatamodel"]] {
            let refused = try LadeProcess.run(["inspect", "store.sqlite"] + arguments, in: sandbox.directory)
            #expect(refused.status == 64, "\(arguments): \(refused.stderr)")
        }
        let missingParent = try LadeProcess.run(["inspect", "store.sqlite", "--write-model", "no/such/M.xcdatamodel"], in: sandbox.directory)
        #expect(missingParent.status == 1)
        #expect(missingParent.stderr.contains("does not exist"), "\(missingParent.stderr)")

        let leftovers = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).filter { $0.contains(".lade-") }
        #expect(leftovers == [])
        #expect(!FileManager.default.fileExists(atPath: sandbox.url("X.xcdatamodel").path))
    }

    @Test("an XML store carries no model: --write-model says so and writes nothing")
    func noModel() throws {
        let sandbox = try ImportSandbox()
        let made = try LadeProcess.run(["init", "catalog.xml", "--type", "xml", "--model", ImportSandbox.catalogModel.path], in: sandbox.directory)
        #expect(made.status == 0, "\(made.stderr)")
        let refused = try LadeProcess.run(["inspect", "catalog.xml", "--write-model", "M.xcdatamodel"], in: sandbox.directory)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("carries none"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.url("M.xcdatamodel").path))
    }

    @Test("lade help inspect documents --write-model")
    func help() throws {
        let help = try LadeProcess.run(["help", "inspect"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--write-model"))
        #expect(help.stdout.contains("--overwrite"))
    }
}
