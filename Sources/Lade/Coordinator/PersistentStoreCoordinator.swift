import Foundation

/// Connects contexts to stores: adds and removes stores, routes each request to the store that
/// holds its entity, and turns URIs back into object IDs.
///
/// ```swift
/// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
/// try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: "catalog.sqlite"))
/// let context = ManagedObjectContext(concurrencyType: .privateQueue)
/// context.persistentStoreCoordinator = coordinator
/// ```
public final class PersistentStoreCoordinator: @unchecked Sendable {
    /// The store types a coordinator can add (`NSStoreType` values); declared with the stores
    /// (``Lade/StoreType``), named here as Core Data users know it.
    public typealias StoreType = Lade.StoreType

    public let managedObjectModel: ManagedObjectModel
    private let lock = NSLock()
    private var stores: [PersistentStore] = []
    private var stagedMetadata: [String: [String: PropertyListValue]] = [:]
    /// The entities each store holds, by store UUID (no entry: every entity).
    private var storeEntities: [String: Set<String>] = [:]

    public init(managedObjectModel: ManagedObjectModel) {
        self.managedObjectModel = managedObjectModel
    }

    /// The stores in the order they were added.
    public var persistentStores: [PersistentStore] {
        lock.withLock { stores }
    }

    /// Adds the store at `url`, creating it (empty, for this coordinator's model) when the file
    /// does not exist and the store is not read-only. The store must match the model. Without a
    /// type, an existing file's type is detected from its first bytes; an in-memory store has
    /// no URL.
    ///
    /// ```swift
    /// try coordinator.addPersistentStore(type: .xml, at: URL(fileURLWithPath: "catalog.xml"))
    /// try coordinator.addPersistentStore(at: URL(fileURLWithPath: "found.store"))   // type detected
    /// try coordinator.addPersistentStore(type: .inMemory, at: nil)
    /// ```
    ///
    /// With a `configuration` (one of the model's, as Core Data's
    /// `addPersistentStore(ofType:configurationName:at:options:)`), the store holds the objects
    /// of that configuration's entities only: new objects go to the first store added whose
    /// configuration has their entity, fetches read every such store, and a relationship
    /// between objects of two stores is refused at save. Without one (or with "Default") the
    /// store holds every entity.
    ///
    /// To migrate a store written with another version of the model first, add it with
    /// `migration` (`addPersistentStore(type:at:configuration:readOnly:migration:)`).
    @discardableResult
    public func addPersistentStore(type: StoreType? = nil, at url: URL?, configuration: String? = nil, readOnly: Bool = false) throws -> PersistentStore {
        let entities = try entityNames(ofConfiguration: configuration)
        let store = try Self.openStore(type: type, at: url, model: managedObjectModel, readOnly: readOnly)
        try appendStore(store, entities: entities)
        return store
    }

    /// The entities a store of `configuration` holds: nil for all.
    private func entityNames(ofConfiguration configuration: String?) throws -> Set<String>? {
        guard let configuration, configuration != Self.defaultConfiguration else { return nil }
        guard let found = managedObjectModel.configurations.first(where: { $0.name == configuration }) else {
            let known = managedObjectModel.configurations.map(\.name)
            throw CoordinatorError.unknownConfiguration(configuration, known: known)
        }
        return Set(found.entityNames)
    }

    /// The configuration every entity belongs to (Core Data's "Default" / `PF_DEFAULT_CONFIGURATION_NAME`).
    public static let defaultConfiguration = "Default"

    /// Adds an opened store (holding `entities`, nil for all), unless one with its UUID is added already.
    func appendStore(_ store: PersistentStore, entities: Set<String>? = nil) throws {
        try lock.withLock {
            if stores.contains(where: { $0.identifier == store.identifier }) {
                throw StoreError(.alreadyExists, path: store.url?.path ?? store.type, "this store (UUID \(store.identifier)) is already added to the coordinator")
            }
            stores.append(store)
            storeEntities[store.identifier] = entities
        }
    }

    /// Removes a store; objects from it can no longer be fetched or saved.
    public func remove(_ store: PersistentStore) {
        lock.withLock {
            stores.removeAll { $0 === store }
            storeEntities[store.identifier] = nil
        }
    }

    // MARK: Metadata

    /// A store's metadata, with any change made by `setMetadata(_:for:)` not yet saved.
    public func metadata(for store: PersistentStore) -> [String: PropertyListValue] {
        lock.withLock { stagedMetadata[store.identifier] } ?? store.metadata
    }

    /// Replaces a store's metadata; written in the transaction of the next save that reaches
    /// the store, together with its data, as in Core Data. `NSStoreType` and `NSStoreUUID`
    /// belong to the stack and must stay as they are.
    public func setMetadata(_ metadata: [String: PropertyListValue], for store: PersistentStore) throws {
        for key in StoreMetadata.reservedKeys where metadata[key] != store.metadata[key] {
            throw StoreError(.reservedMetadataKey, path: store.url?.path ?? "", "\(key) belongs to the stack and cannot be changed")
        }
        lock.withLock { stagedMetadata[store.identifier] = metadata }
    }

    func takeStagedMetadata(for store: PersistentStore) -> [String: PropertyListValue]? {
        lock.withLock { stagedMetadata.removeValue(forKey: store.identifier) }
    }

    /// Puts back staged metadata a failed save did not write (unless newer metadata was staged).
    func stageMetadata(_ metadata: [String: PropertyListValue], for store: PersistentStore) {
        lock.withLock {
            if stagedMetadata[store.identifier] == nil { stagedMetadata[store.identifier] = metadata }
        }
    }

    /// The stores that hold objects of `entity` (by their configurations), in the order added.
    package func stores(forEntity entity: String) throws -> [PersistentStore] {
        let (all, holding) = lock.withLock { (stores, stores.filter { storeEntities[$0.identifier]?.contains(entity) ?? true }) }
        guard !all.isEmpty else { throw CoordinatorError.noStores }
        guard !holding.isEmpty else { throw CoordinatorError.noStoreForEntity(entity) }
        return holding
    }

    /// The store new objects of `entity` go to: the first added whose configuration has it.
    func store(forEntity entity: String) throws -> PersistentStore {
        try stores(forEntity: entity)[0]
    }

    /// The store with this UUID.
    func store(withIdentifier identifier: String) throws -> PersistentStore {
        guard let store = persistentStores.first(where: { $0.identifier == identifier }) else {
            throw CoordinatorError.unknownStore(identifier)
        }
        return store
    }

    /// The store an object ID belongs to.
    func store(for id: ManagedObjectID) throws -> PersistentStore {
        guard let identifier = id.storeIdentifier else { return try store(forEntity: id.entityName) }
        guard let store = persistentStores.first(where: { $0.identifier == identifier }) else {
            throw CoordinatorError.unknownStore(identifier)
        }
        return store
    }

    /// The object ID a URI names (`x-coredata://<store>/<Entity>/p<N>`), when the store is
    /// added to this coordinator and the entity is in its model.
    public func managedObjectID(forURIRepresentation uri: URL) -> ManagedObjectID? {
        guard let parts = ManagedObjectID.parse(uri: uri),
              persistentStores.contains(where: { $0.identifier == parts.store }),
              managedObjectModel.entity(named: parts.entity) != nil
        else { return nil }
        return ManagedObjectID(entityName: parts.entity, storeIdentifier: parts.store, primaryKey: parts.primaryKey)
    }
}

/// A request the coordinator cannot route.
public enum CoordinatorError: Error, Sendable, CustomStringConvertible {
    case noStores
    case unknownStore(String)
    /// No added store's configuration has the entity.
    case noStoreForEntity(String)
    case unknownConfiguration(String, known: [String])

    public var description: String {
        switch self {
        case .noStores: "the coordinator has no stores; add one with addPersistentStore(type:at:)"
        case .unknownStore(let identifier): "no store with UUID \(identifier) is added to the coordinator"
        case .noStoreForEntity(let entity): "no added store's configuration has entity '\(entity)'; add a store for a configuration that has it, or for Default"
        case .unknownConfiguration(let name, let known):
            "the model has no configuration '\(name)'" + (known.isEmpty ? "; it has none but Default" : "; it has Default, \(known.joined(separator: ", "))")
        }
    }
}

extension CoordinatorError: LadeError {
    public var code: String {
        switch self {
        case .noStores: "coordinator.noStores"
        case .unknownStore: "coordinator.unknownStore"
        case .noStoreForEntity: "coordinator.noStoreForEntity"
        case .unknownConfiguration: "coordinator.unknownConfiguration"
        }
    }
}
