import Foundation
import Testing
@testable import Lade

@Suite("Contexts and managed objects on a SQLite store")
struct ContextTests {
    @Test("every attribute type saves and reads back; rows are written as Core Data writes them")
    func roundTrip() throws {
        let stack = try TestStack()
        let created = Date(timeIntervalSinceReferenceDate: 700_000_000.25)
        let id = UUID()
        try stack.context().performAndWait {
            let product = try TestStack.product("A-100", in: stack.context(), price: Decimal(string: "19.99")!)
            _ = product
        }
        let context = stack.context()
        try context.performAndWait {
            let product = try TestStack.product("B-200", in: context, name: "Zoë's drill ✓", price: Decimal(string: "19.99")!)
            try product.setValue(created, forKey: "createdAt")
            try product.setValue(id, forKey: "id")
            try product.setValue(Data([0, 1, 2, 255]), forKey: "thumbnail")
            try product.setValue(2.5, forKey: "weight")
            try product.setValue(42, forKey: "stock")
            try product.setValue(false, forKey: "active")
            try context.save()
        }
        let reader = stack.context()
        try reader.performAndWait {
            let product = try #require(try reader.fetch(FetchRequest(entityName: "Product")).first)
            #expect(product.isFault)
            #expect(product["sku"] as? String == "B-200")
            #expect(!product.isFault)
            #expect(product["name"] as? String == "Zoë's drill ✓")
            #expect(product["price"] as? Decimal == Decimal(string: "19.99"))
            #expect(product["createdAt"] as? Date == created)
            #expect(product["id"] as? UUID == id)
            #expect(product["thumbnail"] as? Data == Data([0, 1, 2, 255]))
            #expect(product["weight"] as? Double == 2.5)
            #expect(product["stock"] as? Int == 42)
            #expect(product["active"] as? Bool == false)
            #expect(product["updatedAt"] == nil)
        }
        let row = try #require(try stack.sql("SELECT Z_ENT, Z_OPT, ZCREATEDAT, ZACTIVE, typeof(ZID), length(ZID) FROM ZPRODUCT").first)
        #expect(row == [.integer(5), .integer(1), .real(700_000_000.25), .integer(0), .text("blob"), .integer(16)])
        #expect(try stack.sql("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Product'").first?.first == .integer(1))
    }

    @Test("new objects get the model's defaults; a wrong type, an unknown key and an out-of-range integer are refused")
    func defaultsAndTypes() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let product = try context.insertObject(forEntityName: "Product")
            #expect(product["active"] as? Bool == true)
            #expect(product["stock"] as? Int == 0)
            #expect(throws: ContextError.self) { try product.setValue("many", forKey: "stock") }
            #expect(throws: ContextError.self) { try product.setValue(1, forKey: "description") }
            let category = try context.insertObject(forEntityName: "Category")
            #expect(throws: ContextError.self) { try category.setValue(40_000, forKey: "sortOrder") }
            #expect(throws: ContextError.self) { try product.setValue(category, forKey: "supplier") }
            #expect(throws: ContextError.self) { try context.insertObject(forEntityName: "Media") }
            // By layout position: the same checks, the same change as by name.
            let stock = try #require(product.layout.attributeIndex(of: "stock"))
            try product.setAttributeValue(.integer(7), at: stock)
            #expect(product["stock"] as? Int == 7)
            #expect(throws: ContextError.self) { try product.setAttributeValue(.string("many"), at: stock) }
            #expect(throws: ContextError.self) { try product.setAttributeValue(.integer(1), at: product.layout.attributes.count) }
            #expect(throws: ContextError.self) { try product.setAttributeValue(.integer(1), at: -1) }
            // A to-one by position: the inverse follows, a wrong destination or position is refused.
            let categoryIndex = try #require(product.layout.relationshipIndex(of: "category"))
            try product.setObject(category, at: categoryIndex)
            #expect(product.object(forKey: "category") === category)
            #expect(category.objects(forKey: "products").contains { $0 === product })
            try product.setObject(nil, at: categoryIndex)
            #expect(product.object(forKey: "category") == nil)
            #expect(!category.objects(forKey: "products").contains { $0 === product })
            #expect(throws: ContextError.self) { try product.setObject(product, at: categoryIndex) }
            let products = try #require(category.layout.relationshipIndex(of: "products"))
            #expect(throws: ContextError.self) { try category.setObject(product, at: products) }
            #expect(throws: ContextError.self) { try product.setObject(category, at: product.layout.relationships.count) }
        }
    }

    @Test("several attributes by position: as one at a time (skipped, cleared, checked in order), with change tracking and one undo step on a saved object")
    func attributeValuesByPosition() throws {
        let stack = try TestStack()
        let context = stack.context()
        let layout = try #require(stack.model.layout(of: "Product"))
        let stock = try #require(layout.attributeIndex(of: "stock"))
        let name = try #require(layout.attributeIndex(of: "name"))
        let details = try #require(layout.attributeIndex(of: "details"))
        let active = try #require(layout.attributeIndex(of: "active"))
        try context.performAndWait {
            let product = try TestStack.product("P-1", in: context, name: "Drill")
            try product.setValue("sharp", forKey: "details")
            // .none leaves `name`, .some(nil) clears `details`.
            try product.setAttributeValues([.some(.integer(3)), .none, .some(nil)], at: [stock, name, details])
            #expect(product["stock"] as? Int == 3)
            #expect(product["name"] as? String == "Drill")
            #expect(product["details"] == nil)
            // A wrong type stops there: the values before it stay set, the ones after are not.
            #expect(throws: ContextError.self) {
                try product.setAttributeValues([.some(.integer(9)), .some(.string("yes")), .some(.string("Saw"))], at: [stock, active, name])
            }
            #expect(product["stock"] as? Int == 9)
            #expect(product["active"] as? Bool == true)
            #expect(product["name"] as? String == "Drill")
            #expect(throws: ContextError.self) { try product.setAttributeValues([.some(.integer(1))], at: [layout.attributes.count]) }
            #expect(throws: ContextError.self) { try product.setAttributeValues([.some(.integer(1))], at: [-1]) }
            try context.save()
        }
        let editor = stack.context()
        try editor.performAndWait {
            editor.undoManager = ContextUndoManager()
            let product = try #require(try editor.fetch(FetchRequest(entityName: "Product")).first)
            #expect(product.isFault)
            // Equal values change nothing.
            try product.setAttributeValues([.some(.integer(9)), .some(.string("Drill"))], at: [stock, name])
            #expect(!editor.hasChanges)
            try product.setAttributeValues([.some(.integer(4)), .some(.string("Drill")), .some(.string("blunt"))], at: [stock, name, details])
            #expect(editor.updatedObjects.contains(product))
            #expect(product["stock"] as? Int == 4 && product["details"] as? String == "blunt")
            // One undo step for the call.
            editor.undoManager?.undo()
            #expect(product["stock"] as? Int == 9)
            #expect(product["details"] == nil)
            #expect(product["name"] as? String == "Drill")
        }
    }

    @Test("setting a to-one relationship keeps the inverse to-many in step, before and after save")
    func inverses() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let tools = try TestStack.category("Tools", in: context)
            let garden = try TestStack.category("Garden", in: context)
            let drill = try TestStack.product("D-1", in: context)
            try drill.setValue(tools, forKey: "category")
            #expect(tools.objects(forKey: "products") == [drill])
            try drill.setValue(garden, forKey: "category")
            #expect(tools.objects(forKey: "products").isEmpty)
            #expect(garden.objects(forKey: "products") == [drill])
            try garden.remove(drill, fromKey: "products")
            #expect(drill["category"] == nil)
            try tools.add(drill, toKey: "products")
            #expect(drill.object(forKey: "category") === tools)
            try context.save()
        }
        let reader = stack.context()
        try reader.performAndWait {
            var request = FetchRequest(entityName: "Category", sortDescriptors: [FetchSortDescriptor("name")])
            request.returnsObjectsAsFaults = false
            let categories = try reader.fetch(request)
            #expect(categories.map { $0["name"] as? String } == ["Garden", "Tools"])
            #expect(categories[0].objects(forKey: "products").isEmpty)
            #expect(categories[1].objects(forKey: "products").map { $0["sku"] as? String } == ["D-1"])
            // Moving a product whose old category's set is still a fault keeps both sides right.
            let drill = categories[1].objects(forKey: "products")[0]
            let other = stack.context()
            try other.performAndWait {
                let product = try #require(try other.fetch(FetchRequest(entityName: "Product")).first)
                let garden = try #require(try other.fetch(FetchRequest(entityName: "Category", predicate: .compare(.keyPath("name"), .equal, .constant(.string("Garden"))))).first)
                try product.setValue(garden, forKey: "category")
                try other.save()
            }
            reader.refresh(categories[0], mergeChanges: false)
            reader.refresh(categories[1], mergeChanges: false)
            reader.refresh(drill, mergeChanges: false)
            #expect(categories[0].objects(forKey: "products").count == 1)
            #expect(categories[1].objects(forKey: "products").isEmpty)
        }
    }

    @Test("many-to-many links are stored in Core Data's join table and read back from both sides")
    func manyToMany() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let acme = try context.insertObject(forEntityName: "Supplier")
            try acme.setValue("ACME", forKey: "code")
            let bolt = try context.insertObject(forEntityName: "Supplier")
            try bolt.setValue("BOLT", forKey: "code")
            let drill = try TestStack.product("D-1", in: context)
            let saw = try TestStack.product("S-1", in: context)
            try drill.setValue(Set([acme, bolt]), forKey: "suppliers")
            try saw.add(acme, toKey: "suppliers")
            #expect(Set(acme.objects(forKey: "products")) == [drill, saw])
            try context.save()
            try drill.remove(bolt, fromKey: "suppliers")
            try context.save()
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM Z_5SUPPLIERS").first?.first == .integer(2))
        let reader = stack.context()
        try reader.performAndWait {
            let acme = try #require(try reader.fetch(FetchRequest(entityName: "Supplier", predicate: .compare(.keyPath("code"), .equal, .constant(.string("ACME"))))).first)
            #expect(Set(acme.objects(forKey: "products").map { $0["sku"] as? String }) == ["D-1", "S-1"])
            let bolt = try #require(try reader.fetch(FetchRequest(entityName: "Supplier", predicate: .compare(.keyPath("code"), .equal, .constant(.string("BOLT"))))).first)
            #expect(bolt.objects(forKey: "products").isEmpty)
        }
    }

    @Test("an ordered to-many keeps its order through save, reorder and reload")
    func orderedToMany() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let drill = try TestStack.product("D-1", in: context)
            var media: [ManagedObject] = []
            for (entity, url) in [("Image", "https://e.x/1.png"), ("Video", "https://e.x/2.mp4"), ("Image", "https://e.x/3.png")] {
                let item = try context.insertObject(forEntityName: entity)
                try item.setValue(URL(string: url)!, forKey: "url")
                media.append(item)
            }
            try drill.setValue(media, forKey: "media")
            try context.save()
        }
        func urls() throws -> [String] {
            let reader = stack.context()
            return try reader.performAndWait {
                let drill = try #require(try reader.fetch(FetchRequest(entityName: "Product")).first)
                return drill.objects(forKey: "media").map { ($0["url"] as? URL)?.lastPathComponent ?? "?" }
            }
        }
        #expect(try urls() == ["1.png", "2.mp4", "3.png"])
        let editor = stack.context()
        try editor.performAndWait {
            let drill = try #require(try editor.fetch(FetchRequest(entityName: "Product")).first)
            try drill.setValue(Array(drill.objects(forKey: "media").reversed()), forKey: "media")
            #expect(drill.objects(forKey: "media").map(\.entity.name) == ["Image", "Video", "Image"])
            try editor.save()
        }
        #expect(try urls() == ["3.png", "2.mp4", "1.png"])
    }

    @Test("delete rules: cascade deletes media, nullify empties the inverse, deny refuses while related")
    func deleteRules() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let tools = try TestStack.category("Tools", in: context)
            let drill = try TestStack.product("D-1", in: context)
            try drill.setValue(tools, forKey: "category")
            let image = try context.insertObject(forEntityName: "Image")
            try image.setValue(URL(string: "https://e.x/d.png")!, forKey: "url")
            try drill.add(image, toKey: "media")
            try context.save()

            context.delete(tools)
            let denied = #expect(throws: ObjectValidationError.self) { try context.save() }
            #expect(denied?.failures.map(\.rule) == [.deny])
            #expect(denied?.failures.first?.property == "products")
            context.rollback()

            context.delete(drill)
            try context.save()
            #expect(tools.objects(forKey: "products").isEmpty)
            context.delete(tools)
            try context.save()
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZMEDIA").first?.first == .integer(0))
        #expect(try stack.sql("SELECT COUNT(*) FROM ZPRODUCT").first?.first == .integer(0))
        #expect(try stack.sql("SELECT COUNT(*) FROM ZCATEGORY").first?.first == .integer(0))
    }

    @Test("validation at save reports every failure together, each with object, property, rule and value")
    func validation() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let bad = try context.insertObject(forEntityName: "Product")
            try bad.setValue("lower-case", forKey: "sku")
            try bad.setValue(Decimal(-1), forKey: "price")
            let category = try context.insertObject(forEntityName: "Category")
            try category.setValue(String(repeating: "x", count: 81), forKey: "name")
            let error = #expect(throws: ObjectValidationError.self) { try context.save() }
            let failures = error?.failures ?? []
            #expect(Set(failures.map { "\($0.objectID.entityName).\($0.property):\($0.rule.rawValue)" }) == [
                "Product.sku:pattern", "Product.name:required", "Product.price:minimum", "Category.name:maximum",
            ])
            #expect(failures.first { $0.property == "sku" }?.value == "lower-case")
            #expect(error?.description.contains("4 validation failures") == true)
            #expect(context.hasChanges)
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZPRODUCT").first?.first == .integer(0))
    }

    @Test("uniquing: one object per ID per context; fetched objects are faults until used")
    func uniquingAndFaults() throws {
        let stack = try TestStack()
        stack.context().performAndWait {}
        let writer = stack.context()
        try writer.performAndWait {
            try TestStack.product("U-1", in: writer)
            try writer.save()
        }
        let context = stack.context()
        try context.performAndWait {
            let first = try context.fetch(FetchRequest(entityName: "Product"))
            let second = try context.fetch(FetchRequest(entityName: "Product"))
            #expect(first[0] === second[0])
            #expect(context.object(with: first[0].objectID) === first[0])
            #expect(first[0].isFault)
            _ = first[0]["sku"]
            #expect(!first[0].isFault)
        }
    }

    @Test("predicates and sorting run in SQL, and unsaved changes count in fetches")
    func fetching() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let tools = try TestStack.category("Tools", in: context)
            for (sku, price) in [("A-1", 5), ("B-2", 15), ("C-3", 25), ("D-4", 35)] {
                let product = try TestStack.product(sku, in: context, price: Decimal(price))
                if price > 10 { try product.setValue(tools, forKey: "category") }
            }
            try context.save()

            func skus(_ predicate: FetchPredicate?, sort: [FetchSortDescriptor] = [FetchSortDescriptor("sku")], limit: Int = 0, offset: Int = 0) throws -> [String] {
                var request = FetchRequest(entityName: "Product", predicate: predicate, sortDescriptors: sort)
                request.fetchLimit = limit
                request.fetchOffset = offset
                return try context.fetch(request).map { $0["sku"] as! String }
            }
            #expect(try skus(.compare(.keyPath("price"), .greaterThan, .constant(.decimal(10)))) == ["B-2", "C-3", "D-4"])
            #expect(try skus(.compare(.keyPath("sku"), .in, .constant(.collection([.string("A-1"), .string("D-4"), .string("Z-9")])))) == ["A-1", "D-4"])
            #expect(try skus(.compare(.keyPath("category.name"), .equal, .constant(.string("Tools")))) == ["B-2", "C-3", "D-4"])
            #expect(try skus(.compare(.keyPath("category"), .equal, .constant(.null))) == ["A-1"])
            #expect(try skus(.compare(.keyPath("category"), .equal, .constant(.object(tools.objectID)))) == ["B-2", "C-3", "D-4"])
            #expect(try skus(.not(.compare(.keyPath("category.name"), .equal, .constant(.string("Tools"))))) == ["A-1"])
            #expect(try skus(.compare(.keyPath("sku"), .beginsWith, .constant(.string("C")))) == ["C-3"])
            #expect(try skus(nil, sort: [FetchSortDescriptor("price", ascending: false)], limit: 2, offset: 1) == ["C-3", "B-2"])
            #expect(try context.count(for: FetchRequest(entityName: "Product", predicate: .compare(.keyPath("price"), .between, .constant(.collection([.integer(10), .integer(30)]))))) == 2)

            // Unsaved: a new product, a changed price and a deletion are seen by the next fetch.
            try TestStack.product("E-5", in: context, price: 45)
            let a = try #require(try context.fetch(FetchRequest(entityName: "Product", predicate: .compare(.keyPath("sku"), .equal, .constant(.string("A-1"))))).first)
            try a.setValue(Decimal(50), forKey: "price")
            let d = try #require(try context.fetch(FetchRequest(entityName: "Product", predicate: .compare(.keyPath("sku"), .equal, .constant(.string("D-4"))))).first)
            context.delete(d)
            #expect(try skus(.compare(.keyPath("price"), .greaterThan, .constant(.integer(20))), sort: [FetchSortDescriptor("price")]) == ["C-3", "E-5", "A-1"])
            #expect(try skus(.compare(.keyPath("price"), .greaterThan, .constant(.integer(20))), sort: [FetchSortDescriptor("price")], limit: 1, offset: 1) == ["E-5"])
            #expect(try context.count(for: FetchRequest(entityName: "Product")) == 4)
            var stored = FetchRequest(entityName: "Product")
            stored.includesPendingChanges = false
            #expect(try context.count(for: stored) == 4)
            #expect(try context.fetch(stored).count == 4)
        }
    }

    @Test("a fetch of an entity includes its subentities unless told not to")
    func subentities() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            for (entity, name) in [("Image", "a.png"), ("Video", "b.mp4"), ("Image", "c.png")] {
                let item = try context.insertObject(forEntityName: entity)
                try item.setValue(URL(string: "https://e.x/\(name)")!, forKey: "url")
            }
            try context.save()
            #expect(try context.count(for: FetchRequest(entityName: "Media")) == 3)
            #expect(try context.fetch(FetchRequest(entityName: "Image")).count == 2)
            var exact = FetchRequest(entityName: "Media")
            exact.includesSubentities = false
            #expect(try context.count(for: exact) == 0)
            #expect(Set(try context.fetch(FetchRequest(entityName: "Media")).map(\.entity.name)) == ["Image", "Video"])
        }
        #expect(try stack.sql("SELECT Z_ENT, COUNT(*) FROM ZMEDIA GROUP BY Z_ENT ORDER BY Z_ENT") == [[.integer(3), .integer(2)], [.integer(4), .integer(1)]])
    }

    @Test("object IDs are temporary until save or obtainPermanentIDs; their URI resolves through the coordinator")
    func objectIDs() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let first = try TestStack.product("P-1", in: context)
            let second = try TestStack.product("P-2", in: context)
            #expect(first.objectID.isTemporaryID)
            try context.obtainPermanentIDs(for: [first])
            #expect(!first.objectID.isTemporaryID)
            #expect(second.objectID.isTemporaryID)
            try context.save()
            #expect(!second.objectID.isTemporaryID)
            let uri = second.objectID.uriRepresentation()
            let store = try #require(stack.coordinator.persistentStores.first)
            #expect(uri.absoluteString == "x-coredata://\(store.identifier)/Product/p2")
            #expect(stack.coordinator.managedObjectID(forURIRepresentation: uri) == second.objectID)
            #expect(stack.coordinator.managedObjectID(forURIRepresentation: URL(string: "x-coredata://OTHER/Product/p2")!) == nil)
            let other = stack.context()
            let secondID = second.objectID
            let sku = try other.performAndWait { try other.existingObject(with: secondID)["sku"] as? String }
            #expect(sku == "P-2")
        }
    }

    @Test("reset forgets everything; rollback undoes inserts, changes and deletes")
    func resetAndRollback() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let kept = try TestStack.product("K-1", in: context, name: "Kept")
            try context.save()
            try kept.setValue("Changed", forKey: "name")
            try TestStack.product("N-1", in: context)
            #expect(context.hasChanges)
            context.rollback()
            #expect(!context.hasChanges)
            #expect(kept["name"] as? String == "Kept")
            #expect(try context.count(for: FetchRequest(entityName: "Product")) == 1)
            context.delete(kept)
            context.rollback()
            #expect(try context.count(for: FetchRequest(entityName: "Product")) == 1)

            try kept.setValue("Again", forKey: "name")
            context.reset()
            #expect(!context.hasChanges)
            #expect(context.registeredObjects.isEmpty)
            #expect(kept.managedObjectContext == nil)
            let fresh = try context.fetch(FetchRequest(entityName: "Product"))
            #expect(fresh[0] !== kept)
            #expect(fresh[0]["name"] as? String == "Kept")
        }
    }

    @Test("a context holds strong references only to objects with unsaved changes")
    func strongReferences() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            for index in 0..<50 { try TestStack.product("R-\(index)", in: context) }
            try context.save()
        }
        try context.performAndWait {
            #expect(context.registeredObjects.isEmpty)
            var changedID: ManagedObjectID?
            do {
                let all = try context.fetch(FetchRequest(entityName: "Product"))
                #expect(context.registeredObjects.count == 50)
                try all[7].setValue("Edited", forKey: "name")
                changedID = all[7].objectID
            }
            #expect(context.registeredObjects.map(\.objectID) == [changedID])
            try context.save()
            #expect(context.registeredObjects.isEmpty)
        }
    }

    @Test("refresh drops or keeps unsaved changes on top of the store's values")
    func refresh() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let product = try TestStack.product("F-1", in: context, name: "One")
            try context.save()
            let other = stack.context()
            try other.performAndWait {
                let mine = try #require(try other.fetch(FetchRequest(entityName: "Product")).first)
                try mine.setValue(Decimal(99), forKey: "price")
                try other.save()
            }
            try product.setValue("Two", forKey: "name")
            context.refresh(product, mergeChanges: true)
            #expect(product["name"] as? String == "Two")
            #expect(product["price"] as? Decimal == 99)
            context.refresh(product, mergeChanges: false)
            #expect(product["name"] as? String == "One")
            #expect(!context.hasChanges)
        }
    }

    /// Ensuring Data Is Up to Date, "Merging Changes with Transient Properties", with the guide's
    /// own example: Sarit Smith becomes Fiona in one context while another changes her last name
    /// and keeps a cached transient full name; refreshObject:mergeChanges:YES takes firstName from
    /// the store and restores the changed lastName and the transient fullName to their
    /// prerefresh values.
    @Test("Ensuring Data Is Up to Date: refresh(mergeChanges: true) keeps transient values and unsaved changes; other values come from the store")
    func refreshKeepsTransientsAndChanges() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Person", attributes: [
            AttributeDescription(name: "firstName", type: .string),
            AttributeDescription(name: "lastName", type: .string),
            AttributeDescription(name: "fullName", type: .string, isTransient: true),
        ])])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("people.sqlite"))
        func context() -> ManagedObjectContext {
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            return context
        }
        let one = context(), two = context()
        let id = try one.performAndWait {
            let person = try one.insertObject(forEntityName: "Person")
            try person.setValue("Sarit", forKey: "firstName")
            try person.setValue("Smith", forKey: "lastName")
            try one.save()
            return person.objectID
        }
        try two.performAndWait {
            let person = try two.existingObject(with: id)
            // The transient cached and a save made since: the cache is no unsaved change.
            try person.setValue("Sarit Smith", forKey: "fullName")
            try two.save()
            #expect(!person.hasChanges)
            two.refresh(person, mergeChanges: true)
            #expect(person["fullName"] as? String == "Sarit Smith", "a transient value survives a refresh with no unsaved change")
        }
        try one.performAndWait {
            try one.existingObject(with: id).setValue("Fiona", forKey: "firstName")
            try one.save()
        }
        try two.performAndWait {
            let person = try two.existingObject(with: id)
            try person.setValue("Jones", forKey: "lastName")
            try person.setValue("Sarit Jones", forKey: "fullName")
            two.refresh(person, mergeChanges: true)
            #expect(person["firstName"] as? String == "Fiona", "not changed here: the store's value")
            #expect(person["lastName"] as? String == "Jones", "changed here: kept")
            #expect(person["fullName"] as? String == "Sarit Jones", "transient: its prerefresh value")
            #expect(two.updatedObjects == [person])
            try two.save()
        }
        let reader = context()
        try reader.performAndWait {
            let person = try reader.existingObject(with: id)
            #expect(person["firstName"] as? String == "Fiona" && person["lastName"] as? String == "Jones", "the refreshed object saves over the store's newer row without a conflict")
        }
    }

    @Test("a uniqueness constraint broken at save names the entity and the constraint")
    func uniqueness() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            try TestStack.product("SAME", in: context)
            try context.save()
            try TestStack.product("SAME", in: context)
            let error = #expect(throws: ContextError.self) { try context.save() }
            #expect(error?.description.contains("another Product already has the same sku") == true)
        }
    }

    @Test("metadata set on the coordinator is written with the next save, in the same transaction")
    func metadataWithSave() throws {
        let stack = try TestStack()
        let store = try #require(stack.coordinator.persistentStores.first)
        var metadata = stack.coordinator.metadata(for: store)
        metadata["com.example.flag"] = .bool(true)
        try stack.coordinator.setMetadata(metadata, for: store)
        var forged = metadata
        forged[StoreMetadata.Key.storeType] = .string("XML")
        #expect(throws: StoreError.self) { try stack.coordinator.setMetadata(forged, for: store) }
        #expect(store.metadata["com.example.flag"] == nil)
        let context = stack.context()
        try context.performAndWait {
            try TestStack.product("M-1", in: context)
            try context.save()
        }
        #expect(store.metadata["com.example.flag"] == .bool(true))
        let reopened = try SQLiteStore(url: stack.url, model: stack.model, readOnly: true)
        #expect(reopened.metadata["com.example.flag"] == .bool(true))
        #expect(reopened.metadata[StoreMetadata.Key.storeUUID] == .string(store.identifier))
    }

    @Test("perform runs on the context's queue; async perform returns the block's result")
    func queues() async throws {
        let stack = try TestStack()
        let context = stack.context()
        let count = try await context.perform {
            try TestStack.product("Q-1", in: context)
            try context.save()
            return try context.count(for: FetchRequest(entityName: "Product"))
        }
        #expect(count == 1)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            context.perform {
                #expect(context.hasChanges == false)
                done.resume()
            }
        }
    }

    /// Troubleshooting Core Data, "+entityForName: could not locate an NSManagedObjectModel":
    /// "make sure that the managed object context has an associated coordinator". Without one
    /// the context has no model: every request is an error the caller can handle, not a trap.
    @Test("Troubleshooting Core Data (could not locate an NSManagedObjectModel): a context with no coordinator throws on insert, fetch and save, and never traps")
    func noCoordinator() throws {
        let stack = try TestStack()
        let saver = stack.context()
        let id = try saver.performAndWait {
            let product = try TestStack.product("NC-1", in: saver)
            try saver.save()
            return product.objectID
        }
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        let child = ManagedObjectContext(concurrencyType: .privateQueue)
        child.parent = context
        func expectNoCoordinator(_ what: String, _ body: () throws -> Void) {
            let error = #expect(throws: ContextError.self, "\(what)") { try body() }
            #expect(error?.code == "context.noCoordinator", "\(what): \(String(describing: error))")
        }
        for context in [context, child] {
            context.performAndWait {
                expectNoCoordinator("insert") { try context.insertObject(forEntityName: "Product") }
                expectNoCoordinator("fetch") { _ = try context.fetch(FetchRequest(entityName: "Product")) }
                expectNoCoordinator("fetch IDs") { _ = try context.fetchObjectIDs(FetchRequest(entityName: "Product")) }
                expectNoCoordinator("fetch dictionaries") { _ = try context.fetchDictionaries(FetchRequest(entityName: "Product")) }
                expectNoCoordinator("count") { _ = try context.count(for: FetchRequest(entityName: "Product")) }
                expectNoCoordinator("existing object") { _ = try context.existingObject(with: id) }
                expectNoCoordinator("save") { try context.save() }
                expectNoCoordinator("batch insert") { _ = try context.execute(BatchInsertRequest(entityName: "Supplier", objects: [["code": .string("S")]])) }
                expectNoCoordinator("batch update") { _ = try context.execute(BatchUpdateRequest(entityName: "Product", propertiesToUpdate: ["stock": .integer(1)])) }
                expectNoCoordinator("batch delete") { _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Product"))) }
            }
        }
        // The guide says not to set a context's coordinator to nil; doing it anyway is an error too.
        let dropped = stack.context()
        try dropped.performAndWait {
            let product = try TestStack.product("NC-2", in: dropped)
            dropped.persistentStoreCoordinator = nil
            expectNoCoordinator("save after the coordinator was set to nil") { try dropped.save() }
            expectNoCoordinator("insert after the coordinator was set to nil") { try dropped.insertObject(forEntityName: "Product") }
            #expect(product.value(forKey: "sku") as? String == "NC-2", "the objects it holds still read")
        }
    }

    @Test("the registry of objects drops released ones as it grows, before and after a reset (memory stays flat in a long run)")
    func registryStaysFlat() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            var sku = 0
            func insertAndSave(_ rounds: Int) throws {
                for _ in 0..<rounds {
                    for _ in 0..<500 { sku += 1; _ = try TestStack.product("R-\(sku)", in: context) }
                    try context.save()   // the objects are released: nothing else holds them
                }
            }
            try insertAndSave(8)
            #expect(context.registeredCount < 3_000, "4,000 objects registered, at most 500 alive at once")
            let beforeReset = context.registeredCount
            context.reset()
            #expect(context.registeredCount == 0)
            try insertAndSave(16)
            #expect(context.registeredCount <= 2 * max(1_024, beforeReset) + 500, "8,000 more after the reset")
        }
    }
}
