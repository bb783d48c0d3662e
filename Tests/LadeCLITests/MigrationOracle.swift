import Foundation

/// An independent, deliberately plain model of what Core Data's inferred (lightweight) mapping
/// gives a store: for each source object, its destination object, or the refusal Core Data
/// would end the migration with. It knows nothing of Lade's code; it reads the two models as
/// `NSMappingModel.inferredMappingModel(forSourceModel:destinationModel:)` does and the objects as
/// `NSMigrationManager` carries them:
///
/// - entities, attributes and relationships are matched by renaming identifier (unset: the name);
/// - a matched attribute keeps its value, widened (Integer 16 → 32 → 64) or made Decimal; any
///   other type change cannot be inferred;
/// - an attribute the source lacks takes its default (or nil); a required attribute left nil
///   (added without a default, or made required without one while some object has none)
///   fails the destination's validation;
/// - a relationship keeps its destination when both ends are carried, else it is empty;
/// - keys (`Z_PK`) are kept, as Core Data's in-place SQLite migration keeps them;
/// - a uniqueness constraint two objects break cannot be built.
///
/// Over several versions, Core Data infers the mapping from the store's version straight to
/// the current one when it can (and so keeps what both ends have, whatever a version between
/// dropped); only when it cannot does it go version by version.
enum MigrationOracle {
    struct Object {
        var primaryKey: Int64
        /// By attribute name in the object's version.
        var values: [String: GeneratedValue]
        /// By relationship name: the destination's entity (in the same version) and key.
        var references: [String: Reference]
    }

    struct Reference: Hashable {
        var entity: String
        var primaryKey: Int64
    }

    /// Entity name → its objects.
    typealias State = [String: [Object]]

    enum Outcome {
        case migrated(State)
        /// `naming`: what the error should name (entity, property, a duplicated value).
        case refused(reason: String, naming: [String])
    }

    /// Whether Core Data can infer a mapping between the two versions at all (types only: the
    /// rest of what could fail depends on the objects).
    static func canInfer(from source: GeneratedModel, to destination: GeneratedModel) -> Bool {
        for entity in destination.entities {
            guard let old = source.entities.first(where: { $0.identifier == entity.identifier }) else { continue }
            for attribute in entity.attributes {
                if let was = old.attributes.first(where: { $0.identifier == attribute.identifier }), !was.type.carries(to: attribute.type) { return false }
            }
        }
        return true
    }

    /// The store of `versions.first`, holding `state`, carried to `versions.last`.
    static func migrate(_ state: State, through versions: [GeneratedModel]) -> Outcome {
        if canInfer(from: versions.first!, to: versions.last!) {
            return step(state, from: versions.first!, to: versions.last!)
        }
        var state = state
        for (source, destination) in zip(versions, versions.dropFirst()) {
            switch step(state, from: source, to: destination) {
            case .migrated(let next): state = next
            case let refused: return refused
            }
        }
        return .migrated(state)
    }

    /// One inferred mapping.
    static func step(_ state: State, from source: GeneratedModel, to destination: GeneratedModel) -> Outcome {
        var entityNames: [String: String] = [:]
        for entity in destination.entities {
            if let old = source.entities.first(where: { $0.identifier == entity.identifier }) { entityNames[old.name] = entity.name }
        }
        for entity in destination.entities {
            guard let old = source.entities.first(where: { $0.identifier == entity.identifier }) else { continue }
            for attribute in entity.attributes {
                if let was = old.attributes.first(where: { $0.identifier == attribute.identifier }), !was.type.carries(to: attribute.type) {
                    return .refused(reason: "\(entity.name).\(attribute.name): \(was.type.rawValue) → \(attribute.type.rawValue) cannot be inferred",
                                    naming: [entity.name, attribute.name])
                }
            }
        }
        var result: State = [:]
        for entity in destination.entities {
            guard let old = source.entities.first(where: { $0.identifier == entity.identifier }) else {
                result[entity.name] = []
                continue
            }
            var objects: [Object] = []
            for object in state[old.name] ?? [] {
                var new = Object(primaryKey: object.primaryKey, values: [:], references: [:])
                for attribute in entity.attributes {
                    var value = GeneratedValue.null
                    if let was = old.attributes.first(where: { $0.identifier == attribute.identifier }) {
                        value = (object.values[was.name] ?? .null).converted(from: was.type, to: attribute.type)
                    } else {
                        value = .defaultValue(attribute.defaultValue, attribute.type)
                    }
                    if value.isNull && !attribute.isOptional {
                        value = .defaultValue(attribute.defaultValue, attribute.type)
                        if value.isNull {
                            return .refused(reason: "\(entity.name).\(attribute.name) is required and object p\(object.primaryKey) has no value and there is no default",
                                            naming: [entity.name, attribute.name])
                        }
                    }
                    new.values[attribute.name] = value
                }
                for relationship in entity.relationships {
                    guard let was = old.relationships.first(where: { $0.identifier == relationship.identifier }),
                          let reference = object.references[was.name], let carried = entityNames[reference.entity],
                          carried == relationship.destination else { continue }
                    new.references[relationship.name] = Reference(entity: carried, primaryKey: reference.primaryKey)
                }
                objects.append(new)
            }
            for name in entity.uniqueAttributes {
                var seen: Set<GeneratedValue> = []
                for object in objects {
                    let value = object.values[name] ?? .null
                    if value.isNull { continue }
                    if !seen.insert(value).inserted {
                        return .refused(reason: "\(entity.name).\(name): two objects have \(value)", naming: [entity.name, name, duplicateText(value)])
                    }
                }
            }
            result[entity.name] = objects
        }
        return .migrated(result)
    }

    static func duplicateText(_ value: GeneratedValue) -> String {
        if case .string(let text) = value { return text }
        return value.exported.description
    }

    /// `state` as `lade export` writes `model`'s objects, entity by entity in key order, URIs
    /// with `uuid` as the store's.
    static func export(_ state: State, model: GeneratedModel, uuid: String) -> [String: [ExportJSON]] {
        var byKey: [Reference: Object] = [:]
        for (entity, objects) in state { for object in objects { byKey[Reference(entity: entity, primaryKey: object.primaryKey)] = object } }
        func uri(_ reference: Reference) -> String { "x-coredata://\(uuid)/\(reference.entity)/p\(reference.primaryKey)" }
        var files: [String: [ExportJSON]] = [:]
        for entity in model.entities {
            files[entity.name] = (state[entity.name] ?? []).sorted { $0.primaryKey < $1.primaryKey }.map { object in
                var keys = ["_uri"]
                var values: [String: ExportJSON] = ["_uri": .string(uri(Reference(entity: entity.name, primaryKey: object.primaryKey)))]
                for attribute in entity.attributes {
                    keys.append(attribute.name)
                    values[attribute.name] = (object.values[attribute.name] ?? .null).exported
                }
                for relationship in entity.relationships {
                    keys.append(relationship.name)
                    guard let reference = object.references[relationship.name] else { values[relationship.name] = .null; continue }
                    // A destination with a single-attribute uniqueness constraint is named by that attribute's value.
                    if let unique = model.entity(reference.entity)?.uniqueAttributes.first {
                        values[relationship.name] = (byKey[reference]?.values[unique] ?? .null).exported
                    } else {
                        values[relationship.name] = .string(uri(reference))
                    }
                }
                return .object(keys: keys, values: values)
            }
        }
        return files
    }
}
