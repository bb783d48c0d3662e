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
}
