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
}
