import Foundation
import Testing
@testable import Lade

@Suite("Parent and child contexts")
struct ParentChildTests {
    func child(of parent: ManagedObjectContext) -> ManagedObjectContext {
        let child = ManagedObjectContext(concurrencyType: .privateQueue)
        child.parent = parent
        return child
    }

    @Test("a child's save pushes to its parent; only the parent's save reaches the store")
    func childSavePushesToParent() throws {
        let stack = try TestStack()
        let parent = stack.context()
        let child = child(of: parent)
        try child.performAndWait {
            let tools = try TestStack.category("Tools", in: child)
            let drill = try TestStack.product("D-1", in: child, name: "Drill")
            try drill.setValue(tools, forKey: "category")
            try child.save()
            #expect(!child.hasChanges)
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZPRODUCT").first?.first == .integer(0))
        try parent.performAndWait {
            #expect(parent.hasChanges)
            #expect(parent.insertedObjects.count == 2)
            let drill = try #require(try parent.fetch(FetchRequest(entityName: "Product")).first)
            #expect(drill["name"] as? String == "Drill")
            #expect((drill["category"] as? ManagedObject)?["name"] as? String == "Tools")
            #expect((drill["category"] as? ManagedObject)?.objects(forKey: "products") == [drill])
            try parent.save()
        }
        #expect(try stack.sql("SELECT ZNAME, ZCATEGORY FROM ZPRODUCT").first == [.text("Drill"), .integer(1)])
    }

    @Test("a child sees its parent's unsaved inserts, changes and deletes")
    func childSeesParentState() throws {
        let stack = try TestStack()
        let parent = stack.context()
        let child = child(of: parent)
        let (keptID, goneID) = try parent.performAndWait { () -> (ManagedObjectID, ManagedObjectID) in
            let kept = try TestStack.product("K-1", in: parent, name: "Saved name")
            let gone = try TestStack.product("G-1", in: parent)
            try parent.save()
            try kept.setValue("Parent's name", forKey: "name")
            parent.delete(gone)
            try TestStack.product("N-1", in: parent, name: "New in parent")
            return (kept.objectID, gone.objectID)
        }
        try child.performAndWait {
            let skus = try child.fetch(FetchRequest(entityName: "Product", sortDescriptors: [FetchSortDescriptor("sku")])).map { $0["sku"] as? String }
            #expect(skus == ["K-1", "N-1"])
            #expect(child.object(with: keptID)["name"] as? String == "Parent's name")
            let named = try child.fetch(FetchRequest(entityName: "Product", predicate: .compare(.keyPath("name"), .equal, .constant(.string("Parent's name")))))
            #expect(named.map(\.objectID) == [keptID])
            #expect(try child.count(for: FetchRequest(entityName: "Product")) == 2)
            #expect(!skus.contains("G-1") && goneID.entityName == "Product")
        }
    }

    @Test("a child's changes and deletes of saved objects become the parent's unsaved changes")
    func childEditsSavedObjects() throws {
        let stack = try TestStack()
        let parent = stack.context()
        try parent.performAndWait {
            let tools = try TestStack.category("Tools", in: parent)
            for sku in ["A-1", "B-2"] { try TestStack.product(sku, in: parent).setValue(tools, forKey: "category") }
            try parent.save()
        }
        let child = child(of: parent)
        try child.performAndWait {
            let products = try child.fetch(FetchRequest(entityName: "Product", sortDescriptors: [FetchSortDescriptor("sku")]))
            try products[0].setValue("Renamed", forKey: "name")
            child.delete(products[1])
            try child.save()
        }
        try parent.performAndWait {
            #expect(parent.updatedObjects.count >= 1)
            #expect(parent.deletedObjects.count == 1)
            let tools = try #require(try parent.fetch(FetchRequest(entityName: "Category")).first)
            #expect(tools.objects(forKey: "products").map { $0["name"] as? String } == ["Renamed"])
            try parent.save()
        }
        #expect(try stack.sql("SELECT ZSKU, ZNAME FROM ZPRODUCT") == [[.text("A-1"), .text("Renamed")]])
    }
}
