import Foundation

/// An `NSKeyedArchiver` archive (a binary property list with `$archiver`, `$objects` and
/// `$top`), read without running any class: what a compiled mapping model (`.cdm`) and the
/// value expressions of an Xcode mapping model (`xcmapping.xml`'s `valueexpressiondata`) are.
///
/// Objects are dictionaries in `$objects` whose `$class` names the archived class; references
/// between them are UIDs (`["CF$UID": n]`). Nothing here trusts the file: a reference outside
/// `$objects`, a missing class, or nesting deeper than ``maximumDepth`` is an error naming
/// where it was met.
struct KeyedArchive {
    /// One archived object: its class and its keyed fields (references not yet followed).
    struct Object {
        var className: String
        var fields: [String: PropertyListValue]
    }

    /// How deep objects may nest through references (an expression inside an expression…).
    static let maximumDepth = 64
    /// How many objects one archive may be read into: references may share an object, so a
    /// small archive of a few levels, each naming the next twice, would otherwise expand into
    /// billions.
    static let maximumObjectsRead = 200_000
    /// How many components a key path may have (`a.b.c`): each is a step of the evaluation.
    static let maximumKeyPathLength = 256

    /// Objects read so far (shared by copies of the archive).
    private final class Reads { var count = 0 }
    private let reads = Reads()

    let objects: [PropertyListValue]
    let root: PropertyListValue
    /// Where the archive came from, for errors.
    let origin: String

    init(data: Data, origin: String) throws {
        self.origin = origin
        let plist: PropertyListValue
        do {
            plist = try BinaryPropertyListReader.read(data, readingUIDs: true)
        } catch let error as PropertyListError {
            throw MappingModelError(origin, "it is not a readable keyed archive: \(error.description)")
        }
        guard case .dictionary(let top) = plist, top["$archiver"] == .string("NSKeyedArchiver"),
              case .array(let objects)? = top["$objects"], case .dictionary(let roots)? = top["$top"] else {
            throw MappingModelError(origin, "it is a property list but not an NSKeyedArchiver archive ($archiver, $objects and $top)")
        }
        guard let root = roots["root"] ?? (roots.count == 1 ? roots.values.first : nil) else {
            throw MappingModelError(origin, "the keyed archive has no root object")
        }
        self.objects = objects
        self.root = root
    }

    /// The value a field holds, references followed once: `nil` for `$null` or a missing key.
    func value(_ value: PropertyListValue?) throws -> PropertyListValue? {
        guard let value else { return nil }
        guard case .dictionary(let reference) = value, reference.count == 1, case .integer(let uid)? = reference["CF$UID"] else {
            return value
        }
        guard uid >= 0, uid < objects.count else {
            throw MappingModelError(origin, "the keyed archive refers to object \(uid) of \(objects.count)")
        }
        let target = objects[Int(uid)]
        if target == .string("$null") { return nil }
        return target
    }

    /// The archived object a field refers to, or nil for `$null`.
    func object(_ field: PropertyListValue?) throws -> Object? {
        guard let resolved = try value(field) else { return nil }
        reads.count += 1
        guard reads.count <= Self.maximumObjectsRead else {
            throw MappingModelError(origin, "the keyed archive expands into more than \(Self.maximumObjectsRead) objects")
        }
        guard case .dictionary(var fields) = resolved, let classReference = fields.removeValue(forKey: "$class") else {
            throw MappingModelError(origin, "the keyed archive holds a \(Self.kind(resolved)) where an object was expected")
        }
        guard case .dictionary(let classInfo)? = try value(classReference), case .string(let name)? = classInfo["$classname"] else {
            throw MappingModelError(origin, "an object of the keyed archive has no class name")
        }
        return Object(className: name, fields: fields)
    }

    /// A string field (a reference to a string, or `$null`).
    func string(_ field: PropertyListValue?) throws -> String? {
        switch try value(field) {
        case nil: return nil
        case .string(let text): return text
        case let other?: throw MappingModelError(origin, "the keyed archive holds a \(Self.kind(other)) where text was expected")
        }
    }

    /// The members of an archived `NSArray`/`NSSet` (their `NS.objects`), references unfollowed.
    func members(_ field: PropertyListValue?) throws -> [PropertyListValue] {
        guard let collection = try object(field) else { return [] }
        guard case .array(let members)? = collection.fields["NS.objects"] else {
            throw MappingModelError(origin, "the keyed archive holds a \(collection.className) where an array was expected")
        }
        return members
    }

    static func kind(_ value: PropertyListValue) -> String {
        switch value {
        case .string: "string"
        case .integer: "integer"
        case .real: "number"
        case .bool: "Boolean"
        case .date: "date"
        case .data: "data block"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }
}
