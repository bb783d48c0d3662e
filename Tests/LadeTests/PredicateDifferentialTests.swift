import Foundation
import Testing
@testable import Lade

/// Writes random predicates over `PredicateTestStack`'s model as format strings with arguments.
struct PredicateGenerator {
    var random: SeededGenerator
    let ownerIDs: [ManagedObjectID]
    let itemIDs: [ManagedObjectID]
    let tagIDs: [ManagedObjectID]
    private var arguments: [PredicateValue] = []
    /// The entity fetched: Item (with its subentity Gadget), or Gadget alone, which adds `power`.
    private(set) var entity = "Item"

    init(seed: UInt64, ids: [String: [ManagedObjectID]]) {
        random = SeededGenerator(seed: seed)
        ownerIDs = ids["Owner"] ?? []
        itemIDs = (ids["Item"] ?? []) + (ids["Gadget"] ?? [])
        tagIDs = ids["Tag"] ?? []
    }

    /// A predicate and its arguments.
    mutating func next() -> (format: String, arguments: [PredicateValue]) {
        arguments = []
        entity = random.chance(15) ? "Gadget" : "Item"
        let format = predicate(depth: random.int(3))
        return (format, arguments)
    }

    /// Sort descriptors over Item: none, or one or two attributes (through `owner` too).
    mutating func sortDescriptors() -> [FetchSortDescriptor] {
        let keys = PredicateTestStack.itemAttributes.map(\.0) + ["owner.name", "owner.score", "owner.manager.name"]
        return (0..<random.int(3)).map { _ in
            FetchSortDescriptor(
                random.pick(keys), ascending: random.chance(50),
                comparator: random.pick([.compare, .caseInsensitiveCompare, .localizedStandardCompare]))
        }
    }

    private mutating func predicate(depth: Int) -> String {
        guard depth > 0, random.chance(70) else { return leaf() }
        switch random.int(5) {
        case 0, 1: return "(\(predicate(depth: depth - 1)) \(random.pick(["AND", "and", "&&"])) \(predicate(depth: depth - 1)))"
        case 2, 3: return "(\(predicate(depth: depth - 1)) \(random.pick(["OR", "or", "||"])) \(predicate(depth: depth - 1)))"
        default: return "\(random.pick(["NOT ", "not ", "!"]))(\(predicate(depth: depth - 1)))"
        }
    }

    // MARK: Constants

    private mutating func argument(_ value: PredicateValue) -> String {
        arguments.append(value)
        return "%@"
    }

    private func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    /// A constant as a literal or a `%@` argument.
    private mutating func constant(_ value: AttributeValue) -> String {
        if random.chance(40) { return argument(.attribute(value)) }
        switch value {
        case .integer(let v): return String(v)
        case .double(let v): return String(v)
        case .float(let v): return String(Double(v))
        case .decimal(let v): return "\(v)"
        case .string(let v): return quoted(v)
        case .bool(let v): return v ? random.pick(["YES", "TRUE", "true"]) : random.pick(["NO", "FALSE", "false"])
        case .date(let v): return "CAST(\(v.timeIntervalSinceReferenceDate), 'NSDate')"
        case .uri(let v): return random.chance(50) ? quoted(v.absoluteString) : argument(.attribute(value))
        case .binary, .uuid, .composite: return argument(.attribute(value))
        }
    }

    private mutating func value(for attribute: String) -> AttributeValue {
        if random.chance(10) {
            // A value of another kind: never equal, never ordered.
            return random.pick([.string("3"), .integer(3), .double(1.5), .binary(Data([1])), .date(Date(timeIntervalSinceReferenceDate: 0))])
        }
        var values = PredicateTestStack.values(of: attribute)
        if attribute == "str" || attribute == "note" || attribute == "name" || attribute == "label" {
            values += ["caf", "CA", "é", "ss", "SS", "e", "👍", "file1", "Z"].map { .string($0) }
        }
        return random.pick(values)
    }

    private mutating func options() -> String {
        random.pick(["", "", "[c]", "[d]", "[cd]", "[CD]"])
    }

    private mutating func comparisonOperator() -> String {
        random.pick(["==", "=", "!=", "<>", "<", "<=", "=<", ">", ">=", "=>"])
    }

    // MARK: Leaves

    private static let stringKeys = ["str", "note", "uri", "owner.name", "owner.manager.name"]
    private static let numberKeys = ["i16", "i32", "i64", "dec", "dbl", "flt", "flag", "date", "owner.score"]

    private mutating func anyKey() -> String {
        random.pick(PredicateTestStack.itemAttributes.map(\.0) + ["owner.name", "owner.score", "owner.manager.name", "owner.manager.score"])
    }

    private mutating func leaf() -> String {
        if entity == "Gadget", random.chance(25) {
            return "power \(comparisonOperator()) \(constant(.integer(Int64(random.int(10)))))"
        }
        switch random.int(22) {
        case 0, 1, 2:
            let key = anyKey()
            return "\(key) \(comparisonOperator())\(options()) \(constant(value(for: key.split(separator: ".").last.map(String.init)!)))"
        case 3:
            let key = anyKey(), op = random.pick(["==", "!="])
            return "\(key) \(op) \(random.chance(25) ? argument(.null) : random.pick(["nil", "NIL", "NULL"]))"
        case 4:
            let key = random.pick(Self.numberKeys + Self.stringKeys)
            let attribute = String(key.split(separator: ".").last!)
            let (a, b) = (value(for: attribute), value(for: attribute))
            if random.chance(30) { return "\(key) BETWEEN \(argument(.collection([.attribute(a), .attribute(b)])))" }
            return "\(key) BETWEEN\(options()) {\(constant(a)), \(constant(b))}"
        case 5:
            let key = anyKey()
            let attribute = String(key.split(separator: ".").last!)
            let members = (0..<random.int(4)).map { _ in value(for: attribute) }
            if random.chance(40) { return "\(key) IN \(argument(.collection(members.map { .attribute($0) } + (random.chance(20) ? [.null] : []))))" }
            return "\(key) IN\(options()) {\(members.map { constant($0) }.joined(separator: ", "))}"
        case 6, 7, 8:
            let key = random.pick(Self.stringKeys)
            let op = random.pick(["BEGINSWITH", "ENDSWITH", "CONTAINS", "beginswith", "endsWith", "contains"])
            return "\(key) \(op)\(options()) \(constant(value(for: "str")))"
        case 9:
            let key = random.pick(Self.stringKeys)
            let pattern = random.pick(["*", "?", "c*", "*e", "*a*", "?a*", "ca?e*", "*ß*", "*\\**", "x\\?y", "file?", "file*", "*👍🏽*", "?", "??", "a*b", "*é*"])
            return "\(key) LIKE\(options()) \(quoted(pattern))"
        case 10:
            let key = random.pick(Self.stringKeys)
            let pattern = random.pick(["[a-z]+", ".*e", "caf.*", "\\w+", "(?i)abc", ".", ".{2,5}", "file[0-9]+", ".*ss.*", "[^a]*", "a|ab", ".*\\d"])
            return "\(key) MATCHES\(options()) \(quoted(pattern))"
        case 11:
            return "\(random.pick(["'a'", "'é'", "'ss'", "'file'", "'👍🏽'"])) IN\(options()) \(random.pick(Self.stringKeys))"
        case 12:
            switch random.int(5) {
            case 0, 1:
                let key = random.pick(["owner", "owner.manager"]), op = random.pick(["==", "!="])
                return "\(key) \(op) \(random.chance(30) ? "nil" : argument(.object(random.pick(ownerIDs))))"
            case 2: return "SELF \(random.pick(["==", "!="])) \(argument(.object(random.pick(itemIDs))))"
            case 3: return "SELF IN \(argument(.collection((0..<random.int(6)).map { _ in .object(random.pick(itemIDs)) })))"
            default: return "owner IN \(argument(.collection((0..<random.int(4)).map { _ in .object(random.pick(ownerIDs)) } + (random.chance(30) ? [.null] : []))))"
            }
        case 13, 14:
            let (collection, attribute) = random.pick([("tags.label", "label"), ("tags.weight", "weight"), ("owner.items.i32", "i32"), ("owner.items.str", "str"), ("owner.reports.name", "name"), ("owner.items.tags.label", "label")])
            let modifier = random.pick(["ANY", "SOME", "ALL", "NONE", "any", "all", "none"])
            if attribute == "label" || attribute == "str" || attribute == "name", random.chance(50) {
                return "\(modifier) \(collection) \(random.pick(["BEGINSWITH", "CONTAINS", "ENDSWITH", "LIKE", "=="]))\(options()) \(constant(value(for: "str")))"
            }
            return "\(modifier) \(collection) \(comparisonOperator())\(options()) \(constant(value(for: attribute)))"
        case 15:
            let (collection, attribute) = random.pick([("tags.label", "label"), ("tags.weight", "weight"), ("owner.items.str", "str")])
            if random.chance(50) { return "\(constant(value(for: attribute))) IN\(options()) \(collection)" }
            return "\(collection) CONTAINS\(options()) \(constant(value(for: attribute)))"
        case 16:
            return "tags \(random.pick(["CONTAINS", "contains"])) \(argument(.object(random.pick(tagIDs))))"
        case 17, 18:
            let aggregate = random.pick([
                ("tags.@count", "count"), ("owner.items.@count", "count"), ("owner.reports.@count", "count"),
                ("tags.@sum.weight", "weight"), ("tags.@avg.weight", "weight"), ("tags.@min.weight", "weight"), ("tags.@max.weight", "weight"),
                ("tags.@min.label", "label"), ("tags.@max.label", "label"), ("owner.items.@sum.i32", "i32"), ("owner.items.@avg.dbl", "dbl"),
                ("owner.items.@max.date", "date"), ("owner.items.@min.dec", "dec"), ("owner.items.tags.@count", "count"),
            ])
            let constantValue = aggregate.1 == "count" ? AttributeValue.integer(Int64(random.int(6))) : value(for: aggregate.1)
            return "\(aggregate.0) \(comparisonOperator())\(options()) \(constant(constantValue))"
        case 19:
            let inner: String
            switch random.int(6) {
            case 0: inner = "$t.label BEGINSWITH[c] \(constant(value(for: "str")))"
            case 1: inner = "$t.weight > \(constant(value(for: "weight")))"
            case 2: inner = "$t.label ==[cd] \(constant(value(for: "label"))) OR $t.weight < 1"
            case 3: inner = "NOT ($t.label CONTAINS 'a')"
            case 4: inner = "ANY $t.items.i32 > 0"
            default: inner = "$t.items.@count > 2"
            }
            return "SUBQUERY(tags, $t, \(inner)).@count \(comparisonOperator()) \(random.int(3))"
        case 20:
            let inner: String
            switch random.int(7) {
            case 0: inner = "$i.i32 > \(constant(value(for: "i32")))"
            case 1: inner = "$i.str ==[cd] \(constant(value(for: "str")))"
            case 2: inner = "$i.flag == YES AND $i.dbl >= 0"
            case 3: inner = "SUBQUERY($i.tags, $t, $t.weight > 1).@count > 0"
            case 4: inner = "$i.owner.manager != nil"
            case 5: inner = "$i == SELF"
            default: inner = "$i.date > CAST(0, 'NSDate')"
            }
            return "SUBQUERY(owner.items, $i, \(inner)).@count \(comparisonOperator()) \(random.int(4))"
        default:
            let pair = random.pick([
                ("i16", "i32"), ("i32", "i64"), ("dbl", "flt"), ("dec", "dbl"), ("date", "dbl"), ("str", "note"), ("str", "owner.name"),
                ("flag", "i16"), ("uri", "str"), ("bin", "uuid"), ("i64", "owner.score"), ("owner", "owner.manager"),
            ])
            let op = pair.0 == "owner" ? random.pick(["==", "!="]) : comparisonOperator()
            return "\(pair.0) \(op)\(options()) \(pair.1)"
        }
    }
}

@Suite("Predicates: the stores and the evaluator agree", .slow)
struct PredicateDifferentialTests {
    static let defaultSeed: UInt64 = 20_261_122

    @Test("2,000 generated predicates select the same objects in the same order through SQL and in memory")
    func differential() throws {
        try run(on: .sqlite)
    }

    @Test("the same predicates select the same objects in the same order through a PostgreSQL store (the real server) and the evaluator")
    func postgreSQL() throws {
        try run(on: .postgresql)
    }

    @Test("the same predicates select the same objects in the same order through an atomic store's query and the evaluator on managed objects")
    func atomicStore() throws {
        try run(on: .inMemory)
    }

    /// Fetches each generated predicate through the store (SQL, or an atomic store's own
    /// query) and evaluates it on the same objects in memory, sorted by the context.
    private func run(on type: PersistentStoreCoordinator.StoreType) throws {
        let seed = ProcessInfo.processInfo.environment["LADE_PREDICATE_SEED"].flatMap(UInt64.init) ?? Self.defaultSeed
        let count = ProcessInfo.processInfo.environment["LADE_PREDICATE_COUNT"].flatMap(Int.init) ?? 2_000
        let stack = try PredicateTestStack(type: type)
        let ids = try stack.populate(seed: seed)
        var generator = PredicateGenerator(seed: seed, ids: ids)
        let context = stack.context()
        var failures: [String] = []
        var discriminating = 0
        try context.performAndWait {
            var everything = FetchRequest(entityName: "Item")
            everything.returnsObjectsAsFaults = false
            let all = try context.fetch(everything)
            #expect(all.count == 58)
            let gadgets = all.filter { $0.entity.name == "Gadget" }
            for number in 1...count {
                let (format, arguments) = generator.next()
                let sort = generator.sortDescriptors()
                let described = "#\(number) \(generator.entity): \(format) \(arguments.isEmpty ? "" : "with \(arguments) ")sorted by \(sort.map { "\($0.keyPath.joined(separator: ".")) \($0.ascending ? "asc" : "desc") \($0.comparator)" })"
                do {
                    let predicate = try FetchPredicate(format: format, arguments: arguments)
                    let entity = generator.entity
                    let request = FetchRequest(entityName: entity, predicate: predicate, sortDescriptors: sort)
                    let fromSQL = try context.fetch(request).map(\.objectID)
                    let counted = try context.count(for: request)
                    let candidates = entity == "Gadget" ? gadgets : all
                    let inMemory = try context.sorted(try candidates.filter { try predicate.evaluate(with: $0) }, by: sort, entity: entity).map(\.objectID)
                    if fromSQL != inMemory || counted != fromSQL.count {
                        failures.append("\(described)\n    store:     \(fromSQL.compactMap(\.primaryKey)) (count \(counted))\n    evaluator: \(inMemory.compactMap(\.primaryKey))")
                    }
                    if !fromSQL.isEmpty && fromSQL.count < candidates.count { discriminating += 1 }
                } catch {
                    failures.append("\(described)\n    threw: \(error)")
                }
                if failures.count >= 10 { break }
            }
        }
        if !failures.isEmpty {
            let report = failures.joined(separator: "\n")
            Issue.record(Comment(rawValue: "\(type.rawValue) store, predicate seed \(seed) (rerun with LADE_PREDICATE_SEED=\(seed)): \(failures.count) disagreement(s)\n\(report)"))
        }
        // Most predicates must tell objects apart, or agreement would prove little.
        #expect(discriminating * 2 >= count, "only \(discriminating) of \(count) predicates selected some but not all objects (seed \(seed))")
        print("differential (\(type.rawValue) store): \(count) predicates, seed \(seed), \(discriminating) selected some but not all of the objects")
    }
}
