import Foundation
import Lade
import Testing

/// A folder of its own for one import test: the job, its source, its store, the rejects and
/// the report, all side by side, so every path in a job is a plain file name. Removed when the
/// test ends (kept when `LADE_KEEP_TEST_FILES` is set, to look at a failure).
final class ImportSandbox {
    let directory: URL

    /// The `writer:` every job this sandbox writes gets, unless the job names one; nil: none
    /// (the job's default, `auto`). Set by the `.eachWriter` trait.
    @TaskLocal static var writer: String?

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lade-import-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit {
        if ProcessInfo.processInfo.environment["LADE_KEEP_TEST_FILES"] == nil {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static let catalogModel = LadeProcess.root.appendingPathComponent("samples/Catalog.xcdatamodeld")

    func url(_ name: String) -> URL { directory.appendingPathComponent(name) }
    var store: URL { url("catalog.sqlite") }
    var rejects: URL { url("rejects.ndjson") }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> URL {
        try write(name, Data(text.utf8))
    }

    @discardableResult
    func write(_ name: String, _ data: Data) throws -> URL {
        let url = url(name)
        try data.write(to: url)
        return url
    }

    /// Compresses `name` with the system's gzip into `name.gz`, keeping `name`.
    @discardableResult
    func gzip(_ name: String) throws -> URL {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "gzip -n -c \"$0\" > \"$0.gz\"", url(name).path]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "gzip failed")
        return url(name + ".gz")
    }

    /// Writes `NAME.xcdatamodel` here, an Xcode model of the `entities` given (`<entity>`
    /// elements, as Xcode writes them), for a job's `model: NAME.xcdatamodel`.
    @discardableResult
    func xcodeModel(_ name: String, _ entities: String) throws -> URL {
        let bundle = url("\(name).xcdatamodel")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try write("\(name).xcdatamodel/contents", """
            <?xml version="1.0"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            \(entities)
            </model>
            """)
        return bundle
    }

    /// Writes a job: `model` and `store` are filled in (the sample Catalog model, `catalog.sqlite`)
    /// unless the text gives them.
    @discardableResult
    func job(_ yaml: String, named name: String = "job.yaml") throws -> URL {
        var text = "kind: import\n"
        if !yaml.contains("\nmodel:") && !yaml.hasPrefix("model:") { text += "model: \(Self.catalogModel.path)\n" }
        if !yaml.contains("\nstore:") && !yaml.hasPrefix("store:") { text += "store: { path: catalog.sqlite }\n" }
        text += yaml
        // Last, so line numbers in the job stay as the test wrote them.
        if let writer = Self.writer, !yaml.contains("writer:") { text += (text.hasSuffix("\n") ? "" : "\n") + "writer: \(writer)\n" }
        return try write(name, text)
    }

    /// Runs `lade ARGUMENTS` in this folder and waits for it.
    func lade(_ arguments: [String]) throws -> LadeProcess.Result {
        try LadeProcess.run(arguments, in: directory)
    }

    /// `lade run JOB --report NAME`, waiting; returns the result and the report (nil when none was written).
    func run(_ job: String = "job.yaml", _ extra: [String] = [], report: String = "report.json") throws -> (result: LadeProcess.Result, report: [String: Any]?) {
        try? FileManager.default.removeItem(at: url(report))
        let result = try lade(["run", job, "--report", report] + extra)
        return (result, try self.report(report))
    }

    func report(_ name: String = "report.json") throws -> [String: Any]? {
        guard let data = try? Data(contentsOf: url(name)) else { return nil }
        return try JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    /// The rejects file's objects, in file order.
    func rejectedRows(_ name: String = "rejects.ndjson") throws -> [[String: Any]] {
        guard let text = try? String(contentsOf: url(name), encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }
}

/// Runs each test of a suite twice: once as its jobs say (`writer: auto`, so batch inserts
/// wherever a job allows them) and once with `writer: objects`, so both of `lade run`'s writers
/// meet every expectation.
struct EachWriter: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        guard !test.isSuite else { return try await function() }
        try await function()
        try await ImportSandbox.$writer.withValue("objects") { try await function() }
    }
}

extension Trait where Self == EachWriter {
    static var eachWriter: EachWriter { EachWriter() }
}

/// Reads a store a `lade` child wrote, after it has ended: raw SQLite for whole-store
/// comparisons and checks, Lade's own stack for typed values.
enum StoreReading {
    /// Every table's rows, each row one line of text, in primary key (or rowid) order.
    static func tables(_ store: URL, excluding: Set<String> = []) throws -> [String: [String]] {
        let connection = try SQLiteConnection(path: store.path, mode: .readOnly)
        var result: [String: [String]] = [:]
        for table in try connection.tableNames() where !excluding.contains(table) {
            let rows = try connection.rows("SELECT * FROM \"\(table)\" ORDER BY rowid")
            result[table] = rows.map { $0.map(describe).joined(separator: " | ") }
        }
        return result
    }

    static func describe(_ value: SQLiteValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer(let number): "i\(number)"
        case .real(let number): "r\(number)"
        case .text(let text): "t'\(text)'"
        case .blob(let data): "b\(data.base64EncodedString())"
        }
    }

    static func integrityCheck(_ store: URL) throws -> String {
        let connection = try SQLiteConnection(path: store.path, mode: .readOnly)
        return try connection.rows("PRAGMA integrity_check").map { $0.map(describe).joined() }.joined(separator: "\n")
    }

    /// The first column of every row of a query, as integers or text.
    static func column(_ store: URL, _ sql: String) throws -> [SQLiteValue] {
        try SQLiteConnection(path: store.path, mode: .readOnly).rows(sql).map { $0[0] }
    }

    static func integer(_ store: URL, _ sql: String) throws -> Int64 {
        guard case .integer(let number)? = try column(store, sql).first else { throw StoreReadingError("not one integer: \(sql)") }
        return number
    }

    /// The import checkpoint `lade run` keeps in the store's metadata for one entity and source.
    static func checkpoint(_ store: URL, entity: String, source: URL) throws -> [String: PropertyListValue]? {
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: store)
        let key = "lade.import:\(entity):\(source.standardizedFileURL.path)"
        guard case .dictionary(let checkpoint)? = metadata[key] else { return nil }
        return checkpoint
    }

    /// Opens the store (of any type, detected) read-only with `model` and hands a
    /// private-queue context to `body`, on its queue.
    static func read<T>(_ store: URL, model: URL = ImportSandbox.catalogModel, _ body: (ManagedObjectContext) throws -> T) throws -> T {
        let model = try ManagedObjectModel(contentsOf: model)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(type: nil, at: store, readOnly: true)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return try context.performAndWait { try body(context) }
    }

    /// Every object of an entity, sorted by `key`.
    static func objects(_ context: ManagedObjectContext, _ entity: String, sortedBy key: String) throws -> [ManagedObject] {
        var request = FetchRequest(entityName: entity, sortDescriptors: [FetchSortDescriptor(key)])
        request.returnsObjectsAsFaults = false
        return try context.fetch(request)
    }
}

struct StoreReadingError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension PropertyListValue {
    var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
    var boolean: Bool? { if case .bool(let value) = self { value } else { nil } }
}

/// A generated import for the long-running tests: `count` products, sku `G-0000000`…, stock
/// the row's index, 50 categories (created by the job); rows in `bad` have a price that is not a number.
enum GeneratedProducts {
    static func sku(_ index: Int) -> String { "G-\(String(format: "%07d", index))" }

    static func csv(_ count: Int, bad: Set<Int> = []) -> String {
        var text = "sku,name,price,stock,category\n"
        text.reserveCapacity(count * 48)
        for index in 0..<count {
            let price = bad.contains(index) ? "n/a" : "\(index % 1000).\(index % 100)"
            text += "\(sku(index)),\"Generated, \(index)\",\(price),\(index),C\(index % 50)\n"
        }
        return text
    }

    /// The same as a JSON array, one element per line from line 2.
    static func jsonArray(_ count: Int) -> String {
        var text = "[\n"
        text.reserveCapacity(count * 96)
        for index in 0..<count {
            text += "{\"sku\": \"\(sku(index))\", \"name\": \"Generated, \(index)\", \"price\": \(index % 1000).\(index % 100), \"stock\": \(index), \"category\": \"C\(index % 50)\"}"
            text += index == count - 1 ? "\n]\n" : ",\n"
        }
        return text
    }

    static func job(source: String = "products.csv", batchSize: Int = 250, onError: String = "{ policy: abort }") -> String {
        """
        source: \(source)
        entity: Product
        key: sku
        relationships:
          category: { from: category, match: name, create: true }
        batch: { size: \(batchSize), commitEvery: 2, resetEvery: 4 }
        onError: \(onError)

        """
    }

    /// Every generated sku but `missing` exactly once, with its own stock; 50 categories; integrity check clean.
    static func expectEveryRowOnce(_ store: URL, count: Int, except missing: Set<Int> = [], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let rows = try SQLiteConnection(path: store.path, mode: .readOnly).rows("SELECT ZSKU, ZSTOCK FROM ZPRODUCT ORDER BY ZSKU")
        let expected = (0..<count).filter { !missing.contains($0) }
        #expect(rows.count == expected.count, "rows in the store", sourceLocation: sourceLocation)
        var wrong = 0
        for (row, index) in zip(rows, expected) where row != [.text(sku(index)), .integer(Int64(index))] {
            wrong += 1
            if wrong <= 3 { Issue.record("row \(index): \(row)", sourceLocation: sourceLocation) }
        }
        #expect(wrong == 0, "\(wrong) rows differ from the source", sourceLocation: sourceLocation)
        #expect(try StoreReading.integer(store, "SELECT COUNT(*) FROM ZCATEGORY") == 50, sourceLocation: sourceLocation)
        #expect(try StoreReading.integrityCheck(store) == "t'ok'", sourceLocation: sourceLocation)
    }
}

/// Rows of a generated source, the same in every format: text fields a CSV quotes, typed JSON.
enum SourceText {
    /// A CSV field: quoted when it holds a comma, quote or line break (quotes doubled).
    static func csv(_ field: String) -> String {
        guard field.utf8.contains(where: { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }) else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A JSON string literal.
    static func json(_ text: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
}

