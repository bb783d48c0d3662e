import Foundation
import Testing
@testable import Lade

/// Every key a mapping model names checked against the two versions while the migration is
/// planned, as Core Data's `fetchRequestForSourceEntityNamed:predicateString:` raises on an
/// unknown key: a filter naming none would otherwise take no object, and the migration drop
/// the entity's objects. Catalog → Catalog, mappings built in code.
@Suite("Mapping models' keys checked against the versions")
struct MappingModelKeyTests {
    static func catalog() throws -> ManagedObjectModel { try ManagedObjectModel(contentsOf: Fixtures.catalog) }

    static let manager = MappingExpression.variable("manager")
    static func source(_ path: String...) -> MappingExpression { .keyPath(.variable("source"), path) }
    static func instances(of mapping: String, _ sources: MappingExpression) -> MappingExpression {
        .function(manager, selector: "destinationInstancesForEntityMappingNamed:sourceInstances:", arguments: [.constant(.string(mapping)), sources])
    }

    /// `ProductToProduct` (filtered by `filter`) with these property mappings, and
    /// `CategoryToCategory` copying names.
    static func mapping(filter: String = "TRUEPREDICATE", attributes: [MappingModel.PropertyMapping] = [],
                        relationships: [MappingModel.PropertyMapping] = []) -> MappingModel {
        func fetch(_ entity: String, _ predicate: String) -> MappingExpression {
            .fetch(.function(manager, selector: "fetchRequestForSourceEntityNamed:predicateString:", arguments: [.constant(.string(entity)), .constant(.string(predicate))]),
                   context: .keyPath(manager, ["sourceContext"]), countOnly: false)
        }
        return MappingModel(entityMappings: [
            .init(name: "CategoryToCategory", kind: .copy, sourceEntityName: "Category", destinationEntityName: "Category", migrationPolicyClassName: nil,
                  sourceExpression: fetch("Category", "TRUEPREDICATE"), attributeMappings: [.init(name: "name", valueExpression: source("name"))], relationshipMappings: []),
            .init(name: "ProductToProduct", kind: .copy, sourceEntityName: "Product", destinationEntityName: "Product", migrationPolicyClassName: nil,
                  sourceExpression: fetch("Product", filter), attributeMappings: attributes, relationshipMappings: relationships),
        ], origin: "/maps/Catalog.xcmappingmodel")
    }

    /// The refusal `resolved(from:to:)` gives, which `MigrationManager` gives too, before it
    /// so much as looks for the store.
    static func refusal(_ mapping: MappingModel, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let model = try catalog()
        let error = #expect(throws: MappingModelError.self, sourceLocation: sourceLocation) { _ = try mapping.resolved(from: model, to: model) }
        #expect(throws: MappingModelError.self, sourceLocation: sourceLocation) {
            _ = try MigrationManager(store: URL(fileURLWithPath: "/nonexistent/catalog.sqlite"), from: model, to: model, mappings: [mapping])
        }
        return error?.description ?? ""
    }

    @Test("a filter naming a key the source entity lacks is refused, naming the file, the entity mapping, the key and the entity")
    func unknownKeyInFilter() throws {
        let message = try Self.refusal(Self.mapping(filter: "nosuch > 0"))
        for text in ["/maps/Catalog.xcmappingmodel", "entity mapping ProductToProduct", "filter 'nosuch > 0'", "'nosuch' is not a property of entity 'Product'"] {
            #expect(message.contains(text), "\(text): \(message)")
        }
        // Through a relationship, inside ANY and a SUBQUERY, as a fetch checks them.
        for (filter, key, entity) in [("category.nosuch == 'a'", "nosuch", "Category"), ("ANY suppliers.nosuch == 'x'", "nosuch", "Supplier"),
                                      ("SUBQUERY(media, $m, $m.nosuch != nil).@count > 0", "nosuch", "Media")] {
            let message = try Self.refusal(Self.mapping(filter: filter))
            #expect(message.contains("'\(key)' is not a property of entity '\(entity)'"), "\(filter): \(message)")
        }
    }

    @Test("an attribute's value expression whose key path names a key the source entity lacks is refused, naming the property mapping")
    func unknownKeyInAttributeExpression() throws {
        let message = try Self.refusal(Self.mapping(attributes: [.init(name: "details", valueExpression: Self.source("nosuch"))]))
        for text in ["entity mapping ProductToProduct, property details", "$source.nosuch", "'nosuch' is not a property of entity 'Product'"] {
            #expect(message.contains(text), "\(text): \(message)")
        }
        // After a collection operator, the key is of the collection's members.
        let operated = try Self.refusal(Self.mapping(attributes: [.init(name: "stock", valueExpression: Self.source("suppliers", "@max", "nosuch"))]))
        #expect(operated.contains("'nosuch' is not a property of entity 'Supplier'"), "\(operated)")
    }

    @Test("a key path through a to-one to a relationship its entity lacks is refused, in attribute and relationship expressions")
    func unknownRelationshipThroughToOne() throws {
        let message = try Self.refusal(Self.mapping(attributes: [.init(name: "details", valueExpression: Self.source("category", "parent", "nosuchrel", "name"))]))
        #expect(message.contains("'nosuchrel' is not a property of entity 'Category'"), "\(message)")
        let relationship = try Self.refusal(Self.mapping(relationships: [.init(name: "category", valueExpression: Self.instances(of: "CategoryToCategory", Self.source("categry")))]))
        #expect(relationship.contains("entity mapping ProductToProduct, property category"), "\(relationship)")
        #expect(relationship.contains("'categry' is not a property of entity 'Product'"), "\(relationship)")
        let mappingName = try Self.refusal(Self.mapping(relationships: [.init(name: "category", valueExpression: Self.instances(of: "CategoryToCategry", Self.source("category")))]))
        #expect(mappingName.contains("CategoryToCategry"), "\(mappingName)")
    }

    @Test("valid filters and expressions of every form a mapping model uses are accepted")
    func validKeys() throws {
        let model = try Self.catalog()
        let mapping = Self.mapping(
            filter: "category.name BEGINSWITH 'a' AND ANY suppliers.code == 'x' AND SUBQUERY(media, $m, $m.caption != nil).@count > 0 AND suppliers.@count < 3",
            attributes: [
                .init(name: "name", valueExpression: .keyPath(.evaluatedObject, ["name"])),
                .init(name: "details", valueExpression: Self.source("category", "parent", "name")),
                .init(name: "stock", valueExpression: Self.source("media", "@count")),
                .init(name: "sku", valueExpression: .function(nil, selector: "uppercase:", arguments: [Self.source("sku")])),
                .init(name: "weight", valueExpression: Self.source("suppliers", "@distinctUnionOfObjects", "primaryProducts", "@max", "weight")),
                .init(name: "updatedAt", valueExpression: .keyPath(.variable("destination"), ["createdAt"])),
            ],
            relationships: [
                .init(name: "category", valueExpression: Self.instances(of: "CategoryToCategory", Self.source("category"))),
                .init(name: "suppliers", valueExpression: .function(Self.manager, selector: "destinationInstancesForSourceRelationshipNamed:sourceInstances:",
                                                                    arguments: [.constant(.string("suppliers")), Self.source("suppliers")])),
            ])
        let resolved = try mapping.resolved(from: model, to: model)
        #expect(resolved.entityMappings.count == 2)
    }
}
