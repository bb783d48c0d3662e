import Foundation

/// How an atomic store (XML, binary) executes a lightweight migration: through its objects,
/// the file written anew. `LightweightMigration` (in `Migration/`) plans it and decides what is
/// refused; this carries out what it inferred.
extension InferredMapping {
    /// Carries the XML or binary store at `url` (of `format`): every object read with the old
    /// version, carried to the new one (entity and property renames, defaults for new
    /// attributes and required ones without a value, removed entities' objects dropped with the
    /// references to them), keys kept, and the whole file written anew beside the old one and
    /// renamed over it; a failure leaves it as it was. Objects that cannot be carried are
    /// refused (`Refusal`) before anything is written.
    func executeOnAtomicStore(at url: URL, format: AtomicStoreFileFormat.Type) throws {
        var contents = try format.read(at: url, model: source)
        let damage = contents.graph.damage(model: source, thorough: false)
        guard damage.isEmpty else { throw StoreError.damaged(damage, path: url.path) }
        let oldToNew = Dictionary(entityMap.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
        var graph = AtomicObjectGraph(nextKey: contents.graph.nextKey)
        graph.externalIDs = contents.graph.externalIDs
        let kept = Set(contents.graph.objects.compactMap { key, object in oldToNew[object.entity] == nil ? nil : key })
        for (key, object) in contents.graph.objects {
            guard let entity = oldToNew[object.entity] else { continue }
            var moved = AtomicObject(entity: entity, version: object.version)
            for attribute in destination.attributes(of: entity) where !attribute.isTransient && attribute.type != .undefined {
                var value = attributeMap[entity]?[attribute.name].flatMap { object.attributes[$0] }
                if value == nil, attributeMap[entity]?[attribute.name] == nil || !attribute.isOptional { value = attribute.defaultValue }
                if attribute.type == .decimal, case .integer(let number)? = value { value = .decimal(Decimal(number)) }
                if let value { moved.attributes[attribute.name] = value }
            }
            for relationship in destination.relationships(of: entity) where !relationship.isTransient {
                guard let oldName = relationshipMap[entity]?[relationship.name] else { continue }
                if relationship.isToMany {
                    if let destinations = object.toMany[oldName]?.filter({ kept.contains($0) }), !destinations.isEmpty {
                        moved.toMany[relationship.name] = destinations
                    } else if let target = object.toOne[oldName], kept.contains(target) {
                        moved.toMany[relationship.name] = [target]   // a to-one made to-many
                    }
                } else if let target = object.toOne[oldName], kept.contains(target) {
                    moved.toOne[relationship.name] = target
                }
            }
            graph.set(moved, for: key)
        }
        // A uniqueness constraint the objects break cannot hold in the new version: refused,
        // as the SQLite store's unique index cannot be built.
        var shared: [String] = []
        for entity in destination.entities {
            for constraint in entity.uniquenessConstraints where !constraint.isEmpty {
                if let (values, first, last, count) = graph.sharedValues(of: constraint, objectsOf: destination.hierarchy(from: entity.name).map(\.name)) {
                    let text = zip(constraint, values).map { "\($0) = \($1.map { Self.literal(SQLiteValueCoding.encode($0)) } ?? "NULL")" }.joined(separator: ", ")
                    shared.append(Self.sharedValuesReason(entity: entity.name, constraint: constraint, values: text,
                                                          count: .integer(Int64(count)), first: .integer(first), last: .integer(last)))
                }
            }
        }
        // A required attribute without a default that objects lack.
        for place in requiredWithoutValue.sorted() {
            let (entity, attribute) = Self.split(place)
            let kinds = Set(destination.hierarchy(from: entity).map(\.name))
            let lacking = graph.keys(ofEntities: Array(kinds)).filter { graph.objects[$0]?.attributes[attribute] == nil }
            if let first = lacking.first { shared.append(Self.missingValuesReason(place, count: lacking.count, first: String(first))) }
        }
        guard shared.isEmpty else { throw Refusal(reasons: shared) }
        contents.graph = graph
        let made = StoreMetadata.make(for: destination, storeType: format.storeType)
        for key in [StoreMetadata.Key.versionHashes, StoreMetadata.Key.versionHashesVersion, StoreMetadata.Key.versionHashesDigest, StoreMetadata.Key.versionIdentifiers] {
            contents.metadata[key] = made[key]
        }
        contents.metadata[StoreMetadata.Key.ladeVersionHashKind] = made[StoreMetadata.Key.ladeVersionHashKind]
        try format.check(destination, path: url.path)
        try AtomicFileWriter.replace(url) { try format.write(contents, model: destination, to: $0) }
    }
}
