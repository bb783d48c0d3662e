import Foundation
import Lade
import Testing

/// The library states the fact; lade adds what to do next from the error's code (`Hint`),
/// between the message and the code, so every error line still ends with its code.
@Suite("Error hints")
struct ErrorHintTests {
    /// A store of a one-entity model: any catalog command meets it as another model's store.
    private func foreignStore(_ sandbox: ImportSandbox) throws -> URL {
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Thing", attributes: [AttributeDescription(name: "a", type: .string)])])
        let store = sandbox.url("things.sqlite")
        try SQLiteStore.create(at: store, model: model)
        return store
    }

    @Test("a store of another model: the library's message names no lade command; lade adds inspect and migrate")
    func modelMismatch() throws {
        let sandbox = try ImportSandbox()
        let store = try foreignStore(sandbox)
        let catalog = try ManagedObjectModel(contentsOf: ImportSandbox.catalogModel)
        let error = #expect(throws: StoreError.self) { try SQLiteStore(url: store, model: catalog) }
        #expect(error?.code == "store.modelMismatch")
        #expect(error.map { !$0.description.contains("lade ") } == true, "\(String(describing: error))")
        let fetch = try sandbox.lade(["fetch", store.path, "--model", ImportSandbox.catalogModel.path, "--entity", "Product"])
        #expect(fetch.status == 1)
        #expect(fetch.stderr.contains("; `lade inspect \(store.path) --model BUNDLE` says which version wrote it; `lade migrate \(store.path) --model BUNDLE` carries it"), "\(fetch.stderr)")
        #expect(fetch.stderr.hasSuffix("[store.modelMismatch]\n"), "\(fetch.stderr)")
    }

    @Test("no store at the path a reading command was given: lade says lade init creates one; convert, which never creates its source, does not")
    func noStore() throws {
        let sandbox = try ImportSandbox()
        let missing = sandbox.url("missing.sqlite").path
        let inspect = try sandbox.lade(["inspect", missing, "--model", ImportSandbox.catalogModel.path])
        #expect(inspect.status == 1)
        #expect(inspect.stderr.contains("no store here") && inspect.stderr.hasSuffix("; `lade init \(missing) --model MODEL` creates a SQLite store [store.notFound]\n"), "\(inspect.stderr)")
        let convert = try sandbox.lade(["convert", missing, sandbox.url("out.xml").path, "--model", ImportSandbox.catalogModel.path])
        #expect(convert.status == 1)
        #expect(!convert.stderr.contains("lade init") && convert.stderr.hasSuffix("[store.notFound]\n"), "\(convert.stderr)")
    }

    @Test("a conversion onto an existing file: lade convert adds --overwrite; the library names its option, not a flag")
    func existingDestination() throws {
        let sandbox = try ImportSandbox()
        let store = try foreignStore(sandbox)
        let destination = try sandbox.write("taken.xml", "not a store")
        let model = sandbox.url("thing.json")
        try Data(#"{"entities":[{"name":"Thing","attributes":[{"name":"a","type":"String"}]}]}"#.utf8).write(to: model)
        let convert = try sandbox.lade(["convert", store.path, destination.path, "--model", model.path])
        #expect(convert.status == 1)
        #expect(convert.stderr.contains("a file is already there") && convert.stderr.contains("; `--overwrite` replaces it [store.alreadyExists]"), "\(convert.stderr)")
        #expect(try String(contentsOf: destination, encoding: .utf8) == "not a store")
    }

    @Test("no hint where it would mislead: a version the bundle lacks, --overwrite given, a destination that is the source through a link")
    func noMisleadingHint() throws {
        let sandbox = try ImportSandbox()
        let store = try foreignStore(sandbox)
        let model = try sandbox.write("thing.json", #"{"entities":[{"name":"Thing","attributes":[{"name":"a","type":"String"}]}]}"#)
        let typo = try sandbox.lade(["migrate", store.path, "--model", ImportSandbox.catalogModel.path, "--to", "Catalogg"])
        #expect(typo.status == 1)
        #expect(typo.stderr.contains("the model has no version 'Catalogg'; its versions are Catalog, Catalog 2 [store.modelMismatch]"), "\(typo.stderr)")
        try FileManager.default.createSymbolicLink(atPath: sandbox.url("same.sqlite").path, withDestinationPath: store.path)
        for extra in [[], ["--overwrite"]] {
            let convert = try sandbox.lade(["convert", store.path, sandbox.url("same.sqlite").path, "--model", model.path] + extra)
            #expect(convert.status == 1)
            #expect(convert.stderr.contains("the destination is the source itself") && !convert.stderr.contains("--overwrite` replaces"), "\(convert.stderr)")
        }
        let taken = try sandbox.write("taken.xml", "not a store")
        let overwriteGiven = try sandbox.lade(["convert", store.path, taken.path, "--model", model.path, "--overwrite"])
        #expect(!overwriteGiven.stderr.contains("--overwrite` replaces"), "\(overwriteGiven.stderr)")
    }

    @Test("the store named by a relative path still gets the lade init hint")
    func relativeStore() throws {
        let sandbox = try ImportSandbox()
        let inspect = try LadeProcess.run(["inspect", "missing.sqlite", "--model", ImportSandbox.catalogModel.path], in: sandbox.directory)
        #expect(inspect.status == 1)
        #expect(inspect.stderr.hasSuffix("`lade init \(sandbox.url("missing.sqlite").path) --model MODEL` creates a SQLite store [store.notFound]\n"), "\(inspect.stderr)")
    }

    @Test("no error message of the Lade library names a lade command: the command line adds those")
    func libraryMessages() throws {
        let sources = LadeProcess.root.appendingPathComponent("Sources/Lade")
        let command = try Regex(#""[^"]*\blade (init|run|seed|migrate|convert|check|inspect|fetch|export|meta)\b"#)
        var found: [String] = []
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        #expect(files.count > 50, "the library's sources are read")
        for file in files {
            for (number, line) in try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                if code.hasPrefix("//") { continue }
                if code.contains(command) { found.append("\(file.lastPathComponent):\(number + 1): \(code)") }
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }
}
