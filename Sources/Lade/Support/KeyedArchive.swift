import Foundation

/// An `NSKeyedArchiver` archive (a binary property list, or its XML form, with `$archiver`,
/// `$objects` and `$top`), read without running any class: what a compiled mapping model (`.cdm`), the
/// value expressions of an Xcode mapping model (`xcmapping.xml`'s `valueexpressiondata`), a
/// compiled managed object model (`.mom`) and a SQLite store's `Z_MODELCACHE` are.
///
/// Objects are dictionaries in `$objects` whose `$class` names the archived class; references
/// between them are UIDs (`["CF$UID": n]`). Nothing here trusts the file: a reference outside
/// `$objects`, a missing class, or nesting deeper than ``maximumDepth`` is an error naming
/// where it was met, made by the reader's own error type (``fail``): a mapping model's
/// `MappingModelError`, a model's `ModelError`.
struct KeyedArchive {
    /// One archived object: its class and its keyed fields (references not yet followed).
    struct Object {
        var className: String
        var fields: [String: PropertyListValue]
    }

    /// How deep objects may nest through references (an expression inside an expression…).
    static let maximumDepth = 64
    /// How many objects one archive may be read into, at least: references may share an
    /// object, so a small archive of a few levels, each naming the next twice, would otherwise
    /// expand into billions.
    static let maximumObjectsRead = 200_000
    /// How many objects a read of each archived object may come to: readers look an object up
    /// more than once (an entity by each relationship that names it, a dictionary's keys), so
    /// a large archive (a model of thousands of entities) gets a bound in proportion.
    static let readsPerObject = 16
    /// The bound on objects read for this archive: ``maximumObjectsRead``, or
    /// ``readsPerObject`` per object it holds if that is more.
    var maximumReads: Int { max(Self.maximumObjectsRead, objects.count * Self.readsPerObject) }
    /// How many components a key path may have (`a.b.c`): each is a step of the evaluation.
    static let maximumKeyPathLength = 256

    /// Objects read so far (shared by copies of the archive).
    private final class Reads { var count = 0 }
    private let reads = Reads()

    /// The archive's `$objects`: decoded whole from an XML list; read one at a time from a
    /// binary one, each when it is asked for (shared by copies of the archive).
    final class Objects {
        private let decoded: [PropertyListValue]
        private var reader: BinaryPropertyListReader?
        private let references: [Int]
        let count: Int

        init(decoded: [PropertyListValue]) {
            self.decoded = decoded
            references = []
            count = decoded.count
        }

        init(references: [Int], reader: BinaryPropertyListReader) {
            decoded = []
            self.references = references
            self.reader = reader
            count = references.count
        }

        /// The object at `index` (`0..<count`).
        func object(at index: Int) throws -> PropertyListValue {
            guard reader != nil else { return decoded[index] }
            return try reader!.archivedObject(references[index])
        }
    }

    let objects: Objects
    let root: PropertyListValue
    /// Where the archive came from, for errors.
    let origin: String
    /// Makes the error for a reason (the origin is already known to it).
    let fail: @Sendable (String) -> any Error

    init(data: Data, origin: String, error: @escaping @Sendable (String) -> any Error) throws {
        self.origin = origin
        self.fail = error
        let plist: PropertyListValue
        var binary: (references: [Int], reader: BinaryPropertyListReader)?
        // A binary list, as Xcode and Core Data write archives; an XML one (`plutil -convert
        // xml1`) is the same archive, as NSKeyedUnarchiver reads it.
        if PropertyListValue.isXMLPropertyList(data) {
            do {
                plist = try PropertyListValue.decode(data, readingUIDs: true)
            } catch let error as PropertyListError {
                throw fail("it is an XML property list that cannot be read as a keyed archive: \(error.description)")
            } catch {
                let reason = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "it is not well formed"
                throw fail("it is an XML property list that does not parse: \(reason)")
            }
        } else {
            do {
                let archive = try BinaryPropertyListReader.readKeyedArchive(data)
                plist = .dictionary(archive.top)
                binary = (archive.objects, archive.reader)
            } catch let error as PropertyListError {
                throw fail("it is not a readable keyed archive: \(error.description)")
            }
        }
        guard case .dictionary(let top) = plist, top["$archiver"] == .string("NSKeyedArchiver"),
              case .array(let objects)? = top["$objects"], case .dictionary(let roots)? = top["$top"] else {
            throw fail("it is a property list but not an NSKeyedArchiver archive ($archiver, $objects and $top)")
        }
        guard let root = roots["root"] ?? (roots.count == 1 ? roots.values.first : nil) else {
            throw fail("the keyed archive has no root object")
        }
        self.objects = binary.map { Objects(references: $0.references, reader: $0.reader) } ?? Objects(decoded: objects)
        self.root = root
    }

    /// The value a field holds, references followed once: `nil` for `$null` or a missing key.
    func value(_ value: PropertyListValue?) throws -> PropertyListValue? {
        guard let value else { return nil }
        guard case .dictionary(let reference) = value, reference.count == 1, case .integer(let uid)? = reference["CF$UID"] else {
            return value
        }
        guard uid >= 0, uid < objects.count else {
            throw fail("the keyed archive refers to object \(uid) of \(objects.count)")
        }
        let target: PropertyListValue
        do {
            target = try objects.object(at: Int(uid))
        } catch let error as PropertyListError {
            throw fail("it is not a readable keyed archive: \(error.description)")
        }
        if target == .string("$null") { return nil }
        return target
    }

    /// The archived object a field refers to, or nil for `$null`.
    func object(_ field: PropertyListValue?) throws -> Object? {
        guard let resolved = try value(field) else { return nil }
        reads.count += 1
        guard reads.count <= maximumReads else {
            throw fail("the keyed archive expands into more than \(maximumReads) objects")
        }
        guard case .dictionary(var fields) = resolved, let classReference = fields.removeValue(forKey: "$class") else {
            throw fail("the keyed archive holds a \(Self.kind(resolved)) where an object was expected")
        }
        guard case .dictionary(let classInfo)? = try value(classReference), case .string(let name)? = classInfo["$classname"] else {
            throw fail("an object of the keyed archive has no class name")
        }
        return Object(className: name, fields: fields)
    }

    /// A string field (a reference to a string, an archived `NSMutableString`, or `$null`).
    func string(_ field: PropertyListValue?) throws -> String? {
        switch try value(field) {
        case nil: return nil
        case .string(let text): return text
        case .dictionary(let fields)? where fields["NS.string"] != nil:
            guard case .string(let text)? = fields["NS.string"] else {
                throw fail("the keyed archive holds a string object without its text")
            }
            return text
        case let other?: throw fail("the keyed archive holds a \(Self.kind(other)) where text was expected")
        }
    }

    /// An integer field (a number kept in place, as `NSKeyedArchiver` keeps them), or nil.
    func integer(_ field: PropertyListValue?) throws -> Int64? {
        switch try value(field) {
        case nil: return nil
        case .integer(let number)?: return number
        case .bool(let flag)?: return flag ? 1 : 0
        case let other?: throw fail("the keyed archive holds a \(Self.kind(other)) where a whole number was expected")
        }
    }

    /// A Boolean field; a missing one is false, as `decodeBoolForKey:` reads it.
    func bool(_ field: PropertyListValue?) throws -> Bool {
        switch try value(field) {
        case nil: return false
        case .bool(let flag)?: return flag
        case .integer(let number)?: return number != 0
        case let other?: throw fail("the keyed archive holds a \(Self.kind(other)) where a Boolean was expected")
        }
    }

    /// The entries of an archived `NSDictionary` (`NS.keys` and `NS.objects`) or of Core
    /// Data's `NSKnownKeysDictionary1` (its `searchMapping`'s keys and its `values`), keys
    /// read as text, values unfollowed, in the archive's order; nil for `$null`.
    func dictionary(_ field: PropertyListValue?) throws -> [(key: String, value: PropertyListValue)]? {
        guard let object = try object(field) else { return nil }
        let keys: [PropertyListValue], values: [PropertyListValue]
        if case .array(let keyList)? = object.fields["NS.keys"], case .array(let valueList)? = object.fields["NS.objects"] {
            (keys, values) = (keyList, valueList)
        } else if object.className == "NSKnownKeysDictionary1", let mapping = try self.object(object.fields["searchMapping"]) {
            (keys, values) = (try members(mapping.fields["keys"]), try members(object.fields["values"]))
        } else {
            throw fail("the keyed archive holds a \(object.className) where a dictionary was expected")
        }
        guard keys.count == values.count else {
            throw fail("a dictionary of the keyed archive has \(keys.count) keys for \(values.count) values")
        }
        return try zip(keys, values).map { key, value in
            guard let text = try string(key) else { throw fail("a dictionary of the keyed archive has a key that is not text") }
            return (text, value)
        }
    }

    /// The members of an archived `NSArray`/`NSSet` (their `NS.objects`), references unfollowed.
    func members(_ field: PropertyListValue?) throws -> [PropertyListValue] {
        guard let collection = try object(field) else { return [] }
        guard case .array(let members)? = collection.fields["NS.objects"] else {
            throw fail("the keyed archive holds a \(collection.className) where an array was expected")
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
