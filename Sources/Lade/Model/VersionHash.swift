import Crypto
import Foundation

/// Lade's own entity version hashes, used where no compiled model supplies Apple's.
///
/// A SHA-256 over the inputs Apple documents for `NSEntityDescription.versionHash` and the
/// property hashes it folds in: the entity's name, its superentity's hash, whether it is
/// abstract, its version hash modifier, its uniqueness constraints, and for each property
/// (inherited ones included, in name order) the name, optionality, transience and version hash
/// modifier, an attribute's type, a relationship's destination, inverse and min/max count; plus
/// three inputs that change what a store holds: a relationship's delete rule, to-many flag and
/// ordering. Renaming identifiers, class names, defaults, validation rules and indexes are left
/// out, as Apple leaves them out. (`isReadOnly`, an input of Apple's property hash, is not in
/// the model files Lade reads, so it is always false.) A composite attribute adds its
/// composite's name and, in name order, each element's name, optionality, transience, type and
/// modifier (a nested composite's elements after its own, the same way); whether Apple's hash
/// takes a composite's elements in cannot be checked without a model with composites compiled
/// by Xcode, which Lade does not have.
///
/// The digest is deterministic but is **not** Apple's: a store written with these hashes
/// matches Lade's reading of the model, not an app's compiled model. A store records which
/// scheme made its hashes (`_LadeVersionHashKind`), so a store an earlier Lade wrote is still
/// compared with the hashes of its own scheme (`docs/migration.md`, "Version hashes").
enum VersionHash {
    /// The schemes, by the `_LadeVersionHashKind` a store records.
    enum Scheme: String, CaseIterable, Sendable {
        /// Lade before uniqueness constraints and the superentity's hash were inputs.
        case sha256v1 = "lade-sha256-1"
        /// Apple's documented inputs, uniqueness constraints and the superentity's hash included.
        case sha256v2 = "lade-sha256-2"

        /// What Lade writes now.
        static let current = Scheme.sha256v2
    }

    /// Every entity's hash under `scheme`.
    static func ladeHashes(of entities: [EntityDescription], index: [String: Int], scheme: Scheme = .current,
                           composites: [String: CompositeDescription] = [:]) -> [String: Data] {
        var hashes: [String: Data] = [:]
        // Parents before children, without recursion: a chain of many ancestors cannot exhaust
        // the stack, and a cycle (refused by the validator) cannot loop.
        func hash(_ name: String) -> Data? {
            if let known = hashes[name] { return known }
            guard let position = index[name] else { return nil }
            var pending = [entities[position]]
            var seen: Set<String> = [name]
            while let parent = pending.last?.parentName, hashes[parent] == nil, let parentPosition = index[parent], seen.insert(parent).inserted {
                pending.append(entities[parentPosition])
            }
            for entity in pending.reversed() {
                hashes[entity.name] = ladeHash(of: entity, in: entities, index: index, scheme: scheme,
                                               parentHash: entity.parentName.flatMap { hashes[$0] }, composites: composites)
            }
            return hashes[name]
        }
        for entity in entities { _ = hash(entity.name) }
        return hashes
    }

    static func ladeHash(of entity: EntityDescription, in entities: [EntityDescription], index: [String: Int],
                         scheme: Scheme, parentHash: Data?, composites: [String: CompositeDescription] = [:]) -> Data {
        var lineage = [entity]
        var seen: Set<String> = [entity.name]
        while let parent = lineage.last?.parentName, let position = index[parent], seen.insert(parent).inserted {
            lineage.append(entities[position])
        }
        var encoder = CanonicalEncoder()
        switch scheme {
        case .sha256v1:
            encoder.field("lade-entity-hash", "1")
            encoder.field("name", entity.name)
            encoder.field("parent", entity.parentName ?? "")
        case .sha256v2:
            encoder.field("lade-entity-hash", "2")
            encoder.field("name", entity.name)
            encoder.field("parent", entity.parentName ?? "")
            encoder.field("parentHash", parentHash?.base64EncodedString() ?? "")
        }
        encoder.field("abstract", entity.isAbstract)
        encoder.field("modifier", entity.versionHashModifier ?? "")
        if scheme == .sha256v2 {
            // In the order the model gives them: the order of a constraint's attributes is the
            // order of its unique index's columns.
            encoder.field("constraints", String(entity.uniquenessConstraints.count))
            for constraint in entity.uniquenessConstraints {
                encoder.field("constraint", String(constraint.count))
                for name in constraint { encoder.field("constraintProperty", name) }
            }
        }
        let attributes = lineage.flatMap(\.attributes).sorted { $0.name < $1.name }
        let relationships = lineage.flatMap(\.relationships).sorted { $0.name < $1.name }
        for attribute in attributes {
            encoder.field("attribute", attribute.name)
            encoder.field("optional", attribute.isOptional)
            encoder.field("transient", attribute.isTransient)
            encoder.field("type", attribute.type.rawValue)
            encoder.field("modifier", attribute.versionHashModifier ?? "")
            if attribute.type == .composite { encodeElements(of: attribute, composites, into: &encoder) }
        }
        for relationship in relationships {
            encoder.field("relationship", relationship.name)
            encoder.field("optional", relationship.isOptional)
            encoder.field("transient", relationship.isTransient)
            encoder.field("destination", relationship.destinationEntityName)
            encoder.field("minCount", String(relationship.minCount))
            encoder.field("maxCount", String(relationship.maxCount))
            encoder.field("toMany", relationship.isToMany)
            encoder.field("ordered", relationship.isOrdered)
            encoder.field("deleteRule", relationship.deleteRule.rawValue)
            encoder.field("inverse", relationship.inverseName ?? "")
            encoder.field("modifier", relationship.versionHashModifier ?? "")
        }
        return Data(SHA256.hash(data: encoder.bytes))
    }

    /// A composite attribute's composite and elements, nested ones depth-first, without
    /// recursion (a model may chain many composites); a composite already open on the path,
    /// a cycle the model's rules refuse, is named and not entered.
    private static func encodeElements(of attribute: AttributeDescription, _ composites: [String: CompositeDescription],
                                       into encoder: inout CanonicalEncoder) {
        enum Step { case open(String), element(AttributeDescription), close(String) }
        var steps: [Step] = [.open(attribute.compositeName ?? "")]
        var open: Set<String> = []
        while let step = steps.popLast() {
            switch step {
            case .open(let name):
                encoder.field("composite", name)
                guard let composite = composites[name], open.insert(name).inserted else { continue }
                steps.append(.close(name))
                steps += composite.elements.sorted(by: { $0.name < $1.name }).reversed().map { .element($0) }
            case .element(let element):
                encoder.field("element", element.name)
                encoder.field("optional", element.isOptional)
                encoder.field("transient", element.isTransient)
                encoder.field("type", element.type.rawValue)
                encoder.field("modifier", element.versionHashModifier ?? "")
                if element.type == .composite { steps.append(.open(element.compositeName ?? "")) }
            case .close(let name):
                open.remove(name)
                encoder.field("endComposite", name)
            }
        }
    }

    /// Length-prefixed fields, so no two different inputs encode to the same bytes.
    struct CanonicalEncoder {
        var bytes: [UInt8] = []

        mutating func field(_ tag: String, _ value: String) {
            append(Array(tag.utf8))
            append(Array(value.utf8))
        }

        mutating func field(_ tag: String, _ value: Bool) {
            field(tag, value ? "1" : "0")
        }

        private mutating func append(_ part: [UInt8]) {
            let count = UInt32(part.count)
            bytes += [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
            bytes += part
        }
    }
}
