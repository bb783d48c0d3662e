import Foundation
import Testing
@testable import Lade

/// Run under ThreadSanitizer by `make tsan`.
@Suite("Concurrency")
struct ConcurrencyTests {
    @Test("private-queue contexts on one coordinator insert and save in parallel")
    func parallelWriters() async throws {
        let stack = try TestStack()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                let context = stack.context()
                group.addTask {
                    try await context.perform {
                        for batch in 0..<5 {
                            for index in 0..<20 { try TestStack.product("W\(writer)-\(batch)-\(index)", in: context) }
                            try context.save()
                            context.reset()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try stack.sql("SELECT COUNT(*), COUNT(DISTINCT Z_PK) FROM ZPRODUCT").first == [.integer(400), .integer(400)])
    }

    @Test("child saves on one queue while the parent saves on another")
    func parentChildAcrossQueues() async throws {
        let stack = try TestStack()
        let parent = stack.context()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for childIndex in 0..<3 {
                let child = ManagedObjectContext(concurrencyType: .privateQueue)
                child.parent = parent
                group.addTask {
                    try await child.perform {
                        for index in 0..<10 { try TestStack.product("C\(childIndex)-\(index)", in: child) }
                        try child.save()
                    }
                }
            }
            try await group.waitForAll()
        }
        try await parent.perform { try parent.save() }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZPRODUCT").first?.first == .integer(30))
    }

    @Test("two contexts saving the same object at once: one wins, the other conflicts or merges")
    func sameObject() async throws {
        let stack = try TestStack()
        let setup = stack.context()
        let id = try setup.performAndWait { () -> ManagedObjectID in
            let product = try TestStack.product("S-1", in: setup)
            try setup.save()
            return product.objectID
        }
        let outcomes = try await withThrowingTaskGroup(of: Bool.self, returning: [Bool].self) { group in
            for writer in 0..<2 {
                let context = ManagedObjectContext(concurrencyType: .privateQueue)
                context.persistentStoreCoordinator = writer == 0 ? stack.coordinator : try stack.otherCoordinator()
                group.addTask {
                    try await context.perform {
                        let product = try context.existingObject(with: id)
                        try product.setValue("Writer \(writer)", forKey: "name")
                        do {
                            try context.save()
                            return true
                        } catch ContextError.mergeConflict {
                            context.mergePolicy = .mergeByPropertyObjectTrump
                            try context.save()
                            return false
                        }
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.contains(true))
        let row = try #require(try stack.sql("SELECT ZNAME, Z_OPT FROM ZPRODUCT").first)
        #expect(row[1] == .integer(3))
        #expect(row[0] == .text("Writer 0") || row[0] == .text("Writer 1"))
    }
}
