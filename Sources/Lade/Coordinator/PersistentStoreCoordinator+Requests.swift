import Foundation

/// The one path from contexts to stores: every read and write a context makes goes through
/// these, which route it to the store (or stores) that hold its objects, as Core Data's
/// coordinator executes the requests of its contexts. A context never calls a store.
extension PersistentStoreCoordinator {
    // MARK: Reading

    /// The rows a fetch matches, from every store whose configuration holds the entity, in
    /// the order the stores were added (each store's rows in the request's order; a caller
    /// that fetched from several orders them).
    package func rows(matching request: StoreFetchRequest) throws -> [StoreRow] {
        let stores = try stores(forEntity: request.entityName)
        return stores.count == 1 ? try stores[0].fetch(request) : try stores.flatMap { try $0.fetch(request) }
    }

    /// How many objects a fetch matches, over every store that holds the entity.
    package func count(matching request: StoreFetchRequest) throws -> Int {
        try stores(forEntity: request.entityName).reduce(0) { $0 + (try $1.count(request)) }
    }

    /// The rows of these objects, each from its own store (fault firing, batch faulting,
    /// prefetching); objects a store no longer has are left out.
    package func rows(for ids: [ManagedObjectID]) throws -> [StoreRow] {
        guard let first = ids.first else { return [] }
        let store = try store(for: first)
        if ids.allSatisfy({ $0.storeIdentifier == first.storeIdentifier }) { return try store.rows(for: ids) }
        var rows: [StoreRow] = []
        for (_, group) in Dictionary(grouping: ids, by: { $0.storeIdentifier ?? "" }).sorted(by: { $0.key < $1.key }) {
            rows += try self.store(for: group[0]).rows(for: group)
        }
        return rows
    }

    /// The destinations of an object's to-many relationship, in order when it is ordered.
    package func relatedObjectIDs(of id: ManagedObjectID, relationship: String) throws -> [ManagedObjectID] {
        try store(for: id).relatedObjectIDs(of: id, relationship: relationship)
    }

    // MARK: Object IDs

    /// Permanent IDs for `count` new objects of `entity`, from the store new objects of the
    /// entity go to (the first added whose configuration has it).
    package func newObjectIDs(forEntity entity: String, count: Int) throws -> [ManagedObjectID] {
        try store(forEntity: entity).newObjectIDs(for: entity, count: count)
    }

    /// Gives back IDs `newObjectIDs(forEntity:count:)` handed out for a save that failed (see
    /// `PersistentStore.giveBackObjectIDs(_:for:)`): a later save numbers its objects as if the
    /// failed one had never asked.
    package func giveBackObjectIDs(_ ids: [ManagedObjectID], forEntity entity: String) throws {
        guard let first = ids.first else { return }
        try store(for: first).giveBackObjectIDs(ids, for: entity)
    }

    // MARK: Saving

    /// Resolves the objects a store found changed since they were read (optimistic locking),
    /// by the caller's merge policy, and returns the store's part of the save to try again, or
    /// throws to give up. `attempt` counts from 1.
    package typealias ConflictResolution = (_ conflicts: [StoreSaveError.VersionConflict], _ store: PersistentStore, _ attempt: Int) throws -> StoreSaveRequest

    /// Writes a save: one transaction per store its changes reach, in the order they name them
    /// (with one store, the whole request in one transaction, without a pass to split it).
    /// Metadata staged for a store (`setMetadata(_:for:)`) goes into that store's transaction;
    /// stores no change reaches get theirs in a transaction of their own, after the others.
    ///
    /// A relationship between objects of two stores is refused before anything is written
    /// (`StoreSaveError.crossStoreRelationship`), as Core Data refuses it. Conflicts go to
    /// `resolve` (at most 3 times per store). `saved` collects the stores whose transaction
    /// committed: when a later store fails, the earlier ones keep what they wrote (Core Data
    /// has no two-phase commit either), and the caller, told which, can save the rest again.
    /// Metadata a failed transaction did not write is staged again, unless newer metadata was
    /// staged meanwhile.
    package func save(_ request: StoreSaveRequest, saved: inout Set<String>, resolve: ConflictResolution) throws {
        let stores = persistentStores
        guard !stores.isEmpty else { throw CoordinatorError.noStores }
        if stores.count == 1 {
            if !request.isEmpty { try save(request, to: stores[0], resolve: resolve) }
            saved.insert(stores[0].identifier)
        } else {
            if let crossing = request.firstCrossStoreRelationship {
                throw StoreSaveError.crossStoreRelationship(source: crossing.source, relationship: crossing.relationship, destination: crossing.destination)
            }
            for identifier in request.storeIdentifiers where !saved.contains(identifier) {
                try save(request.part(for: identifier), to: try store(withIdentifier: identifier), resolve: resolve)
                saved.insert(identifier)
            }
        }
        try saveStagedMetadata()
    }

    /// Writes the metadata staged for each store, in a transaction of its own.
    package func saveStagedMetadata() throws {
        for store in persistentStores {
            guard let metadata = takeStagedMetadata(for: store) else { continue }
            var request = StoreSaveRequest()
            request.metadata = metadata
            do { try store.save(request) } catch {
                stageMetadata(metadata, for: store)
                throw error
            }
        }
    }

    /// Runs `body` with the metadata staged for `store` taken out (nil when none is), as the
    /// metadata to write in the transaction `body` commits: when `body` throws, the metadata
    /// is staged again, unless newer metadata was staged meanwhile. The one rule every write
    /// with staged metadata follows (a save, a bulk session's commit).
    package func withStagedMetadata<T>(for store: PersistentStore, _ body: ([String: PropertyListValue]?) throws -> T) throws -> T {
        let metadata = takeStagedMetadata(for: store)
        do {
            return try body(metadata)
        } catch {
            if let metadata { stageMetadata(metadata, for: store) }
            throw error
        }
    }

    /// One store's part of a save, conflicts resolved by `resolve`, with its staged metadata.
    private func save(_ part: StoreSaveRequest, to store: PersistentStore, resolve: ConflictResolution) throws {
        try withStagedMetadata(for: store) { metadata in
            var request = part
            request.metadata = metadata
            var attempt = 0
            while true {
                do {
                    try store.save(request)
                    return
                } catch StoreSaveError.conflicts(let conflicts) {
                    attempt += 1
                    guard attempt < 4 else { throw StoreSaveError.conflicts(conflicts) }
                    request = try resolve(conflicts, store, attempt)
                    request.metadata = metadata
                    request.derivedValues = part.derivedValues
                }
            }
        }
    }
}
