import Foundation
import Testing
@testable import Lade

/// Damaged stores are never read silently: every kind of damage is found with its count and
/// first place, and reads refuse what they would otherwise skip or read as nil.
@Suite("Damaged stores")
struct StoreDamageTests {
    /// A store of 5 products in 2 categories, 2 suppliers linked to the first product.
    func filledStack() throws -> TestStack {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let tools = try TestStack.category("Tools", in: context)
            let garden = try TestStack.category("Garden", in: context)
            var products: [ManagedObject] = []
            for index in 1...5 {
                let product = try TestStack.product("SKU-\(index)", in: context)
                try product.setObject(index % 2 == 0 ? tools : garden, forKey: "category")
                products.append(product)
            }
            for code in ["ACME", "NORD"] {
                let supplier = try context.insertObject(forEntityName: "Supplier")
                try supplier.setValue(code, forKey: "code")
                try supplier.add(products[0], toKey: "products")
            }
            try context.save()
        }
        return stack
    }

    func write(_ stack: TestStack, _ statements: [String]) throws {
        let connection = try SQLiteConnection(path: stack.url.path, mode: .readWrite(create: false))
        for statement in statements { try connection.execute(statement) }
    }

    func store(_ stack: TestStack) throws -> SQLiteStore {
        try SQLiteStore(url: stack.url, model: stack.model, readOnly: true)
    }

    @Test("a sound store has no damage, quick or thorough")
    func soundStore() throws {
        let stack = try filledStack()
        #expect(try store(stack).damage(thorough: true) == [])
        #expect(try store(stack).damage(thorough: false) == [])
        #expect(try stack.sql("SELECT COUNT(*) FROM Z_5SUPPLIERS") == [[.integer(2)]])
    }

    @Test("a fetch index missing (what a lade run killed while loading leaves) is found by the thorough check, with what to do; not by the quick one")
    func missingFetchIndex() throws {
        let stack = try filledStack()
        try write(stack, ["DROP INDEX Z_Product_byName"])
        let found = try store(stack).damage(thorough: true)
        #expect(found.map(\.kind) == [.missingIndex])
        #expect(found.first?.place == "ZPRODUCT")
        #expect(found.first?.count == 1)
        #expect(found.first?.example == "Z_Product_byName")
        #expect(found.first?.problem.contains("running the import again builds them") == true)
        #expect(try store(stack).damage(thorough: false) == [])
    }

    @Test("each kind of damage is counted, with the first place it was seen")
    func everyKind() throws {
        let stack = try filledStack()
        try write(stack, [
            "UPDATE ZPRODUCT SET Z_ENT = 99 WHERE ZSKU IN ('SKU-1', 'SKU-2')",
            "UPDATE ZPRODUCT SET ZSTOCK = 'many' WHERE ZSKU = 'SKU-3'",
            "UPDATE ZPRODUCT SET ZCATEGORY = 9999 WHERE ZSKU IN ('SKU-3', 'SKU-4')",
            "UPDATE ZPRODUCT SET ZNAME = NULL WHERE ZSKU = 'SKU-5'",
            "DROP INDEX Z_Product_UNIQUE_sku",
            "UPDATE ZPRODUCT SET ZSKU = 'SKU-4' WHERE ZSKU = 'SKU-5'",
            "INSERT INTO Z_5SUPPLIERS VALUES (424242, 1)",
            "UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Category'",
        ])
        let found = try store(stack).damage(thorough: true)
        let byKind = Dictionary(grouping: found, by: \.kind)
        #expect(byKind[.unknownEntity]?.first?.count == 2)
        #expect(byKind[.unknownEntity]?.first?.place == "ZPRODUCT")
        #expect(byKind[.unknownEntity]?.first?.example.contains("Z_ENT 99") == true)
        #expect(byKind[.danglingReference]?.first?.count == 2)
        #expect(byKind[.danglingReference]?.first?.place == "Product.category")
        #expect(byKind[.danglingReference]?.first?.example.contains("Category Z_PK 9999") == true)
        #expect(byKind[.wrongType]?.first?.place == "Product.stock")
        #expect(byKind[.wrongType]?.first?.example.contains("TEXT \"many\" in ZSTOCK") == true)
        #expect(byKind[.requiredMissing]?.first?.place == "Product.name")
        #expect(byKind[.notUnique]?.first?.count == 1)
        // The link added to a missing product, and the two of SKU-1, whose row no longer is a Product.
        #expect(byKind[.danglingLink]?.first?.count == 3)
        #expect(byKind[.danglingLink]?.first?.place == "Product.suppliers")
        #expect(byKind[.keyCounter]?.first?.example.contains("Z_MAX is 1") == true)
        #expect(byKind[.missingIndex]?.first?.example == "Z_Product_UNIQUE_sku")
        #expect(byKind[.missingIndex]?.first?.problem == "indexes of the model's layout not in the file")
        // The quick check finds what a whole-store read would skip or turn into nulls.
        #expect(Set(try store(stack).damage(thorough: false).map(\.kind)) == [.unknownEntity, .danglingReference, .danglingLink])
    }

    @Test("a fetch refuses a row whose Z_ENT names no entity, instead of dropping it")
    func fetchRefusesUnknownEntity() throws {
        let stack = try filledStack()
        try write(stack, ["UPDATE ZPRODUCT SET Z_ENT = 99 WHERE ZSKU = 'SKU-2'"])
        let error = #expect(throws: StoreError.self) { try store(stack).fetch(StoreFetchRequest(entityName: "Product", fetchLimit: 5)) }
        guard case .damaged(let damage)? = error?.kind else { Issue.record("not damage: \(String(describing: error))"); return }
        #expect(damage.first?.kind == .unknownEntity)
        #expect(error?.description.contains("the store is damaged: ") == true && error?.description.contains("ZPRODUCT: 1 row whose Z_ENT names no entity of the model (first: Z_PK 2, Z_ENT 99)") == true, "\(String(describing: error))")
        #expect(error?.description.contains("lade ") == false, "the library states the fact; lade adds `lade check`: \(String(describing: error))")
    }

    @Test("a value of the wrong SQLite type is refused with its row and column, never read as nil or rounded", arguments: [
        ("ZSTOCK = 'many'", "TEXT \"many\""),
        ("ZSTOCK = 3.5", "REAL 3.5"),
        ("ZSTOCK = 5000000000", "INTEGER 5000000000"),
        ("ZCREATEDAT = 'yesterday'", "TEXT \"yesterday\""),
        ("ZID = X'0102'", "a BLOB of 2 bytes"),
        ("ZNAME = X'FF00'", "a BLOB of 2 bytes"),
    ])
    func wrongTypeRefused(_ assignment: String, _ held: String) throws {
        let stack = try filledStack()
        try write(stack, ["UPDATE ZPRODUCT SET \(assignment) WHERE ZSKU = 'SKU-3'"])
        let error = #expect(throws: StoreError.self) { try store(stack).fetch(StoreFetchRequest(entityName: "Product")) }
        guard case .damaged(let damage)? = error?.kind else { Issue.record("not damage: \(String(describing: error))"); return }
        #expect(damage.first?.kind == .wrongType)
        #expect(damage.first?.example.contains(held) == true, "\(damage)")
    }

    @Test("a binary store whose relationship names a missing object does not open, and says where")
    func binaryDanglingReference() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(contentsOf: Fixtures.catalog)
        let url = directory.appendingPathComponent("dangling.binary")
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(descriptor >= 0)
        let output = FileOutput(descriptor: descriptor, path: url.path)
        try BinaryStoreFile.writeHeader(StoreMetadata.make(for: model, storeType: StoreMetadata.binaryStoreType)
            .merging(["NSStoreUUID": .string(UUID().uuidString)]) { $1 }, to: output)
        let body = try BodyWriter(output: output)
        body.uvarint(100)                                   // next key
        body.uvarint(1)                                     // one entity table: Product, with its category
        body.string("Product"); body.uvarint(0); body.uvarint(1); body.string("category")
        body.uvarint(1)                                     // one object: Product key 1, version 1,
        body.uvarint(0); body.uvarint(1); body.uvarint(1)   // no attributes, category → key 99
        body.uvarint(0); body.uvarint(1); body.uvarint(0); body.uvarint(1); body.uvarint(99)
        try body.finish()
        try output.flush()
        close(descriptor)
        let error = #expect(throws: StoreError.self) { try BinaryStore(url: url, model: model, readOnly: true) }
        guard case .damaged(let damage)? = error?.kind else { Issue.record("not damage: \(String(describing: error))"); return }
        #expect(damage.map(\.kind) == [.danglingReference])
        #expect(damage.first?.place == "Product.category")
        #expect(damage.first?.example == "key 1 names key 99")
    }

    @Test("an atomic store's thorough check finds wrong types, missing required values, duplicates and one-sided inverses")
    func atomicThorough() throws {
        let model = try ManagedObjectModel(contentsOf: Fixtures.catalog)
        var graph = AtomicObjectGraph(nextKey: 1)
        graph.set(AtomicObject(entity: "Category", attributes: ["name": .string("Tools"), "sortOrder": .integer(0)], toMany: ["products": [2]]), for: 1)
        graph.set(AtomicObject(entity: "Product", attributes: ["sku": .string("A"), "name": .string("a"), "price": .decimal(1), "stock": .string("x")], toOne: ["category": 1]), for: 2)
        graph.set(AtomicObject(entity: "Product", attributes: ["sku": .string("A"), "price": .decimal(1), "stock": .integer(0)], toOne: ["category": 1]), for: 3)
        let found = Dictionary(grouping: graph.damage(model: model, thorough: true), by: \.kind)
        #expect(found[.wrongType]?.first?.place == "Product.stock")
        #expect(found[.requiredMissing]?.contains { $0.place == "Product.name" && $0.count == 1 } == true, "\(found)")
        #expect(found[.notUnique]?.first?.count == 1)
        #expect(found[.inverseMismatch]?.first?.example.contains("key 3") == true)
        #expect(graph.damage(model: model, thorough: false) == [])
    }
}
