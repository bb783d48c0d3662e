import Foundation

/// Compiles a predicate and sort descriptors over one entity into PostgreSQL SQL for a store in
/// Core Data's layout, saying in SQL only what PostgreSQL decides exactly as `PredicateEvaluator`
/// does for every row, and a sound bound of the rest. Built as `SQLPredicateCompiler` is (to-one
/// key paths as `LEFT JOIN`s, to-many key paths, `SUBQUERY` and collection operators as
/// correlated subqueries, object equality by key and `Z_ENT`), with PostgreSQL's differences:
/// - every condition is two-valued (TRUE or FALSE, never NULL: `IS NOT DISTINCT FROM`,
///   `COALESCE(…, FALSE)`), so `NOT` never turns an unknown into a match;
/// - numbers compare as the evaluator compares them: an integer column with a double constant
///   through the equivalent integer bounds (exact past 2^53), a double never equal to or
///   ordered with NaN (which PostgreSQL orders after every number), booleans as 0/1;
/// - text compares by bytes (`COLLATE "C"`, deterministic equality, `starts_with`, `strpos`,
///   which are code-point operations on UTF-8 text), as `StringComparison` compares without options.
///
/// What PostgreSQL cannot say so (`[c]`/`[d]` folding, `LIKE`'s grapheme clusters, `MATCHES`,
/// decimals, which the evaluator rounds to doubles as SQLite holds them, sums of doubles in
/// member order) makes its leaf unknown: a `Condition` keeps a necessary and a sufficient
/// condition apart (TRUE and FALSE for an unknown leaf, swapped under `NOT`), the query selects
/// by the necessary one and the evaluator decides the rows it selects.
struct PostgreSQLPredicateCompiler {
    let model: ManagedObjectModel
    let schema: TableLayout
    let entity: String
    /// The store's schema and a dot, before every table name.
    let prefix: String
    /// The store whose object IDs the compiled SQL may name.
    let storeIdentifier: String

    /// SQL cannot say the leaf exactly as the evaluator means it.
    struct Inexact: Error {}

    /// What an operand is, as far as comparing goes; numbers by how PostgreSQL holds them.
    enum Kind: Equatable {
        case integer, double, decimal, text, bytes, object, null, collection

        var isNumber: Bool { self == .integer || self == .double || self == .decimal }
    }

    /// An operand of a comparison.
    indirect enum Operand {
        /// An SQL expression, the kind of its non-NULL values, and the attribute it reads (for
        /// what aggregates over it can say exactly).
        case scalar(String, Kind, AttributeType?)
        /// An object: its key (NULL for no object), its `Z_ENT` (nil when the entity is known
        /// statically), its entity, and its row's alias when key paths may continue from it.
        case object(key: String, entityColumn: String?, entity: String, alias: String?)
        case constant(PredicateValue)
        /// `{a, b}` with members that are not all constants.
        case list([Operand])
        /// A to-many key path or a `SUBQUERY`: rows of `sources[n]`.
        case source(Int)
    }

    /// The rows of a to-many key path or subquery: a `FROM` list, the conditions that tie it
    /// to the enclosing row, and what each row stands for.
    struct Source {
        var fromList: Int
        var conditions: [String]
        var element: Operand
    }

    /// A predicate as SQL: `necessary` holds for every row the predicate selects, `sufficient`
    /// only for rows it selects; one SQL text when exact. Both are TRUE or FALSE, never NULL.
    struct Condition {
        var necessary: String
        var sufficient: String
        var isExact: Bool

        static func exact(_ sql: String) -> Condition { Condition(necessary: sql, sufficient: sql, isExact: true) }
        static let unknown = Condition(necessary: "TRUE", sufficient: "FALSE", isExact: false)
    }

    /// The parameters the SQL numbers (`$1` is the first), typed as the columns hold values.
    private(set) var parameters: [PostgreSQLValue] = []
    /// `FROM` lists: 0 is the main query's, one more per source. Joins go into their alias's list.
    private var fromLists: [[String]] = [[]]
    private var listOfAlias: [String: Int] = ["t0": 0]
    private var joinAliases: [String: String] = [:]
    private var aliasCount = 0
    private var sources: [Source] = []
    private var variables: [String: Operand] = [:]

    init(model: ManagedObjectModel, schema: TableLayout, entity: String, prefix: String, storeIdentifier: String) {
        self.model = model
        self.schema = schema
        self.entity = entity
        self.prefix = prefix
        self.storeIdentifier = storeIdentifier
    }

    /// The joins the main query's key paths need, after its `FROM` table (`t0`).
    var joins: String { fromLists[0].map { " " + $0 }.joined() }

    // MARK: Predicates

    /// The predicate as a condition. Throws what `SQLPredicateCompiler` throws for the same
    /// predicate (an unknown key, a collection where a value is needed, a bad pattern).
    mutating func condition(_ predicate: FetchPredicate) throws -> Condition {
        switch predicate {
        case .true: return .exact("TRUE")
        case .false: return .exact("FALSE")
        case .and(let parts):
            return Self.combined(try SQLPredicateCompiler.flattened(parts, and: true).map { try condition($0) }, and: true)
        case .or(let parts):
            return Self.combined(try SQLPredicateCompiler.flattened(parts, and: false).map { try condition($0) }, and: false)
        case .not(let inner):
            let inner = try condition(inner)
            return Condition(necessary: Self.negated(inner.sufficient), sufficient: Self.negated(inner.necessary), isExact: inner.isExact)
        case .comparison(let comparison):
            let bound = parameters.count
            do {
                return .exact(try sql(comparison))
            } catch is Inexact {
                parameters.removeSubrange(bound...)
            }
            do {
                return try bounds(of: comparison)
            } catch {
                parameters.removeSubrange(bound...)
                return .unknown
            }
        }
    }

    /// Bounds of a comparison SQL cannot say exactly, for the common shape `key op constant`
    /// (or `ANY key op constant`) on text or a decimal: the evaluator's test is false where
    /// the key is nil, and equal strings are equal under any options (`==[c]` holds where the
    /// bytes are equal). Other shapes are unknown (TRUE and FALSE).
    private mutating func bounds(of comparison: Comparison) throws -> Condition {
        guard comparison.modifier != .all else { return .unknown }
        let left = try operand(comparison.left), right = try operand(comparison.right)
        var subject = left
        var source: Int?
        if comparison.modifier == .any {
            guard case .source(let index) = left else { return .unknown }
            source = index
            subject = sources[index].element
        }
        guard case .scalar(let column, let kind, _) = subject, case .constant(.attribute(let value)) = right else { return .unknown }
        let key = ValueComparison.key(value)
        let isText: Bool
        switch (kind, key) {
        case (.text, .text): isText = true
        case (.decimal, .number): isText = false
        default: return .unknown
        }
        let present = "(\(column) IS NOT NULL)"
        var necessary = present, sufficient = "FALSE"
        switch comparison.op {
        case .equal:
            if case .text(let text) = key { sufficient = "COALESCE(\(column) = \(try bind(text: text)), FALSE)" }
        case .notEqual:
            guard case .text(let text) = key, source == nil else { return .unknown }
            necessary = "(NOT COALESCE(\(column) = \(try bind(text: text)), FALSE))"
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            break
        case .beginsWith, .endsWith, .like, .matches, .contains:
            guard isText else { return .unknown }
        default:
            return .unknown
        }
        guard let source else { return Condition(necessary: necessary, sufficient: sufficient, isExact: false) }
        func exists(_ test: String) -> String {
            test == "FALSE" ? "FALSE" : "(EXISTS (\(select("1", from: source, where: test))))"
        }
        return Condition(necessary: exists(necessary), sufficient: exists(sufficient), isExact: false)
    }

    private static func negated(_ sql: String) -> String {
        switch sql {
        case "TRUE": "FALSE"
        case "FALSE": "TRUE"
        default: "(NOT \(sql))"
        }
    }

    private static func combined(_ parts: [Condition], and: Bool) -> Condition {
        let identity = and ? "TRUE" : "FALSE", absorbing = and ? "FALSE" : "TRUE"
        func joined(_ terms: [String]) -> String {
            if terms.contains(absorbing) { return absorbing }
            let kept = terms.filter { $0 != identity }
            if kept.isEmpty { return identity }
            return kept.count == 1 ? kept[0] : SQLPredicateCompiler.balanced(kept, and ? " AND " : " OR ")
        }
        let necessary = joined(parts.map(\.necessary))
        if parts.allSatisfy(\.isExact) { return .exact(necessary) }
        return Condition(necessary: necessary, sufficient: joined(parts.map(\.sufficient)), isExact: false)
    }

    /// A comparison as two-valued SQL that means exactly what the evaluator means; `Inexact`
    /// where it cannot.
    private mutating func sql(_ comparison: Comparison) throws -> String {
        let left = try operand(comparison.left)
        let right = try operand(comparison.right)
        switch comparison.modifier {
        case .direct:
            return try compare(left, comparison.op, right, comparison.options)
        case .any, .all:
            let all = comparison.modifier == .all
            func joined(_ tests: [String]) -> String {
                tests.isEmpty ? (all ? "TRUE" : "FALSE") : "(" + tests.joined(separator: all ? " AND " : " OR ") + ")"
            }
            switch left {
            case .source(let index):
                let test = try compare(sources[index].element, comparison.op, right, comparison.options)
                return all
                    ? "(NOT EXISTS (\(select("1", from: index, where: "NOT \(test)"))))"
                    : "(EXISTS (\(select("1", from: index, where: test))))"
            case .constant(.collection(let values)):
                return joined(try values.map { try compare(.constant($0), comparison.op, right, comparison.options) })
            case .list(let members):
                return joined(try members.map { try compare($0, comparison.op, right, comparison.options) })
            case .constant(.null):
                return all ? "TRUE" : "FALSE"
            default:
                throw FetchPredicateError.notACollection(comparison.modifier.rawValue)
            }
        }
    }

    private func select(_ columns: String, from index: Int, where extra: String? = nil) -> String {
        let source = sources[index]
        let conditions = source.conditions + (extra.map { [$0] } ?? [])
        return "SELECT \(columns) FROM " + fromLists[source.fromList].joined(separator: " ")
            + (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "))
    }

    // MARK: Comparisons

    private static func refuseCollections(_ op: ComparisonOperator, _ operands: Operand...) throws {
        for operand in operands {
            switch operand {
            case .source, .list, .constant(.collection):
                throw FetchPredicateError.unsupported("a collection compared with \(op.rawValue); use ANY, ALL, NONE, IN, CONTAINS or a collection operator")
            default: break
            }
        }
    }

    private mutating func compare(_ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: ComparisonOptions) throws -> String {
        switch op {
        case .equal, .notEqual:
            try Self.refuseCollections(op, left, right)
            let test = try equal(left, right, options)
            return op == .equal ? test : Self.negated(test)
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            try Self.refuseCollections(op, left, right)
            if case .constant(let a) = left, case .constant(let b) = right {
                return try PredicateEvaluator.compare(a, op, b, options) ? "TRUE" : "FALSE"
            }
            return try ordered(left, op.rawValue, right, options)
        case .in:
            return try containment(right, left, op, options)
        case .contains:
            return try containment(left, right, op, options)
        case .between:
            try Self.refuseCollections(op, left)
            let bounds: [Operand]
            switch right {
            case .constant(.collection(let values)) where values.count == 2: bounds = values.map { .constant($0) }
            case .list(let members) where members.count == 2: bounds = members
            default: throw FetchPredicateError.unsupported("BETWEEN needs {low, high} on its right")
            }
            return "(\(try compare(left, .greaterThanOrEqual, bounds[0], options)) AND \(try compare(left, .lessThanOrEqual, bounds[1], options)))"
        case .beginsWith, .endsWith, .like, .matches:
            try Self.refuseCollections(op, left, right)
            return try textTest(op, left, right, options)
        }
    }

    /// `left op right` for `<`, `<=`, `>`, `>=`: false where either is nil or an object, or
    /// where their kinds do not compare.
    private mutating func ordered(_ left: Operand, _ op: String, _ right: Operand, _ options: ComparisonOptions) throws -> String {
        let leftKind = kind(of: left), rightKind = kind(of: right)
        if leftKind.isNumber && rightKind.isNumber {
            return try numeric(try number(left), op, try number(right))
        }
        guard leftKind == rightKind else { return "FALSE" }
        switch leftKind {
        case .text:
            // Without options the evaluator orders strings by their UTF-8 bytes: code points.
            guard options.isEmpty else { throw Inexact() }
            return "COALESCE(\(try scalarSQL(left)) COLLATE \"C\" \(op) \(try scalarSQL(right)), FALSE)"
        case .bytes:
            return "COALESCE(\(try scalarSQL(left)) \(op) \(try scalarSQL(right)), FALSE)"
        default:
            return "FALSE"
        }
    }

    /// `element IN container` and `container CONTAINS element`: membership when the container
    /// is a collection, a substring test when it is a string.
    private mutating func containment(_ container: Operand, _ element: Operand, _ op: ComparisonOperator, _ options: ComparisonOptions) throws -> String {
        switch container {
        case .constant(.collection(let values)):
            return try membership(element, values.map { .constant($0) }, options)
        case .list(let members):
            return try membership(element, members, options)
        case .source(let index):
            try Self.refuseCollections(op, element)
            return "(EXISTS (\(select("1", from: index, where: try equal(sources[index].element, element, options)))))"
        case .constant(.null):
            return "FALSE"
        default:
            try Self.refuseCollections(op, element)
            guard kind(of: container) == .text else {
                throw FetchPredicateError.unsupported("\(op.rawValue) with a \(op == .in ? "right" : "left") side that is neither a collection nor a string")
            }
            return try textTest(.contains, container, element, options)
        }
    }

    /// `left` equals one of `members`.
    private mutating func membership(_ left: Operand, _ members: [Operand], _ options: ComparisonOptions) throws -> String {
        try Self.refuseCollections(.in, left)
        var tests: [String] = []
        var listed: [String] = []
        for member in members {
            switch member {
            case .constant(.collection):
                continue  // a nested collection equals nothing, as in the evaluator
            case .constant(.attribute(let value)):
                // The common `key IN {…}`: members of the column's own kind as one SQL IN list.
                if case .scalar(_, let kind, _) = left, let parameter = try listable(value, in: kind, options) {
                    listed.append(parameter)
                    continue
                }
                tests.append(try equal(left, member, options))
            default:
                tests.append(try equal(left, member, options))
            }
        }
        if !listed.isEmpty { tests.append("COALESCE(\(try scalarSQL(left)) IN (\(listed.joined(separator: ", "))), FALSE)") }
        let kept = tests.filter { $0 != "FALSE" }
        if kept.contains("TRUE") { return "TRUE" }
        return kept.isEmpty ? "FALSE" : "(" + kept.joined(separator: " OR ") + ")"
    }

    /// A parameter for `value` in an SQL IN list over a column of `kind`, where `=` there means
    /// the evaluator's equality; nil otherwise.
    private mutating func listable(_ value: AttributeValue, in kind: Kind, _ options: ComparisonOptions) throws -> String? {
        switch (kind, ValueComparison.key(value)) {
        case (.integer, .number(_, let exact?)):
            return bind(.integer(exact))
        case (.double, .number(let double, nil)) where !double.isNaN:
            return bind(.double(double))
        case (.text, .text(let text)) where options.isEmpty:
            return try bind(text: text)
        case (.bytes, .bytes(let bytes)):
            return bind(.bytes(Data(bytes)))
        default:
            return nil
        }
    }

    /// Two-valued SQL: whether the two are equal as the evaluator's `equal` says.
    private mutating func equal(_ left: Operand, _ right: Operand, _ options: ComparisonOptions) throws -> String {
        try Self.refuseCollections(.equal, left, right)
        switch (left, right) {
        case (.constant(let a), .constant(let b)):
            return PredicateEvaluator.equal(a, b, options) ? "TRUE" : "FALSE"
        case (.object, _), (_, .object):
            return try objectEquality(left, right)
        default:
            break
        }
        let leftKind = kind(of: left), rightKind = kind(of: right)
        if leftKind == .null || rightKind == .null {
            return "(\(try scalarSQL(leftKind == .null ? right : left)) IS NULL)"
        }
        let bothExpressions = !Self.isConstant(left) && !Self.isConstant(right)
        if leftKind.isNumber && rightKind.isNumber {
            let test = try numeric(try number(left), "=", try number(right))
            guard bothExpressions else { return test }
            return "((\(try scalarSQL(left)) IS NULL AND \(try scalarSQL(right)) IS NULL) OR \(test))"
        }
        guard leftKind == rightKind else {
            // Values of different kinds are never equal; two nils are.
            return bothExpressions ? "(\(try scalarSQL(left)) IS NULL AND \(try scalarSQL(right)) IS NULL)" : "FALSE"
        }
        switch leftKind {
        case .text:
            guard options.isEmpty else { throw Inexact() }
            return "(\(try scalarSQL(left)) IS NOT DISTINCT FROM \(try scalarSQL(right)))"
        case .bytes:
            return "(\(try scalarSQL(left)) IS NOT DISTINCT FROM \(try scalarSQL(right)))"
        default:
            throw Inexact()
        }
    }

    private static func isConstant(_ operand: Operand) -> Bool {
        if case .constant = operand { return true }
        return false
    }

    /// Equality where at least one side is an object (or SELF).
    private mutating func objectEquality(_ left: Operand, _ right: Operand) throws -> String {
        let (reference, other) = if case .object = left { (left, right) } else { (right, left) }
        guard case .object(let key, let entityColumn, let entity, _) = reference else { return "FALSE" }
        switch other {
        case .constant(.null):
            return "(\(key) IS NULL)"
        case .constant(.object(let id)):
            guard let primaryKey = id.primaryKey, id.storeIdentifier == storeIdentifier,
                  let number = schema.entity(named: id.entityName)?.number,
                  model.entity(id.entityName, isKindOf: entity) || model.entity(entity, isKindOf: id.entityName)
            else { return "FALSE" }
            var parts = ["\(key) = \(bind(.integer(primaryKey)))"]
            if let entityColumn {
                parts.append("\(entityColumn) = \(number)")
            } else if id.entityName != entity {
                return "FALSE"
            }
            return "COALESCE(" + parts.joined(separator: " AND ") + ", FALSE)"
        case .constant:
            return "FALSE"
        case .object(let otherKey, let otherEntityColumn, let otherEntity, _):
            guard schema.entity(named: entity)?.tableName == schema.entity(named: otherEntity)?.tableName else {
                return "(\(key) IS NULL AND \(otherKey) IS NULL)"
            }
            let entities = (entityColumn ?? String(schema.entity(named: entity)!.number), otherEntityColumn ?? String(schema.entity(named: otherEntity)!.number))
            return "((\(key) IS NULL AND \(otherKey) IS NULL) OR COALESCE(\(key) = \(otherKey) AND \(entities.0) = \(entities.1), FALSE))"
        case .scalar(let sql, _, _):
            return "(\(key) IS NULL AND \(sql) IS NULL)"
        default:
            throw FetchPredicateError.unsupported("comparing an object with a collection")
        }
    }

    /// BEGINSWITH, ENDSWITH, CONTAINS (on strings), LIKE and MATCHES.
    private mutating func textTest(_ op: ComparisonOperator, _ left: Operand, _ right: Operand, _ options: ComparisonOptions) throws -> String {
        if case .constant(let a) = left, case .constant(let b) = right {
            return try PredicateEvaluator.compare(a, op, b, options) ? "TRUE" : "FALSE"
        }
        guard kind(of: left) == .text, kind(of: right) == .text else { return "FALSE" }
        if op == .matches, case .constant(.attribute(let pattern)) = right, case .text(let text) = ValueComparison.key(pattern) {
            // A bad pattern fails here, as in a SQLite store, not only on the rows it meets.
            try StringComparison.checkPattern(text, options)
        }
        // Without options the evaluator tests UTF-8 bytes, which for valid UTF-8 is testing
        // code points, as these functions do; LIKE matches grapheme clusters, MATCHES runs
        // Lade's own engine, options fold: none of those has a PostgreSQL equal.
        guard options.isEmpty else { throw Inexact() }
        switch op {
        case .beginsWith:
            return "COALESCE(starts_with(\(try scalarSQL(left)), \(try scalarSQL(right))), FALSE)"
        case .endsWith:
            let suffix = try scalarSQL(right)
            return "COALESCE(right(\(try scalarSQL(left)), length(\(suffix))) = \(suffix), FALSE)"
        case .contains:
            return "COALESCE(strpos(\(try scalarSQL(left)), \(try scalarSQL(right))) > 0, FALSE)"
        default:
            throw Inexact()
        }
    }

    // MARK: Numbers

    /// A number operand: an SQL expression of one of the number kinds, or a constant as the
    /// evaluator compares it (an exact integer, or a double).
    private enum Number {
        case expression(String, Kind)
        case integer(Int64)
        case double(Double)
    }

    private mutating func number(_ operand: Operand) throws -> Number {
        switch operand {
        case .scalar(let sql, let kind, _): return .expression(sql, kind)
        case .constant(.attribute(let value)):
            guard case .number(let double, let exact) = ValueComparison.key(value) else { throw Inexact() }
            return exact.map { .integer($0) } ?? .double(double)
        default: throw Inexact()
        }
    }

    /// Two-valued SQL for `left op right` (`=`, `<`, `<=`, `>`, `>=`) between numbers, false
    /// where either is nil, as `ValueComparison.compare` decides it.
    private mutating func numeric(_ left: Number, _ op: String, _ right: Number) throws -> String {
        switch (left, right) {
        case (.expression(_, .decimal), _), (_, .expression(_, .decimal)):
            // The evaluator compares a fractional decimal as Foundation's nearest double.
            throw Inexact()
        case (.expression(let x, .integer), .expression(let y, .integer)):
            return "COALESCE(\(x) \(op) \(y), FALSE)"
        case (.expression(let x, .double), .expression(let y, .double)):
            return "COALESCE(\(x) \(op) \(y) AND \(Self.notNaN(x)) AND \(Self.notNaN(y)), FALSE)"
        case (.expression, .expression):
            // An integer with a double: PostgreSQL rounds the integer to a double.
            throw Inexact()
        case (.expression(let x, .integer), .integer(let c)):
            return "COALESCE(\(x) \(op) \(bind(.integer(c))), FALSE)"
        case (.expression(let x, .integer), .double(let d)):
            return integer(x, op, d)
        case (.expression(let x, _), .double(let d)):
            if d.isNaN { return "FALSE" }
            return "COALESCE(\(x) \(op) \(bind(.double(d))) AND \(Self.notNaN(x)), FALSE)"
        case (.expression(let x, _), .integer(let c)):
            guard let d = Double(exactly: c) else { throw Inexact() }
            return "COALESCE(\(x) \(op) \(bind(.double(d))) AND \(Self.notNaN(x)), FALSE)"
        case (.integer, .expression), (.double, .expression):
            return try numeric(right, Self.mirrored(op), left)
        default:
            // Two constants.
            func value(_ number: Number) -> AttributeValue {
                switch number {
                case .integer(let v): .integer(v)
                case .double(let v): .double(v)
                case .expression: .double(.nan)
                }
            }
            guard let order = ValueComparison.compare(value(left), value(right)) else { return "FALSE" }
            let holds = switch op {
            case "=": order == 0
            case "<": order < 0
            case "<=": order <= 0
            case ">": order > 0
            default: order >= 0
            }
            return holds ? "TRUE" : "FALSE"
        }
    }

    private static func notNaN(_ sql: String) -> String { "\(sql) <> 'NaN'::float8" }

    private static func mirrored(_ op: String) -> String {
        switch op {
        case "<": ">"
        case "<=": ">="
        case ">": "<"
        case ">=": "<="
        default: op
        }
    }

    /// An integer expression against a double, as `ValueComparison.compare(integer:double:)`
    /// decides it: through the double's integer floor, so no integer is rounded.
    private mutating func integer(_ x: String, _ op: String, _ d: Double) -> String {
        let present = "(\(x) IS NOT NULL)"
        if d.isNaN { return "FALSE" }
        if d >= 9223372036854775808.0 { return op == "<" || op == "<=" ? present : "FALSE" }
        if d < -9223372036854775808.0 { return op == ">" || op == ">=" ? present : "FALSE" }
        let floor = d.rounded(.down)
        let fractional = d != floor
        let whole = Int64(floor)
        let (sqlOp, sqlBound): (String, Int64) = switch op {
        case "=": (fractional ? "" : "=", whole)
        case "<": (fractional ? "<=" : "<", whole)
        case ">=": (fractional ? ">" : ">=", whole)
        default: (op, whole)  // `<=` and `>` hold against the floor alike
        }
        if sqlOp.isEmpty { return "FALSE" }
        return "COALESCE(\(x) \(sqlOp) \(bind(.integer(sqlBound))), FALSE)"
    }

    // MARK: Operands

    private func kind(of operand: Operand) -> Kind {
        switch operand {
        case .scalar(_, let kind, _): kind
        case .object: .object
        case .constant(let value):
            switch value {
            case .null: .null
            case .object: .object
            case .collection: .collection
            case .attribute(let attribute):
                switch ValueComparison.key(attribute) {
                case .number(_, let exact): exact == nil ? .double : .integer
                case .text: .text
                case .bytes, .composite: .bytes  // a composite constant is refused in `operand`
                }
            }
        case .list, .source: .collection
        }
    }

    private mutating func scalarSQL(_ operand: Operand) throws -> String {
        switch operand {
        case .scalar(let sql, _, _): return sql
        case .object(let key, _, _, _): return key
        case .constant(.null): return "NULL"
        case .constant(.attribute(let value)):
            switch ValueComparison.key(value) {
            case .number(let double, let exact): return bind(exact.map { .integer($0) } ?? .double(double))
            case .text(let text): return try bind(text: text)
            case .bytes(let bytes): return bind(.bytes(Data(bytes)))
            case .composite: throw Inexact()
            }
        case .constant(.object(let id)): return id.primaryKey.map { bind(.integer($0)) } ?? "NULL"
        default: throw FetchPredicateError.unsupported("a collection where a single value is needed")
        }
    }

    private mutating func operand(_ expression: FetchExpression) throws -> Operand {
        switch expression {
        case .constant(let value):
            if SQLPredicateCompiler.holdsComposite(value) {
                throw FetchPredicateError.unsupported("a composite value in a PostgreSQL fetch: Core Data's columns for composite elements are not known from any Apple-written store")
            }
            return .constant(value)
        case .evaluatedObject: return .object(key: "t0.\"Z_PK\"", entityColumn: "t0.\"Z_ENT\"", entity: entity, alias: "t0")
        case .keyPath(let path): return try walk(from: "t0", entity, path)
        case .variable(let name):
            guard let bound = variables[name] else { throw FetchPredicateError.missingVariable(name) }
            return bound
        case .variableKeyPath(let name, let path):
            guard let bound = variables[name] else { throw FetchPredicateError.missingVariable(name) }
            guard case .object(_, _, let boundEntity, let alias?) = bound else {
                throw FetchPredicateError.unsupported("a key path from $\(name), which does not stand for an object row")
            }
            return try walk(from: alias, boundEntity, path)
        case .aggregate(let members):
            return .list(try members.map { try operand($0) })
        case .subquery(let collection, let variable, let predicate):
            guard case .source(let index) = try operand(collection) else { throw FetchPredicateError.notACollection("SUBQUERY") }
            let saved = variables[variable]
            variables[variable] = sources[index].element
            defer { variables[variable] = saved }
            let filter = try condition(predicate)
            guard filter.isExact else { throw Inexact() }
            sources[index].conditions.append(filter.necessary)
            return .source(index)
        case .collectionOperator(let op, let collection, let path):
            switch try operand(collection) {
            case .source(let index):
                if op == .count { return .scalar("(\(select("count(*)", from: index)))", .integer, nil) }
                var value = sources[index].element
                if !path.isEmpty {
                    guard case .object(_, _, let elementEntity, let alias?) = value else {
                        throw FetchPredicateError.unsupported("a key path after \(op.rawValue) on a collection of values")
                    }
                    value = try walk(from: alias, elementEntity, path)
                }
                guard case .scalar(let column, let kind, let type) = value else {
                    throw FetchPredicateError.unsupported("\(op.rawValue) over objects or nested collections")
                }
                return try aggregate(op, column, kind, type, index)
            case .constant(let value):
                // A literal collection: computed here, as the evaluator computes it.
                let result = try PredicateEvaluator.value(.collectionOperator(op, .constant(value), path), PredicateEvaluator.Scope(object: PredicateValue.null, variables: [:]))
                return .constant(result)
            default:
                throw FetchPredicateError.notACollection(op.rawValue)
            }
        }
    }

    /// `@sum`, `@avg`, `@min` and `@max` of `column` over a source's rows, where PostgreSQL
    /// computes what the evaluator does: sums and averages of integers that cannot overflow
    /// (the evaluator adds doubles in member order, which SQL does not fix), minimum and maximum
    /// of integers and of text (by bytes).
    private func aggregate(_ op: CollectionOperator, _ column: String, _ kind: Kind, _ type: AttributeType?, _ index: Int) throws -> Operand {
        let small = type == .integer16 || type == .integer32 || type == .boolean
        switch op {
        case .sum, .avg:
            guard kind.isNumber else { throw FetchPredicateError.unsupported("\(op.rawValue) over values that are not numbers") }
            guard small else { throw Inexact() }
            return op == .sum
                ? .scalar("(\(select("COALESCE(sum(\(column)), 0)::bigint", from: index)))", .integer, nil)
                : .scalar("(\(select("avg((\(column))::float8)", from: index)))", .double, nil)
        default:
            let function = op == .min ? "min" : "max"
            switch kind {
            case .integer: return .scalar("(\(select("\(function)(\(column))", from: index)))", .integer, nil)
            case .text: return .scalar("(\(select("\(function)(\(column) COLLATE \"C\")", from: index)))", .text, nil)
            default: throw Inexact()  // NaN among doubles makes the evaluator's order undefined; decimals round
            }
        }
    }

    /// Follows a key path from the row `alias` of `start`: to-one relationships as `LEFT JOIN`s
    /// in the alias's `FROM` list, the first to-many relationship into a new source whose
    /// rows the rest of the path follows.
    private mutating func walk(from startAlias: String, _ startEntity: String, _ path: [String]) throws -> Operand {
        var alias = startAlias
        var current = startEntity
        var list = listOfAlias[startAlias]!
        var source: Int?
        func finish(_ operand: Operand) -> Operand {
            guard let source else { return operand }
            sources[source].element = operand
            return .source(source)
        }
        for (position, key) in path.enumerated() {
            let last = position == path.count - 1
            if let attribute = model.attribute(key, of: current) {
                if attribute.type == .composite {
                    throw FetchPredicateError.unsupported("composite attribute '\(key)' of \(current) in a PostgreSQL fetch: Core Data's columns for composite elements are not known from any Apple-written store, so Lade keeps composites in in-memory stores only, where such predicates are evaluated")
                }
                guard last else { throw FetchPredicateError.unsupported("a key path through attribute '\(key)'") }
                guard !attribute.isTransient, attribute.type != .undefined else {
                    throw FetchPredicateError.unsupported("transient attribute '\(key)' in a store fetch")
                }
                let declaring = TableLayout.declaringEntity(of: key, from: current, in: model)!
                let column = "\(alias).\(postgreSQLQuoted(schema.columnName(for: .attribute(entity: declaring, name: key))!))"
                return finish(Self.scalar(column, attribute.type))
            }
            guard let relationship = model.relationship(key, of: current) else {
                throw FetchPredicateError.unknownKey(entity: current, key: key)
            }
            guard !relationship.isTransient else { throw FetchPredicateError.unsupported("transient relationship '\(key)' in a store fetch") }
            let declaring = TableLayout.declaringEntity(of: key, from: current, in: model)!
            let destination = relationship.destinationEntityName
            if relationship.isToMany {
                let next = newAlias()
                let (fragments, link) = try toManyStep(from: alias, declaring: declaring, relationship, to: next)
                if source == nil {
                    fromLists.append(fragments)
                    list = fromLists.count - 1
                    sources.append(Source(fromList: list, conditions: [link], element: .constant(.null)))
                    source = sources.count - 1
                } else {
                    fromLists[list] += fragments.enumerated().map { $0.offset == 0 ? "JOIN \($0.element) ON \(link)" : $0.element }
                }
                listOfAlias[next] = list
                alias = next
                current = destination
                continue
            }
            let keyColumn = "\(alias).\(postgreSQLQuoted(schema.columnName(for: .toOne(entity: declaring, name: key))!))"
            if last {
                let entityColumn = schema.columnName(for: .toOneEntity(entity: declaring, name: key)).map { "\(alias).\(postgreSQLQuoted($0))" }
                return finish(.object(key: keyColumn, entityColumn: entityColumn, entity: destination, alias: nil))
            }
            let joinKey = "\(alias).\(key)"
            if let existing = joinAliases[joinKey] {
                alias = existing
            } else {
                let next = newAlias()
                fromLists[list].append("LEFT JOIN \(table(destination)) AS \(next) ON \(next).\"Z_PK\" = \(keyColumn)")
                joinAliases[joinKey] = next
                listOfAlias[next] = list
                alias = next
            }
            current = destination
        }
        return finish(.object(key: "\(alias).\"Z_PK\"", entityColumn: "\(alias).\"Z_ENT\"", entity: current, alias: alias))
    }

    /// A column read as the evaluator reads its attribute: booleans as 0 or 1 (it reads any
    /// non-zero integer as true).
    private static func scalar(_ column: String, _ type: AttributeType) -> Operand {
        switch type {
        case .boolean: .scalar("((\(column) <> 0)::int)", .integer, type)
        case .integer16, .integer32, .integer64: .scalar(column, .integer, type)
        case .double, .float, .date: .scalar(column, .double, type)
        case .decimal: .scalar(column, .decimal, type)
        case .string, .uri: .scalar(column, .text, type)
        case .binary, .transformable, .uuid, .undefined, .composite: .scalar(column, .bytes, type)
        }
    }

    private func table(_ entityName: String) -> String {
        prefix + postgreSQLQuoted(schema.entity(named: entityName)!.tableName)
    }

    /// The `FROM` fragments that reach a to-many relationship's destinations as `next`, and
    /// the condition tying them to the source row `alias`.
    private func toManyStep(from alias: String, declaring: String, _ relationship: RelationshipDescription, to next: String) throws -> ([String], String) {
        let destination = table(relationship.destinationEntityName)
        let reference = TableLayout.PropertyReference(entity: declaring, name: relationship.name)
        if let join = schema.joinTable(for: reference) {
            let named = join.relationship == reference
            let mine = postgreSQLQuoted(named ? join.sourceColumn : join.destinationColumn)
            let theirs = postgreSQLQuoted(named ? join.destinationColumn : join.sourceColumn)
            let link = "\(next)_j"
            return (["\(prefix)\(postgreSQLQuoted(join.name)) AS \(link)", "JOIN \(destination) AS \(next) ON \(next).\"Z_PK\" = \(link).\(theirs)"], "\(link).\(mine) = \(alias).\"Z_PK\"")
        }
        guard let keyColumn = schema.ownerColumn(ofToMany: relationship.name, declaredBy: declaring, in: model) else {
            throw FetchPredicateError.unsupported("to-many relationship '\(relationship.name)' has neither a join table nor an inverse key")
        }
        let numbers = model.hierarchy(from: relationship.destinationEntityName).map { String(schema.entity(named: $0.name)!.number) }
        return (["\(destination) AS \(next)"], "(\(next).\(postgreSQLQuoted(keyColumn)) = \(alias).\"Z_PK\" AND \(next).\"Z_ENT\" IN (\(numbers.joined(separator: ", "))))")
    }

    private mutating func newAlias() -> String {
        aliasCount += 1
        return "t\(aliasCount)"
    }

    // MARK: Sorting

    /// `ORDER BY` terms for the sort descriptors (before the ties by `Z_PK`), or nil when SQL
    /// cannot order as they do: a decimal (ordered by the evaluator as rounded doubles), a string
    /// by `caseInsensitiveCompare`/`localizedStandardCompare`. Nil comes first ascending.
    mutating func orderBy(_ descriptors: [FetchSortDescriptor]) throws -> [String]? {
        var terms: [String] = []
        for descriptor in descriptors {
            try descriptor.check(on: entity, in: model)
            guard case .scalar(let column, let kind, _) = try walk(from: "t0", entity, descriptor.keyPath) else {
                throw FetchPredicateError.unsupported("sorting by '\(descriptor.keyPath.joined(separator: "."))'")
            }
            let direction = descriptor.ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST"
            switch kind {
            case .integer, .double, .bytes: terms.append("\(column) \(direction)")
            case .text where descriptor.comparator == .compare: terms.append("\(column) COLLATE \"C\" \(direction)")
            default: return nil
            }
        }
        return terms
    }

    // MARK: Parameters

    private mutating func bind(_ value: PostgreSQLValue) -> String {
        parameters.append(value)
        return "$\(parameters.count)"
    }

    /// Text as a parameter; text with NUL cannot be one (libpq reads parameters up to a NUL).
    private mutating func bind(text: String) throws -> String {
        guard !text.utf8.contains(0) else { throw Inexact() }
        return bind(.text(text))
    }
}
