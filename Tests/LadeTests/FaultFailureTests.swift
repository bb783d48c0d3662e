import Foundation
import Testing
@testable import Lade

/// A fault whose store read fails is an error kept by the context, never values read as empty
/// and saved as if they were the object's.
@Suite("Faults whose store read fails")
struct FaultFailureTests {
    /// A store with one product in one category; returns their IDs.
    func filled(_ stack: TestStack) throws -> (product: ManagedObjectID, category: ManagedObjectID) {
        let context = stack.context()
        return try context.performAndWait {
            let category = try TestStack.category("Tools", in: context)
            let product = try TestStack.product("SKU-1", in: context, name: "Bolt")
            try product.setObject(category, forKey: "category")
            try context.save()
            return (product.objectID, category.objectID)
        }
    }

    /// Makes every read of the product table fail, as a damaged or vanished table would.
    func breakProducts(_ stack: TestStack) throws {
        let connection = try SQLiteConnection(path: stack.url.path, mode: .readWrite(create: false))
        try connection.execute("ALTER TABLE ZPRODUCT RENAME TO ZPRODUCT_AWAY")
    }

    @Test("an attribute fault that cannot be read keeps the error, refuses the save, and reads again after a rollback")
    func attributeFault() throws {
        let stack = try TestStack()
        let ids = try filled(stack)
        let context = stack.context()
        try context.performAndWait {
            let product = context.object(with: ids.product)
            let category = context.object(with: ids.category)
            try category.setValue("Hardware", forKey: "name")
            try breakProducts(stack)
            _ = product.value(forKey: "name")
            let failure = try #require(context.faultFailure)
            #expect(failure.description.contains("could not be read from its store") && failure.description.contains("ZPRODUCT"), "\(failure)")
            #expect(failure.code == "context.faultFailed")
            #expect(product.isFault, "a fault that failed stays a fault")
            let error = #expect(throws: ContextError.self) { try context.save() }
            #expect(error?.code == "context.faultFailed")
            #expect(throws: ContextError.self) { try context.existingObject(with: ids.product) }
        }
        // Nothing was written: the category keeps its name.
        #expect(try stack.sql("SELECT ZNAME FROM ZCATEGORY") == [[.text("Tools")]])
        try SQLiteConnection(path: stack.url.path, mode: .readWrite(create: false)).execute("ALTER TABLE ZPRODUCT_AWAY RENAME TO ZPRODUCT")
        context.performAndWait {
            context.rollback()
            #expect(context.faultFailure == nil)
            #expect(context.object(with: ids.product).value(forKey: "name") as? String == "Bolt")
        }
    }

    @Test("a to-many fault that cannot be read keeps the error and stays a fault")
    func toManyFault() throws {
        let stack = try TestStack()
        let ids = try filled(stack)
        let context = stack.context()
        try context.performAndWait {
            let category = try context.existingObject(with: ids.category)
            try breakProducts(stack)
            #expect(category.objects(forKey: "products").isEmpty)
            #expect(context.faultFailure != nil)
            #expect(throws: ContextError.self) { try context.save() }
        }
        try SQLiteConnection(path: stack.url.path, mode: .readWrite(create: false)).execute("ALTER TABLE ZPRODUCT_AWAY RENAME TO ZPRODUCT")
        try context.performAndWait {
            context.reset()
            let category = try context.existingObject(with: ids.category)
            #expect(category.objects(forKey: "products").count == 1, "read again once the store answers")
        }
    }

    @Test("an object deleted elsewhere is not a failure: its fault reads empty, as before")
    func deletedElsewhere() throws {
        let stack = try TestStack()
        let ids = try filled(stack)
        let context = stack.context()
        try context.performAndWait {
            let product = context.object(with: ids.product)
            try SQLiteConnection(path: stack.url.path, mode: .readWrite(create: false)).execute("DELETE FROM ZPRODUCT")
            #expect(product.value(forKey: "name") == nil)
            #expect(context.faultFailure == nil)
        }
    }
}
