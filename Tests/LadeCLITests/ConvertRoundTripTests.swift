import Foundation
import Testing

/// The corpus's SQLite stores, each copied to a temporary folder and converted by `lade
/// convert` SQLite → XML → binary → SQLite, end equal to the original: every object, value and
/// relationship, compared through `lade export`.
@Suite("lade convert round trips, compared through lade export")
struct ConvertRoundTripTests {
    struct CorpusStore: CustomTestStringConvertible, Sendable, Decodable {
        var store: String
        var model: String
        var version: String?
        var testDescription: String { store.split(separator: "/").last.map(String.init) ?? store }
    }

    /// Every corpus SQLite store whose model the corpus holds in a form Lade reads
    /// (`Tests/Fixtures/corpus-sqlite-stores.json`); the two `Recipes.sqlite` stores come with
    /// Xcode 3 binary models (`elements`) only, which Lade refuses.
    static let stores: [CorpusStore] = (try? JSONDecoder().decode(
        [CorpusStore].self, from: Data(contentsOf: LadeProcess.root.appendingPathComponent("Tests/Fixtures/corpus-sqlite-stores.json")))) ?? []

    /// An export directory's records, entity by entity in file order, with each object's
    /// `_uri` dropped and every URI that refers to an object replaced by "Entity#n", its place
    /// in its entity's file: exports list objects in primary key order, whose order within an
    /// entity every conversion keeps, while the keys themselves may change between store types.
    static func canonical(_ directory: URL) throws -> [String: [String]] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".ndjson") && !$0.hasPrefix(".") }.sorted()
        var records: [String: [[String: Any]]] = [:]
        var names: [String: String] = [:]
        for file in files {
            let entity = String(file.dropLast(".ndjson".count))
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            records[entity] = try text.split(separator: "\n").enumerated().map { index, line in
                let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                names[try #require(record["_uri"] as? String)] = "\(entity)#\(index)"
                return record
            }
        }
        func replace(_ value: Any) -> Any {
            if let text = value as? String, text.hasPrefix("x-coredata://") { return names[text] ?? "UNKNOWN \(text)" }
            if let array = value as? [Any] { return array.map(replace) }
            return value
        }
        return try records.mapValues { list in
            try list.map { record in
                var copy = record.mapValues(replace)
                copy["_uri"] = nil
                return String(decoding: try JSONSerialization.data(withJSONObject: copy, options: [.sortedKeys]), as: UTF8.self)
            }
        }
    }

    @Test("SQLite → XML → binary → SQLite ends equal to the original; the copy it started from is unchanged", .slow,
          .needsCorpus, arguments: stores)
    func roundTrip(_ corpus: CorpusStore) throws {
        let sandbox = try ImportSandbox()
        let model = Corpus.root.appendingPathComponent(corpus.model).path
        let modelArguments = ["--model", model] + (corpus.version.map { ["--model-version", $0] } ?? [])
        let original = sandbox.url("original.sqlite")
        let from = Corpus.root.appendingPathComponent(corpus.store).path
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: from + suffix) {
            try copyWritable(atPath: from + suffix, toPath: original.path + suffix)
        }
        let before = try storeFileDigests(original)
        var previous = original
        for name in ["step.xml", "step.binary", "final.sqlite"] {
            let next = sandbox.url(name)
            let converted = try LadeProcess.run(["convert", previous.path, next.path] + modelArguments, in: sandbox.directory)
            #expect(converted.status == 0, "\(name): \(converted.stderr)")
            previous = next
        }
        #expect(try storeFileDigests(original) == before, "the original changed")
        var exports: [[String: [String]]] = []
        for (store, out) in [(original, "export-original"), (previous, "export-final")] {
            let exported = try LadeProcess.run(["export", store.path, "--format", "ndjson", "--out", sandbox.url(out).path] + modelArguments, in: sandbox.directory)
            #expect(exported.status == 0, "\(exported.stderr)")
            exports.append(try Self.canonical(sandbox.url(out)))
        }
        #expect(exports[0].keys.sorted() == exports[1].keys.sorted())
        for entity in exports[0].keys.sorted() {
            let (first, last) = (exports[0][entity] ?? [], exports[1][entity] ?? [])
            #expect(first == last, "\(entity): \(first.count) vs \(last.count) objects; first difference: \(zip(first, last).first { $0 != $1 }.map { "\($0.0)\n  vs \($0.1)" } ?? "(counts)")")
        }
        print("\(corpus.testDescription): \(exports[0].values.map(\.count).reduce(0, +)) objects in \(exports[0].count) entities round-tripped")
    }
}
