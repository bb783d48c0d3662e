import Foundation
import Testing
@testable import Lade

/// A fault whose store read fails, or whose row is gone, is an error (kept by the context when
/// the accessor cannot throw), never values read as empty and saved as if they were the object's.
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

    /// Troubleshooting Core Data, "Fault cannot be fulfilled": "The object that Core Data is
    /// trying to realize has been deleted from the persistent store."
    @Test("Faulting and Uniquing / Troubleshooting Core Data: firing a fault whose row another context deleted is an error (\"Core Data could not fulfill a fault\"), not an object with empty values")
    func deletedByAnotherContext() throws {
        let stack = try TestStack()
        let ids = try filled(stack)
        let context = stack.context()
        try context.performAndWait {
            let product = context.object(with: ids.product)
            let category = context.object(with: ids.category)
            try category.setValue("Hardware", forKey: "name")
            let other = stack.context()
            try other.performAndWait {
                let gone = try other.existingObject(with: ids.product)
                try gone.setObject(nil, forKey: "category")
                other.delete(gone)
                try other.save()
            }
            #expect(product.value(forKey: "name") == nil)
            let failure = try #require(context.faultFailure, "firing the fault of a deleted object is a failure the context keeps")
            #expect(failure.code == "context.faultNotFulfilled", "\(failure)")
            #expect(failure.description.contains("could not fulfill a fault"), "\(failure)")
            #expect(product.isFault, "a fault that could not be fulfilled stays a fault")
            let refused = #expect(throws: ContextError.self, "no save while a value read as nil may be written") { try context.save() }
            #expect(refused?.code == "context.faultNotFulfilled")
        }
        #expect(try stack.sql("SELECT ZNAME FROM ZCATEGORY") == [[.text("Tools")]], "nothing was written")
        context.performAndWait {
            context.rollback()
            #expect(context.faultFailure == nil)
        }
    }

    @Test("Troubleshooting Core Data: the throwing ways to fire a fault whose row another process deleted throw \"could not fulfill a fault\" and leave the context able to save")
    func deletedByAnotherProcess() throws {
        let stack = try TestStack()
        let ids = try filled(stack)
        let context = stack.context()
        try context.performAndWait {
            let product = context.object(with: ids.product)
            try SQLiteConnection(path: stack.url.path, mode: .readWrite(create: false)).execute("DELETE FROM ZPRODUCT")
            let fired = #expect(throws: ContextError.self) { try product.fulfillFault() }
            #expect(fired?.code == "context.faultNotFulfilled" && fired?.description.contains("could not fulfill a fault") == true, "\(String(describing: fired))")
            #expect(product.isFault)
            let lookedUp = #expect(throws: ContextError.self) { try context.existingObject(with: ids.product) }
            #expect(lookedUp?.code == "context.objectNotFound")
            let setError = #expect(throws: ContextError.self, "a setter has nothing to change") { try product.setValue("New", forKey: "name") }
            #expect(setError?.code == "context.faultNotFulfilled", "\(String(describing: setError))")
            #expect(!product.hasChanges && context.updatedObjects.isEmpty)
            #expect(context.faultFailure == nil, "an error thrown to the caller is the caller's to handle")
            let category = try context.existingObject(with: ids.category)
            try category.setValue("Hardware", forKey: "name")
            try context.save()
        }
        #expect(try stack.sql("SELECT ZNAME FROM ZCATEGORY") == [[.text("Hardware")]])
    }
}
