import Foundation

/// Builds an `NSKeyedArchiver` archive (a binary property list with `$archiver`, `$version`,
/// `$objects` and `$top`) without Foundation's archiver, which Linux cannot run for Core Data's
/// classes: what Core Data keeps in a store's `Z_MODELCACHE` and what a compiled `.mom` is.
///
/// Laid out as Apple's archiver lays it out: object 0 is `$null`; an object takes its number
/// when its encoding starts (so the objects it refers to follow it) and its class record is
/// added when it ends; a class record names the class and its superclasses (`$classname`,
/// `$classes`), once per class; a string is written once however often it occurs. An object
/// given an `identity` is written once and referred to wherever it occurs again, cycles
/// included (an entity refers to its properties, each property back to its entity). An object
/// may be referred to before it is written (`reserve(identity:)`), so that a long chain of
/// objects each referring to the next is written one after another, not nested.
///
/// ```swift
/// var archive = KeyedArchiveWriter()
/// let root = try archive.object(["Thing", "NSObject"]) { archive in
///     ["name": archive.string("a thing"), "count": .integer(2)]
/// }
/// let data = try archive.archive(root: root)
/// ```
///
/// The output is deterministic: the same calls give the same bytes.
struct KeyedArchiveWriter {
    /// The objects so far; a reserved object is `$null` until its fields are known.
    private var objects: [PropertyListValue] = [.string("$null")]
    private var classRecords: [String: Int] = [:]
    private var strings: [String: Int] = [:]
    private var identities: [String: Int] = [:]
    /// Objects referred to (reserved) whose fields are not written yet.
    private var unwritten: Set<Int> = []

    /// The reference to object `number` (`["CF$UID": number]`, written as a UID).
    static func reference(_ number: Int) -> PropertyListValue { .dictionary(["CF$UID": .integer(Int64(number))]) }

    /// The reference to `$null`: what Apple's archiver writes for a nil object.
    static let null = reference(0)

    /// A string object (written once), or `$null` for nil.
    mutating func string(_ text: String?) -> PropertyListValue {
        guard let text else { return Self.null }
        if let known = strings[text] { return Self.reference(known) }
        objects.append(.string(text))
        strings[text] = objects.count - 1
        return Self.reference(objects.count - 1)
    }

    /// A data object (`NSData` is archived as plain data), or `$null` for nil.
    mutating func data(_ bytes: Data?) -> PropertyListValue {
        guard let bytes else { return Self.null }
        objects.append(.data(bytes))
        return Self.reference(objects.count - 1)
    }

    /// A number or Boolean object (`NSNumber` is archived as a property-list scalar).
    mutating func scalar(_ value: PropertyListValue) -> PropertyListValue {
        objects.append(value)
        return Self.reference(objects.count - 1)
    }

    /// Whether an object of this identity was started already.
    func has(identity: String) -> Bool { identities[identity] != nil }

    /// The reference to the object of `identity`, its number reserved when it is not started
    /// yet; `object(_:identity:fields:)` with that identity then writes it there.
    mutating func reserve(identity: String) -> PropertyListValue {
        if let known = identities[identity] { return Self.reference(known) }
        objects.append(.string("$null"))
        identities[identity] = objects.count - 1
        unwritten.insert(objects.count - 1)
        return Self.reference(objects.count - 1)
    }

    /// An object of class `classes[0]` (its superclasses after it, ending with the root class),
    /// whose keyed fields `fields` gives: scalars inline, objects as references from this writer.
    /// With an `identity` already started, the reference to that object, `fields` not called.
    mutating func object(
        _ classes: [String], identity: String? = nil,
        fields: (inout KeyedArchiveWriter) throws -> [String: PropertyListValue]
    ) rethrows -> PropertyListValue {
        let number: Int
        if let identity, let known = identities[identity] {
            guard unwritten.remove(known) != nil else { return Self.reference(known) }
            number = known
        } else {
            number = objects.count
            objects.append(.string("$null"))
            if let identity { identities[identity] = number }
        }
        var members = try fields(&self)
        members["$class"] = classRecord(classes)
        objects[number] = .dictionary(members)
        return Self.reference(number)
    }

    /// An `NSArray`-like object (`NS.objects`) of class `classes`.
    mutating func array(_ items: [PropertyListValue], classes: [String] = ["NSArray", "NSObject"]) -> PropertyListValue {
        object(classes) { _ in ["NS.objects": .array(items)] }
    }

    /// An `NSDictionary`-like object (`NS.keys`, `NS.objects`) of class `classes`, its keys strings.
    mutating func dictionary(
        _ pairs: [(key: String, value: PropertyListValue)], classes: [String] = ["NSDictionary", "NSObject"]
    ) -> PropertyListValue {
        object(classes) { archive in
            let keys = pairs.map { archive.string($0.key) }
            return ["NS.keys": .array(keys), "NS.objects": .array(pairs.map(\.value))]
        }
    }

    /// The class record of `classes`, added once.
    private mutating func classRecord(_ classes: [String]) -> PropertyListValue {
        let name = classes[0]
        if let known = classRecords[name] { return Self.reference(known) }
        objects.append(.dictionary(["$classname": .string(name), "$classes": .array(classes.map { .string($0) })]))
        classRecords[name] = objects.count - 1
        return Self.reference(objects.count - 1)
    }

    /// The archive, `root` its `$top` root object, as a binary property list.
    func archive(root: PropertyListValue) throws -> Data {
        guard unwritten.isEmpty else {
            let names = identities.filter { unwritten.contains($0.value) }.keys.sorted().prefix(5)
            throw PropertyListError("the archive refers to objects never written: \(names.joined(separator: ", "))")
        }
        return try BinaryPropertyListWriter.write(.dictionary([
            "$archiver": .string("NSKeyedArchiver"),
            "$version": .integer(100_000),
            "$objects": .array(objects),
            "$top": .dictionary(["root": root]),
        ]), writingUIDs: true)
    }
}
