import Foundation
import Testing

@Suite("The lade command, run as a process")
struct CLITests {
    @Test("lade --version prints the version and exits 0")
    func version() throws {
        let result = try LadeProcess.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).range(of: #"^\d+\.\d+\.\d+$"#, options: .regularExpression) != nil)
    }

    @Test("lade help lists the commands; lade help inspect explains inspect")
    func help() throws {
        let top = try LadeProcess.run(["help"])
        #expect(top.status == 0)
        #expect(top.stdout.contains("inspect"))
        let inspect = try LadeProcess.run(["help", "inspect"])
        #expect(inspect.status == 0)
        #expect(inspect.stdout.contains("--model-version"))
        #expect(inspect.stdout.contains("--json"))
    }

    @Test("lade inspect prints the sample model with every section")
    func inspectText() throws {
        let result = try LadeProcess.run(["inspect", "samples/Catalog.xcdatamodeld"])
        #expect(result.status == 0, "\(result.stderr)")
        for expected in [
            "version Catalog 2", "Versions: Catalog, Catalog 2 (current)", "Entity Media (abstract)", "Entity Image : Media",
            "subentities: Image, Video", "sku ", "regex /[A-Z0-9][A-Z0-9-]{2,31}/", "to-many ordered", "delete Deny",
            "delete No Action", "unique: (sku)", "fetch index byName: (name asc)", "lowStock: Product where",
            "activeProducts:", "Configurations", "lade.importKey = sku", "(Lade's)", "not Apple's",
        ] {
            #expect(result.stdout.contains(expected), "missing \(expected)")
        }
    }

    @Test("lade inspect --json prints one object whose entities have name, attributes and relationships")
    func inspectJSON() throws {
        let result = try LadeProcess.run(["inspect", "samples/Catalog.xcdatamodeld", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let entities = try #require(object["entities"] as? [[String: Any]])
        #expect(entities.count == 6)
        for entity in entities {
            #expect(entity["name"] is String)
            #expect(entity["attributes"] is [[String: Any]])
            #expect(entity["relationships"] is [[String: Any]])
        }
    }

    @Test("the JSON lade prints loads back as the same model")
    func jsonRoundTripThroughTheCLI() throws {
        let temp = FileManager.default.temporaryDirectory.appendingPathComponent("lade-cli-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: temp) }
        let first = try LadeProcess.run(["inspect", "samples/Catalog.xcdatamodeld", "--json"])
        try Data(first.stdout.utf8).write(to: temp)
        let second = try LadeProcess.run(["inspect", temp.path, "--json"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout == first.stdout)
    }

    @Test("--model-version and --list-versions")
    func versions() throws {
        let listed = try LadeProcess.run(["inspect", "samples/Catalog.xcdatamodeld", "--list-versions"])
        #expect(listed.stdout == "Catalog\nCatalog 2 (current)\n")
        let older = try LadeProcess.run(["inspect", "samples/Catalog.xcdatamodeld", "--model-version", "Catalog"])
        #expect(older.status == 0)
        #expect(older.stdout.contains("blurb"))
        #expect(!older.stdout.contains("Entity Media"))
    }

    @Test("a broken model exits 1 with file:line, entity and property on standard error")
    func brokenModel() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lade-cli-\(UUID().uuidString).xcdatamodel")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let contents = directory.appendingPathComponent("contents")
        try Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <model>
                <entity name="Product">
                    <attribute name="description" optional="YES" attributeType="String"/>
                </entity>
            </model>
            """.utf8).write(to: contents)
        let result = try LadeProcess.run(["inspect", directory.path])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("\(contents.path):4: entity 'Product', property 'description':"), "\(result.stderr)")
    }

    @Test("a usage error exits 64")
    func usage() throws {
        let result = try LadeProcess.run(["inspect"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("Missing expected argument"))
    }
}
