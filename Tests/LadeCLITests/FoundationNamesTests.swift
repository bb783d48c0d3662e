import Foundation
import Testing

/// A user's file imports Foundation and Lade side by side; no name of ours may need
/// qualifying there (Foundation declares `Predicate`, `Expression`, `SortDescriptor`, …). Both
/// checks compile a generated file with the compiler that built the tests, against the modules
/// built beside them: every top-level public type of Lade and LadePipeline named without
/// qualification, and every Swift example of the README and docs/.
@Suite("Lade next to Foundation")
struct FoundationNamesTests {
    /// Every top-level public type of `Lade` and `LadePipeline`, named unqualified in a file that
    /// imports Foundation, Lade and LadePipeline, compiles.
    @Test("every public type of Lade and LadePipeline is named without qualification next to Foundation", .slow)
    func publicTypes() throws {
        var names: [String] = []
        for library in ["Lade", "LadePipeline"] {
            names += try Self.sources(under: LadeProcess.root.appendingPathComponent("Sources/\(library)")).flatMap { file in
                try String(contentsOf: file, encoding: .utf8).split(separator: "\n").compactMap { line -> String? in
                    guard let match = line.firstMatch(of: #/^public (?:final |indirect )?(?:class|struct|enum|protocol|typealias|actor) ([A-Za-z_][A-Za-z0-9_]*)/#) else { return nil }
                    return String(match.1)
                }
            }
        }
        let unique = Array(Set(names)).sorted()
        #expect(unique.count > 100, "the public types are found: \(unique.count)")
        #expect(unique.contains("FetchPredicate") && unique.contains("ImportRunner"))
        let source = "import Foundation\nimport Lade\nimport LadePipeline\n\n" + unique.map { "typealias _Named\($0) = \($0)\n" }.joined()
        try Self.expectCompiles(source, name: "public-types")
    }

    /// Every ```swift block of README.md and docs/*.md, each in a function of its own, with the
    /// names the examples take as given declared once; a block that no longer compiles is
    /// documentation that lies.
    @Test("every Swift example in the README and docs/ compiles in a file that imports Foundation and Lade", .slow)
    func documentationExamples() throws {
        let documents = [LadeProcess.root.appendingPathComponent("README.md")]
            + (try FileManager.default.contentsOfDirectory(at: LadeProcess.root.appendingPathComponent("docs"), includingPropertiesForKeys: nil))
                .filter { $0.pathExtension == "md" }.sorted { $0.path < $1.path }
        var examples: [(place: String, code: String)] = []
        for document in documents {
            var block: [String]?
            var start = 0
            for (number, line) in try String(contentsOf: document, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if block == nil, line.hasPrefix("```swift") { block = []; start = number + 2; continue }
                if block != nil, line.hasPrefix("```") {
                    examples.append(("\(document.lastPathComponent):\(start)", block!.joined(separator: "\n")))
                    block = nil
                    continue
                }
                block?.append(String(line))
            }
        }
        #expect(examples.count >= 10, "the examples are found: \(examples.count)")
        // An example's imports go to the top of the file (the examples that show them show a
        // user's whole file); the rest of it is the body of a function of its own.
        var imports = Set<String>()
        let functions = examples.enumerated().map { index, example in
            let lines = example.code.split(separator: "\n", omittingEmptySubsequences: false)
            imports.formUnion(lines.filter { $0.hasPrefix("import ") }.map(String.init))
            let body = lines.filter { !$0.hasPrefix("import ") }.joined(separator: "\n")
            return "// \(example.place)\nfunc example\(index)() throws {\n\(body)\n}\n"
        }.joined(separator: "\n")
        #expect(imports.isSubset(of: ["import Foundation", "import Lade"]), "\(imports)")
        try Self.expectCompiles(Self.given + functions, name: "documentation-examples")
    }

    /// What the documentation's examples take as given: declared, never run (the file is only
    /// type-checked).
    static let given = """
        import Foundation
        import Lade

        var model: ManagedObjectModel { fatalError() }
        var context: ManagedObjectContext { fatalError() }
        var viewContext: ManagedObjectContext { fatalError() }
        var coordinator: PersistentStoreCoordinator { fatalError() }
        var url: URL { fatalError() }
        var localURL: URL { fatalError() }
        var cloudURL: URL { fatalError() }
        var bundle: URL { fatalError() }
        var product: ManagedObject { fatalError() }
        var owner: ManagedObject { fatalError() }
        var lastWeek: Date { fatalError() }
        var checkpoint: [String: PropertyListValue] { fatalError() }
        var cheap: FetchPredicate { fatalError() }
        var old: FetchPredicate { fatalError() }
        var v1: ManagedObjectModel { fatalError() }
        var v2: ManagedObjectModel { fatalError() }
        var v3: ManagedObjectModel { fatalError() }
        struct ExampleRow { var sku: String; var name: String; var price: Decimal?; var category: String }
        var rows: [ExampleRow] { fatalError() }
        var categories: [String: ManagedObject] { fatalError() }
        var batches: [[ExampleRow]] { fatalError() }
        func insert(_ batch: [ExampleRow], into context: ManagedObjectContext) throws {}


        """

    static func sources(under directory: URL) throws -> [URL] {
        (FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? [])
            .filter { $0.pathExtension == "swift" }
    }

    /// The first `-I` directory `pkg-config --cflags-only-I PACKAGE` gives, if any.
    static func pkgConfigIncludeDirectory(_ package: String) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["pkg-config", "--cflags-only-I", package]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return output.split(separator: " ").first { $0.hasPrefix("-I") }.map { String($0.dropFirst(2)).trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// Type-checks `source` with `swiftc` against the modules built beside the tests (their
    /// `Modules` folder) and the package's C module maps.
    static func expectCompiles(_ source: String, name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lade-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("\(name).swift")
        try Data(source.utf8).write(to: file)
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var modules = testBinary.deletingLastPathComponent()
        for _ in 0..<4 where !FileManager.default.fileExists(atPath: modules.appendingPathComponent("Modules/Lade.swiftmodule").path) {
            modules = modules.deletingLastPathComponent()
        }
        modules = modules.appendingPathComponent("Modules")
        try #require(FileManager.default.fileExists(atPath: modules.appendingPathComponent("Lade.swiftmodule").path), "no built Lade module beside the tests (\(modules.path))", sourceLocation: sourceLocation)
        let root = LadeProcess.root
        var arguments = ["swiftc", "-typecheck", file.path, "-I", modules.path]
        for shim in ["CSQLite", "CLibXML2", "CZlib", "CLibPQ"] { arguments += ["-I", root.appendingPathComponent("Sources/\(shim)").path] }
        // The build folder (`.build`, or the scratch path given) holds the checkouts: <scratch>/<triple>/debug/Modules.
        let scratch = modules.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        arguments += ["-I", scratch.appendingPathComponent("checkouts/Yams/Sources/CYaml/include").path]
        // libxml2's headers, where pkg-config says (the CLibXML2 module map includes them).
        arguments += ["-Xcc", "-I" + (Self.pkgConfigIncludeDirectory("libxml-2.0") ?? "/usr/include/libxml2")]
        // libpq's headers (the CLibPQ module map includes libpq-fe.h).
        arguments += ["-Xcc", "-I" + (Self.pkgConfigIncludeDirectory("libpq") ?? "/usr/include/postgresql")]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = directory.appendingPathComponent("output")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        try handle.close()
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0, "swiftc -typecheck \(name).swift:\n\(text.split(separator: "\n").prefix(60).joined(separator: "\n"))\n--- the file:\n\(source.split(separator: "\n").prefix(400).enumerated().map { "\($0.offset + 1): \($0.element)" }.joined(separator: "\n"))", sourceLocation: sourceLocation)
    }
}
