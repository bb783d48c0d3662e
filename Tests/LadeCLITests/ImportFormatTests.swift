import Foundation
import Lade
import Testing

/// `lade run` on each source format, plain and gzipped, into a fresh store; the store read
/// back and compared field by field with what the source says.
@Suite("lade run: every format into a fresh store, read back field by field", .eachWriter)
struct ImportFormatTests {
    /// One product as the source gives it (text as a CSV holds it) and as the store must hold it.
    struct Product {
        var sku: String
        var name: String
        var price: String
        var stock: String
        var active: String
        var createdAt: String
        var updatedAt: String
        var description: String
        var weight: String
        var id: String
        var thumbnail: String
        var category: String

        var expected: Expected
    }

    struct Expected {
        var price: Decimal
        var stock: Int64
        var active: Bool
        /// Seconds since 1970, worked out by hand from the ISO 8601 text.
        var createdAt: Double
        var updatedAt: Double?
        var details: String?
        var weight: Double?
        var id: UUID?
        var thumbnail: Data?
    }

    // 2024-03-01T00:00:00Z is 1_709_251_200 s after 1970.
    static let march1: Double = 1_709_251_200

    static let products: [Product] = [
        Product(sku: "AB-001", name: #"Quiet drill, "premium" edition"#, price: "19.99", stock: "0", active: "true",
                createdAt: "2024-03-01", updatedAt: "NA", description: "", weight: "2.5",
                id: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", thumbnail: "aGVsbG8=", category: "Tools",
                expected: Expected(price: Decimal(string: "19.99")!, stock: 0, active: true, createdAt: march1, updatedAt: nil,
                                   details: nil, weight: 2.5, id: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"), thumbnail: Data("hello".utf8))),
        Product(sku: "AB-002", name: "Ünïcødé 神戸 – ✓ 🚀", price: "0.1", stock: "2147483647", active: "false",
                createdAt: "2024-03-01T12:30", updatedAt: "2024-03-01T12:30:15Z", description: "Two\nlines, with \"quotes\"", weight: "0",
                id: "e621e1f8-c36c-495a-93fc-0c247a3e6e50", thumbnail: "NA", category: "Décor",
                expected: Expected(price: Decimal(string: "0.1")!, stock: 2_147_483_647, active: false, createdAt: march1 + 45_000,
                                   updatedAt: march1 + 45_015, details: "Two\nlines, with \"quotes\"", weight: 0,
                                   id: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E50"), thumbnail: nil)),
        Product(sku: "AB-003", name: "  padded  ", price: "1234567.89", stock: "42", active: "yes",
                createdAt: "2024-03-01T12:30:15.250+01:00", updatedAt: "2024-02-29T23:59:59.999-05:30", description: "NA", weight: "0.001",
                id: "NA", thumbnail: "NA", category: "Tools",
                expected: Expected(price: Decimal(string: "1234567.89")!, stock: 42, active: true, createdAt: march1 + 45_015.25 - 3_600,
                                   updatedAt: march1 - 0.001 + 19_800, details: nil, weight: 0.001, id: nil, thumbnail: nil)),
        Product(sku: "AB-004", name: "Comma, separated, name", price: "99999999999.99", stock: "7", active: "0",
                createdAt: "2024-03-01T12:30:15+0100", updatedAt: "2024-03-01T12:30:15.5+01", description: "Tab\there; CRLF\r\nend", weight: "13.78",
                id: "NA", thumbnail: "AAECAwQ=", category: "NA",
                expected: Expected(price: Decimal(string: "99999999999.99")!, stock: 7, active: false, createdAt: march1 + 45_015 - 3_600,
                                   updatedAt: march1 + 45_015.5 - 3_600, details: "Tab\there; CRLF\r\nend", weight: 13.78, id: nil,
                                   thumbnail: Data([0, 1, 2, 3, 4]))),
        Product(sku: "AB-005", name: "Ölfilter", price: "100.50", stock: "1", active: "NO",
                createdAt: "2024-12-31T23:59:59.123Z", updatedAt: "NA", description: "plain", weight: "NA",
                id: "NA", thumbnail: "NA", category: "Décor",
                expected: Expected(price: Decimal(string: "100.5")!, stock: 1, active: false, createdAt: 1_735_689_599.123,
                                   updatedAt: nil, details: "plain", weight: nil, id: nil, thumbnail: nil)),
        Product(sku: "AB-006", name: "x", price: "0.000001", stock: "3", active: "Yes",
                createdAt: "2000-01-01T00:00:00-08:00", updatedAt: "NA", description: "  ", weight: "1e3",
                id: "NA", thumbnail: "NA", category: "Tools",
                expected: Expected(price: Decimal(string: "0.000001")!, stock: 3, active: true, createdAt: 946_684_800 + 28_800,
                                   updatedAt: nil, details: "  ", weight: 1000, id: nil, thumbnail: nil)),
    ]

    enum Format: String, CaseIterable, CustomTestStringConvertible {
        case csv, csvGzip = "csv.gz", ndjson, ndjsonGzip = "ndjson.gz", json, jsonGzip = "json.gz"
        var testDescription: String { rawValue }
        var base: String { rawValue.replacingOccurrences(of: ".gz", with: "") }
        var isGzipped: Bool { rawValue.hasSuffix(".gz") }
    }

    static func csvSource() -> String {
        var text = "sku,name,price,stock,active,created_at,updated_at,description,weight,id,thumbnail,category\r\n"
        for p in products {
            text += [p.sku, p.name, p.price, p.stock, p.active, p.createdAt, p.updatedAt, p.description, p.weight, p.id, p.thumbnail, p.category]
                .map(SourceText.csv).joined(separator: ",") + "\r\n"
        }
        return text
    }

    /// One JSON object per product, with JSON's own types where the source would have them:
    /// numbers, booleans and nulls typed, the price and weight nested.
    static func jsonObject(_ p: Product, index: Int) -> String {
        func string(_ text: String) -> String { SourceText.json(text) }
        // Alternate a typed JSON value and the same value as text, so both are read.
        let typed = index % 2 == 0
        let stock = typed ? p.stock : string(p.stock)
        let active: String = switch p.active.lowercased() {
        case "true", "yes", "1": typed ? "true" : string(p.active)
        default: typed ? "false" : string(p.active)
        }
        let weight = p.weight == "NA" ? (typed ? "null" : string("NA")) : (typed ? p.weight : string(p.weight))
        let updated = p.updatedAt == "NA" ? (typed ? "null" : string("NA")) : string(p.updatedAt)
        let price = typed ? p.price : string(p.price)
        let category = p.category == "NA" ? "null" : string(p.category)
        return """
            {"sku": \(string(p.sku)), "name": \(string(p.name)), "pricing": {"amount": \(price), "currency": "EUR"}, \
            "stock": \(stock), "active": \(active), "created_at": \(string(p.createdAt)), "updated_at": \(updated), \
            "description": \(string(p.description)), "specs": {"weight": {"kg": \(weight)}}, "id": \(string(p.id)), \
            "thumbnail": \(string(p.thumbnail)), "category": \(category)}
            """
    }

    static func job(_ format: Format) -> String {
        let file = "products.\(format.rawValue)"
        let json = format.base != "csv"
        return """
            source: { path: \(file), nulls: ["NA"] }
            entity: Product
            key: sku
            fields:
              sku: sku
              price: { from: \(json ? "pricing.amount" : "price") }
              createdAt: { from: created_at, date: iso8601 }
              details: { from: description, empty: null }
              weight: { from: \(json ? "specs.weight.kg" : "weight") }
            relationships:
              category: { from: category, match: name, create: true }
            batch: { size: 2, commitEvery: 1, resetEvery: 2 }

            """
    }

    @Test("each format, plain and gzipped, lands field by field as the source says", .slow, arguments: Format.allCases)
    func formatIntoFreshStore(_ format: Format) throws {
        let sandbox = try ImportSandbox()
        let name = "products.\(format.base)"
        switch format.base {
        case "csv": try sandbox.write(name, Self.csvSource())
        case "ndjson": try sandbox.write(name, Self.products.enumerated().map { Self.jsonObject($1, index: $0) }.joined(separator: "\n") + "\n")
        default: try sandbox.write(name, "[\n" + Self.products.enumerated().map { Self.jsonObject($1, index: $0) }.joined(separator: ",\n") + "\n]\n")
        }
        if format.isGzipped {
            try sandbox.gzip(name)
            try FileManager.default.removeItem(at: sandbox.url(name))
        }
        try sandbox.job(Self.job(format))

        let (result, report) = try sandbox.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        let counts = try #require(report)
        #expect(counts["status"] as? String == "completed")
        #expect(counts["rows"] as? Int == Self.products.count)
        #expect(counts["inserted"] as? Int == Self.products.count)
        #expect(counts["rejected"] as? Int == 0)
        #expect(counts["createdDestinations"] as? Int == 2)
        #expect(counts["batches"] as? Int == 3)

        try StoreReading.read(sandbox.store) { context in
            let stored = try StoreReading.objects(context, "Product", sortedBy: "sku")
            #expect(stored.map { $0.attributeValue(forKey: "sku") } == Self.products.map { .string($0.sku) })
            for (object, source) in zip(stored, Self.products) {
                Self.compare(object, source)
            }
            let categories = try StoreReading.objects(context, "Category", sortedBy: "name")
            #expect(categories.map { $0.attributeValue(forKey: "name") } == [.string("Décor"), .string("Tools")])
            #expect(categories.map { $0.attributeValue(forKey: "sortOrder") } == [.integer(0), .integer(0)], "the model's default")
        }
        #expect(try StoreReading.integrityCheck(sandbox.store) == "t'ok'")
    }

    static func compare(_ object: ManagedObject, _ source: Product, sourceLocation: SourceLocation = #_sourceLocation) {
        let e = source.expected
        let sku = source.sku
        func value(_ key: String) -> AttributeValue? { object.attributeValue(forKey: key) }
        #expect(value("name") == .string(source.name), "\(sku) name", sourceLocation: sourceLocation)
        #expect(value("price") == .decimal(e.price), "\(sku) price", sourceLocation: sourceLocation)
        #expect(value("stock") == .integer(e.stock), "\(sku) stock", sourceLocation: sourceLocation)
        #expect(value("active") == .bool(e.active), "\(sku) active", sourceLocation: sourceLocation)
        func seconds(_ value: AttributeValue?) -> Double? {
            if case .date(let date)? = value { date.timeIntervalSince1970 } else { nil }
        }
        let created = seconds(value("createdAt"))
        #expect(created.map { abs($0 - e.createdAt) < 1e-6 } == true, "\(sku) createdAt \(String(describing: created)) != \(e.createdAt)", sourceLocation: sourceLocation)
        let updated = seconds(value("updatedAt"))
        if let expected = e.updatedAt {
            #expect(updated.map { abs($0 - expected) < 1e-6 } == true, "\(sku) updatedAt \(String(describing: updated)) != \(expected)", sourceLocation: sourceLocation)
        } else {
            #expect(value("updatedAt") == nil, "\(sku) updatedAt", sourceLocation: sourceLocation)
        }
        #expect(value("details") == e.details.map { .string($0) }, "\(sku) details", sourceLocation: sourceLocation)
        #expect(value("weight") == e.weight.map { .double($0) }, "\(sku) weight", sourceLocation: sourceLocation)
        #expect(value("id") == e.id.map { .uuid($0) }, "\(sku) id", sourceLocation: sourceLocation)
        #expect(value("thumbnail") == e.thumbnail.map { .binary($0) }, "\(sku) thumbnail", sourceLocation: sourceLocation)
        let category = object.object(forKey: "category")?.attributeValue(forKey: "name")
        #expect(category == (source.category == "NA" ? nil : .string(source.category)), "\(sku) category", sourceLocation: sourceLocation)
    }

    @Test("URIs, 16-bit integers and a to-one matched by another entity's key, from CSV")
    func uriAndInteger16() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", "sku,name\nAB-001,Drill\nAB-002,Saw\n")
        try sandbox.write("categories.csv", "name,sort_order\nTools,3\nGarden,32767\n")
        try sandbox.write("images.csv", """
            url,caption,width,height,sku
            https://cdn.example/p/AB-001.png?size=2&x=%C3%BC,"Front, left",640,480,AB-001
            file:///srv/images/saw%20blade.jpg,NA,1,1,AB-002
            urn:isbn:0451450523,,NA,NA,AB-002

            """)
        try sandbox.job("source: products.csv\nentity: Product\nkey: sku\n", named: "products.yaml")
        try sandbox.job("source: categories.csv\nentity: Category\nkey: name\n", named: "categories.yaml")
        try sandbox.job("""
            source: { path: images.csv, nulls: ["", "NA"] }
            entity: Image
            relationships:
              product: { from: sku, match: sku, required: true }

            """, named: "images.yaml")
        for job in ["products.yaml", "categories.yaml", "images.yaml"] {
            let (result, _) = try sandbox.run(job)
            #expect(result.status == 0, "\(job): \(result.stderr)")
        }
        try StoreReading.read(sandbox.store) { context in
            let categories = try StoreReading.objects(context, "Category", sortedBy: "name")
            #expect(categories.map { $0.attributeValue(forKey: "sortOrder") } == [.integer(32767), .integer(3)])
            let images = try StoreReading.objects(context, "Image", sortedBy: "url")
            #expect(images.map { $0.attributeValue(forKey: "url") } == [
                .uri(URL(string: "file:///srv/images/saw%20blade.jpg")!),
                .uri(URL(string: "https://cdn.example/p/AB-001.png?size=2&x=%C3%BC")!),
                .uri(URL(string: "urn:isbn:0451450523")!),
            ])
            #expect(images.map { $0.attributeValue(forKey: "caption") } == [nil, .string("Front, left"), nil])
            #expect(images.map { $0.attributeValue(forKey: "width") } == [.integer(1), .integer(640), nil])
            #expect(images.map { $0.object(forKey: "product")?.attributeValue(forKey: "sku") } == [.string("AB-002"), .string("AB-001"), .string("AB-002")])
            let saw = try #require(try StoreReading.objects(context, "Product", sortedBy: "sku").last)
            #expect(saw.objects(forKey: "media").count == 2)
        }
        // A 16-bit integer out of range is rejected, not wrapped.
        try sandbox.write("categories.csv", "name,sort_order\nTools,32768\n")
        let (again, _) = try sandbox.run("categories.yaml")
        #expect(again.status == 1)
        #expect(again.stderr.contains("categories.csv:2:2: field 'sort_order'"), "\(again.stderr)")
    }

    @Test("CSV dialect options and standard input: a byte order mark, ';', no header with columns:, piped in twice")
    func dialectAndStandardInput() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.txt", Data([0xEF, 0xBB, 0xBF]) + Data("AB-001;\"Semi; colon\";1,5\r\nAB-002;Plain;2\r\n".utf8))
        try sandbox.job("""
            source: { path: "-", format: csv, delimiter: ";", header: false, columns: [sku, name, price_text] }
            entity: Product
            key: sku
            fields:
              details: price_text

            """)
        for run in 1...2 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "\"$0\" run job.yaml --report report.json < products.txt", LadeProcess.binary.path]
            process.currentDirectoryURL = sandbox.directory
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "run \(run)")
            let report = try #require(try sandbox.report())
            #expect(report["rows"] as? Int == 2, "standard input has no identity: read every time (run \(run))")
            #expect(report[run == 1 ? "inserted" : "unchanged"] as? Int == 2)
        }
        try StoreReading.read(sandbox.store) { context in
            let products = try StoreReading.objects(context, "Product", sortedBy: "sku")
            #expect(products.map { $0.attributeValue(forKey: "name") } == [.string("Semi; colon"), .string("Plain")])
            #expect(products.map { $0.attributeValue(forKey: "details") } == [.string("1,5"), .string("2")])
        }
    }

    @Test("dates as Unix seconds, milliseconds, and a pattern read in a named time zone")
    func dateFormats() throws {
        let sandbox = try ImportSandbox()
        try sandbox.write("products.csv", """
            sku,name,created,updated
            AB-001,Winter,1709251200.5,01.03.2024 12:30
            AB-002,Summer,-86400,01.07.2024 12:30

            """)
        try sandbox.write("products.ndjson", """
            {"sku": "AB-003", "name": "Millis", "created": 1709251200123}

            """)
        try sandbox.job("""
            source: products.csv
            entity: Product
            key: sku
            fields:
              createdAt: { from: created, date: unix }
              updatedAt: { from: updated, date: "dd.MM.yyyy HH:mm", timeZone: Europe/Berlin }

            """)
        try sandbox.job("""
            source: products.ndjson
            entity: Product
            key: sku
            fields:
              createdAt: { from: created, date: unix-ms }

            """, named: "millis.yaml")
        #expect(try sandbox.run().result.status == 0)
        #expect(try sandbox.run("millis.yaml").result.status == 0)
        try StoreReading.read(sandbox.store) { context in
            let products = try StoreReading.objects(context, "Product", sortedBy: "sku")
            func seconds(_ object: ManagedObject, _ key: String) -> Double? {
                if case .date(let date)? = object.attributeValue(forKey: key) { date.timeIntervalSince1970 } else { nil }
            }
            #expect(products.map { seconds($0, "createdAt") } == [Self.march1 + 0.5, -86_400, Self.march1 + 0.123])
            // Berlin is UTC+1 in March and UTC+2 (summer time) in July.
            #expect(products.map { seconds($0, "updatedAt") } == [Self.march1 + 41_400, 1_719_829_800, nil])
        }
    }

    @Test("decimals: SQLite stores keep 15 significant digits, and longer ones a double reads back as, and refuse the rest as rejected rows; XML and binary stores keep every digit", arguments: ["sqlite", "xml", "binary"])
    func longDecimals(type: String) throws {
        let sandbox = try ImportSandbox()
        let prices = ["1234567890.12345", "3.3333333332999993", "12345678901234567.89", "0.12345678901234567891"]
        try sandbox.write("products.csv", "sku,name,price\n" + prices.enumerated().map { "AB-00\($0.offset),n,\($0.element)\n" }.joined())
        let store = sandbox.directory.appendingPathComponent("catalog.\(type)")
        try sandbox.job("store: { type: \(type), path: \(store.path) }\nsource: products.csv\nentity: Product\nkey: sku\nonError: { policy: skip, rejects: rejects.ndjson }\n")
        let status = try sandbox.run().result.status
        let stored = try StoreReading.read(store) { context in
            try StoreReading.objects(context, "Product", sortedBy: "sku").map { $0.attributeValue(forKey: "price") }
        }
        #expect(stored.prefix(2) == [.decimal(Decimal(string: prices[0])!), .decimal(Decimal(string: prices[1])!)], "15 significant digits, and 17 that a double reads back as, survive")
        if type == "sqlite" {
            // Core Data's DECIMAL columns have NUMERIC affinity: SQLite holds a double there
            // (https://www.sqlite.org/datatype3.html), so decimals no double reads back as would
            // come back rounded: they are rejected rows, never rounded in silence.
            #expect(status == 2)
            #expect(stored.count == 2)
            let rejects = try sandbox.rejectedRows()
            #expect(rejects.map { $0["line"] as? Int } == [4, 5])
            #expect(rejects.allSatisfy { ($0["reason"] as? String)?.contains("and no double reads back as it; a SQLite store keeps") == true }, "\(rejects)")
        } else {
            #expect(status == 0)
            #expect(stored == prices.map { .decimal(Decimal(string: $0)!) })
        }
    }
}
