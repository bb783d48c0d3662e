import Foundation
import Testing
@testable import Lade

@Suite("Undo")
struct UndoTests {
    @Test("with an undo manager, inserts, changes and deletes undo and redo; without one nothing is recorded")
    func undoRedo() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            #expect(context.undoManager == nil)
            context.undoManager = ContextUndoManager()
            let product = try TestStack.product("U-1", in: context, name: "One")
            try context.save()
            try product.setValue("Two", forKey: "name")
            context.undoManager?.undo()
            #expect(product["name"] as? String == "One")
            context.undoManager?.redo()
            #expect(product["name"] as? String == "Two")

            let tools = try TestStack.category("Tools", in: context)
            context.undoManager?.beginUndoGrouping()
            try product.setValue(tools, forKey: "category")
            context.undoManager?.endUndoGrouping()
            context.undoManager?.undo()
            #expect(product["category"] == nil)
            #expect(tools.objects(forKey: "products").isEmpty)

            context.delete(product)
            #expect(context.deletedObjects.contains(product))
            context.undoManager?.undo()
            #expect(!context.deletedObjects.contains(product))

            let extra = try context.insertObject(forEntityName: "Supplier")
            #expect(context.insertedObjects.contains(extra))
            context.undoManager?.undo()
            #expect(!context.insertedObjects.contains(extra))
        }
    }

    /// Strong References in Change and Undo Management: "If the calls to undo cause all changes
    /// to be undone on a particular object, the object's strong reference will revert back to a
    /// weak reference."
    @Test("Strong References in Change and Undo Management: undoing every change of an object leaves it unchanged, and a save writes nothing for it")
    func undoingEveryChange() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let product = try TestStack.product("U-1", in: context, name: "One", price: 5)
            let tools = try TestStack.category("Tools", in: context)
            try context.save()
            context.undoManager = ContextUndoManager()
            try product.setValue("Two", forKey: "name")
            try product.setValue("Three", forKey: "name")
            try product.setValue(Decimal(7), forKey: "price")
            context.undoManager?.beginUndoGrouping()
            try product.setValue(tools, forKey: "category")
            context.undoManager?.endUndoGrouping()
            #expect(context.updatedObjects == [product, tools])
            for _ in 0..<4 { context.undoManager?.undo() }
            #expect(product["name"] as? String == "One" && product["price"] as? Decimal == 5 && product["category"] == nil)
            #expect(context.updatedObjects.isEmpty, "\(context.updatedObjects)")
            #expect(!product.hasChanges && !tools.hasChanges)
            #expect(!context.hasChanges)

            // Undone part of the way: still changed; redone and undone again: unchanged again.
            context.undoManager?.redo()
            context.undoManager?.redo()
            #expect(context.updatedObjects == [product] && product["name"] as? String == "Three")
            context.undoManager?.undo()
            #expect(context.updatedObjects == [product] && product["name"] as? String == "Two")
            context.undoManager?.undo()
            #expect(!context.hasChanges)
            try context.save()
        }
        #expect(try stack.sql("SELECT ZNAME, Z_OPT FROM ZPRODUCT") == [[.text("One"), .integer(1)]], "the save wrote nothing for the product")
        #expect(try stack.sql("SELECT Z_OPT FROM ZCATEGORY") == [[.integer(1)]])
    }

    @Test("Strong References in Change and Undo Management: an object whose changes were all undone is held weakly again")
    func undoneObjectIsHeldWeakly() throws {
        let stack = try TestStack()
        let context = stack.context()
        let id = try context.performAndWait {
            let product = try TestStack.product("U-1", in: context, name: "One")
            try context.save()
            return product.objectID
        }
        try context.performAndWait {
            context.undoManager = ContextUndoManager()
            weak var released: ManagedObject?
            do {
                let product = try context.existingObject(with: id)
                try product.setValue("Two", forKey: "name")
                context.undoManager?.undo()
                released = product
            }
            #expect(released == nil, "nothing but the caller held it")
            #expect(context.registeredObjects.isEmpty)
        }
    }

    @Test("Strong References in Change and Undo Management: a save after undoing every change of an object another context deleted meanwhile succeeds (no conflict about a change nobody made)")
    func undoneChangeOfAnObjectDeletedElsewhere() throws {
        let stack = try TestStack()
        let context = stack.context()
        let (id, otherID) = try context.performAndWait {
            let product = try TestStack.product("U-1", in: context, name: "One")
            let other = try TestStack.product("U-2", in: context, name: "Other")
            try context.save()
            return (product.objectID, other.objectID)
        }
        try context.performAndWait {
            context.undoManager = ContextUndoManager()
            let product = try context.existingObject(with: id)
            try product.setValue("Two", forKey: "name")
            context.undoManager?.undo()

            let other = stack.context()
            try other.performAndWait {
                other.delete(try other.existingObject(with: id))
                try other.save()
            }
            let kept = try context.existingObject(with: otherID)
            try kept.setValue("Other, renamed", forKey: "name")
            try context.save()
        }
        #expect(try stack.sql("SELECT ZNAME FROM ZPRODUCT") == [[.text("Other, renamed")]])
    }

    @Test("a relationship set outside an undo group is one undo step, its inverse with it, as an attribute set is")
    func relationshipSetIsOneUndoStep() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let product = try TestStack.product("U-1", in: context, name: "One")
            let tools = try TestStack.category("Tools", in: context)
            let supplier = try context.insertObject(forEntityName: "Supplier")
            try supplier.setValue("S-1", forKey: "code")
            try context.save()
            context.undoManager = ContextUndoManager()

            try product.setValue(tools, forKey: "category")
            context.undoManager?.undo()
            #expect(product["category"] == nil && tools.objects(forKey: "products").isEmpty)
            #expect(!context.hasChanges, "\(context.updatedObjects)")

            try product.add(supplier, toKey: "suppliers")
            context.undoManager?.undo()
            #expect(product.objects(forKey: "suppliers").isEmpty && supplier.objects(forKey: "products").isEmpty)
            #expect(!context.hasChanges, "\(context.updatedObjects)")

            try product.setValue([supplier], forKey: "suppliers")
            context.undoManager?.undo()
            #expect(product.objects(forKey: "suppliers").isEmpty && supplier.objects(forKey: "products").isEmpty)
            #expect(!context.hasChanges, "\(context.updatedObjects)")
            #expect(context.undoManager?.canUndo == false, "each set was one step")
        }
    }
}
