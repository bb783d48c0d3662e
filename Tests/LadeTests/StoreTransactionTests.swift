import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// Store transactions: a context's saves to a SQLite store written in one transaction held
/// open until `commit` (each save in a savepoint), seen by no other connection before it.
@Suite("Store transactions")
struct StoreTransactionTests {
    static func count(_ stack: TestStack, _ table: String) throws -> Int64 {
        guard case .integer(let count)? = try stack.sql("SELECT COUNT(*) FROM \(table)").first?.first else { return -1 }
        return count
    }

    static func largestKey(_ stack: TestStack, entity: String) throws -> Int64 {
        guard case .integer(let max)? = try stack.sql("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = '\(entity)'").first?.first else { return -1 }
        return max
    }

    static func isUniquenessViolation(_ error: Error) -> Bool {
        guard case ContextError.uniquenessViolation = error else { return false }
        return true
    }

    static func isEnded(_ error: Error) -> Bool {
        guard case ContextError.storeTransactionEnded = error else { return false }
        return true
    }

    @Test("saves in a store transaction commit together with the staged metadata; other connections see none of them before")
    func commitsTogether() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let transaction = try context.beginStoreTransaction(entityName: "Product")
            try TestStack.product("A-1", in: context)
            try context.save()
            context.reset()
            try TestStack.product("A-2", in: context)
            try TestStack.category("Tools", in: context)
            try context.save()
            context.reset()
            // The context (the store's own connection) reads the saves; another connection does not.
            #expect(try context.count(for: FetchRequest(entityName: "Product")) == 2)
            #expect(try Self.count(stack, "ZPRODUCT") == 0)
            #expect(try Self.largestKey(stack, entity: "Product") == 0)
            var metadata = stack.coordinator.metadata(for: transaction.store)
            metadata["lade.test"] = .string("committed with the rows")
            try stack.coordinator.setMetadata(metadata, for: transaction.store)
            try transaction.commit()
            #expect(!transaction.isOpen)
        }
        #expect(try Self.count(stack, "ZPRODUCT") == 2)
        #expect(try Self.count(stack, "ZCATEGORY") == 1)
        #expect(try Self.largestKey(stack, entity: "Product") == 2)
        let written = try PersistentStoreCoordinator.metadataForPersistentStore(at: stack.url)
        #expect(written["lade.test"] == .string("committed with the rows"))
        // Saves after the commit commit on their own again.
        try context.performAndWait {
            try TestStack.product("A-3", in: context)
            try context.save()
        }
        #expect(try Self.count(stack, "ZPRODUCT") == 3)
    }

    @Test("a save the store refuses leaves the earlier saves of the transaction; the commit keeps them")
    func refusedSave() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let transaction = try context.beginStoreTransaction(entityName: "Product")
            try TestStack.product("B-1", in: context)
            try context.save()
            context.reset()
            try TestStack.product("B-2", in: context)
            try TestStack.product("B-1", in: context, name: "the same sku again")
            #expect(performing: { try context.save() }, throws: Self.isUniquenessViolation)
            context.rollback()
            try TestStack.product("B-3", in: context)
            try context.save()
            try transaction.commit()
        }
        let skus = try stack.sql("SELECT ZSKU FROM ZPRODUCT ORDER BY ZSKU").map { $0[0] }
        #expect(skus == [.text("B-1"), .text("B-3")])
    }

    @Test("rollback takes back every save, metadata and Z_MAX included, and resets the context")
    func rollback() throws {
        let stack = try TestStack()
        let context = stack.context()
        let before = try PersistentStoreCoordinator.metadataForPersistentStore(at: stack.url)
        try context.performAndWait {
            let transaction = try context.beginStoreTransaction(entityName: "Product")
            let product = try TestStack.product("C-1", in: context)
            // Metadata staged before a save goes with that save, into the transaction.
            var metadata = stack.coordinator.metadata(for: transaction.store)
            metadata["lade.test"] = .string("rolled back")
            try stack.coordinator.setMetadata(metadata, for: transaction.store)
            try context.save()
            #expect(transaction.store.metadata["lade.test"] == .string("rolled back"))
            transaction.rollback()
            #expect(product.managedObjectContext == nil)
            #expect(transaction.store.metadata["lade.test"] == nil)
            #expect(try context.count(for: FetchRequest(entityName: "Product")) == 0)
            #expect(performing: { try transaction.commit() }, throws: Self.isEnded)
        }
        #expect(try Self.count(stack, "ZPRODUCT") == 0)
        #expect(try Self.largestKey(stack, entity: "Product") == 0)
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: stack.url) == before)
    }

    @Test("a transaction that is dropped open is rolled back")
    func droppedOpen() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            var transaction: StoreTransaction? = try context.beginStoreTransaction(entityName: "Product")
            try TestStack.product("D-1", in: context)
            try context.save()
            #expect(transaction?.isOpen == true)
            transaction = nil
            context.reset()
            try TestStack.product("D-2", in: context)
            try context.save()
        }
        let skus = try stack.sql("SELECT ZSKU FROM ZPRODUCT").map { $0[0] }
        #expect(skus == [.text("D-2")])
    }

    @Test("one transaction at a time: no batch insert session inside a store transaction, no save inside a batch insert session")
    func oneAtATime() throws {
        let stack = try TestStack()
        let context = stack.context()
        func isTransactionOpen(_ error: Error) -> Bool {
            guard let error = error as? StoreError, case .transactionOpen = error.kind else { return false }
            return true
        }
        try context.performAndWait {
            let transaction = try context.beginStoreTransaction(entityName: "Product")
            #expect(performing: { try context.beginStoreTransaction(entityName: "Product") }, throws: isTransactionOpen)
            #expect(performing: { try context.beginBatchInsert(entityName: "Product") }, throws: isTransactionOpen)
            // Neither refusal ended the transaction that is open.
            #expect(transaction.isOpen)
            try TestStack.product("E-0", in: context)
            try context.save()
            #expect(try Self.count(stack, "ZPRODUCT") == 0)
            try transaction.commit()
            let session = try context.beginBatchInsert(entityName: "Product")
            try TestStack.product("E-1", in: context)
            #expect(performing: { try context.save() }, throws: isTransactionOpen)
            #expect(performing: { try context.beginStoreTransaction(entityName: "Product") }, throws: isTransactionOpen)
            session.rollback()
            try context.save()
        }
        #expect(try Self.count(stack, "ZPRODUCT") == 2)
    }

    @Test("without savepoints: a value the store refuses writes nothing and leaves the transaction open; a broken uniqueness constraint ends it whole")
    func notUndoable() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let transaction = try context.beginStoreTransaction(entityName: "Product", undoableSaves: false)
            try TestStack.product("F-1", in: context)
            try context.save()
            context.reset()
            // Found before anything is written: the save is refused whole, the transaction stays.
            try TestStack.product("F-2", in: context)
            try TestStack.product("F-3", in: context, price: Decimal(string: "1234567890.123456789")!)
            #expect(performing: { try context.save() }, throws: { error in
                (error as? ObjectValidationError)?.failures.map(\.property) == ["price"]
            })
            #expect(transaction.isOpen)
            var stored = FetchRequest(entityName: "Product")
            stored.includesPendingChanges = false
            #expect(try context.count(for: stored) == 1)
            context.rollback()
            try TestStack.product("F-2", in: context)
            try context.save()
            context.reset()
            // Found while writing, with no savepoint to undo the save alone: everything goes.
            try TestStack.product("F-4", in: context)
            try TestStack.product("F-1", in: context, name: "the same sku again")
            #expect(performing: { try context.save() }, throws: Self.isUniquenessViolation)
            #expect(!transaction.isOpen)
            #expect(transaction.store.metadata == stack.coordinator.metadata(for: transaction.store))
            context.reset()
            // A later transaction is not ended by the earlier one.
            let next = try context.beginStoreTransaction(entityName: "Product")
            #expect(performing: { try transaction.commit() }, throws: Self.isEnded)
            transaction.rollback()
            #expect(next.isOpen)
            try TestStack.product("F-5", in: context)
            try context.save()
            try next.commit()
        }
        let skus = try stack.sql("SELECT ZSKU FROM ZPRODUCT ORDER BY ZSKU").map { $0[0] }
        #expect(skus == [.text("F-5")])
    }

    @Test("after SQLite rolls the transaction back on its own (a full disk, an I/O error), a save ends it instead of committing alone")
    func rolledBackBySQLite() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let transaction = try context.beginStoreTransaction(entityName: "Product")
            try TestStack.product("H-1", in: context)
            try context.save()
            // What SQLite does after some errors: the transaction is gone, autocommit is back.
            let store = try #require(transaction.store as? SQLiteStore)
            try store.withConnection { try $0.execute("ROLLBACK") }
            try TestStack.product("H-2", in: context)
            #expect(performing: { try context.save() }, throws: { error in
                guard let error = error as? StoreError, case .io = error.kind else { return false }
                return error.message.contains("rolled the store transaction back")
            })
            #expect(!transaction.isOpen)
        }
        // A savepoint outside a transaction would have committed H-2 on its own.
        #expect(try Self.count(stack, "ZPRODUCT") == 0)
    }

    @Test("commitAndBeginNext goes on in a new transaction and says whether another connection wrote in between")
    func beginNext() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let first = try context.beginStoreTransaction(entityName: "Product", undoableSaves: false)
            try TestStack.product("G-1", in: context)
            try context.save()
            let second = try first.commitAndBeginNext()
            #expect(!first.isOpen && second.isOpen && !second.othersWroteBetween)
            #expect(try Self.count(stack, "ZPRODUCT") == 1)
            try TestStack.product("G-2", in: context)
            try context.save()
            let third = try second.commitAndBeginNext {
                // Another process's commit, in the moment between the two transactions.
                let other = ManagedObjectContext(concurrencyType: .privateQueue)
                other.persistentStoreCoordinator = try stack.otherCoordinator()
                try other.performAndWait {
                    try TestStack.product("G-3", in: other)
                    try other.save()
                }
            }
            #expect(third.othersWroteBetween)
            // Its saves have no savepoints either, as the first's.
            #expect(!third.undoableSaves)
            third.rollback()
        }
        #expect(try Self.count(stack, "ZPRODUCT") == 3)
    }

    @Test("stores that write their whole file on every save hold no transaction")
    func atomicStoreRefused() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(contentsOf: Fixtures.catalog)
        let context = try privateContext(model: model, store: directory.appendingPathComponent("catalog.xml"), type: .xml)
        _ = context.performAndWait {
            #expect {
                try context.beginStoreTransaction(entityName: "Product")
            } throws: { error in
                guard case ContextError.storeTransactionUnsupported(let why) = error else { return false }
                return why.contains("SQLite")
            }
        }
    }

    @Test("setPageCacheSize sets SQLite's cache_size for the store's connection, in KiB")
    func pageCache() throws {
        let stack = try TestStack()
        let store = try #require(stack.coordinator.persistentStores.first as? SQLiteStore)
        let before = try store.withConnection { try $0.rows("PRAGMA cache_size") }
        #expect(before == [[.integer(-2000)]], "SQLite's default")
        try store.setPageCacheSize(kibibytes: 12 * 1024)
        #expect(try store.withConnection { try $0.rows("PRAGMA cache_size") } == [[.integer(-12288)]])
    }
}
