import Crypto
import Foundation

/// Lade's own entity version hash, used where no compiled model supplies Apple's.
///
/// It is a SHA-256 over the inputs Apple documents for `NSEntityDescription.versionHash` —
/// the entity's name, its parent's name, whether it is abstract, its version hash modifier,
/// and for each property (inherited ones included, in name order) the name, optionality,
/// transience, attribute type or relationship destination, min/max count, inverse name and
/// version hash modifier — plus three inputs that change what a store holds: a relationship's
/// delete rule, to-many flag and ordering. Renaming identifiers, class names, defaults and
/// validation rules are left out, as Apple leaves them out.
/// The digest is deterministic but is **not** Apple's: a store written with these hashes
/// matches Lade's reading of the model, not an app's compiled model.
enum VersionHash {
    static func ladeHash(of entity: EntityDescription, in entities: [EntityDescription], index: [String: Int]) -> Data {
        var lineage = [entity]
        var seen: Set<String> = [entity.name]
        while let parent = lineage.last?.parentName, let position = index[parent], seen.insert(parent).inserted {
            lineage.append(entities[position])
        }
        var encoder = CanonicalEncoder()
        encoder.field("lade-entity-hash", "1")
        encoder.field("name", entity.name)
        encoder.field("parent", entity.parentName ?? "")
        encoder.field("abstract", entity.isAbstract)
        encoder.field("modifier", entity.versionHashModifier ?? "")
        let attributes = lineage.flatMap(\.attributes).sorted { $0.name < $1.name }
        let relationships = lineage.flatMap(\.relationships).sorted { $0.name < $1.name }
        for attribute in attributes {
            encoder.field("attribute", attribute.name)
            encoder.field("optional", attribute.isOptional)
            encoder.field("transient", attribute.isTransient)
            encoder.field("type", attribute.type.rawValue)
            encoder.field("modifier", attribute.versionHashModifier ?? "")
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
