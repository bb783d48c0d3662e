import Foundation
import Lade
@testable import LadePipeline
import Testing

@Suite("Import plans: a job's step against its model")
struct ImportPlanTests {
    func plan(_ body: String) throws -> ImportPlan {
        let job = try PipelineFixtures.job("kind: import\nmodel: ../samples/Catalog.xcdatamodeld\nstore: { path: ../out/x.sqlite }\nsource: ../samples/products.csv\n" + body)
        return try ImportPlan(step: job.steps[0], model: try PipelineFixtures.catalogModel())
    }

    @Test("unlisted attributes match columns by name: camelCase ~ snake_case")
    func autoMatch() throws {
        let plan = try plan("entity: Product\nkey: sku\nfields: { details: description }\n")
        let matched = try plan.check(columns: ["sku", "name", "created_at", "Stock", "description"], sourceName: "p.csv")
        #expect(matched.map(\.attribute).sorted() == ["createdAt", "name", "sku", "stock"])
        #expect(matched.first { $0.attribute == "createdAt" }?.column == "created_at")
        #expect(ImportPlan.columnSpellings(of: "createdAt").contains("created_at"))
        #expect(ImportPlan.columnSpellings(of: "createdAt").contains("CREATED_AT"))
    }

    @Test("the object writer saves without savepoints only when nothing it writes can break a uniqueness constraint", arguments: [
        ("entity: Product\nkey: sku\nrelationships: { category: { match: name, create: true } }\n", false),
        ("entity: Product\nkey: sku\nrelationships: { supplier: { match: code } }\n", false),
        ("entity: Category\nkey: name\n", false),
        // Found by another attribute than its constraint, or by none: a row may repeat a sku.
        ("entity: Product\nkey: name\n", true),
        ("entity: Product\n", true),
        ("entity: Category\nkey: name\nrelationships: { parent: { match: name, create: true } }\n", false),
        // Media's subentities share one table: an Image's row beside a Video's.
        ("entity: Image\n", true),
    ])
    func savepoints(job: String, mayBreak: Bool) throws {
        let plan = try plan(job)
        #expect(BatchWriter.savesMayBreakConstraints(plan: plan, model: try PipelineFixtures.catalogModel()) == mayBreak)
    }

    @Test("a listed column missing from the header is an error naming the columns there are")
    func missingColumn() throws {
        let plan = try plan("entity: Product\nkey: sku\nfields: { price: cost }\n")
        let error = try #require(throws: JobError.self) { try plan.check(columns: ["sku", "price"], sourceName: "p.csv") }
        #expect(error.description.contains("fields.price: column 'cost' is not in p.csv's header; its columns are sku, price"))
    }

    @Test("the job's names are checked against the model", arguments: [
        ("entity: Gadget\n", "the model has no entity 'Gadget'"),
        ("entity: Media\n", "'Media' is abstract: import into one of its subentities (Image, Video)"),
        ("entity: Product\nfields: { colour: c }\n", "Product has no attribute 'colour'"),
        ("entity: Product\nfields: { category: c }\n", "'category' is a relationship: wire it under 'relationships:'"),
        ("entity: Product\nkey: code\n", "key: Product has no attribute 'code'"),
        ("entity: Product\nkey: sku\nautoMatch: false\n", "the key attribute 'sku' takes no value from the source"),
        ("entity: Product\nrelationships: { maker: { match: name } }\n", "Product has no relationship 'maker'"),
        ("entity: Product\nrelationships: { category: { match: title } }\n", "Category has no attribute 'title'"),
        ("entity: Product\nfields: { price: { from: p, date: iso8601 } }\n", "'price' is a Decimal attribute, not a Date"),
        ("entity: Product\nfields: { stock: { value: lots } }\n", "'lots' is not a valid Integer 32 value"),
        ("entity: Product\nfields: { stock: { value: '-1' } }\n", "stock value is below the minimum 0"),
    ])
    func modelErrors(body: String, expected: String) throws {
        let error = try #require(throws: JobError.self) { try plan(body) }
        #expect(error.description.contains(expected), "\(error.description)")
    }

    @Test("create: true is refused when a created destination could not be valid")
    func createNeedsValidDestination() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [AttributeDescription(name: "code", type: .string)],
                              relationships: [RelationshipDescription(name: "owner", destinationEntityName: "Owner", inverseName: "items")]),
            EntityDescription(name: "Owner", attributes: [
                AttributeDescription(name: "name", type: .string, isOptional: false),
                AttributeDescription(name: "email", type: .string, isOptional: false),
            ], relationships: [RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "owner", isToMany: true)]),
        ], fetchRequestTemplates: [], versionIdentifiers: [])
        let job = try PipelineFixtures.job("kind: import\nmodel: m\nstore: { path: x.sqlite }\nsource: a.csv\nentity: Item\nrelationships: { owner: { from: owner, match: name, create: true } }\n")
        let error = try #require(throws: JobError.self) { try ImportPlan(step: job.steps[0], model: model) }
        #expect(error.description.contains("Owner.email is required and has no default"))
    }
}
