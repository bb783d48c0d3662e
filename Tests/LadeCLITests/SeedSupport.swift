import Crypto
import Foundation
import Lade

/// A folder laid out as the repository is (`jobs/`, `samples/` linked to the repository's,
/// `out/`), so jobs run here exactly as written in `jobs/`.
struct SeedWorkspace {
    let root: URL
    var jobs: URL { root.appendingPathComponent("jobs") }
    var out: URL { root.appendingPathComponent("out") }
    var data: URL { root.appendingPathComponent("data") }

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("lade-seed-\(UUID().uuidString)")
        for folder in ["jobs", "out", "data"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("samples"), withDestinationURL: LadeProcess.root.appendingPathComponent("samples"))
    }

    func remove() {
        try? FileManager.default.removeItem(at: root)
    }

    @discardableResult
    func job(_ name: String, _ text: String) throws -> String {
        let url = jobs.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    /// `count` categories (`Category 0001`, …) and `products` products spread over them, each
    /// with a sku, name, price, stock and its category by name.
    func generateCatalog(categories count: Int, products: Int) throws {
        var csv = "name,sortOrder\n"
        for index in 0..<count { csv += "Category \(String(format: "%04d", index)),\(index)\n" }
        try Data(csv.utf8).write(to: data.appendingPathComponent("categories.csv"))
        var lines = ""
        lines.reserveCapacity(products * 120)
        for index in 0..<products {
            let sku = "SKU-\(String(format: "%07d", index))"
            lines += #"{"sku": "\#(sku)", "name": "Generated product \#(index)", "price": "\#(index % 1000).\#(index % 100)", "stock": \#(index % 500), "category": "Category \#(String(format: "%04d", index % count))"}"# + "\n"
        }
        try Data(lines.utf8).write(to: data.appendingPathComponent("products.ndjson"))
    }

    /// A seed job over the generated catalog into `out/<store>`.
    func generatedJob(flag: String, store: String, type: String) -> String {
        """
        kind: seed
        flag: \(flag)
        model: ../samples/Catalog.xcdatamodeld
        store: { type: \(type), path: ../out/\(store) }
        steps:
          - source: { path: ../data/categories.csv }
            entity: Category
            key: [name]
          - source: { path: ../data/products.ndjson }
            entity: Product
            key: [sku]
            relationships:
              category: { from: category, match: name, required: true }
        """
    }
}

/// What a store holds, as digests: for SQLite every table's schema and rows (not the file's
/// bytes, which a checkpoint of the WAL may rearrange); for XML and binary stores the file.
/// The metadata as read without a stack, rendered with sorted keys.
struct StoreSnapshot: Equatable, CustomStringConvertible {
    var data: String
    var metadata: String

    var description: String { "data \(data.prefix(12)), metadata \(metadata.prefix(12))" }

    static func of(_ url: URL) throws -> StoreSnapshot {
        guard FileManager.default.fileExists(atPath: url.path) else { return StoreSnapshot(data: "absent", metadata: "absent") }
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
        let type = metadata[StoreMetadata.Key.storeType]?.stringValue
        let data = type == StoreMetadata.sqliteStoreType ? try tables(url) : digest(Data(try Data(contentsOf: url)))
        return StoreSnapshot(data: data, metadata: digest(Data(render(.dictionary(metadata)).utf8)))
    }

    static func tables(_ url: URL) throws -> String {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        var text = ""
        for entry in try connection.rows("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name") {
            text += entry.map(render).joined(separator: "|") + "\n"
            guard entry[0] == .text("table"), case .text(let name) = entry[1] else { continue }
            let rows = try connection.rows("SELECT * FROM \"\(name)\"").map { $0.map(render).joined(separator: "|") }
            text += rows.sorted().joined(separator: "\n") + "\n"
        }
        return digest(Data(text.utf8))
    }

    static func render(_ value: SQLiteValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer(let number): "i\(number)"
        case .real(let number): "r\(number.bitPattern)"
        case .text(let text): "t\(text.debugDescription)"
        case .blob(let data): "b\(data.base64EncodedString())"
        }
    }

    static func render(_ value: PropertyListValue) -> String {
        switch value {
        case .string(let text): "s\(text.debugDescription)"
        case .integer(let number): "i\(number)"
        case .real(let number): "r\(number.bitPattern)"
        case .bool(let flag): "b\(flag)"
        case .date(let date): "d\(date.timeIntervalSinceReferenceDate.bitPattern)"
        case .data(let data): "x\(data.base64EncodedString())"
        case .array(let items): "[" + items.map(render).joined(separator: ",") + "]"
        case .dictionary(let entries): "{" + entries.keys.sorted().map { "\($0.debugDescription):\(render(entries[$0]!))" }.joined(separator: ",") + "}"
        }
    }

    static func digest(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }
}

/// Counts of a seed store's objects, read with the stack (nil counts: no store).
enum SeedStoreContents {
    static func counts(_ url: URL, type: PersistentStoreCoordinator.StoreType) throws -> (categories: Int, products: Int)? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let model = try ManagedObjectModel(contentsOf: LadeProcess.root.appendingPathComponent("samples/Catalog.xcdatamodeld"))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        // Read-write, so that SQLite may recover its WAL after a kill; nothing is changed.
        let store = try coordinator.addPersistentStore(type: type, at: url)
        defer { coordinator.remove(store) }
        return (try store.count(StoreFetchRequest(entityName: "Category")), try store.count(StoreFetchRequest(entityName: "Product")))
    }
}

