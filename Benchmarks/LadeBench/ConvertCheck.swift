import Crypto
import Foundation
import Lade
import LadeTestSupport

/// `lade-bench convert` (`make test-slow`): a generated Catalog store of N objects with every
/// kind of relationship, converted by the real `lade` binary SQLite → XML → binary → SQLite and
/// SQLite → SQLite, each step timed with its peak RSS; the first and last stores compared
/// through `lade export`; `lade migrate` of a copy to a next model version, timed with its peak
/// RSS and checked; metadata read from the big stores and from empty ones; `lade meta set`
/// shown to change no table but Z_METADATA. Exits 1 when anything differs, or the SQLite to
/// SQLite copy, an export or the migration peaks at 128 MiB or more.
enum ConvertCheck {
    static let sqliteToSQLiteLimit: Int64 = 128 * 1_048_576

    static func run(objects: Int, lade: String, work: URL, modelPath: String) throws -> Bool {
        let model = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: modelPath))
        let directory = work.appendingPathComponent("convert-\(objects)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let original = directory.appendingPathComponent("original.sqlite")
        if !FileManager.default.fileExists(atPath: original.path) {
            let started = Date()
            let partial = directory.appendingPathComponent("generating.sqlite")
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: partial.path + suffix) }
            let counts = try generate(objects: objects, at: partial, model: model)
            try FileManager.default.moveItem(at: partial, to: original)
            print("generated \(original.path): \(counts) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        }
        let log = directory.appendingPathComponent("convert.log")
        try? FileManager.default.removeItem(at: log)
        var ok = true

        // Conversions.
        struct Step { let label: String; let source: String; let destination: String }
        let steps = [
            Step(label: "SQLite → XML", source: "original.sqlite", destination: "a.xml"),
            Step(label: "XML → binary", source: "a.xml", destination: "b.binary"),
            Step(label: "binary → SQLite", source: "b.binary", destination: "c.sqlite"),
            Step(label: "SQLite → SQLite", source: "original.sqlite", destination: "d.sqlite"),
        ]
        print("\n| step | wall s | peak RSS MiB | file MiB |")
        print("|---|---:|---:|---:|")
        for step in steps {
            let destination = directory.appendingPathComponent(step.destination)
            for suffix in ["", "-wal", "-shm", ".lade-lock"] { try? FileManager.default.removeItem(atPath: destination.path + suffix) }
            let measured = measure([lade, "convert", directory.appendingPathComponent(step.source).path, destination.path, "--model", modelPath], log: log)
            let size = Double((try? FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int) ?? 0) / 1_048_576
            print(String(format: "| %@ | %.1f | %.1f | %.1f |", step.label, measured.seconds, Double(measured.peakBytes) / 1_048_576, size))
            if step.label == "SQLite → SQLite" && measured.peakBytes >= sqliteToSQLiteLimit {
                print("FAIL: SQLite → SQLite peaked at \(measured.peakBytes / 1_048_576) MiB, not under 128 MiB")
                ok = false
            }
        }

        // Exports compared.
        print("")
        var exports: [String: URL] = [:]
        for name in ["original.sqlite", "c.sqlite", "d.sqlite"] {
            let out = directory.appendingPathComponent("export-\(name)")
            try? FileManager.default.removeItem(at: out)
            let measured = measure([lade, "export", directory.appendingPathComponent(name).path, "--model", modelPath, "--format", "ndjson", "--out", out.path], log: log)
            print(String(format: "lade export %@: %.1f s, peak RSS %.1f MiB", name, measured.seconds, Double(measured.peakBytes) / 1_048_576))
            if measured.peakBytes >= sqliteToSQLiteLimit {
                print("FAIL: lade export of \(name) peaked at \(measured.peakBytes / 1_048_576) MiB, not under 128 MiB")
                ok = false
            }
            exports[name] = out
        }
        let entities = model.entities.filter { !$0.isAbstract }.map(\.name)
        let reference = try canonicalExport(exports["original.sqlite"]!, entities: entities)
        for name in ["c.sqlite", "d.sqlite"] {
            let other = try canonicalExport(exports[name]!, entities: entities)
            if other == reference {
                print("export of \(name) equals the original's: \(reference.lines) objects (digest \(reference.digest.prefix(16)))")
            } else {
                print("FAIL: export of \(name) differs from the original's (\(other.lines) vs \(reference.lines) objects)")
                ok = false
            }
        }

        // Metadata without a stack: the big stores against empty ones.
        print("\n| metadata read (median of 21) | big store ms | empty store ms |")
        print("|---|---:|---:|")
        for (name, type) in [("original.sqlite", PersistentStoreCoordinator.StoreType.sqlite), ("a.xml", .xml), ("b.binary", .binary)] {
            let empty = directory.appendingPathComponent("empty-\(name)")
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: empty.path + suffix) }
            switch type {
            case .sqlite: try SQLiteStore.create(at: empty, model: model)
            case .xml: try XMLStore.create(at: empty, model: model)
            default: try BinaryStore.create(at: empty, model: model)
            }
            let big = try medianMilliseconds { _ = try PersistentStoreCoordinator.metadataForPersistentStore(at: directory.appendingPathComponent(name)) }
            let small = try medianMilliseconds { _ = try PersistentStoreCoordinator.metadataForPersistentStore(at: empty) }
            print(String(format: "| %@ (%d objects) | %.3f | %.3f |", name, reference.lines, big, small))
        }

        // lade migrate in place, beside the SQLite → SQLite copy: a second version of the model
        // adds an attribute with a default (every table is rebuilt), on a copy of the store.
        if !(try migrate(directory: directory, lade: lade, modelPath: modelPath, log: log, objects: reference.lines)) { ok = false }

        // meta set on SQLite touches Z_METADATA only.
        let target = directory.appendingPathComponent("d.sqlite")
        let before = try tableDigests(target)
        let measured = measure([lade, "meta", "set", target.path, "bench.note=checked \(Date())"], log: log)
        let after = try tableDigests(target)
        let changed = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
        print(String(format: "\nlade meta set on %@: %.2f s; tables changed: %@", target.lastPathComponent, measured.seconds, changed.joined(separator: ", ")))
        if changed != ["Z_METADATA"] {
            print("FAIL: lade meta set changed \(changed), not Z_METADATA alone")
            ok = false
        }
        print(ok ? "\nconvert check passed" : "\nconvert check FAILED")
        return ok
    }

    // MARK: Migrating

    /// A bundle of two versions (the Catalog model, and the same with `Product.rating`, an
    /// Integer 16 defaulting to 3), `lade migrate` of a copy of the store from the first to the
    /// second, timed with its peak RSS, then `lade check`ed and counted.
    static func migrate(directory: URL, lade: String, modelPath: String, log: URL, objects: Int) throws -> Bool {
        // The bundle's current version (the store's), and a next one.
        let current = try String(contentsOf: URL(fileURLWithPath: modelPath).appendingPathComponent(".xccurrentversion"), encoding: .utf8)
        guard let name = current.split(separator: "<string>").last?.split(separator: "<").first.map(String.init) else {
            print("FAIL: no current version in \(modelPath)")
            return false
        }
        let text = try String(contentsOf: URL(fileURLWithPath: modelPath).appendingPathComponent("\(name)/contents"), encoding: .utf8)
        let bundle = directory.appendingPathComponent("Catalog-versions.xcdatamodeld")
        try? FileManager.default.removeItem(at: bundle)
        for (version, body) in [("Catalog", text), ("Catalog 2", text.replacingOccurrences(
            of: "<attribute name=\"sku\"", with: "<attribute name=\"rating\" attributeType=\"Integer 16\" defaultValueString=\"3\" usesScalarValueType=\"YES\"/>\n        <attribute name=\"sku\""))] {
            let folder = bundle.appendingPathComponent("\(version).xcdatamodel")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try body.write(to: folder.appendingPathComponent("contents"), atomically: true, encoding: .utf8)
        }
        try """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>Catalog 2.xcdatamodel</string></dict></plist>
            """.write(to: bundle.appendingPathComponent(".xccurrentversion"), atomically: true, encoding: .utf8)
        let store = directory.appendingPathComponent("m.sqlite")
        for suffix in ["", "-wal", "-shm", ".lade-lock"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
        try FileManager.default.copyItem(at: directory.appendingPathComponent("d.sqlite"), to: store)
        let measured = measure([lade, "migrate", store.path, "--model", bundle.path, "--from", "Catalog"], log: log)
        let check = measure([lade, "check", store.path, "--model", bundle.path], log: log)
        let connection = try SQLiteConnection(path: store.path, mode: .readOnly)
        let rated = try connection.rows("SELECT COUNT(*) FROM ZPRODUCT WHERE ZRATING = 3").first?.first
        let products = try connection.rows("SELECT COUNT(*) FROM ZPRODUCT").first?.first
        print(String(format: "\nlade migrate (Product.rating added, every table rebuilt) of %d objects: %.1f s, peak RSS %.1f MiB; lade check %.1f s",
                     objects, measured.seconds, Double(measured.peakBytes) / 1_048_576, check.seconds))
        var ok = true
        if measured.peakBytes >= sqliteToSQLiteLimit {
            print("FAIL: lade migrate peaked at \(measured.peakBytes / 1_048_576) MiB, not under 128 MiB")
            ok = false
        }
        if rated == nil || rated != products {
            print("FAIL: after the migration \(String(describing: rated)) of \(String(describing: products)) products have the new attribute's default")
            ok = false
        }

        // The same step by a mapping model (every entity mapped by name, every value by its
        // generated expression), on another copy: the store rebuilt beside itself. Its objects
        // must equal the lightweight migration's, through lade export.
        let source = try ManagedObjectModel(contentsOf: bundle, version: "Catalog")
        let destination = try ManagedObjectModel(contentsOf: bundle, version: "Catalog 2")
        let mappingURL = directory.appendingPathComponent("Catalog to Catalog 2.xcmappingmodel")
        try? FileManager.default.removeItem(at: mappingURL)
        try MappingDocument.sameNames(bundleName: "Catalog-versions", from: "Catalog", to: "Catalog 2", source: source, destination: destination).write(to: mappingURL)
        let mapped = directory.appendingPathComponent("mapped.sqlite")
        for suffix in ["", "-wal", "-shm", ".lade-lock"] { try? FileManager.default.removeItem(atPath: mapped.path + suffix) }
        try FileManager.default.copyItem(at: directory.appendingPathComponent("d.sqlite"), to: mapped)
        let byMapping = measure([lade, "migrate", mapped.path, "--model", bundle.path, "--from", "Catalog", "--mapping", mappingURL.path], log: log)
        let mappedCheck = measure([lade, "check", mapped.path, "--model", bundle.path], log: log)
        print(String(format: "lade migrate --mapping (every object through its entity mapping, the store rebuilt beside it) of %d objects: %.1f s, peak RSS %.1f MiB; lade check %.1f s",
                     objects, byMapping.seconds, Double(byMapping.peakBytes) / 1_048_576, mappedCheck.seconds))
        if byMapping.peakBytes >= sqliteToSQLiteLimit {
            print("FAIL: lade migrate --mapping peaked at \(byMapping.peakBytes / 1_048_576) MiB, not under 128 MiB")
            ok = false
        }
        var exports: [URL] = []
        for name in ["m.sqlite", "mapped.sqlite"] {
            let out = directory.appendingPathComponent("export-\(name)")
            try? FileManager.default.removeItem(at: out)
            _ = measure([lade, "export", directory.appendingPathComponent(name).path, "--model", bundle.path, "--format", "ndjson", "--out", out.path], log: log)
            exports.append(out)
        }
        let entities = destination.entities.filter { !$0.isAbstract }.map(\.name)
        let lightweight = try canonicalExport(exports[0], entities: entities), byMappingExport = try canonicalExport(exports[1], entities: entities)
        if lightweight == byMappingExport && lightweight.lines == objects {
            print("export after the mapping migration equals the lightweight migration's: \(lightweight.lines) objects")
        } else {
            print("FAIL: export after the mapping migration differs from the lightweight migration's (\(byMappingExport.lines) vs \(lightweight.lines) objects)")
            ok = false
        }
        return ok
    }

    // MARK: Generating

    /// A Catalog store: categories in a tree, suppliers, products (each with a category, a
    /// supplier and two suppliers in the many-to-many `suppliers`), and images and videos in
    /// each product's ordered `media`, in reverse order of their keys.
    static func generate(objects: Int, at url: URL, model: ManagedObjectModel) throws -> String {
        let store = try SQLiteStore.create(at: url, model: model)
        let categories = max(4, objects / 1000), suppliers = max(4, objects / 1000)
        let media = objects * 3 / 10
        let products = max(1, objects - categories - suppliers - media)
        var random = Random(state: 0xC0DE_2026)
        let batch = 10_000

        func insert(_ entity: String, count: Int, _ values: (Int, inout Random) -> ([String: AttributeValue], [String: ManagedObjectID])) throws -> [ManagedObjectID] {
            var all: [ManagedObjectID] = []
            var made = 0
            let layout = model.layout(of: entity)!
            while made < count {
                let ids = try store.newObjectIDs(for: entity, count: min(batch, count - made))
                var request = StoreSaveRequest()
                for (offset, id) in ids.enumerated() {
                    let (attributes, toOne) = values(made + offset, &random)
                    request.inserted.append(.init(objectID: id, positional: .init(
                        layout: layout, values: layout.values(from: attributes), toOneIDs: layout.toOneSlots(from: toOne),
                        changedAttributes: nil, changedToOne: nil)))
                }
                try store.save(request)
                all += ids
                made += ids.count
            }
            return all
        }

        var categoryIDs: [ManagedObjectID] = []
        categoryIDs = try insert("Category", count: categories) { index, _ in
            (["name": .string("Category \(index)"), "sortOrder": .integer(Int64(index % 100))], [:])
        }
        // A tree: each category after the first ten has a parent among the earlier ones.
        var request = StoreSaveRequest()
        for index in 10..<categoryIDs.count {
            request.updated.append(.init(objectID: categoryIDs[index], attributes: [:], toOne: ["parent": categoryIDs[index / 10]]))
        }
        try store.save(request)
        let supplierIDs = try insert("Supplier", count: suppliers) { index, random in
            (["code": .string(String(format: "SUP-%05d", index)), "name": .string("Supplier \(index)"),
              "email": random.below(3) == 0 ? .string("s\(index)@example.com") : nil].compactMapValues { $0 }, [:])
        }
        let reference = Date(timeIntervalSinceReferenceDate: 700_000_000)
        let productIDs = try insert("Product", count: products) { index, random in
            var attributes: [String: AttributeValue] = [
                "sku": .string(String(format: "SKU-%08d", index)),
                "name": .string("Product \(index) \(["alpha", "Grüße", "日本", "café"][index % 4])"),
                "price": .decimal(Decimal(string: "\(random.below(100_000)).\(String(format: "%02d", random.below(100)))")!),
                "stock": .integer(Int64(random.below(10_000))),
                "active": .bool(random.below(4) != 0),
                "createdAt": .date(reference.addingTimeInterval(Double(random.below(100_000_000)) + Double(random.below(1000)) / 1000)),
                "id": .uuid(UUID(uuidString: String(format: "00000000-0000-4000-8000-%012x", index))!),
            ]
            if random.below(2) == 0 { attributes["details"] = .string("Details of product \(index), \"quoted\", line\nbreak") }
            if random.below(5) == 0 { attributes["weight"] = .double(Double(random.below(1_000_000)) / 7) }
            if random.below(20) == 0 { attributes["thumbnail"] = .binary(Data((0..<16).map { UInt8(truncatingIfNeeded: $0 &* index) })) }
            return (attributes, ["category": categoryIDs[random.below(categoryIDs.count)], "supplier": supplierIDs[random.below(supplierIDs.count)]])
        }
        for start in stride(from: 0, to: productIDs.count, by: batch) {
            var request = StoreSaveRequest()
            for index in start..<min(start + batch, productIDs.count) {
                let first = random.below(supplierIDs.count)
                request.links.append(.init(source: productIDs[index], relationship: "suppliers",
                                           added: [supplierIDs[first], supplierIDs[(first + 1 + random.below(supplierIDs.count - 1)) % supplierIDs.count]], removed: []))
            }
            try store.save(request)
        }
        var owned: [[ManagedObjectID]] = Array(repeating: [], count: productIDs.count)
        for kind in ["Image", "Video"] {
            let count = kind == "Image" ? media - media / 3 : media / 3
            let ids = try insert(kind, count: count) { index, random in
                var attributes: [String: AttributeValue] = ["url": .uri(URL(string: "https://example.com/\(kind.lowercased())/\(index)")!)]
                if kind == "Image" {
                    attributes["width"] = .integer(Int64(1 + random.below(4000)))
                    attributes["height"] = .integer(Int64(1 + random.below(4000)))
                } else {
                    attributes["durationSeconds"] = .double(Double(random.below(36_000)) / 10)
                }
                if random.below(3) == 0 { attributes["caption"] = .string("\(kind) \(index)") }
                return (attributes, [:])
            }
            for (index, id) in ids.enumerated() { owned[(index * 7 + (kind == "Video" ? 3 : 0)) % productIDs.count].append(id) }
        }
        for start in stride(from: 0, to: productIDs.count, by: batch) {
            var request = StoreSaveRequest()
            for index in start..<min(start + batch, productIDs.count) where !owned[index].isEmpty {
                for id in owned[index] { request.updated.append(.init(objectID: id, attributes: [:], toOne: ["product": productIDs[index]])) }
                request.orders.append(.init(owner: productIDs[index], relationship: "media", destinations: owned[index].reversed()))
            }
            try store.save(request)
        }
        return "\(categories) categories, \(suppliers) suppliers, \(products) products, \(media) media (\(categories + suppliers + products + media) objects)"
    }

    // MARK: Comparing exports

    struct Canonical: Equatable {
        var lines = 0
        var digest = ""
    }

    /// An export's NDJSON files in entity order, each line's `_uri` dropped and every object
    /// URI replaced by "Entity#n" (the object's place in its entity's file: exports list
    /// objects in key order, which every conversion keeps), hashed.
    static func canonicalExport(_ directory: URL, entities: [String]) throws -> Canonical {
        var names: [String: String] = [:]
        for entity in entities {
            var index = 0
            try eachLine(directory.appendingPathComponent("\(entity).ndjson")) { line in
                guard let uri = firstURI(in: line) else { return }
                names[String(uri)] = "\(entity)#\(index)"
                index += 1
            }
        }
        var hasher = SHA256()
        var result = Canonical()
        for entity in entities {
            try eachLine(directory.appendingPathComponent("\(entity).ndjson")) { line in
                var text = Substring(line)
                // Drop the object's own "_uri" (the first field).
                if let uri = firstURI(in: line), let range = line.range(of: "\"_uri\":\"\(uri)\",") { text = line[..<range.lowerBound] + line[range.upperBound...] }
                var out = ""
                while let start = text.range(of: "x-coredata://") {
                    out += text[..<start.lowerBound]
                    let rest = text[start.lowerBound...]
                    let end = rest.firstIndex(of: "\"") ?? rest.endIndex
                    out += names[String(rest[..<end])] ?? "UNKNOWN(\(rest[..<end]))"
                    text = rest[end...]
                }
                out += text
                hasher.update(data: Data((entity + ":" + out + "\n").utf8))
                result.lines += 1
            }
        }
        result.digest = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        return result
    }

    static func firstURI(in line: String) -> Substring? {
        guard let start = line.range(of: "\"_uri\":\"") else { return nil }
        let rest = line[start.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return rest[..<end]
    }

    static func eachLine(_ url: URL, _ body: (String) throws -> Void) throws {
        guard let file = fopen(url.path, "r") else { throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: url.path]) }
        defer { fclose(file) }
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(buffer) }
        while true {
            let length = getline(&buffer, &capacity, file)
            guard length > 0, let buffer else { return }
            var line = String(cString: buffer)
            if line.hasSuffix("\n") { line.removeLast() }
            try body(line)
        }
    }

    // MARK: Measuring

    static func medianMilliseconds(_ body: () throws -> Void) throws -> Double {
        var times: [Double] = []
        for _ in 0..<21 {
            let start = DispatchTime.now()
            try body()
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6)
        }
        return median(times)
    }

    /// A digest of every table's rows, by table name.
    static func tableDigests(_ url: URL) throws -> [String: String] {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        var result: [String: String] = [:]
        for table in try connection.tableNames().sorted() {
            var hasher = SHA256()
            let statement = try connection.prepare("SELECT * FROM \(table) ORDER BY 1")
            while try statement.step() {
                let row = (0..<statement.columnCount).map { statement.value(at: $0) }
                hasher.update(data: Data("\(row)\n".utf8))
            }
            result[table] = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        }
        return result
    }
}
