import Foundation
import Testing

/// Hostile input, migrations: seeded model version chains with the changes Core Data's
/// lightweight migration carries and some it refuses, and mapping models with filters and value
/// expressions, over SQLite, XML and binary stores filled by `lade seed`. Each `lade migrate` is
/// judged object by object, through `lade export`, against ``MigrationOracle`` (or, for mapping
/// models, the evaluation in ``MappingCase``); a refusal must leave the store byte-identical
/// with exit 1 and one error line naming what is at fault.
///
/// Every failure names its case's seed; `LADE_HOSTILE_SEED=N swift test --filter HostileMigration`
/// runs that case alone.
@Suite("Hostile input: migrations judged object by object", .slow)
struct HostileMigrationTests {
    /// The cases: each kind on each store type, twice for lightweight steps (a seed's kind and
    /// store type follow from its offset from the base, its content from the seed).
    static let lightweightSeeds = HostileSeeds.select((0..<6 * MigrationCase.kinds.count).map { MigrationCase.baseSeed + UInt64($0) })
    static let mappingSeeds = HostileSeeds.select((0..<3 * MappingCase.kinds.count).map { MappingCase.baseSeed + UInt64($0) })

    @Test("lightweight migrations of generated version chains give what Core Data's inferred mapping gives, or refuse with the store untouched",
          arguments: lightweightSeeds)
    func lightweight(seed: UInt64) throws {
        let migration = MigrationCase.generate(seed: seed)
        try migration.run()
    }

    @Test("mapping models with filters and value expressions give what the default migration policy gives, or refuse with the store untouched",
          arguments: mappingSeeds)
    func mapping(seed: UInt64) throws {
        let mapping = MappingCase.generate(seed: seed)
        try mapping.run()
    }
}

/// The seeds a hostile suite runs: all, or the one `LADE_HOSTILE_SEED` names.
enum HostileSeeds {
    static func select(_ seeds: [UInt64]) -> [UInt64] {
        guard let text = ProcessInfo.processInfo.environment["LADE_HOSTILE_SEED"], let seed = UInt64(text) else { return seeds }
        return seeds.contains(seed) ? [seed] : []
    }
}

/// One generated object: attribute values by name, and its to-one relationships by the `code` of their destination.
struct GeneratedObject {
    var values: [String: GeneratedValue]
    var relationships: [String: String] = [:]
    var code: String { if case .string(let code)? = values["code"] { return code } else { return "?" } }
}

/// A store of `versions.first` with `objects`, filled with `lade seed` and read back with `lade export`.
struct GeneratedStore {
    var versions: [GeneratedModel]
    /// First version's entity name → objects.
    var objects: [String: [GeneratedObject]]
    var storeType: String
    let sandbox: ImportSandbox
    var context: String

    var bundle: String { "M.xcdatamodeld" }
    var store: String { "store.\(storeType)" }
    var storeURL: URL { sandbox.url(store) }

    init(versions: [GeneratedModel], objects: [String: [GeneratedObject]], storeType: String, context: String) throws {
        self.versions = versions
        self.objects = objects
        self.storeType = storeType
        self.context = context
        sandbox = try ImportSandbox()
    }

    func lade(_ arguments: [String], limit: TimeInterval = 60) throws -> HostileRun {
        let run = try HostileRun.run(arguments, in: sandbox.directory, limit: limit)
        #expect(!run.hung && run.signal == nil && !run.stderr.contains("Fatal error"),
                "\(context): lade \(arguments.joined(separator: " ")) hung or crashed: \(run.stderr.suffix(600))")
        return run
    }

    /// Writes the bundle and fills the store with `lade seed` (one step per entity, in model order,
    /// to-one relationships found by `code`); returns each object's key, by code.
    func fill() throws -> [String: MigrationOracle.Reference] {
        try GeneratedModel.writeBundle(versions, to: sandbox.url(bundle))
        let first = versions[0]
        var steps = ""
        for entity in first.entities {
            let lines = (objects[entity.name] ?? []).map { object in
                let fields = entity.attributes.map { "\(SourceText.json($0.name)):\((object.values[$0.name] ?? .null).source)" }
                    + entity.relationships.map { "\(SourceText.json($0.name)):\(object.relationships[$0.name].map(SourceText.json) ?? "null")" }
                return "{" + fields.joined(separator: ",") + "}\n"
            }
            try sandbox.write("\(entity.name).ndjson", lines.joined())
            steps += "  - source: \(entity.name).ndjson\n    entity: \(entity.name)\n    key: code\n"
            if !entity.relationships.isEmpty {
                steps += "    relationships:\n" + entity.relationships.map { "      \($0.name): { from: \($0.name), match: code }\n" }.joined()
            }
        }
        try sandbox.write("seed.yaml", """
            kind: seed
            flag: hostile.seed
            model: { path: \(bundle), version: \(first.name) }
            store: { type: \(storeType), path: \(store) }
            steps:

            """ + steps)
        let seed = try lade(["seed", "seed.yaml", "--quiet"])
        try #require(seed.status == 0, "\(context): filling the store: \(seed.stderr)")

        // The store holds what was generated, each object once.
        let files = try export(version: first.name, into: "before")
        var keys: [String: MigrationOracle.Reference] = [:]
        for entity in first.entities {
            for line in files[entity.name] ?? [] {
                guard let code = line["code"]?.text, let uri = line["_uri"]?.text.flatMap(ObjectURI.init) else {
                    Issue.record("\(context): an exported \(entity.name) without code or URI: \(line)")
                    continue
                }
                keys[code] = .init(entity: uri.entity, primaryKey: uri.primaryKey)
            }
        }
        for entity in first.entities {
            let exported = Dictionary((files[entity.name] ?? []).map { ($0["code"]?.text ?? "?", $0) }, uniquingKeysWith: { first, _ in first })
            let generated = objects[entity.name] ?? []
            #expect(exported.count == generated.count && (files[entity.name] ?? []).count == generated.count,
                    "\(context): \(entity.name): \(generated.count) objects generated, \(files[entity.name]?.count ?? 0) in the store")
            for object in generated {
                guard let line = exported[object.code] else { Issue.record("\(context): \(entity.name) \(object.code) is not in the store"); continue }
                for attribute in entity.attributes where !(line[attribute.name] ?? .null).sameValue(as: (object.values[attribute.name] ?? .null).exported) {
                    Issue.record("\(context): filling: \(entity.name) \(object.code).\(attribute.name) is \(line[attribute.name] ?? .null), generated \((object.values[attribute.name] ?? .null).exported)")
                }
                for relationship in entity.relationships {
                    let reference = object.relationships[relationship.name].flatMap { keys[$0] }
                    let destination = first.entity(relationship.destination)!
                    var expected = ExportJSON.null
                    if let reference, let code = object.relationships[relationship.name] {
                        if let unique = destination.uniqueAttributes.first {
                            expected = (objects[destination.name]?.first { $0.code == code }?.values[unique] ?? .null).exported
                        } else {
                            expected = .string("x-coredata://\(uuid(of: files))/\(reference.entity)/p\(reference.primaryKey)")
                        }
                    }
                    if line[relationship.name] != expected {
                        Issue.record("\(context): filling: \(entity.name) \(object.code).\(relationship.name) is \(line[relationship.name] ?? .null), expected \(expected)")
                    }
                }
            }
        }
        return keys
    }

    /// The oracle's starting state: the generated objects with the keys the store gave them.
    func state(keys: [String: MigrationOracle.Reference]) -> MigrationOracle.State {
        var state: MigrationOracle.State = [:]
        for entity in versions[0].entities {
            state[entity.name] = (objects[entity.name] ?? []).compactMap { object in
                guard let key = keys[object.code] else { return nil }
                var references: [String: MigrationOracle.Reference] = [:]
                for (name, code) in object.relationships { references[name] = keys[code] }
                return .init(primaryKey: key.primaryKey, values: object.values, references: references)
            }
        }
        return state
    }

    /// `lade export` of the store read as `version` (nil: the bundle's current one), NDJSON, by entity.
    func export(version: String?, into folder: String) throws -> [String: [ExportJSON]] {
        let model = version.map { v in versions.first { $0.name == v }! } ?? versions.last!
        let run = try lade(["export", store, "--model", bundle, "--format", "ndjson", "--out", folder] + (version.map { ["--model-version", $0] } ?? []))
        try #require(run.status == 0, "\(context): lade export (\(version ?? "current")): \(run.stderr)")
        var files: [String: [ExportJSON]] = [:]
        for entity in model.entities {
            files[entity.name] = try ExportJSON.lines(of: sandbox.url("\(folder)/\(entity.name).ndjson"))
        }
        return files
    }

    func uuid(of files: [String: [ExportJSON]]) -> String {
        for lines in files.values { if let uri = lines.first?["_uri"]?.text.flatMap(ObjectURI.init) { return uri.store } }
        return "?"
    }

    /// A refusal: exit 1, one error line naming each of `naming`, the store byte for byte as before.
    func expectRefused(_ run: HostileRun, naming: [String], before: [String], why: String) throws {
        #expect(run.status == 1, "\(context): expected a refusal (\(why)), got exit \(run.status): \(run.stdout.suffix(600)) \(run.stderr.suffix(600))")
        let errors = run.errorLines.filter { $0.hasPrefix("lade: error:") }
        #expect(errors.count == 1, "\(context): expected one error line (\(why)), got \(run.errorLines)")
        for name in naming where errors.first?.contains(name) != true {
            Issue.record("\(context): the error does not name '\(name)' (\(why)): \(errors)")
        }
        #expect(try storeFileDigests(storeURL) == before, "\(context): the store changed though the migration was refused (\(why))")
    }

    /// Export files against the oracle's, object by object, each difference named.
    func compare(_ actual: [String: [ExportJSON]], _ expected: [String: [ExportJSON]], model: GeneratedModel) {
        for entity in model.entities {
            let have = actual[entity.name] ?? [], want = expected[entity.name] ?? []
            if have.count != want.count {
                Issue.record("\(context): \(entity.name): \(have.count) objects after the migration, expected \(want.count)\n  got:      \(have.prefix(4).map(\.description))\n  expected: \(want.prefix(4).map(\.description))")
                continue
            }
            var differences = 0
            for (got, wanted) in zip(have, want) where !got.sameValue(as: wanted) {
                differences += 1
                if differences <= 3 { Issue.record("\(context): \(entity.name):\n  got:      \(got)\n  expected: \(wanted)") }
            }
            if differences > 3 { Issue.record("\(context): \(entity.name): \(differences) objects differ in all") }
        }
    }
}

// MARK: Lightweight cases

/// A generated chain of model versions, the objects of its first version and the store type.
struct MigrationCase {
    enum Kind: String, CaseIterable {
        /// Changes Core Data carries, two to five in one version.
        case carried
        /// One change Core Data refuses, among changes it carries.
        case refused
        /// A version that only adds a uniqueness constraint, with and without duplicates present.
        case uniqueOnly
        /// An attribute made required without a default while every object has a value: carried.
        case requiredWithValues
        /// Three or four versions, the second dropping an attribute the third has again.
        case chain
        /// As `chain`, the attribute back with another type: no direct mapping, so version by version.
        case chainRetyped
    }

    var seed: UInt64
    var kind: Kind
    var storeType: String
    var versions: [GeneratedModel]
    var objects: [String: [GeneratedObject]]
    var changes: [String]

    var context: String { "seed \(seed) [\(kind.rawValue), \(storeType)] " + changes.joined(separator: "; ") }

    static let baseSeed: UInt64 = 31_000
    static let kinds: [Kind] = [.carried, .carried, .refused, .chain, .carried, .uniqueOnly, .refused, .chainRetyped, .carried, .requiredWithValues, .refused, .chain]

    static func generate(seed: UInt64) -> MigrationCase {
        var generator = MigrationCaseGenerator(seed: seed)
        return generator.make()
    }

    func run() throws {
        let store = try GeneratedStore(versions: versions, objects: objects, storeType: storeType, context: context)
        let keys = try store.fill()
        let before = try storeFileDigests(store.storeURL)
        let run = try store.lade(["migrate", store.store, "--model", store.bundle])
        switch MigrationOracle.migrate(store.state(keys: keys), through: versions) {
        case .refused(let reason, let naming):
            try store.expectRefused(run, naming: naming, before: before, why: reason)
        case .migrated(let state):
            try #require(run.status == 0, "\(context): lade migrate: exit \(run.status): \(run.stderr.suffix(800))")
            let actual = try store.export(version: nil, into: "after")
            let uuid = store.uuid(of: actual)
            store.compare(actual, MigrationOracle.export(state, model: versions.last!, uuid: uuid), model: versions.last!)
            let check = try store.lade(["check", store.store, "--model", store.bundle])
            #expect(check.status == 0, "\(context): lade check after the migration: \(check.stdout.suffix(600)) \(check.stderr.suffix(600))")
        }
    }
}

/// Makes one ``MigrationCase`` from a seed: its kind and store type follow from the seed's
/// position, everything else from the generator.
struct MigrationCaseGenerator {
    var random: SeededGenerator
    let seed: UInt64
    var counter = 0
    var changes: [String] = []
    /// `Entity.attribute` identifiers changed in the version being made.
    var touched: Set<String> = []
    var storeType: String
    var objects: [String: [GeneratedObject]] = [:]

    init(seed: UInt64) {
        self.seed = seed
        random = SeededGenerator(seed: seed &* 0x9E37_79B9_7F4A_7C15)
        storeType = ["sqlite", "xml", "binary"][Int((seed - MigrationCase.baseSeed) % 3)]
    }

    mutating func fresh(_ prefix: String) -> String {
        counter += 1
        return "\(prefix)\(counter)"
    }

    mutating func make() -> MigrationCase {
        let kind = MigrationCase.kinds[Int((seed - MigrationCase.baseSeed) / 3 % UInt64(MigrationCase.kinds.count))]
        let first = firstVersion(withText: kind == .chain || kind == .chainRetyped)
        fillObjects(first)
        var versions: [GeneratedModel] = []
        switch kind {
        case .carried:
            var next = first
            next.name = "V2"
            changes.append("V2:")
            for _ in 0..<random.int(2...5) { carriedChange(&next) }
            versions = [first, next]
        case .refused:
            var next = first
            next.name = "V2"
            changes.append("V2:")
            for _ in 0..<random.int(0...2) { carriedChange(&next) }
            refusingChange(&next)
            for _ in 0..<random.int(0...1) { carriedChange(&next) }
            versions = [first, next]
        case .uniqueOnly:
            var next = first
            next.name = "V2"
            let index = random.int(first.entities.count)
            next.entities[index].uniqueAttributes.append("tag")
            let entity = next.entities[index].name
            let duplicates = random.chance(50)
            if duplicates { duplicateTag(entity) }
            changes.append("V2: only a uniqueness constraint on \(entity).tag added, \(duplicates ? "with" : "without") duplicates")
            versions = [first, next]
        case .requiredWithValues:
            var next = first
            next.name = "V2"
            changes.append("V2:")
            let candidates = next.entities.indices.flatMap { e in next.entities[e].attributes.indices.map { (e, $0) } }
                .filter { next.entities[$0.0].attributes[$0.1].isOptional && !["code", "tag"].contains(next.entities[$0.0].attributes[$0.1].name) }
            if let (e, a) = candidates.isEmpty ? nil : random.pick(candidates) {
                next.entities[e].attributes[a].isOptional = false
                next.entities[e].attributes[a].defaultValue = nil
                let entity = next.entities[e].name, attribute = next.entities[e].attributes[a]
                for index in objects[entity]!.indices where objects[entity]![index].values[attribute.name] == .null {
                    objects[entity]![index].values[attribute.name] = .random(attribute.type, using: &random, storeKeepsDigits: digits)
                }
                changes.append("\(entity).\(attribute.name) made required without a default, every object has a value")
            }
            for _ in 0..<random.int(0...2) { carriedChange(&next) }
            versions = [first, next]
        case .chain, .chainRetyped:
            var second = first
            second.name = "V2"
            let holder = first.entities.firstIndex { $0.attribute("txt") != nil }!
            second.entities[holder].attributes.removeAll { $0.name == "txt" }
            changes.append("V2: \(first.entities[holder].name).txt removed")
            // The entity holding it stays (renamed, perhaps), so the third version can have it again.
            touched.insert("\(first.entities[holder].identifier).txt")
            touched.insert("entity \(first.entities[holder].identifier)")
            for _ in 0..<random.int(0...2) { carriedChange(&second) }
            var third = second
            third.name = "V3"
            touched = []
            let back = kind == .chain ? GeneratedModel.AttributeType.string : .integer32
            if let index = third.entities.firstIndex(where: { $0.identifier == first.entities[holder].identifier }) {
                third.entities[index].attributes.append(.init(name: "txt", type: back, isOptional: true))
                touched.insert("\(third.entities[index].identifier).txt")
                touched.insert("entity \(third.entities[index].identifier)")
                changes.append("V3: \(third.entities[index].name).txt added again (\(back.rawValue))")
            }
            for _ in 0..<random.int(0...2) { carriedChange(&third) }
            versions = [first, second, third]
            if random.chance(40) {
                var fourth = third
                fourth.name = "V4"
                touched = []
                changes.append("V4:")
                for _ in 0..<random.int(1...2) { carriedChange(&fourth) }
                versions.append(fourth)
            }
        }
        return MigrationCase(seed: seed, kind: kind, storeType: storeType, versions: versions, objects: objects, changes: changes)
    }

    var digits: Int { storeType == "sqlite" ? 15 : 30 }

    mutating func randomType() -> GeneratedModel.AttributeType { random.pick(GeneratedModel.AttributeType.allCases) }

    mutating func defaultText(_ type: GeneratedModel.AttributeType) -> String? {
        switch type {
        case .string: "dflt"
        case .integer16, .integer32, .integer64: "7"
        case .decimal: "2.5"
        case .double: "1.5"
        case .boolean: "YES"
        case .date: nil
        }
    }

    /// One to three entities, each with `code` (required, the fill's key), `tag` (text, for
    /// uniqueness constraints) and two to four attributes of random types; later entities may
    /// have a to-one relationship to an earlier one.
    mutating func firstVersion(withText: Bool) -> GeneratedModel {
        let names = Array(["Item", "Owner", "Shelf"].prefix(random.int(1...3)))
        var entities: [GeneratedModel.Entity] = []
        for (index, name) in names.enumerated() {
            var attributes: [GeneratedModel.Attribute] = [.init(name: "code", type: .string, isOptional: false),
                                                          .init(name: "tag", type: .string, isOptional: true)]
            for _ in 0..<random.int(2...4) {
                let type = randomType()
                let optional = random.chance(75)
                attributes.append(.init(name: fresh("f"), type: type, isOptional: optional,
                                        defaultValue: random.chance(30) ? defaultText(type) : nil))
            }
            if withText && index == 0 { attributes.append(.init(name: "txt", type: .string, isOptional: true)) }
            var entity = GeneratedModel.Entity(name: name, attributes: attributes)
            if index > 0 && random.chance(70) {
                let destination = names[random.int(index)]
                entity.relationships.append(.init(name: "to\(destination)", destination: destination))
            }
            if random.chance(25) { entity.uniqueAttributes = ["code"] }
            entities.append(entity)
        }
        return GeneratedModel(name: "V1", entities: entities)
    }

    /// Three to eight objects per entity; codes unique over the store, tags unique within an entity.
    mutating func fillObjects(_ model: GeneratedModel) {
        for entity in model.entities {
            var list: [GeneratedObject] = []
            for index in 0..<random.int(3...8) {
                var object = GeneratedObject(values: [:])
                for attribute in entity.attributes {
                    switch attribute.name {
                    case "code": object.values["code"] = .string("\(entity.name.lowercased())\(index)-\(random.int(1000))")
                    case "tag": object.values["tag"] = .string("t\(index)")
                    default:
                        object.values[attribute.name] = attribute.isOptional && random.chance(25) ? .null
                            : .random(attribute.type, using: &random, storeKeepsDigits: digits)
                    }
                }
                list.append(object)
            }
            objects[entity.name] = list
        }
        for entity in model.entities {
            for relationship in entity.relationships {
                let destinations = objects[relationship.destination]!
                for index in objects[entity.name]!.indices where random.chance(75) {
                    objects[entity.name]![index].relationships[relationship.name] = random.pick(destinations).code
                }
            }
        }
    }

    /// Gives two objects of `entity` the same tag.
    mutating func duplicateTag(_ entity: String) {
        let list = objects[entity]!
        let a = random.int(list.count)
        var b = random.int(list.count)
        if b == a { b = (a + 1) % list.count }
        objects[entity]![b].values["tag"] = list[a].values["tag"]
    }

    /// Attributes of the version that no change of this version has touched yet, but `code` and `tag`.
    func freeAttributes(_ model: GeneratedModel, where condition: (GeneratedModel.Attribute) -> Bool = { _ in true }) -> [(Int, Int)] {
        model.entities.indices.flatMap { e in
            model.entities[e].attributes.indices.compactMap { a in
                let attribute = model.entities[e].attributes[a]
                guard !["code", "tag"].contains(attribute.name), !touched.contains("\(model.entities[e].identifier).\(attribute.identifier)"),
                      condition(attribute) else { return nil }
                return (e, a)
            }
        }
    }

    mutating func touch(_ model: GeneratedModel, _ e: Int, _ a: Int) {
        touched.insert("\(model.entities[e].identifier).\(model.entities[e].attributes[a].identifier)")
    }

    /// One change Core Data's inferred mapping carries, applied to `model`.
    mutating func carriedChange(_ model: inout GeneratedModel) {
        for _ in 0..<8 {
            if tryCarriedChange(&model, kind: random.int(14)) { return }
        }
    }

    mutating func tryCarriedChange(_ model: inout GeneratedModel, kind: Int) -> Bool {
        switch kind {
        case 0, 1: // an attribute added: optional with or without a default, or required with one
            let e = random.int(model.entities.count)
            var type = randomType()
            let optional = random.chance(60)
            if !optional && type == .date { type = .integer32 }
            let attribute = GeneratedModel.Attribute(name: fresh("n"), type: type, isOptional: optional,
                                                     defaultValue: !optional || random.chance(50) ? defaultText(type) : nil)
            model.entities[e].attributes.append(attribute)
            touched.insert("\(model.entities[e].identifier).\(attribute.name)")
            changes.append("\(model.entities[e].name).\(attribute.name) added (\(type.rawValue), \(optional ? "optional" : "required"), default \(attribute.defaultValue ?? "none"))")
        case 2: // removed
            guard let (e, a) = optionalPick(freeAttributes(model)) else { return false }
            changes.append("\(model.entities[e].name).\(model.entities[e].attributes[a].name) removed")
            touch(model, e, a)
            model.entities[e].attributes.remove(at: a)
        case 3: // renamed
            guard let (e, a) = optionalPick(freeAttributes(model)) else { return false }
            touch(model, e, a)
            let old = model.entities[e].attributes[a]
            model.entities[e].attributes[a].renamingIdentifier = old.identifier
            model.entities[e].attributes[a].name = fresh(old.name + "r")
            changes.append("\(model.entities[e].name).\(old.name) renamed \(model.entities[e].attributes[a].name)")
        case 4: // optional made required, with a default
            guard let (e, a) = optionalPick(freeAttributes(model) { $0.isOptional && $0.type != .date }) else { return false }
            touch(model, e, a)
            model.entities[e].attributes[a].isOptional = false
            model.entities[e].attributes[a].defaultValue = model.entities[e].attributes[a].defaultValue ?? defaultText(model.entities[e].attributes[a].type)
            changes.append("\(model.entities[e].name).\(model.entities[e].attributes[a].name) made required, default \(model.entities[e].attributes[a].defaultValue!)")
        case 5, 6: // Integer widened or made Decimal
            guard let (e, a) = optionalPick(freeAttributes(model) { $0.type == .integer16 || $0.type == .integer32 || ($0.type == .integer64 && kind == 6) }) else { return false }
            touch(model, e, a)
            let old = model.entities[e].attributes[a].type
            let new: GeneratedModel.AttributeType = kind == 6 ? .decimal : (old == .integer16 ? random.pick([.integer32, .integer64]) : .integer64)
            model.entities[e].attributes[a].type = new
            if model.entities[e].attributes[a].defaultValue != nil { model.entities[e].attributes[a].defaultValue = defaultText(new) }
            changes.append("\(model.entities[e].name).\(model.entities[e].attributes[a].name) \(old.rawValue) → \(new.rawValue)")
        case 7: // an entity added
            let name = fresh("Added")
            var entity = GeneratedModel.Entity(name: name, attributes: [.init(name: "code", type: .string, isOptional: false),
                                                                        .init(name: "size", type: .integer32, isOptional: true)])
            if random.chance(50) { entity.relationships.append(.init(name: "toFirst", destination: random.pick(model.entities).name)) }
            model.entities.append(entity)
            changes.append("\(name) added")
        case 8: // an entity removed (and relationships to it)
            guard model.entities.count > 1 else { return false }
            let e = random.int(model.entities.count)
            let name = model.entities[e].name
            guard !touched.contains("entity \(model.entities[e].identifier)"), !model.entities[e].attributes.contains(where: { touched.contains("\(model.entities[e].identifier).\($0.identifier)") }) else { return false }
            model.entities.remove(at: e)
            for index in model.entities.indices { model.entities[index].relationships.removeAll { $0.destination == name } }
            changes.append("\(name) removed")
        case 9: // an entity renamed
            let e = random.int(model.entities.count)
            let old = model.entities[e].name
            model.entities[e].renamingIdentifier = model.entities[e].identifier
            model.entities[e].name = fresh(old + "R")
            touched.insert("entity \(model.entities[e].identifier)")
            for index in model.entities.indices {
                for r in model.entities[index].relationships.indices where model.entities[index].relationships[r].destination == old {
                    model.entities[index].relationships[r].destination = model.entities[e].name
                }
            }
            changes.append("\(old) renamed \(model.entities[e].name)")
        case 10: // a to-one added
            let e = random.int(model.entities.count)
            let name = fresh("rel")
            model.entities[e].relationships.append(.init(name: name, destination: random.pick(model.entities).name))
            changes.append("\(model.entities[e].name).\(name) added (to-one)")
        case 11: // a to-one removed
            let holders = model.entities.indices.filter { !model.entities[$0].relationships.isEmpty }
            guard let e = holders.isEmpty ? nil : random.pick(holders) else { return false }
            let r = random.int(model.entities[e].relationships.count)
            changes.append("\(model.entities[e].name).\(model.entities[e].relationships[r].name) removed (to-one)")
            model.entities[e].relationships.remove(at: r)
        case 12: // a to-one renamed
            let holders = model.entities.indices.filter { !model.entities[$0].relationships.isEmpty }
            guard let e = holders.isEmpty ? nil : random.pick(holders) else { return false }
            let r = random.int(model.entities[e].relationships.count)
            let old = model.entities[e].relationships[r]
            model.entities[e].relationships[r].renamingIdentifier = old.identifier
            model.entities[e].relationships[r].name = fresh(old.name + "r")
            changes.append("\(model.entities[e].name).\(old.name) renamed \(model.entities[e].relationships[r].name) (to-one)")
        default: // a uniqueness constraint added where no two objects share the value
            let candidates = model.entities.indices.filter {
                !model.entities[$0].uniqueAttributes.contains("tag") && model.entities[$0].attribute("tag") != nil && objects[model.entities[$0].identifier] != nil
            }
            guard let e = candidates.isEmpty ? nil : random.pick(candidates) else { return false }
            model.entities[e].uniqueAttributes.append("tag")
            changes.append("\(model.entities[e].name): uniqueness constraint on tag added (no duplicates)")
        }
        return true
    }

    /// One change Core Data refuses, applied to `model` (and to the objects, where it needs them).
    mutating func refusingChange(_ model: inout GeneratedModel) {
        for _ in 0..<8 {
            switch random.int(5) {
            case 0: // a required attribute added without a default
                let candidates = model.entities.indices.filter { objects[model.entities[$0].identifier] != nil }
                guard !candidates.isEmpty else { continue }
                let e = random.pick(candidates)
                let attribute = GeneratedModel.Attribute(name: fresh("must"), type: randomType(), isOptional: false)
                model.entities[e].attributes.append(attribute)
                touched.insert("\(model.entities[e].identifier).\(attribute.name)")
                changes.append("REFUSED \(model.entities[e].name).\(attribute.name) added required without a default")
                return
            case 1: // optional made required without a default, some object without a value
                guard let (e, a) = optionalPick(freeAttributes(model) { $0.isOptional }), let list = objects[model.entities[e].identifier] else { continue }
                touch(model, e, a)
                let attribute = model.entities[e].attributes[a]
                model.entities[e].attributes[a].isOptional = false
                model.entities[e].attributes[a].defaultValue = nil
                let entity = model.entities[e].identifier
                if !list.contains(where: { $0.values[attribute.name] == .null }) { objects[entity]![random.int(list.count)].values[attribute.name] = .null }
                changes.append("REFUSED \(model.entities[e].name).\(attribute.name) made required without a default, an object has none")
                return
            case 2: // an Integer narrowed
                guard let (e, a) = optionalPick(freeAttributes(model) { $0.type == .integer32 || $0.type == .integer64 }) else { continue }
                touch(model, e, a)
                let old = model.entities[e].attributes[a].type
                let new: GeneratedModel.AttributeType = old == .integer64 ? random.pick([.integer16, .integer32]) : .integer16
                model.entities[e].attributes[a].type = new
                if model.entities[e].attributes[a].defaultValue != nil { model.entities[e].attributes[a].defaultValue = defaultText(new) }
                changes.append("REFUSED \(model.entities[e].name).\(model.entities[e].attributes[a].name) narrowed \(old.rawValue) → \(new.rawValue)")
                return
            case 3: // another type change
                guard let (e, a) = optionalPick(freeAttributes(model) { [.string, .double, .boolean, .date, .decimal].contains($0.type) }) else { continue }
                touch(model, e, a)
                let old = model.entities[e].attributes[a].type
                let new: GeneratedModel.AttributeType = switch old {
                case .string: .integer32
                case .double: .integer64
                case .boolean: .string
                case .date: .double
                default: .integer64
                }
                model.entities[e].attributes[a].type = new
                if model.entities[e].attributes[a].defaultValue != nil { model.entities[e].attributes[a].defaultValue = defaultText(new) }
                changes.append("REFUSED \(model.entities[e].name).\(model.entities[e].attributes[a].name) \(old.rawValue) → \(new.rawValue)")
                return
            default: // a uniqueness constraint added that two objects break
                let candidates = model.entities.indices.filter {
                    !model.entities[$0].uniqueAttributes.contains("tag") && objects[model.entities[$0].identifier] != nil && model.entities[$0].attribute("tag") != nil
                }
                guard !candidates.isEmpty else { continue }
                let e = random.pick(candidates)
                model.entities[e].uniqueAttributes.append("tag")
                touched.insert("\(model.entities[e].identifier).tag")
                duplicateTag(model.entities[e].identifier)
                changes.append("REFUSED \(model.entities[e].name): uniqueness constraint on tag added, two objects share a tag")
                // A change besides, so that the version is a new one even to hashes without constraints (issue 31, item 1).
                if let (f, b) = optionalPick(freeAttributes(model) { $0.type == .integer16 || $0.type == .integer32 }) {
                    touch(model, f, b)
                    model.entities[f].attributes[b].type = .integer64
                    if model.entities[f].attributes[b].defaultValue != nil { model.entities[f].attributes[b].defaultValue = "7" }
                    changes.append("\(model.entities[f].name).\(model.entities[f].attributes[b].name) → Integer 64")
                } else {
                    let attribute = GeneratedModel.Attribute(name: fresh("n"), type: .string, isOptional: true)
                    model.entities[e].attributes.append(attribute)
                    changes.append("\(model.entities[e].name).\(attribute.name) added")
                }
                return
            }
        }
        // Always possible: a required attribute without a default on the first entity.
        model.entities[0].attributes.append(.init(name: fresh("must"), type: .string, isOptional: false))
        changes.append("REFUSED \(model.entities[0].name).must added required without a default")
    }

    mutating func optionalPick<T>(_ values: [T]) -> T? { values.isEmpty ? nil : random.pick(values) }
}

// MARK: Mapping-model cases

/// A generated mapping-model migration: Owners and Items of a first version carried to a
/// second by an Xcode mapping document whose entity mappings have filters and value expressions
/// (`$source.a`, constants, Foundation's arithmetic functions), judged against the default
/// migration policy's result worked out here: the objects the filter keeps, each attribute its
/// expression's value, each relationship its destination's new object (none when the filter
/// dropped it); or a refusal, for a key the source entity lacks or a value its attribute cannot
/// hold.
struct MappingCase {
    enum Kind: String {
        case carried
        /// Issue 31, item 3: the filter names a key the source entity lacks.
        case missingFilterKey
        /// The filter follows a relationship to a key its destination lacks.
        case missingFilterPathKey
        /// A value expression names a key the source entity lacks.
        case missingExpressionKey
        /// A value expression gives an Integer 16 attribute values past its range.
        case overflow
    }

    /// A filter, as its text and as what it keeps.
    struct Filter {
        var text: String
        var keeps: (GeneratedObject, [String: GeneratedObject]) -> Bool
    }

    /// A value expression, archived, and its value for a source object.
    struct FetchExpression {
        var archived: ArchivedExpression
        var value: (GeneratedObject) -> GeneratedValue
    }

    var seed: UInt64
    var kind: Kind
    var storeType: String
    var versions: [GeneratedModel]
    var objects: [String: [GeneratedObject]]
    var ownerFilter: Filter?
    var itemFilter: Filter?
    var expressions: [String: FetchExpression]

    var context: String {
        "seed \(seed) [mapping \(kind.rawValue), \(storeType)] Owner filter \(ownerFilter?.text ?? "none"), Item filter \(itemFilter?.text ?? "none"), "
            + expressions.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value.archived.description)" }.joined(separator: ", ")
    }

    static let baseSeed: UInt64 = 31_500
    static let kinds: [Kind] = [.carried, .missingFilterKey, .carried, .overflow, .carried, .missingExpressionKey, .carried, .missingFilterPathKey]

    static func generate(seed: UInt64) -> MappingCase {
        var random = SeededGenerator(seed: seed &* 0x9E37_79B9_7F4A_7C15)
        let kind = kinds[Int((seed - baseSeed) / 3 % UInt64(kinds.count))]
        let storeType = ["sqlite", "xml", "binary"][Int((seed - baseSeed) % 3)]
        let code = GeneratedModel.Attribute(name: "code", type: .string, isOptional: false)
        let owner = GeneratedModel.Entity(name: "Owner", attributes: [code, .init(name: "name", type: .string, isOptional: true)])
        let first = GeneratedModel(name: "V1", entities: [owner, .init(
            name: "Item", attributes: [code, .init(name: "n", type: .integer32, isOptional: false), .init(name: "flag", type: .boolean, isOptional: true),
                                       .init(name: "note", type: .string, isOptional: true)],
            relationships: [.init(name: "toOwner", destination: "Owner")])])
        let second = GeneratedModel(name: "V2", entities: [owner, .init(
            name: "Item", attributes: [code, .init(name: "total", type: .integer64, isOptional: true), .init(name: "small", type: .integer16, isOptional: true),
                                       .init(name: "label", type: .string, isOptional: true), .init(name: "flag", type: .boolean, isOptional: true),
                                       .init(name: "note", type: .string, isOptional: true)],
            relationships: [.init(name: "toOwner", destination: "Owner")])])

        var owners: [GeneratedObject] = []
        for index in 0..<random.int(2...5) {
            owners.append(GeneratedObject(values: ["code": .string("owner\(index)-\(random.int(100))"),
                                                   "name": random.chance(30) ? .null : .string(random.pick(["alpha", "beta", "gamma", "Ann"]))]))
        }
        var items: [GeneratedObject] = []
        for index in 0..<random.int(4...12) {
            var item = GeneratedObject(values: [
                "code": .string("item\(index)-\(random.int(100))"),
                "n": .integer(random.chance(30) ? Int64(random.int(-40...40)) : Int64(random.int(-30000...30000))),
                "flag": random.chance(30) ? .null : .bool(random.chance(50)),
                "note": random.chance(40) ? .null : .string(random.pick(["x", "note b", "é"])),
            ])
            if random.chance(75) { item.relationships["toOwner"] = random.pick(owners).code }
            items.append(item)
        }

        func number(_ object: GeneratedObject, _ key: String) -> Int64? { if case .integer(let n)? = object.values[key] { n } else { nil } }
        let k = Int64(random.int(-50...50))
        let filters: [Filter] = [
            Filter(text: "n > \(k)") { item, _ in number(item, "n")! > k },
            Filter(text: "n <= \(k)") { item, _ in number(item, "n")! <= k },
            Filter(text: "flag == YES") { item, _ in item.values["flag"] == .bool(true) },
            Filter(text: "flag == NO") { item, _ in item.values["flag"] == .bool(false) },
            Filter(text: "note != nil") { item, _ in item.values["note"] != .null },
            Filter(text: "n > \(k) AND flag == NO") { item, _ in number(item, "n")! > k && item.values["flag"] == .bool(false) },
            Filter(text: "note == nil OR n < \(k)") { item, _ in item.values["note"] == .null || number(item, "n")! < k },
            Filter(text: "code BEGINSWITH \"item1\"") { item, _ in item.code.hasPrefix("item1") },
            Filter(text: "n BETWEEN {\(k - 20), \(k + 20)}") { item, _ in (k - 20...k + 20).contains(number(item, "n")!) },
            Filter(text: "toOwner.name == \"alpha\"") { item, owners in item.relationships["toOwner"].flatMap { owners[$0] }?.values["name"] == .string("alpha") },
        ]
        var itemFilter: Filter? = random.chance(80) ? random.pick(filters) : nil
        let ownerFilter: Filter? = random.chance(30) ? Filter(text: "name != nil") { owner, _ in owner.values["name"] != .null } : nil

        let source = { (key: String) in ArchivedExpression.keyPath(variable: "source", path: key) }
        let k1 = Int64(random.int(2...1000)), k2 = Int64(random.int(-1000...1000))
        let totals: [FetchExpression] = [
            FetchExpression(archived: source("n")) { .integer(number($0, "n")!) },
            FetchExpression(archived: .function("add:to:", [source("n"), .integer(k2)])) { .integer(number($0, "n")! + k2) },
            FetchExpression(archived: .function("from:subtract:", [source("n"), .integer(k2)])) { .integer(number($0, "n")! - k2) },
            FetchExpression(archived: .function("multiply:by:", [source("n"), .integer(k1)])) { .integer(number($0, "n")! * k1) },
            FetchExpression(archived: .integer(k2)) { _ in .integer(k2) },
            FetchExpression(archived: .function("add:to:", [.function("multiply:by:", [source("n"), .integer(k1)]), .integer(k2)])) { .integer(number($0, "n")! * k1 + k2) },
        ]
        var expressions: [String: FetchExpression] = ["total": random.pick(totals)]
        expressions["label"] = random.chance(50) ? FetchExpression(archived: .string("L\(k1)")) { _ in .string("L\(k1)") }
            : FetchExpression(archived: source("note")) { $0.values["note"] ?? .null }
        if random.chance(50) { expressions["small"] = FetchExpression(archived: source("n")) { .integer(number($0, "n")!) } }
        switch kind {
        case .carried: break
        case .missingFilterKey: itemFilter = Filter(text: "nosuch > 0") { _, _ in true }
        case .missingFilterPathKey: itemFilter = Filter(text: "toOwner.nosuch == \"alpha\"") { _, _ in true }
        case .missingExpressionKey: expressions["total"] = FetchExpression(archived: source("nosuch")) { _ in .null }
        case .overflow: expressions["small"] = FetchExpression(archived: .function("multiply:by:", [source("n"), .integer(1000)])) { .integer(number($0, "n")! * 1000) }
        }
        return MappingCase(seed: seed, kind: kind, storeType: storeType, versions: [first, second], objects: ["Owner": owners, "Item": items],
                           ownerFilter: ownerFilter, itemFilter: itemFilter, expressions: expressions)
    }

    /// What the default migration policy makes: the kept objects by code, each field as
    /// `lade export` writes it, the owner named by its code.
    enum Outcome {
        case migrated([String: [String: ExportJSON]])
        case refused(reason: String, naming: [String])
    }

    func expected() -> Outcome {
        switch kind {
        case .missingFilterKey, .missingFilterPathKey: return .refused(reason: "the Item filter names nosuch", naming: ["nosuch"])
        case .missingExpressionKey: return .refused(reason: "Item.total's expression names nosuch", naming: ["nosuch"])
        case .carried, .overflow: break
        }
        let ownersByCode = Dictionary(uniqueKeysWithValues: objects["Owner"]!.map { ($0.code, $0) })
        let keptOwners = objects["Owner"]!.filter { ownerFilter?.keeps($0, ownersByCode) ?? true }
        var result: [String: [String: ExportJSON]] = [:]
        for owner in keptOwners {
            result["Owner " + owner.code] = ["code": .string(owner.code), "name": (owner.values["name"] ?? .null).exported]
        }
        let keptCodes = Set(keptOwners.map(\.code))
        for item in objects["Item"]! where itemFilter?.keeps(item, ownersByCode) ?? true {
            var fields: [String: ExportJSON] = ["code": .string(item.code), "flag": (item.values["flag"] ?? .null).exported, "note": .null]
            for name in ["total", "small", "label"] {
                let value = expressions[name]?.value(item) ?? .null
                if name == "small", case .integer(let number) = value, !GeneratedModel.AttributeType.integer16.integerRange.contains(number) {
                    return .refused(reason: "Item \(item.code): small = \(number) does not fit Integer 16", naming: ["small"])
                }
                fields[name] = value.exported
            }
            fields["toOwner"] = item.relationships["toOwner"].flatMap { keptCodes.contains($0) ? ExportJSON.string($0) : nil } ?? .null
            result["Item " + item.code] = fields
        }
        return .migrated(result)
    }

    func run() throws {
        let store = try GeneratedStore(versions: versions, objects: objects, storeType: storeType, context: context)
        _ = try store.fill()
        let document = MappingDocument(bundleName: "M", from: "V1", to: "V2", entities: [
            .init(source: "Owner", destination: "Owner", attributes: ["code", "name"], filter: ownerFilter?.text),
            .init(source: "Item", destination: "Item", attributes: ["code", "flag"] + expressions.keys.sorted(), relationships: ["toOwner"],
                  filter: itemFilter?.text, expressions: expressions.mapValues(\.archived)),
        ])
        try document.write(to: store.sandbox.url("Map.xcmappingmodel"))
        let before = try storeFileDigests(store.storeURL)
        let run = try store.lade(["migrate", store.store, "--model", store.bundle, "--mapping", "Map.xcmappingmodel", "--batch-size", "\(1 + Int(seed % 4))"])
        switch expected() {
        case .refused(let reason, let naming):
            try store.expectRefused(run, naming: naming, before: before, why: reason)
        case .migrated(let expected):
            try #require(run.status == 0, "\(context): lade migrate: exit \(run.status): \(run.stderr.suffix(800))")
            let files = try store.export(version: nil, into: "after")
            let ownerCodes = Dictionary((files["Owner"] ?? []).compactMap { line in line["_uri"]?.text.map { ($0, line["code"] ?? .null) } }, uniquingKeysWith: { a, _ in a })
            var actual: [String: [String: ExportJSON]] = [:]
            for entity in ["Owner", "Item"] {
                for line in files[entity] ?? [] {
                    guard case .object(let keys, var values) = line else { continue }
                    let expectedKeys = versions[1].entity(entity)!.attributes.map(\.name) + versions[1].entity(entity)!.relationships.map(\.name)
                    #expect(keys == ["_uri"] + expectedKeys, "\(context): \(entity) fields \(keys)")
                    values["_uri"] = nil
                    if let uri = values["toOwner"]?.text { values["toOwner"] = ownerCodes[uri] ?? .string("dangling \(uri)") }
                    let key = "\(entity) \(values["code"]?.text ?? "?")"
                    #expect(actual.updateValue(values, forKey: key) == nil, "\(context): \(key) twice after the migration")
                }
            }
            for key in Set(actual.keys).union(expected.keys).sorted() {
                let got = actual[key], wanted = expected[key]
                guard let got, let wanted else {
                    Issue.record("\(context): \(key) is \(got == nil ? "missing after the migration" : "there, but the filter drops it"): \(got ?? wanted ?? [:])")
                    continue
                }
                for field in Set(got.keys).union(wanted.keys).sorted() where !(got[field] ?? .null).sameValue(as: wanted[field] ?? .null) {
                    Issue.record("\(context): \(key).\(field) is \(got[field] ?? .null), expected \(wanted[field] ?? .null)")
                }
            }
            let check = try store.lade(["check", store.store, "--model", store.bundle])
            #expect(check.status == 0, "\(context): lade check after the migration: \(check.stdout.suffix(600)) \(check.stderr.suffix(600))")
        }
    }
}
