import Foundation
import Lade
import Testing

/// Migration where a job or a stack meets an older store: `migrate: automatic` in job files,
/// and the coordinator's `MigrationOptions`.
@Suite("automatic migration, in jobs and in the coordinator")
struct AutomaticMigrationTests {
    @Test("a job with migrate: automatic carries a store of the bundle's first version to the job's version, then imports; with never it stops naming lade migrate")
    func job() throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("catalog.sqlite")
        #expect(try LadeProcess.run(["init", store.path, "--model", ImportSandbox.catalogModel.path, "--model-version", "Catalog"]).status == 0)
        _ = try sandbox.write("products.csv", GeneratedProducts.csv(60))
        func job(_ migrate: String) throws {
            _ = try sandbox.job("""
                model: \(ImportSandbox.catalogModel.path)
                store: { type: sqlite, path: catalog.sqlite }
                migrate: \(migrate)
                \(GeneratedProducts.job())
                """)
        }
        try job("never")
        let stopped = try sandbox.run().result
        #expect(stopped.status != 0)
        #expect(stopped.stderr.contains("lade migrate"), "\(stopped.stderr)")
        #expect(try StoreVersionMatch(storeAt: store, bundle: ImportSandbox.catalogModel).version == "Catalog")
        try job("automatic")
        let validated = try sandbox.lade(["validate", "job.yaml"])
        #expect(validated.status == 0, "\(validated.stderr)")
        #expect(validated.stdout.contains("written with Catalog; migrate: automatic carries it to Catalog 2 first (Catalog → Catalog 2, lightweight, in place)"), "\(validated.stdout)")
        #expect(try StoreVersionMatch(storeAt: store, bundle: ImportSandbox.catalogModel).version == "Catalog")
        let ran = try sandbox.run().result
        #expect(ran.status == 0, "\(ran.stderr)")
        #expect(try StoreVersionMatch(storeAt: store, bundle: ImportSandbox.catalogModel).version == "Catalog 2")
        try GeneratedProducts.expectEveryRowOnce(store, count: 60)
    }

    @Test("migrate: automatic needs the model's versions")
    func jobNeedsBundle() throws {
        let sandbox = try ImportSandbox()
        _ = try sandbox.write("products.csv", GeneratedProducts.csv(2))
        _ = try sandbox.job("""
            model: \(ImportSandbox.catalogModel.appendingPathComponent("Catalog 2.xcdatamodel").path)
            store: { type: sqlite, path: catalog.sqlite }
            migrate: automatic
            \(GeneratedProducts.job())
            """)
        let result = try sandbox.run().result
        #expect(result.status != 0)
        #expect(result.stderr.contains("'migrate: automatic' needs the model's versions"), "\(result.stderr)")
    }

    @Test("the coordinator's MigrationOptions migrate a store when it is added; without them the store is refused")
    func coordinator() throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("catalog.xml")
        #expect(try LadeProcess.run(["init", store.path, "--model", ImportSandbox.catalogModel.path, "--model-version", "Catalog"]).status == 0)
        let current = try ManagedObjectModel(contentsOf: ImportSandbox.catalogModel)
        #expect(throws: StoreError.self) { try PersistentStoreCoordinator(managedObjectModel: current).addPersistentStore(at: store) }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: current)
        try coordinator.addPersistentStore(at: store, migration: .init(modelBundle: ImportSandbox.catalogModel))
        #expect(try StoreVersionMatch(storeAt: store, bundle: ImportSandbox.catalogModel).version == "Catalog 2")
        // Inferring off and no mapping model: refused, the store as it was.
        let other = sandbox.url("other.sqlite")
        #expect(try LadeProcess.run(["init", other.path, "--model", ImportSandbox.catalogModel.path, "--model-version", "Catalog"]).status == 0)
        let refusal = #expect(throws: MigrationRefusal.self) {
            try PersistentStoreCoordinator(managedObjectModel: current).addPersistentStore(at: other, migration: .init(modelBundle: ImportSandbox.catalogModel, inferMappingModelAutomatically: false))
        }
        #expect(refusal?.description.contains("Catalog → Catalog 2: no mapping model for this step, and inferring one is off") == true, "\(String(describing: refusal))")
        #expect(try StoreVersionMatch(storeAt: other, bundle: ImportSandbox.catalogModel).version == "Catalog")
    }
}
