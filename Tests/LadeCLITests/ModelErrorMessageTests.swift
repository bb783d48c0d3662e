import Foundation
import Lade
import LadeTestSupport
import LadeTestTraits
import Testing

/// Errors about a model, as `lade` prints them: each says what is wrong, in which file, and
/// what to do, and none gives advice that does not fit (issue 43 §4, "Errors that mislead").
@Suite("errors about a model say what is wrong, where, and what to do")
struct ModelErrorMessageTests {
    func errorLine(_ result: LadeProcess.Result) -> String {
        result.stderr.split(separator: "\n").filter { $0.hasPrefix("lade: error:") }.joined(separator: "\n")
    }

    @Test("a store written with another app's model, opened with a named model, says so and that the store carries its own; no .momd advice",
          .needsCorpus)
    func storeOfAnotherModel() throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("SampleModel_V1.sqlite").path
        try FileManager.default.copyItem(
            atPath: Corpus.file("alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V1.sqlite").path, toPath: store)
        let other = Corpus.file("bignerdranch/CoreDataStack/Sample Model/Deprecated/Sample.xcdatamodeld").path
        let result = try LadeProcess.run(["fetch", store, "--model", other, "--entity", "Author"])
        #expect(result.status == 1)
        let error = errorLine(result)
        #expect(error.contains(store))
        #expect(error.contains("written with another model"), "\(error)")
        // The entities the two models do not share, both ways.
        #expect(error.contains("Car") && error.contains("Author"), "\(error)")
        #expect(error.contains("Z_MODELCACHE"), "\(error)")
        #expect(error.contains("without `--model`"), "\(error)")
        #expect(!error.contains(".momd"), "\(error)")

        // lade inspect looks for the bundle's version that wrote the store: none did, and the
        // closest is another model too.
        let inspected = try LadeProcess.run(["inspect", store, "--model", other])
        #expect(inspected.status == 1)
        let inspectError = errorLine(inspected)
        #expect(inspectError.contains("written with another model"), "\(inspectError)")
        #expect(inspectError.contains("without `--model`"), "\(inspectError)")
        #expect(!inspectError.contains(".momd"), "\(inspectError)")
    }

    @Test("a job naming another app's model for a store that carries its own says so, and to leave model: out", .needsCorpus)
    func jobOfAnotherModel() throws {
        let sandbox = try ImportSandbox()
        try FileManager.default.copyItem(
            atPath: Corpus.file("alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V1.sqlite").path,
            toPath: sandbox.store.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: sandbox.store.path)
        try sandbox.write("books.csv", "title\nDune\n")
        let other = Corpus.file("bignerdranch/CoreDataStack/Sample Model/Deprecated/Sample.xcdatamodeld").path
        try sandbox.job("model: \"\(other)\"\nsource: books.csv\nentity: Book\n")
        let result = try sandbox.lade(["run", "job.yaml"])
        #expect(result.status == 1)
        let error = errorLine(result)
        #expect(error.contains("written with another model"), "\(error)")
        #expect(error.contains("leave `model:` out of the job"), "\(error)")
        #expect(!error.contains(".momd"), "\(error)")
    }

    @Test("a .mom rewritten as an XML property list (plutil -convert xml1) is read as the keyed archive it is, as its binary form")
    func xmlPlistMom() throws {
        let sandbox = try ImportSandbox()
        let model = try ManagedObjectModel(contentsOf: ImportSandbox.catalogModel)
        let binary = try sandbox.write("Catalog.mom", try model.archivedModel())
        // Foundation writes a keyed archive's object references as plutil does: `CF$UID` dictionaries.
        let archive = try PropertyListSerialization.propertyList(from: try Data(contentsOf: binary), format: nil)
        let xml = try sandbox.write("CatalogXML.mom", try PropertyListSerialization.data(fromPropertyList: archive, format: .xml, options: 0))
        #expect(try String(contentsOf: xml, encoding: .utf8).hasPrefix("<?xml"))

        let fromBinary = try LadeProcess.run(["inspect", binary.path, "--json"])
        try #require(fromBinary.status == 0, "\(fromBinary.stderr)")
        let fromXML = try LadeProcess.run(["inspect", xml.path, "--json"])
        try #require(fromXML.status == 0, "\(fromXML.stderr)")
        func entities(_ json: String) throws -> [[String: Any]] {
            let report = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            return try #require(report["entities"] as? [[String: Any]])
        }
        let expected = try entities(fromBinary.stdout)
        #expect(expected.count == model.entities.count)
        #expect(NSArray(array: try entities(fromXML.stdout)) == NSArray(array: expected))
    }

    @Test("an XML property list that is no keyed archive, in a .mom, is named so, not refused as model XML with a DTD")
    func xmlPlistNotArchive() throws {
        let sandbox = try ImportSandbox()
        let mom = try sandbox.write("Model.mom", """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>colour</key>
            \t<string>blue</string>
            </dict>
            </plist>

            """)
        let result = try LadeProcess.run(["inspect", mom.path])
        #expect(result.status == 1)
        let error = errorLine(result)
        #expect(error.contains(mom.path), "\(error)")
        #expect(error.contains("cannot be read as a compiled Core Data model"), "\(error)")
        #expect(error.contains("not an NSKeyedArchiver archive"), "\(error)")
        #expect(!error.contains("DTD") && !error.contains("document type"), "\(error)")
    }

    /// A `.momd` of two (empty) versions and the `VersionInfo.plist` given.
    func momd(_ sandbox: ImportSandbox, versionInfo: String) throws -> URL {
        let bundle = sandbox.url("Model.momd")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        for version in ["Model", "Model 2"] { _ = try sandbox.write("Model.momd/\(version).mom", Data()) }
        _ = try sandbox.write("Model.momd/VersionInfo.plist", versionInfo)
        return bundle
    }

    @Test("a VersionInfo.plist that cannot be read is named, with what is wrong in it, not taken for one naming no current version",
          arguments: [
            ("garbage\u{1}\u{2}", "is not a property list"),
            ("<?xml version=\"1.0\"?><plist version=\"1.0\"><array/></plist>", "is an array, not a dictionary"),
            ("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>NSManagedObjectModel_CurrentVersionName</key><integer>2</integer></dict></plist>",
             "NSManagedObjectModel_CurrentVersionName is an integer, not a string"),
          ])
    func unreadableVersionInfo(_ text: String, _ wrong: String) throws {
        let sandbox = try ImportSandbox()
        let bundle = try momd(sandbox, versionInfo: text)
        let result = try LadeProcess.run(["inspect", bundle.path])
        #expect(result.status == 1)
        let error = errorLine(result)
        #expect(error.contains(bundle.appendingPathComponent("VersionInfo.plist").path), "\(error)")
        #expect(error.contains(wrong), "\(error)")
        #expect(error.contains("rebuild the .momd"), "\(error)")
        #expect(!error.contains("names no current"), "\(error)")
    }

    @Test("an empty or text .mom is said not to be a compiled model, with the reason and its path",
          arguments: [("", "the file is empty"), ("hello, model\n", "not a binary property list")])
    func notACompiledModel(_ text: String, _ reason: String) throws {
        let sandbox = try ImportSandbox()
        let mom = try sandbox.write("Model.mom", text)
        let result = try LadeProcess.run(["inspect", mom.path])
        #expect(result.status == 1)
        let error = errorLine(result)
        #expect(error.contains("\(mom.path): this is not a compiled model"), "\(error)")
        #expect(error.contains(reason), "\(error)")
        #expect(!error.contains("neither"), "\(error)")
    }

    @Test("a model with composite attributes is refused for every store type lade makes, suggesting no store it cannot make",
          arguments: ["sqlite", "xml", "binary"])
    func compositesRefused(_ type: String) throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("Model.\(type)").path
        let result = try LadeProcess.run(["init", store, "--type", type, "--model", CompositeInspectTests.model])
        #expect(result.status == 1)
        let error = errorLine(result)
        #expect(error.contains("Produit.attribute1"), "\(error)")
        #expect(error.contains("a model without composite attributes"), "\(error)")
        #expect(error.contains("from Swift code"), "\(error)")
        #expect(!error.contains("Use an in-memory store"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: store))
    }
}
