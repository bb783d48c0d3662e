import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// A save the store refuses gives back the primary keys it took, as Core Data's rolled-back
/// save leaves `Z_MAX` as it was: the objects are new again, with temporary IDs, and a later
/// save numbers them as if the refused one had never asked.
@Suite("Keys of refused saves")
struct RefusedSaveKeyTests {
    /// A price a SQLite store cannot keep exactly (16 significant digits, and no double reads back
    /// as it): refused by the store.
    static let unkeepablePrice = Decimal(string: "900719925474099.3")!

    static func largestKey(_ stack: TestStack) throws -> SQLiteValue? {
        try stack.sql("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Product'").first?.first
    }

    static func keys(_ stack: TestStack) throws -> [String] {
        try stack.sql("SELECT Z_PK || '=' || ZSKU FROM ZPRODUCT ORDER BY Z_PK").map {
            guard case .text(let text) = $0[0] else { return "\($0)" }
            return text
        }
    }

    /// Saves A, a refused B and C; takes B back as the error names it; saves again.
    static func refuseOneOfThree(in context: ManagedObjectContext, refused: (ManagedObjectContext) throws -> ManagedObject) throws {
        let a = try TestStack.product("A-1", in: context)
        let b = try refused(context)
        let c = try TestStack.product("C-1", in: context)
        do {
            try context.save()
            Issue.record("the save was not refused")
        } catch {
            let named: ManagedObjectID
            switch error {
            case let validation as ObjectValidationError: named = validation.failures[0].objectID
            case ContextError.uniquenessViolation(_, _, let id): named = id
            default: throw error
            }
            // The error names the object as the context knows it now.
            #expect(context.object(with: named) === b, "\(error)")
        }
        #expect([a, b, c].allSatisfy { $0.objectID.isTemporaryID && $0.isNew })
        context.delete(b)
        try context.save()
        #expect([a, c].map { $0.objectID.primaryKey } == [1, 2])
    }

    @Test("a save refused for a value gives its keys back: Z_MAX unchanged, the next save numbers from where it was")
    func refusedValue() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            try TestStack.product("X-1", in: context, price: Self.unkeepablePrice)
            #expect(throws: ObjectValidationError.self) { try context.save() }
            #expect(try Self.largestKey(stack) == .integer(0))
            context.rollback()
            try Self.refuseOneOfThree(in: context) { try TestStack.product("B-1", in: $0, price: Self.unkeepablePrice) }
        }
        #expect(try Self.keys(stack) == ["1=A-1", "2=C-1"])
        #expect(try Self.largestKey(stack) == .integer(2))
    }

    @Test("a save refused by a uniqueness constraint gives its keys back")
    func refusedUniqueness() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            try TestStack.product("B-1", in: context)
            try context.save()
            context.reset()
            let a = try TestStack.product("A-1", in: context)
            try TestStack.product("B-1", in: context, name: "the same sku again")
            #expect(throws: ContextError.self) { try context.save() }
            #expect(try Self.largestKey(stack) == .integer(1))
            #expect(a.objectID.isTemporaryID)
            context.rollback()
            try TestStack.product("C-1", in: context)
            try context.save()
        }
        #expect(try Self.keys(stack) == ["1=B-1", "2=C-1"])
        #expect(try Self.largestKey(stack) == .integer(2))
    }

    @Test("in a store transaction, with and without savepoints, a refused save gives its keys back before the commit")
    func refusedInTransaction() throws {
        for undoable in [true, false] {
            let stack = try TestStack()
            let context = stack.context()
            try context.performAndWait {
                let transaction = try context.beginStoreTransaction(entityName: "Product", undoableSaves: undoable)
                try Self.refuseOneOfThree(in: context) { try TestStack.product("B-1", in: $0, price: Self.unkeepablePrice) }
                context.reset()
                try TestStack.product("D-1", in: context)
                try context.save()
                try transaction.commit()
            }
            #expect(try Self.keys(stack) == ["1=A-1", "2=C-1", "3=D-1"], "undoable saves: \(undoable)")
            #expect(try Self.largestKey(stack) == .integer(3), "undoable saves: \(undoable)")
        }
    }

    @Test("keys obtained before the save (obtainPermanentIDs) are the caller's: a refused save keeps them")
    func obtainedBefore() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let a = try TestStack.product("A-1", in: context)
            try context.obtainPermanentIDs(for: [a])
            let b = try TestStack.product("B-1", in: context, price: Self.unkeepablePrice)
            #expect(throws: ObjectValidationError.self) { try context.save() }
            #expect(a.objectID.primaryKey == 1)
            #expect(b.objectID.isTemporaryID)
            #expect(try Self.largestKey(stack) == .integer(1))
        }
    }

    @Test("a batch insert the store refuses gives its keys back")
    func refusedBatchInsert() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let request = BatchInsertRequest(entityName: "Product", objects: [
                ["sku": .string("A-1"), "name": .string("a"), "price": .decimal(1)],
                ["sku": .string("B-1"), "name": .string("b"), "price": .decimal(Self.unkeepablePrice)],
            ])
            #expect(throws: ObjectValidationError.self) { try context.execute(request) }
            try TestStack.product("C-1", in: context)
            try context.save()
        }
        #expect(try Self.keys(stack) == ["1=C-1"])
        #expect(try Self.largestKey(stack) == .integer(1))
    }

    @Test("XML, binary and in-memory stores give the keys of a refused save back too")
    func atomicStores() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(contentsOf: Fixtures.catalog)
        for (type, name) in [(PersistentStoreCoordinator.StoreType.xml, "catalog.xml"), (.binary, "catalog.bin"), (.inMemory, "memory")] {
            let context = try privateContext(model: model, store: directory.appendingPathComponent(name), type: type)
            try context.performAndWait {
                let b = try TestStack.product("B-1", in: context)
                try context.save()
                let first = try #require(b.objectID.primaryKey)
                context.reset()
                let a = try TestStack.product("A-1", in: context)
                try TestStack.product("B-1", in: context, name: "the same sku again")
                #expect(throws: ContextError.self) { try context.save() }
                #expect(a.objectID.isTemporaryID, "\(type)")
                context.rollback()
                let c = try TestStack.product("C-1", in: context)
                try context.save()
                #expect(c.objectID.primaryKey == first + 1, "\(type): C's key \(c.objectID.primaryKey.map(String.init) ?? "none") after B's \(first)")
            }
        }
    }
}
