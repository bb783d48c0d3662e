import Foundation
import Testing
@testable import Lade

@Suite("Lade's own entity version hashes")
struct VersionHashTests {
    func model(_ entities: [EntityDescription]) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: entities)
    }

    let base = EntityDescription(name: "Item", attributes: [AttributeDescription(name: "title", type: .string)])

    @Test("the hash is 32 bytes and the same every time")
    func deterministic() throws {
        let first = try model([base]).versionHash(of: "Item")
        #expect(first?.count == 32)
        #expect(try model([base]).versionHash(of: "Item") == first)
        let sample = try ManagedObjectModel(contentsOf: Fixtures.catalog)
        #expect(try ManagedObjectModel(contentsOf: Fixtures.catalog).versionHashes == sample.versionHashes)
        #expect(!sample.hasAppleVersionHashes)
    }

    @Test("the documented inputs change the hash")
    func inputsChangeIt() throws {
        let original = try model([base]).versionHash(of: "Item")
        var changes: [EntityDescription] = []
        var renamed = base; renamed.attributes[0].name = "name"; changes.append(renamed)
        var retyped = base; retyped.attributes[0].type = .integer64; changes.append(retyped)
        var required = base; required.attributes[0].isOptional = false; changes.append(required)
        var transient = base; transient.attributes[0].isTransient = true; changes.append(transient)
        var abstract = base; abstract.isAbstract = true; changes.append(abstract)
        var modified = base; modified.versionHashModifier = "2"; changes.append(modified)
        for changed in changes {
            #expect(try model([changed]).versionHash(of: "Item") != original, "\(changed)")
        }
    }

    @Test("what Apple leaves out leaves the hash alone: class names, renaming identifiers, defaults, userInfo")
    func otherDetailsDoNot() throws {
        let original = try model([base]).versionHash(of: "Item")
        var other = base
        other.representedClassName = "ItemMO"
        other.renamingIdentifier = "OldItem"
        other.userInfo = ["a": "b"]
        other.attributes[0].defaultValue = .string("x")
        other.attributes[0].renamingIdentifier = "oldTitle"
        #expect(try model([other]).versionHash(of: "Item") == original)
    }

    @Test("relationship destination, counts, delete rule, inverse and ordering change the hash")
    func relationshipInputs() throws {
        func hash(_ change: (inout RelationshipDescription) -> Void) throws -> Data? {
            var items = RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "box", isToMany: true)
            change(&items)
            let box = EntityDescription(name: "Box", relationships: [items])
            var item = base
            item.relationships = [RelationshipDescription(name: "box", destinationEntityName: "Box", inverseName: "items")]
            item.relationships.append(RelationshipDescription(name: "spare", destinationEntityName: "Box", isToMany: true))
            return try model([box, item]).versionHash(of: "Box")
        }
        let original = try hash { _ in }
        #expect(try hash { $0.deleteRule = .cascade } != original)
        #expect(try hash { $0.maxCount = 5 } != original)
        #expect(try hash { $0.minCount = 1 } != original)
        #expect(try hash { $0.isOrdered = true } != original)
        #expect(try hash { $0.inverseName = nil } != original)
    }

    @Test("a subentity's hash covers its inherited properties")
    func inheritance() throws {
        let child = EntityDescription(name: "Special", parentName: "Item")
        var changedParent = base
        changedParent.attributes[0].type = .integer32
        #expect(try model([base, child]).versionHash(of: "Special") != model([changedParent, child]).versionHash(of: "Special"))
    }
}
