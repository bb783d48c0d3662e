import Foundation
@_exported import LadeTestSupport
@_exported import LadeTestTraits
import Lade
@testable import LadePipeline

/// Paths and builders the pipeline tests share.
enum PipelineFixtures {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let catalog = root.appendingPathComponent("samples/Catalog.xcdatamodeld")

    /// `products.csv` in `directory`: `rows` products (sku, name, price, stock, category), keys
    /// `SKU-0`… in order, 13 categories.
    static func writeProductsCSV(rows: Int, in directory: URL) throws {
        var csv = "sku,name,price,stock,category\n"
        for index in 0..<rows { csv += "SKU-\(index),Product \(index),\(index % 100).5,\(index % 7),Cat \(index % 13)\n" }
        try Data(csv.utf8).write(to: directory.appendingPathComponent("products.csv"))
    }

    /// The products CSV of `rows` rows written in `directory`, and a job importing it into
    /// `catalog.sqlite` there by `sku`, its categories created by name; `options` are more
    /// lines of the job (writer, batch).
    static func productsJob(rows: Int, in directory: URL, options: String) throws -> Job {
        try writeProductsCSV(rows: rows, in: directory)
        return try job("""
            kind: import
            model: \(catalog.path)
            store: { path: catalog.sqlite }
            source: products.csv
            entity: Product
            key: [sku]
            relationships:
              category: { from: category, match: name, create: true }
            \(options)
            """, directory: directory)
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("lade-pipeline-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A job read from YAML text, with paths relative to `directory` (default: the repository's jobs/).
    static func job(_ yaml: String, directory: URL = root.appendingPathComponent("jobs")) throws -> Job {
        try Job(parsing: yaml, file: "test.yaml", directory: directory)
    }

    static func catalogModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(contentsOf: catalog)
    }

    /// A store of `type` at `url` written with `version` of samples/Catalog.xcdatamodeld
    /// ("Catalog", or the current "Catalog 2"), holding the categories `names`.
    static func catalogStore(_ type: PersistentStoreCoordinator.StoreType, at url: URL, version: String, categories names: [String] = ["Tools", "Toys"]) throws {
        let context = try privateContext(model: try ManagedObjectModel(contentsOf: catalog, version: version), store: url, type: type)
        try context.performAndWait {
            for name in names { try context.insertObject(forEntityName: "Category").setValue(name, forKey: "name") }
            try context.save()
        }
    }
}

/// Notes a runner gave, in order.
final class Notes: @unchecked Sendable {
    private let lock = NSLock()
    private var notes: [String] = []
    var all: [String] { lock.withLock { notes } }
    var add: @Sendable (String) -> Void { { note in self.lock.withLock { self.notes.append(note) } } }
}
