import Foundation
import Testing

@Suite("lade convert's output")
struct ConvertOutputTests {
    @Test("--progress N prints object counts on standard error; the summary names the types and counts every entity", .slow)
    func progressAndSummary() throws {
        let sandbox = try StoreKillTests.sandbox()
        let result = try LadeProcess.run(["convert", "source.sqlite", "copy.xml", "--model", ImportSandbox.catalogModel.path, "--progress", "0.01", "--batch-size", "500"], in: sandbox.directory)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("convert: ") && $0.contains(" objects/s") }
        #expect(!lines.isEmpty, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("converted source.sqlite (SQLite) to copy.xml (XML): 20050 objects"), "\(result.stdout)")
        #expect(result.stdout.contains("  Category: 50\n") && result.stdout.contains("  Product: 20000\n"), "\(result.stdout)")
        let refused = try LadeProcess.run(["convert", "source.sqlite", "copy.xml", "--model", ImportSandbox.catalogModel.path], in: sandbox.directory)
        #expect(refused.status == 1 && refused.stderr.contains("--overwrite"), "\(refused.stderr)")
        // .store names a SQLite store (as in job files: one table of names); .dat names nothing.
        let untyped = try LadeProcess.run(["convert", "source.sqlite", "copy.dat", "--model", ImportSandbox.catalogModel.path], in: sandbox.directory)
        #expect(untyped.status == 64 && untyped.stderr.contains("--type"), "\(untyped.stderr)")
    }
}
