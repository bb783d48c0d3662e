import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// Bulk loads into an empty table: the model's fetch indexes on it are left out from the first
/// write transaction and built by the commit marked for it, in that commit's transaction.
@Suite("Deferred fetch indexes")
struct IndexDeferralTests {
    static func indexes(_ stack: TestStack, table: String = "ZPRODUCT") throws -> [String: String] {
        var result: [String: String] = [:]
        for row in try stack.sql("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = '\(table)' AND sql IS NOT NULL") {
            if case .text(let name) = row[0], case .text(let sql) = row[1] { result[name] = sql }
        }
        return result
    }

    static func store(_ stack: TestStack) throws -> SQLiteStore {
        try #require(stack.coordinator.persistentStores.first as? SQLiteStore)
    }

    static func save(_ skus: [String], _ context: ManagedObjectContext) throws {
        for sku in skus { try TestStack.product(sku, in: context, name: "name of \(sku)") }
        try context.save()
        context.reset()
    }

    @Test("into an empty table: the fetch index is dropped in the first transaction, kept out across commits, and built by the marked commit exactly as the schema makes it")
    func emptyTable() throws {
        let stack = try TestStack()
        let store = try Self.store(stack)
        let before = try Self.indexes(stack)
        let schemaIndex = try #require(store.schema.indexes.first { $0.name == "Z_Product_byName" })
        #expect(before["Z_Product_byName"] == schemaIndex.createStatement)
        #expect(try store.deferFetchIndexes(ofEntity: "Product", keeping: ["sku"]) == ["Z_Product_byName"])
        #expect(try Self.indexes(stack) == before, "nothing changes before a transaction begins")

        let context = stack.context()
        try context.performAndWait {
            var transaction = try context.beginStoreTransaction(entityName: "Product")
            try Self.save(["D-1", "D-2"], context)
            transaction = try transaction.commitAndBeginNext()
            try Self.save(["D-3"], context)
            transaction = try transaction.commitAndBeginNext()
            // Committed twice: the rows are there, the fetch index is not; the others are.
            #expect(try stack.sql("SELECT COUNT(*) FROM ZPRODUCT") == [[.integer(3)]])
            var expected = before
            expected["Z_Product_byName"] = nil
            #expect(try Self.indexes(stack) == expected)

            try Self.save(["D-4"], context)
            store.buildDeferredIndexesAtNextCommit()
            // Built inside the transaction: another connection sees neither the row nor the index yet.
            #expect(try Self.indexes(stack) == expected)
            try transaction.commit()
        }
        #expect(try Self.indexes(stack) == before)
        #expect(store.deferredIndexNames.isEmpty)
        #expect(try stack.sql("PRAGMA integrity_check") == [[.text("ok")]])
        // The index holds every row: a query through it finds them.
        #expect(try stack.sql("SELECT COUNT(*) FROM ZPRODUCT INDEXED BY Z_Product_byName WHERE ZNAME >= ''") == [[.integer(4)]])
    }

    @Test("a table with rows keeps its indexes; one whose index a killed load left out gets it back from the next load, even with rows")
    func tableWithRows() throws {
        let stack = try TestStack()
        let store = try Self.store(stack)
        let before = try Self.indexes(stack)
        let context = stack.context()
        try context.performAndWait { try Self.save(["R-1"], context) }
        #expect(try store.deferFetchIndexes(ofEntity: "Product", keeping: ["sku"]).isEmpty)

        // What a load killed after its first commit leaves: rows, and no fetch index.
        #expect(try store.deferFetchIndexes(ofEntity: "Product", keeping: []) == [], "the table has rows")
        let other = try SQLiteConnection(path: stack.url.path, mode: .readWrite(create: false))
        try other.execute("DROP INDEX Z_Product_byName")
        #expect(try store.deferFetchIndexes(ofEntity: "Product", keeping: ["sku"]) == ["Z_Product_byName"])
        try context.performAndWait {
            let transaction = try context.beginStoreTransaction(entityName: "Product")
            try Self.save(["R-2"], context)
            store.buildDeferredIndexesAtNextCommit()
            try transaction.commit()
        }
        #expect(try Self.indexes(stack) == before)
        #expect(try stack.sql("SELECT COUNT(*) FROM ZPRODUCT INDEXED BY Z_Product_byName WHERE ZNAME >= ''") == [[.integer(2)]])
    }

    @Test("an index whose first column the load looks rows up by stays; so do uniqueness constraints and to-one keys' indexes")
    func keptIndexes() throws {
        let stack = try TestStack()
        let store = try Self.store(stack)
        #expect(try store.deferFetchIndexes(ofEntity: "Product", keeping: ["name"]).isEmpty)
        let deferred = try store.deferFetchIndexes(ofEntity: "Product", keeping: [])
        #expect(deferred == ["Z_Product_byName"], "not Z_Product_UNIQUE_sku, ZPRODUCT_ZCATEGORY_INDEX nor ZPRODUCT_ZSUPPLIER_INDEX")
        #expect(try store.deferFetchIndexes(ofEntity: "Category", keeping: []).isEmpty, "Category has no fetch index")
    }

    @Test("a transaction rolled back takes the drop back with it")
    func rollback() throws {
        let stack = try TestStack()
        let store = try Self.store(stack)
        let before = try Self.indexes(stack)
        _ = try store.deferFetchIndexes(ofEntity: "Product", keeping: ["sku"])
        let context = stack.context()
        try context.performAndWait {
            let transaction = try context.beginStoreTransaction(entityName: "Product")
            try Self.save(["K-1"], context)
            transaction.rollback()
        }
        #expect(try Self.indexes(stack) == before)
        #expect(try stack.sql("SELECT COUNT(*) FROM ZPRODUCT") == [[.integer(0)]])
    }
}
