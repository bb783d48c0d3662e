import Foundation
import Testing
@testable import Lade

/// Batch insert and update straight against the store, held to what managed objects write.
@Suite("Batch requests")
struct BatchRequestTests {
    /// A fresh SQLite store of the EveryType model.
    func stack(_ directory: URL, _ name: String) throws -> (PersistentStoreCoordinator, ManagedObjectContext, URL) {
        let url = directory.appendingPathComponent(name)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try EveryType.model())
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context, url)
    }

    /// Every table but Z_METADATA, row by row (Z_OPT and Z_MAX included).
    func tables(_ url: URL) throws -> [String: [String]] {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        var result: [String: [String]] = [:]
        for table in try connection.tableNames() where table != "Z_METADATA" {
            result[table] = try connection.rows("SELECT * FROM \(table) ORDER BY 1").map { "\($0)" }
        }
        return result
    }

    func rows(_ count: Int, seed: UInt64) -> [[String: AttributeValue?]] {
        var random = SeededGenerator(seed: seed)
        return (0..<count).map { index in
            var row: [String: AttributeValue?] = ["name": .string("item \(index)")]
            for (key, value) in EveryType.values(item: index, random: &random) { row[key] = value }
            return row
        }
    }

    @Test("the same rows through BatchInsertRequest and through managed objects give identical stores, every attribute type, Z_OPT and Z_MAX included")
    func insertMatchesObjects() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = rows(40, seed: 7)
        let (_, batchContext, batchURL) = try stack(directory, "batch.sqlite")
        let result = try batchContext.performAndWait { try batchContext.execute(BatchInsertRequest(entityName: "Item", objects: input)) }
        #expect(result.inserted == 40 && result.updated == 0 && result.failures.isEmpty, "\(result.failures)")
        let (_, objectContext, objectURL) = try stack(directory, "objects.sqlite")
        try objectContext.performAndWait {
            for row in input {
                let item = try objectContext.insertObject(forEntityName: "Item")
                for (key, value) in row { try item.setAttributeValue(value, forKey: key) }
            }
            try objectContext.save()
        }
        let batch = try tables(batchURL), objects = try tables(objectURL)
        #expect(batch.keys.sorted() == objects.keys.sorted())
        for table in objects.keys.sorted() {
            #expect(batch[table] == objects[table], "\(table) differs")
        }
    }

    @Test("a batch insert upserts on a uniqueness constraint: existing objects updated (Z_OPT advanced), a later row with the same key wins")
    func upsert() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (_, context, url) = try stack(directory, "tags.sqlite")
        try context.performAndWait {
            let first = try context.execute(BatchInsertRequest(entityName: "Tag", objects: [["name": .string("red")], ["name": .string("blue")]]))
            #expect(first.inserted == 2)
            let second = try context.execute(BatchInsertRequest(entityName: "Tag", objects: [
                ["name": .string("red")], ["name": .string("green")], ["name": .string("green")],
            ]))
            #expect(second.inserted == 1 && second.updated == 1, "\(second)")
        }
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        #expect(try connection.rows("SELECT ZNAME, Z_OPT FROM ZTAG ORDER BY Z_PK") == [[.text("red"), .integer(2)], [.text("blue"), .integer(1)], [.text("green"), .integer(1)]])
        #expect(try connection.rows("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Tag'") == [[.integer(3)]])
    }

    @Test("a row breaking the model's rules is reported by index and reason; the others are written")
    func rowFailures() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (_, context, _) = try stack(directory, "items.sqlite")
        try context.performAndWait {
            let result = try context.execute(BatchInsertRequest(entityName: "Item", objects: [
                ["name": .string("ok")],
                ["i16": .integer(5)],                              // name is required
                ["name": .string("x"), "i16": .integer(70_000)],   // out of Integer 16's range
                ["name": .string("y"), "colour": .string("red")],  // no such attribute
                ["name": .string("also ok")],
            ]))
            #expect(result.inserted == 2)
            #expect(result.failures.map(\.index) == [1, 2, 3])
            #expect(result.failures.map(\.property) == ["name", "i16", "colour"])
            #expect(try context.count(for: FetchRequest(entityName: "Item")) == 2)
        }
    }

    @Test("rows pulled from a closure are written a batch at a time, all of them")
    func rowProvider() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (_, context, _) = try stack(directory, "tags.sqlite")
        let counter = Counter()
        let request = BatchInsertRequest(entityName: "Tag", batchSize: 7) {
            let next = counter.next()
            return next < 50 ? ["name": .string("tag \(next)")] : nil
        }
        try context.performAndWait {
            let result = try context.execute(request)
            #expect(result.inserted == 50 && result.objectIDs.count == 50)
            #expect(try context.count(for: FetchRequest(entityName: "Tag")) == 50)
        }
    }

    final class Counter: @unchecked Sendable {
        private var value = 0
        private let lock = NSLock()
        func next() -> Int { lock.withLock { defer { value += 1 }; return value } }
    }

    @Test("a batch update equals fetch, modify and save: same rows, Z_OPT advanced; a context sees it after the merge")
    func updateMatchesObjects() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = rows(30, seed: 11)
        let predicate = try FetchPredicate(format: "i32 > 0 OR flag == YES")
        var urls: [URL] = []
        for (name, useBatch) in [("batch.sqlite", true), ("objects.sqlite", false)] {
            let (_, context, url) = try stack(directory, name)
            urls.append(url)
            try context.performAndWait {
                _ = try context.execute(BatchInsertRequest(entityName: "Item", objects: input))
                if useBatch {
                    let holder = try context.fetch(FetchRequest(entityName: "Item", predicate: predicate)).first
                    #expect(holder?.value(forKey: "text") as? String != "updated")
                    let result = try context.execute(BatchUpdateRequest(entityName: "Item", predicate: predicate,
                                                                        propertiesToUpdate: ["text": .string("updated"), "blob": nil]))
                    #expect(result.count > 0 && result.count < 30)
                    ManagedObjectContext.mergeChanges(updated: result.objectIDs, into: [context])
                    #expect(holder?.value(forKey: "text") as? String == "updated", "the merged context sees the change")
                } else {
                    for item in try context.fetch(FetchRequest(entityName: "Item", predicate: predicate)) {
                        try item.setValue("updated", forKey: "text")
                        try item.setAttributeValue(nil, forKey: "blob")
                    }
                    try context.save()
                }
            }
        }
        let batch = try tables(urls[0]), objects = try tables(urls[1])
        for table in objects.keys.sorted() { #expect(batch[table] == objects[table], "\(table) differs") }
    }

    @Test("a batch update with a value that breaks a rule is refused whole, naming it")
    func updateRefused() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (_, context, _) = try stack(directory, "items.sqlite")
        try context.performAndWait {
            _ = try context.execute(BatchInsertRequest(entityName: "Item", objects: [["name": .string("a")]]))
            #expect(throws: ObjectValidationError.self) { try context.execute(BatchUpdateRequest(entityName: "Item", propertiesToUpdate: ["name": nil])) }
            #expect(throws: ContextError.self) { try context.execute(BatchUpdateRequest(entityName: "Item", propertiesToUpdate: ["i16": .string("x")])) }
            #expect(throws: ContextError.self) { try context.execute(BatchUpdateRequest(entityName: "Item", propertiesToUpdate: ["colour": .string("x")])) }
            #expect(try context.fetch(FetchRequest(entityName: "Item")).first?.value(forKey: "name") as? String == "a")
        }
    }

    // MARK: Batch delete

    @Test("a batch delete equals fetch, delete and save: rows, join-table links, nullified inverses and their Z_OPT")
    func deleteMatchesObjects() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let predicate = try FetchPredicate(format: "name BEGINSWITH 'item 00' OR i32 > 0")
        var urls: [URL] = []
        for (name, useBatch) in [("batch.sqlite", true), ("objects.sqlite", false)] {
            let (_, context, url) = try stack(directory, name)
            urls.append(url)
            try EveryType.populate(context)
            try context.performAndWait {
                if useBatch {
                    let owner = try context.fetch(FetchRequest(entityName: "Owner")).first
                    _ = owner?.objects(forKey: "items")
                    let result = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Item", predicate: predicate)))
                    #expect(result.count > 0 && result.count < 24, "\(result.count)")
                    #expect(!result.nullifiedObjectIDs.isEmpty)
                    ManagedObjectContext.mergeChanges(updated: result.nullifiedObjectIDs, deleted: result.objectIDs, into: [context])
                    let left = try context.count(for: FetchRequest(entityName: "Item"))
                    #expect(left == 24 - result.count)
                } else {
                    for item in try context.fetch(FetchRequest(entityName: "Item", predicate: predicate)) { context.delete(item) }
                    try context.save()
                }
            }
        }
        let batch = try tables(urls[0]), objects = try tables(urls[1])
        for table in objects.keys.sorted() {
            let onlyBatch = Set(batch[table] ?? []).subtracting(objects[table] ?? []).sorted()
            let onlyObjects = Set(objects[table] ?? []).subtracting(batch[table] ?? []).sorted()
            #expect(batch[table] == objects[table], "\(table) differs: batch only \(onlyBatch.map { $0.replacingOccurrences(of: "Lade.SQLiteValue.", with: "") }); objects only \(onlyObjects.map { $0.replacingOccurrences(of: "Lade.SQLiteValue.", with: "") })")
        }
        #expect(try SQLiteStore(url: urls[0], model: try EveryType.model(), readOnly: true).damage(thorough: true) == [])
    }

    @Test("a batch delete cascades as a context's delete does (Catalog: products and their media)")
    func deleteCascades() throws {
        var urls: [URL] = []
        var stacks: [TestStack] = []
        for useBatch in [true, false] {
            let stack = try TestStack()
            stacks.append(stack)
            urls.append(stack.url)
            let context = stack.context()
            try context.performAndWait {
                let tools = try TestStack.category("Tools", in: context)
                for index in 0..<6 {
                    let product = try TestStack.product("SKU-\(index)", in: context)
                    try product.setObject(tools, forKey: "category")
                    for picture in 0..<2 {
                        let image = try context.insertObject(forEntityName: "Image")
                        try image.setValue(URL(string: "https://example.com/\(index)/\(picture).png")!, forKey: "url")
                        try product.add(image, toKey: "media")
                    }
                }
                try context.save()
                let predicate = try FetchPredicate(format: "sku IN %@", ["SKU-1", "SKU-4"])
                if useBatch {
                    let result = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Product", predicate: predicate)))
                    #expect(result.count == 2 && result.objectIDs.count == 6, "two products and their four images")
                } else {
                    for product in try context.fetch(FetchRequest(entityName: "Product", predicate: predicate)) { context.delete(product) }
                    try context.save()
                }
            }
        }
        let batch = try tables(urls[0]), objects = try tables(urls[1])
        for table in objects.keys.sorted() { #expect(batch[table] == objects[table], "\(table) differs") }
        #expect(batch["ZMEDIA"]?.count == 8)
    }

    @Test("a batch delete refuses Deny, as Core Data does, and a nullify that would empty a required relationship; nothing is deleted")
    func deleteRefusals() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            try TestStack.category("Tools", in: context)
            try context.save()
            // Category.products is Deny: refused whether or not products exist.
            let error = #expect(throws: ObjectValidationError.self) { try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Category"))) }
            #expect(error?.description.contains("Deny is not supported for batch deletes (Category.products)") == true, "\(String(describing: error))")
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZCATEGORY") == [[.integer(1)]])

        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "pets", destinationEntityName: "Pet", inverseName: "owner", isToMany: true),
            ]),
            EntityDescription(name: "Pet", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "owner", destinationEntityName: "Owner", inverseName: "pets", isOptional: false),
            ]),
        ])
        let pets = try privateContext(model: model, store: directory.appendingPathComponent("pets.sqlite"), type: .sqlite)
        try pets.performAndWait {
            let owner = try pets.insertObject(forEntityName: "Owner")
            let pet = try pets.insertObject(forEntityName: "Pet")
            try pet.setObject(owner, forKey: "owner")
            try pets.save()
            let error = #expect(throws: ObjectValidationError.self) { try pets.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Owner"))) }
            #expect(error?.description.contains("mandatory nullify inverse") == true, "\(String(describing: error))")
            #expect(try pets.count(for: FetchRequest(entityName: "Owner")) == 1)
        }
    }
}
