import CZlib
import Foundation
import Testing
@testable import Lade

/// A compiled model's keyed archive built object by object, for archives no compiler writes.
struct ModelArchiveBuilder {
    var objects: [PropertyListValue] = [.string("$null")]
    private var classes: [String: Int] = [:]

    static func uid(_ index: Int) -> PropertyListValue { .dictionary(["CF$UID": .integer(Int64(index))]) }

    /// Appends a value; its reference.
    mutating func add(_ value: PropertyListValue) -> PropertyListValue {
        objects.append(value)
        return Self.uid(objects.count - 1)
    }

    mutating func object(_ className: String, _ fields: [String: PropertyListValue]) -> PropertyListValue {
        let classReference: PropertyListValue
        if let index = classes[className] {
            classReference = Self.uid(index)
        } else {
            classReference = add(.dictionary(["$classname": .string(className), "$classes": .array([.string(className), .string("NSObject")])]))
            classes[className] = objects.count - 1
        }
        var fields = fields
        fields["$class"] = classReference
        return add(.dictionary(fields))
    }

    /// Sets a field of an object already added (to make references that loop).
    mutating func set(_ reference: PropertyListValue, _ key: String, _ value: PropertyListValue) {
        guard case .dictionary(let ref) = reference, case .integer(let index)? = ref["CF$UID"],
              case .dictionary(var fields) = objects[Int(index)] else { return }
        fields[key] = value
        objects[Int(index)] = .dictionary(fields)
    }

    mutating func dictionary(_ entries: [(String, PropertyListValue)]) -> PropertyListValue {
        let keys = entries.map { add(.string($0.0)) }
        return object("NSMutableDictionary", ["NS.keys": .array(keys), "NS.objects": .array(entries.map(\.1))])
    }

    mutating func array(_ members: [PropertyListValue]) -> PropertyListValue {
        object("NSArray", ["NS.objects": .array(members)])
    }

    /// An entity with one string attribute `name`.
    mutating func entity(_ name: String, superentity: PropertyListValue = uid(0)) -> PropertyListValue {
        let attribute = object("NSAttributeDescription", ["NSPropertyName": add(.string("name")), "NSAttributeType": .integer(700), "NSIsOptional": .bool(true)])
        return object("NSEntityDescription", [
            "NSEntityName": add(.string(name)), "NSSuperentity": superentity,
            "NSProperties": dictionary([("name", attribute)]),
        ])
    }

    /// The archive with `root` as its root.
    func archive(root: PropertyListValue) throws -> Data {
        try PropertyListValue.dictionary([
            "$archiver": .string("NSKeyedArchiver"), "$version": .integer(100000),
            "$top": .dictionary(["root": root]), "$objects": .array(objects),
        ]).binaryPropertyList()
    }

    /// A model of `entities`, with `templates` as its fetch request templates.
    mutating func model(_ entities: [(String, PropertyListValue)], templates: [(String, PropertyListValue)] = []) throws -> Data {
        let root = object("NSManagedObjectModel", ["NSEntities": dictionary(entities), "NSFetchRequestTemplates": dictionary(templates)])
        return try archive(root: root)
    }
}

/// Raw deflate (no zlib header) of `data`, as Core Data writes `Z_MODELCACHE.Z_CONTENT`.
func rawDeflate(_ data: Data) throws -> Data {
    var stream = z_stream()
    try #require(deflateInit2_(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK)
    defer { deflateEnd(&stream) }
    var input = [UInt8](data)
    var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))))
    let produced: Int = input.withUnsafeMutableBufferPointer { source in
        output.withUnsafeMutableBufferPointer { target in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            stream.next_out = target.baseAddress
            stream.avail_out = uInt(target.count)
            _ = deflate(&stream, Z_FINISH)
            return target.count - Int(stream.avail_out)
        }
    }
    return Data(output[0..<produced])
}

extension HostileFileTests {
    /// Writes `data` as a `.mom`, reads it, and returns the refusal.
    static func refusal(ofMom data: Data, name: String = "hostile.mom") throws -> ModelError? {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent(name)
        try data.write(to: url)
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: url) }
        #expect(error?.problems.first?.file == url.path, "\(String(describing: error))")
        return error
    }

    @Test("a compiled model (.mom) built here reads back: the builder the hostile cases start from is sound")
    func compiledModelBaseline() throws {
        var builder = ModelArchiveBuilder()
        let data = try builder.model([("Item", builder.entity("Item"))])
        let model = try ManagedObjectModel(compiledModel: data, origin: "built.mom")
        #expect(model.entityNames == ["Item"])
        #expect(model.entity(named: "Item")?.attributes.map(\.name) == ["name"])
    }

    @Test("a truncated .mom is refused as a damaged compiled model, naming the file")
    func truncatedMom() throws {
        var builder = ModelArchiveBuilder()
        let data = try builder.model([("Item", builder.entity("Item"))])
        for length in [0, 8, data.count / 2, data.count - 1] {
            let error = try Self.refusal(ofMom: data.prefix(length))
            // Empty, it is no compiled model at all, and is named so.
            let expected = length == 0 ? "this is not a compiled model: the file is empty" : "cannot be read as a compiled Core Data model"
            #expect(error?.description.contains(expected) == true, "\(length): \(String(describing: error))")
        }
    }

    @Test("a .mom whose predicate nests past the bound, or contains itself, is refused, not followed down the stack")
    func deepAndCyclicPredicate() throws {
        var builder = ModelArchiveBuilder()
        let entity = builder.entity("Item")
        // NOT(NOT(…)) 200 deep.
        var predicate = builder.object("NSTruePredicate", [:])
        for _ in 0..<200 { predicate = builder.object("NSCompoundPredicate", ["NSCompoundPredicateType": .integer(0), "NSSubpredicates": builder.array([predicate])]) }
        let request = builder.object("NSFetchRequest", ["NSEntityName": builder.add(.string("Item")), "NSPredicate": predicate])
        let deep = try Self.refusal(ofMom: try builder.model([("Item", entity)], templates: [("deep", request)]))
        #expect(deep?.description.contains("nests deeper than 64 levels") == true, "\(String(describing: deep))")

        // A compound predicate whose subpredicate is itself.
        var cyclic = ModelArchiveBuilder()
        let item = cyclic.entity("Item")
        let members = cyclic.array([])
        let loop = cyclic.object("NSCompoundPredicate", ["NSCompoundPredicateType": .integer(1), "NSSubpredicates": members])
        cyclic.set(members, "NS.objects", .array([loop]))
        let loopRequest = cyclic.object("NSFetchRequest", ["NSEntityName": cyclic.add(.string("Item")), "NSPredicate": loop])
        let error = try Self.refusal(ofMom: try cyclic.model([("Item", item)], templates: [("loop", loopRequest)]))
        #expect(error?.description.contains("nests deeper than 64 levels") == true, "\(String(describing: error))")
    }

    @Test("a .mom whose entities inherit in a loop, or whose entity name is the entity itself, is refused")
    func cyclicEntities() throws {
        var builder = ModelArchiveBuilder()
        // A's superentity is B, B's is A: the references are read by name, the loop by the validator.
        let a = builder.entity("A"), b = builder.entity("B")
        builder.set(a, "NSSuperentity", b)
        builder.set(b, "NSSuperentity", a)
        let loop = try Self.refusal(ofMom: try builder.model([("A", a), ("B", b)]))
        #expect(loop?.description.contains("inheritance loops back") == true, "\(String(describing: loop))")

        var named = ModelArchiveBuilder()
        let entity = named.object("NSEntityDescription", [:])
        named.set(entity, "NSEntityName", entity)
        let error = try Self.refusal(ofMom: try named.model([("X", entity)]))
        #expect(error?.description.contains("where text was expected") == true, "\(String(describing: error))")
    }

    @Test("a .mom whose shared objects would expand into billions is refused at the object bound")
    func expandingMom() throws {
        var builder = ModelArchiveBuilder()
        let entity = builder.entity("Item")
        // 40 levels of AND, each naming the level below twice: 2^40 comparisons if followed.
        var predicate = builder.object("NSTruePredicate", [:])
        for _ in 0..<40 { predicate = builder.object("NSCompoundPredicate", ["NSCompoundPredicateType": .integer(1), "NSSubpredicates": builder.array([predicate, predicate])]) }
        let request = builder.object("NSFetchRequest", ["NSEntityName": builder.add(.string("Item")), "NSPredicate": predicate])
        let started = Date()
        let error = try Self.refusal(ofMom: try builder.model([("Item", entity)], templates: [("bomb", request)]))
        #expect(error?.description.contains("expands into more than 200000 objects") == true, "\(String(describing: error))")
        #expect(Date().timeIntervalSince(started) < 30)
    }

    @Test("a .mom with the wrong classes where a model, an entity or a property is expected is refused, naming what was found")
    func wrongClasses() throws {
        var notModel = ModelArchiveBuilder()
        let array = notModel.array([])
        let root = try Self.refusal(ofMom: try notModel.archive(root: array))
        #expect(root?.description.contains("root is not an NSManagedObjectModel") == true, "\(String(describing: root))")

        var attributeAsEntity = ModelArchiveBuilder()
        let attribute = attributeAsEntity.object("NSAttributeDescription", ["NSPropertyName": attributeAsEntity.add(.string("x"))])
        let entity = try Self.refusal(ofMom: try attributeAsEntity.model([("Item", attribute)]))
        #expect(entity?.description.contains("holds a NSAttributeDescription where the entity 'Item' was expected") == true, "\(String(describing: entity))")

        var stringAsProperty = ModelArchiveBuilder()
        let text = stringAsProperty.add(.string("not a property"))
        let item = stringAsProperty.object("NSEntityDescription", ["NSEntityName": stringAsProperty.add(.string("Item")), "NSProperties": stringAsProperty.dictionary([("name", text)])])
        let property = try Self.refusal(ofMom: try stringAsProperty.model([("Item", item)]))
        #expect(property?.description.contains("holds a string where an object was expected") == true, "\(String(describing: property))")

        var unknownType = ModelArchiveBuilder()
        let odd = unknownType.object("NSAttributeDescription", ["NSPropertyName": unknownType.add(.string("odd")), "NSAttributeType": .integer(2100)])
        let withOdd = unknownType.object("NSEntityDescription", ["NSEntityName": unknownType.add(.string("Item")), "NSProperties": unknownType.dictionary([("odd", odd)])])
        let type = try Self.refusal(ofMom: try unknownType.model([("Item", withOdd)]))
        #expect(type?.description.contains("entity 'Item', property 'odd': attribute type 2100 (composite)") == true, "\(String(describing: type))")
    }

    @Test("a model cache that is truncated, not deflate, or inflates past the bound is refused, naming the store and Z_MODELCACHE")
    func hostileCache() throws {
        var builder = ModelArchiveBuilder()
        let archive = try builder.model([("Item", builder.entity("Item"))])
        let blob = try rawDeflate(archive)
        let origin = "Store.sqlite, Z_MODELCACHE"
        #expect(try ManagedObjectModel(modelCache: blob, origin: origin).entityNames == ["Item"])

        let truncated = #expect(throws: ModelError.self) { try ManagedObjectModel(modelCache: blob.prefix(blob.count / 2), origin: origin) }
        #expect(truncated?.description == "\(origin): the model cache ends before its deflate stream does: it is truncated")
        let garbage = #expect(throws: ModelError.self) { try ManagedObjectModel(modelCache: Data(repeating: 0xFF, count: 64), origin: origin) }
        #expect(garbage?.description.contains("\(origin): the model cache is not a raw deflate stream") == true, "\(String(describing: garbage))")
        // 80 MiB of zeros deflate to about 80 KiB.
        let bomb = try rawDeflate(Data(count: 80 << 20))
        #expect(bomb.count < 200_000)
        let started = Date()
        let inflated = #expect(throws: ModelError.self) { try ManagedObjectModel(modelCache: bomb, origin: origin) }
        #expect(inflated?.description.contains("\(origin): the model cache inflates to more than 64 MiB") == true, "\(String(describing: inflated))")
        #expect(Date().timeIntervalSince(started) < 30)
        // Inflated, but not a keyed archive.
        let notArchive = #expect(throws: ModelError.self) { try ManagedObjectModel(modelCache: try rawDeflate(Data("hello".utf8)), origin: origin) }
        #expect(notArchive?.description.contains("\(origin): cannot be read as a compiled Core Data model") == true, "\(String(describing: notArchive))")
    }

    @Test("a store with a hostile model cache is refused by modelCache(ofStoreAt:) naming the store and Z_MODELCACHE; one without a cache gives nil")
    func hostileCacheInStore() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("catalog.sqlite")
        _ = try SQLiteStore.create(at: url, model: try ManagedObjectModel(contentsOf: Fixtures.catalog))
        // Lade writes a cache into every SQLite store it makes; without it, there is none to read.
        let connection = try SQLiteConnection(path: url.path, mode: .readWrite(create: false))
        try connection.execute("DELETE FROM Z_MODELCACHE")
        #expect(try ManagedObjectModel.modelCache(ofStoreAt: url) == nil)
        try connection.prepare("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)").run([.blob(try rawDeflate(Data(count: 80 << 20)))])
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel.modelCache(ofStoreAt: url) }
        #expect(error?.problems.first?.file == url.path + ", Z_MODELCACHE", "\(String(describing: error))")
        #expect(error?.description.contains("inflates to more than 64 MiB") == true)
    }
}
