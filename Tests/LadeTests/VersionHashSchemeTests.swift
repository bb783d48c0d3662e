import Foundation
import Testing
@testable import Lade

@Suite("Lade's version hashes: what changes a version, and stores of earlier schemes")
struct VersionHashSchemeTests {
    let item = EntityDescription(name: "Item", attributes: [
        AttributeDescription(name: "key", type: .string, isOptional: false), AttributeDescription(name: "name", type: .string),
    ])

    @Test("a uniqueness constraint, added, removed or reordered, changes the entity's hash, as Apple documents it does")
    func constraints() throws {
        let plain = try ManagedObjectModel(entities: [item]).versionHash(of: "Item")
        var constrained = item; constrained.uniquenessConstraints = [["key"]]
        var both = item; both.uniquenessConstraints = [["key", "name"]]
        var reordered = item; reordered.uniquenessConstraints = [["name", "key"]]
        let hashes = try [constrained, both, reordered].map { try ManagedObjectModel(entities: [$0]).versionHash(of: "Item") }
        #expect(Set(hashes + [plain]).count == 4)
    }

    @Test("a superentity's hash is part of its subentities' (a constraint on the parent changes the child's)")
    func superentity() throws {
        let child = EntityDescription(name: "Special", parentName: "Item")
        var constrained = item; constrained.uniquenessConstraints = [["key"]]
        #expect(try ManagedObjectModel(entities: [item, child]).versionHash(of: "Special") != ManagedObjectModel(entities: [constrained, child]).versionHash(of: "Special"))
    }

    @Test("the first scheme is what earlier Lade wrote: its hash of an entity is the one an earlier lade init recorded, constraints left out")
    func firstScheme() throws {
        var constrained = item; constrained.uniquenessConstraints = [["key"]]
        for entity in [item, constrained] {
            let model = try ManagedObjectModel(entities: [entity])
            // Read off a store `lade init` wrote at 4a5b175, before uniqueness constraints were an input.
            #expect(model.ladeVersionHashes(scheme: .sha256v1)["Item"]?.base64EncodedString() == "Mx8GFdi+0ElMBG7tCGhdmDFpfZdmzE3crEGW8SCt944=")
        }
        #expect(try ManagedObjectModel(entities: [constrained]).versionHash(of: "Item") != ManagedObjectModel(entities: [item]).versionHash(of: "Item"))
    }
}
