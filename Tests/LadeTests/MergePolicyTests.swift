import Foundation
import Testing
@testable import Lade

/// Two coordinators on one file stand for two processes; each context reads the same product,
/// the first saves, then the second saves with a merge policy.
@Suite("Optimistic locking and merge policies")
struct MergePolicyTests {
    struct Outcome {
        var error: Error?
        var name: String?
        var price: Decimal?
        var version: Int64?
    }

    /// The first writer renames the product; the second changes `secondChanges` under `policy`.
    func conflict(policy: MergePolicy, secondChanges: [String: Any]) throws -> Outcome {
        let stack = try TestStack()
        let setup = stack.context()
        try setup.performAndWait {
            try TestStack.product("C-1", in: setup, name: "Original", price: 10)
            try setup.save()
        }
        let first = stack.context()
        let second = ManagedObjectContext(concurrencyType: .privateQueue)
        second.persistentStoreCoordinator = try stack.otherCoordinator()
        second.mergePolicy = policy
        let theirs = try second.performAndWait { () -> ManagedObject in
            let product = try #require(try second.fetch(FetchRequest(entityName: "Product")).first)
            _ = product["name"]
            return product
        }
        try first.performAndWait {
            let product = try #require(try first.fetch(FetchRequest(entityName: "Product")).first)
            try product.setValue("First", forKey: "name")
            try first.save()
        }
        var outcome = Outcome()
        second.performAndWait {
            do {
                for (key, value) in secondChanges { try theirs.setValue(value, forKey: key) }
                try second.save()
            } catch {
                outcome.error = error
            }
        }
        let row = try #require(try stack.sql("SELECT ZNAME, ZPRICE, Z_OPT FROM ZPRODUCT").first)
        if case .text(let name) = row[0] { outcome.name = name }
        switch row[1] {
        case .integer(let value): outcome.price = Decimal(value)
        case .real(let value): outcome.price = Decimal(value)
        default: break
        }
        if case .integer(let version) = row[2] { outcome.version = version }
        return outcome
    }

    @Test("with the error policy, a save over someone else's change fails and changes nothing")
    func errorPolicy() throws {
        let outcome = try conflict(policy: .error, secondChanges: ["price": Decimal(20)])
        guard case ContextError.mergeConflict(let conflicts)? = outcome.error else {
            Issue.record("expected a merge conflict, got \(String(describing: outcome.error))")
            return
        }
        #expect(conflicts.count == 1)
        #expect(conflicts.first?.expectedVersion == 1)
        #expect(conflicts.first?.storedVersion == 2)
        #expect(outcome.name == "First" && outcome.price == 10 && outcome.version == 2)
    }

    @Test("property object trump: my changed properties win, the store's other changes stay")
    func objectTrump() throws {
        let outcome = try conflict(policy: .mergeByPropertyObjectTrump, secondChanges: ["price": Decimal(20)])
        #expect(outcome.error == nil)
        #expect(outcome.name == "First" && outcome.price == 20 && outcome.version == 3)
        let both = try conflict(policy: .mergeByPropertyObjectTrump, secondChanges: ["name": "Second"])
        #expect(both.name == "Second")
    }

    @Test("property store trump: where both changed a property the store wins; my other changes are saved")
    func storeTrump() throws {
        let outcome = try conflict(policy: .mergeByPropertyStoreTrump, secondChanges: ["name": "Second", "price": Decimal(20)])
        #expect(outcome.error == nil)
        #expect(outcome.name == "First" && outcome.price == 20)
    }

    @Test("overwrite: the object as it is in memory replaces the store's row")
    func overwrite() throws {
        let outcome = try conflict(policy: .overwrite, secondChanges: ["price": Decimal(20)])
        #expect(outcome.error == nil)
        #expect(outcome.name == "Original" && outcome.price == 20)
    }

    @Test("rollback: my changes to the conflicting object are dropped")
    func rollback() throws {
        let outcome = try conflict(policy: .rollback, secondChanges: ["price": Decimal(20)])
        #expect(outcome.error == nil)
        #expect(outcome.name == "First" && outcome.price == 10 && outcome.version == 2)
    }

    @Test("two contexts on one coordinator conflict the same way")
    func sameCoordinator() throws {
        let stack = try TestStack()
        let a = stack.context()
        let b = stack.context()
        try a.performAndWait {
            try TestStack.product("S-1", in: a)
            try a.save()
        }
        // b keeps its object (and so the version it read) while a saves a change.
        let mine = try b.performAndWait { () -> ManagedObject in
            let product = try #require(try b.fetch(FetchRequest(entityName: "Product")).first)
            _ = product["name"]
            return product
        }
        try a.performAndWait {
            try a.fetch(FetchRequest(entityName: "Product"))[0].setValue("A", forKey: "name")
            try a.save()
        }
        try b.performAndWait {
            try mine.setValue("B", forKey: "name")
            #expect(throws: ContextError.self) { try b.save() }
            b.mergePolicy = .mergeByPropertyObjectTrump
            try b.save()
        }
        #expect(try stack.sql("SELECT ZNAME FROM ZPRODUCT").first?.first == .text("B"))
    }
}
