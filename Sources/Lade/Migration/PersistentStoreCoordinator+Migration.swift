import Foundation

// Automatic migration when a store is added: declared with the migrations, so that the
// coordinator, which they use (a staged migration's mapping steps run through contexts over
// coordinators), does not depend on them.

extension PersistentStoreCoordinator {
    /// Adds the store at `url` as `addPersistentStore(type:at:configuration:readOnly:)` does;
    /// with `migration` (Core Data's `shouldMigrateStoreAutomatically`), a store file written
    /// with another version of the model's `.xcdatamodeld` is first carried to this
    /// coordinator's version by a ``StagedMigration`` (lightweight steps when
    /// `inferMappingModelAutomatically`, the given mapping models where they apply), then opened.
    ///
    /// ```swift
    /// let migration = PersistentStoreCoordinator.MigrationOptions(modelBundle: URL(fileURLWithPath: "App.xcdatamodeld"))
    /// try coordinator.addPersistentStore(type: .sqlite, at: url, migration: migration)
    /// ```
    @discardableResult
    public func addPersistentStore(type: StoreType? = nil, at url: URL?, configuration: String? = nil, readOnly: Bool = false,
                                   migration: MigrationOptions?) throws -> PersistentStore {
        do {
            return try addPersistentStore(type: type, at: url, configuration: configuration, readOnly: readOnly)
        } catch let error as StoreError {
            guard case .modelMismatch = error.kind, let migration, let url, !readOnly else { throw error }
            try migration.migrate(storeAt: url, to: managedObjectModel)
            return try addPersistentStore(type: type, at: url, configuration: configuration, readOnly: readOnly)
        }
    }

    /// Automatic migration when a store is added (Core Data's `NSPersistentStoreDescription`
    /// `shouldMigrateStoreAutomatically` and `shouldInferMappingModelAutomatically`).
    ///
    /// ```swift
    /// var migration = PersistentStoreCoordinator.MigrationOptions(modelBundle: URL(fileURLWithPath: "App.xcdatamodeld"))
    /// migration.mappingModels = [try MappingModel(contentsOf: URL(fileURLWithPath: "V2toV3.xcmappingmodel"))]
    /// try coordinator.addPersistentStore(type: .sqlite, at: url, migration: migration)
    /// ```
    public struct MigrationOptions: Sendable {
        /// The versioned model holding the version that wrote the store and the coordinator's.
        public var modelBundle: URL
        /// Infer (lightweight) the steps no mapping model covers; else such a step is refused.
        public var inferMappingModelAutomatically = true
        /// Mapping models for the steps between the versions they name.
        public var mappingModels: [MappingModel] = []
        /// A compiled `.momd` of the bundle, for Apple's version hashes.
        public var compiledModel: URL?

        public init(modelBundle: URL, inferMappingModelAutomatically: Bool = true, mappingModels: [MappingModel] = [], compiledModel: URL? = nil) {
            self.modelBundle = modelBundle
            self.inferMappingModelAutomatically = inferMappingModelAutomatically
            self.mappingModels = mappingModels
            self.compiledModel = compiledModel
        }

        /// Carries the store at `url` to the bundle's version that is `model` (the one whose
        /// entity hashes are `model`'s).
        func migrate(storeAt url: URL, to model: ManagedObjectModel) throws {
            let versions = try ManagedObjectModel.versions(at: modelBundle)
            let target = try versions.names.first { name in
                try ManagedObjectModel(contentsOf: modelBundle, version: name, compiledModel: compiledModel).versionHashes == model.versionHashes
            }
            guard let target else {
                throw StoreError(.modelMismatch(entities: []), path: modelBundle.path, "no version of this model bundle is the coordinator's model, so the store cannot be migrated to it")
            }
            try StagedMigration(store: url, bundle: modelBundle, to: target, compiledModel: compiledModel,
                                mappingModels: mappingModels, inferring: inferMappingModelAutomatically).run()
        }
    }
}
