import Foundation

/// Compiles a predicate and sort descriptors over one entity into SQL for a SQLite store in
/// Core Data's layout. The SQL means what `PredicateEvaluator` means:
/// - values are always bound as (numbered) parameters;
/// - to-one key paths are `LEFT JOIN`s; to-many key paths are correlated subqueries over the
///   destination table (through the join table of a many-to-many relationship): `EXISTS` for
///   `ANY`/`NONE`, `NOT EXISTS … NOT` for `ALL`, `SELECT COUNT/SUM/AVG/MIN/MAX` for collection
///   operators, and the `SUBQUERY` filter in their `WHERE`;
/// - equality is SQLite's two-valued `IS`; a negation cannot turn NULL into true; values of
///   kinds that do not compare (a string and a number) are decided from the model's types, as
///   the evaluator decides them, instead of by SQLite's affinity conversions;
/// - `[c]`, `[d]`, `LIKE`, `MATCHES` and the sort comparators call the functions and
///   collations `SQLiteFunctions` registers, which run `StringComparison`, the evaluator's code.
struct SQLPredicateCompiler {
    let model: ManagedObjectModel
    let schema: TableLayout
    let entity: String

    /// `FROM` with the joins key paths need, `WHERE` and `ORDER BY` clauses, and the arguments
    /// (numbered: `?1` is the first).
    struct Query {
        var from: String
        var whereClause: String
        var orderBy: String
        var arguments: [SQLiteValue]
    }

    /// The store whose object IDs the compiled SQL may name; set by the store.
    var storeIdentifier: String?

    /// What an operand is, as far as comparing goes.
    enum Kind: Equatable {
        case number, text, bytes, object, null, collection
    }

    /// An operand of a comparison.
    indirect enum Operand {
        /// An SQL expression and the kind of its non-NULL values.
        case scalar(String, Kind)
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

    private var arguments: [SQLiteValue] = []
    /// Whether the store keeps attributes that allow external storage in Core Data's form (a
    /// marker first, long values in files: `SQLiteExternalData`): their columns are then only
    /// tested for nil, as SQL cannot compare the values or order by them.
    var keepsExternalMarkers = false
    /// The SQL of such columns met so far.
    private var externalColumns: Set<String> = []
    /// `FROM` lists: 0 is the main query's, one more per source. Joins go into their alias's list.
    private var fromLists: [[String]] = [[]]
    private var listOfAlias: [String: Int] = [:]
    private var joinAliases: [String: String] = [:]
    private var aliasCount = 0
    private var sources: [Source] = []
    private var variables: [String: Operand] = [:]

    init(model: ManagedObjectModel, schema: TableLayout, entity: String) {
        self.model = model
        self.schema = schema
        self.entity = entity
    }

    /// Throws `FetchPredicateError.unknownKey` for the first key of `predicate`'s key paths that is
    /// not a property of the entity it is asked of, as a fetch from a SQLite store finds it
    /// (compiling walks every key path, through relationships, collection operators and
    /// subqueries); what else the compiler does not take is left to whoever evaluates the
    /// predicate. A fetch from an atomic store and a mapping model's filter are checked here,
    /// so that a misspelt key is an error wherever the predicate runs, not a filter no object
    /// passes.
    static func checkKeys(of predicate: FetchPredicate, on entity: String, in model: ManagedObjectModel, schema: TableLayout) throws {
        guard predicate != .true, predicate != .false else { return }
        var compiler = SQLPredicateCompiler(model: model, schema: schema, entity: entity)
        do {
            _ = try compiler.compile(predicate, sortDescriptors: [], entityNumbers: [0])
        } catch let error as FetchPredicateError {
            if case .unknownKey = error { throw error }
        }
    }

    mutating func compile(_ predicate: FetchPredicate?, sortDescriptors: [FetchSortDescriptor], entityNumbers: [Int64]) throws -> Query {
        let table = schema.entity(named: entity)!.tableName
        listOfAlias["t0"] = 0
        var conditions: [String] = []
        // Restrict to the requested entities when the table holds others too.
        if entityNumbers.count < schema.entityCount(inTable: table) {
            conditions.append(entityNumbers.count == 1 ? "t0.Z_ENT = \(entityNumbers[0])" : "t0.Z_ENT IN (\(entityNumbers.map(String.init).joined(separator: ", ")))")
        }
        if let predicate, predicate != .true {
            conditions.append(try sql(predicate))
        }
        var order: [String] = []
        for descriptor in sortDescriptors {
            try descriptor.check(on: entity, in: model)
            guard case .scalar(let column, let kind) = try walk(from: "t0", entity, descriptor.keyPath) else {
                throw FetchPredicateError.unsupported("sorting by '\(descriptor.keyPath.joined(separator: "."))'")
            }
            if externalColumns.contains(column) { throw Self.externalRefusal }
            var term = column
            if kind == .text {
                switch descriptor.comparator {
                case .compare: break
                case .caseInsensitiveCompare: term += " COLLATE \(SQLiteFunctions.caseInsensitiveCollation)"
                case .localizedStandardCompare: term += " COLLATE \(SQLiteFunctions.localizedStandardCollation)"
                }
            }
            order.append("\(term) \(descriptor.ascending ? "ASC" : "DESC")")
        }
        order.append("t0.Z_PK")
        return Query(
            from: "\(table) t0" + fromLists[0].map { " " + $0 }.joined(),
            whereClause: conditions.isEmpty ? "1" : conditions.joined(separator: " AND "),
            orderBy: order.joined(separator: ", "), arguments: arguments)
    }

    // MARK: Predicates

    /// SQL that is 1 where the predicate holds and 0 or NULL where it does not.
    private mutating func sql(_ predicate: FetchPredicate) throws -> String {
        switch predicate {
        case .true: return "1"
        case .false: return "0"
        case .and(let parts):
            return parts.isEmpty ? "1" : Self.balanced(try Self.flattened(parts, and: true).map { try sql($0) }, " AND ")
        case .or(let parts):
            return parts.isEmpty ? "0" : Self.balanced(try Self.flattened(parts, and: false).map { try sql($0) }, " OR ")
        case .not(let inner): return "NOT COALESCE(\(try sql(inner)), 0)"
        case .comparison(let comparison):
            let left = try operand(comparison.left)
            let right = try operand(comparison.right)
            switch comparison.modifier {
            case .direct:
                return try compare(left, comparison.op, right, comparison.options)
            case .any, .all:
                let all = comparison.modifier == .all
                switch left {
                case .source(let index):
                    let test = try compare(sources[index].element, comparison.op, right, comparison.options)
                    return all
                        ? "NOT EXISTS (\(select("1", from: index, where: "NOT COALESCE(\(test), 0)")))"
                        : "EXISTS (\(select("1", from: index, where: test)))"
                case .constant(.collection(let values)):
                    let tests = try values.map { try compare(.constant($0), comparison.op, right, comparison.options) }
                    if tests.isEmpty { return all ? "1" : "0" }
                    return "(" + tests.map { all ? "COALESCE(\($0), 0)" : $0 }.joined(separator: all ? " AND " : " OR ") + ")"
                case .list(let members):
                    let tests = try members.map { try compare($0, comparison.op, right, comparison.options) }
                    if tests.isEmpty { return all ? "1" : "0" }
                    return "(" + tests.map { all ? "COALESCE(\($0), 0)" : $0 }.joined(separator: all ? " AND " : " OR ") + ")"
                case .constant(.null):
                    return all ? "1" : "0"
                default:
                    throw FetchPredicateError.notACollection(comparison.modifier.rawValue)
                }
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
            return op == .equal ? test : "NOT \(test)"
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            try Self.refuseCollections(op, left, right)
            if case .constant(let a) = left, case .constant(let b) = right {
                return try PredicateEvaluator.compare(a, op, b, options) ? "1" : "0"
            }
            guard let (x, y, kind) = try scalars(left, right), kind != .object else { return "0" }
            let (l, r) = folded(x, y, kind, options)
            return "\(l) \(op.rawValue) \(r)"
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
            return "EXISTS (\(select("1", from: index, where: try equal(sources[index].element, element, options))))"
        case .constant(.null):
            return "0"
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
        if case .scalar(let column, let kind) = left, options.isEmpty || kind != .text {
            // The common `key IN {…}` as one SQL IN list over the members that can match.
            var placeholders: [String] = []
            var others: [Operand] = []
            var hasNull = false
            for member in members {
                if case .constant(let value) = member {
                    switch value {
                    case .null: hasNull = true
                    case .attribute(let attribute) where ValueComparison.kind(attribute) == kindOf(kind):
                        placeholders.append(bind(attribute))
                    default: continue
                    }
                } else {
                    others.append(member)
                }
            }
            var parts: [String] = []
            if !placeholders.isEmpty { parts.append("\(column) IN (\(placeholders.joined(separator: ", ")))") }
            if hasNull { parts.append("\(column) IS NULL") }
            for member in others { parts.append(try equal(left, member, options)) }
            return parts.isEmpty ? "0" : "(" + parts.joined(separator: " OR ") + ")"
        }
        let tests = try members.map { member -> String in
            // A nested collection equals nothing, as in the evaluator.
            if case .constant(.collection) = member { return "0" }
            return try equal(left, member, options)
        }
        return tests.isEmpty ? "0" : "(" + tests.joined(separator: " OR ") + ")"
    }

    private func kindOf(_ kind: Kind) -> ValueComparison.Kind {
        switch kind {
        case .number: .number
        case .text: .text
        case .bytes: .bytes
        case .object: .object
        case .null: .null
        case .collection: .collection
        }
    }

    /// SQL that is exactly 1 or 0: whether the two are equal as the evaluator's `equal` says.
    private mutating func equal(_ left: Operand, _ right: Operand, _ options: ComparisonOptions) throws -> String {
        try Self.refuseCollections(.equal, left, right)
        switch (left, right) {
        case (.constant(let a), .constant(let b)):
            return PredicateEvaluator.equal(a, b, options) ? "1" : "0"
        case (.object, _), (_, .object):
            return try objectEquality(left, right)
        default:
            break
        }
        let leftKind = kind(of: left), rightKind = kind(of: right)
        if leftKind == .null || rightKind == .null {
            let other = leftKind == .null ? right : left
            // A nil test reads no value: a column kept as external binary data too.
            if case .scalar(let sql, _) = other { return "(\(sql) IS NULL)" }
            return "(\(try scalarSQL(other)) IS NULL)"
        }
        if leftKind != rightKind {
            // Values of different kinds are never equal; two nils are.
            return "(\(try scalarSQL(left)) IS NULL AND \(try scalarSQL(right)) IS NULL)"
        }
        let (l, r) = folded(try scalarSQL(left), try scalarSQL(right), leftKind, options)
        return "(\(l) IS \(r))"
    }

    /// Equality where at least one side is an object (or SELF).
    private mutating func objectEquality(_ left: Operand, _ right: Operand) throws -> String {
        let (reference, other) = if case .object = left { (left, right) } else { (right, left) }
        guard case .object(let key, let entityColumn, let entity, _) = reference else { return "0" }
        switch other {
        case .constant(.null):
            return "(\(key) IS NULL)"
        case .constant(.object(let id)):
            guard let primaryKey = id.primaryKey, id.storeIdentifier == storeIdentifier,
                  let number = schema.entity(named: id.entityName)?.number,
                  model.entity(id.entityName, isKindOf: entity) || model.entity(entity, isKindOf: id.entityName)
            else { return "0" }
            var parts = ["\(key) IS \(bindRaw(.integer(primaryKey)))"]
            if let entityColumn {
                parts.append("\(entityColumn) IS \(number)")
            } else if id.entityName != entity {
                return "0"
            }
            return "(" + parts.joined(separator: " AND ") + ")"
        case .constant:
            return "0"
        case .object(let otherKey, let otherEntityColumn, let otherEntity, _):
            guard schema.entity(named: entity)?.tableName == schema.entity(named: otherEntity)?.tableName else {
                return "(\(key) IS NULL AND \(otherKey) IS NULL)"
            }
            let entities = (entityColumn ?? String(schema.entity(named: entity)!.number), otherEntityColumn ?? String(schema.entity(named: otherEntity)!.number))
            return "((\(key) IS NULL AND \(otherKey) IS NULL) OR (\(key) IS \(otherKey) AND \(entities.0) IS \(entities.1)))"
        case .scalar(let sql, _):
            return "(\(key) IS NULL AND \(sql) IS NULL)"
        default:
            throw FetchPredicateError.unsupported("comparing an object with a collection")
        }
    }

    /// BEGINSWITH, ENDSWITH, CONTAINS (on strings), LIKE and MATCHES.
    private mutating func textTest(_ op: ComparisonOperator, _ left: Operand, _ right: Operand, _ options: ComparisonOptions) throws -> String {
        if case .constant(let a) = left, case .constant(let b) = right {
            return try PredicateEvaluator.compare(a, op, b, options) ? "1" : "0"
        }
        guard kind(of: left) == .text, kind(of: right) == .text else { return "0" }
        if op == .matches, case .constant(.attribute(let pattern)) = right, case .text(let text) = ValueComparison.key(pattern) {
            // A bad pattern fails here, as it fails in the evaluator, not in the middle of a query.
            try StringComparison.checkPattern(text, options)
        }
        let l = try scalarSQL(left), r = try scalarSQL(right)
        if options.isEmpty {
            switch op {
            case .beginsWith: return "(instr(\(l), \(r)) = 1)"
            case .contains: return "(instr(\(l), \(r)) > 0)"
            default: break
            }
        }
        return "\(SQLiteFunctions.textTest)('\(op.rawValue)', \(l), \(r), \(options.rawValue))"
    }

    /// The SQL of two comparable scalars and their kind; nil when they cannot compare (kinds
    /// differ, or one is nil).
    private mutating func scalars(_ left: Operand, _ right: Operand) throws -> (String, String, Kind)? {
        let leftKind = kind(of: left), rightKind = kind(of: right)
        guard leftKind == rightKind, leftKind != .null else { return nil }
        return (try scalarSQL(left), try scalarSQL(right), leftKind)
    }

    private func folded(_ left: String, _ right: String, _ kind: Kind, _ options: ComparisonOptions) -> (String, String) {
        guard kind == .text, !options.isEmpty else { return (left, right) }
        return ("\(SQLiteFunctions.fold)(\(left), \(options.rawValue))", "\(SQLiteFunctions.fold)(\(right), \(options.rawValue))")
    }

    private func kind(of operand: Operand) -> Kind {
        switch operand {
        case .scalar(_, let kind): kind
        case .object: .object
        case .constant(let value):
            switch ValueComparison.kind(value) {
            case .null: .null
            case .number: .number
            case .text: .text
            case .bytes, .composite: .bytes  // a composite constant is refused in `operand`
            case .object: .object
            case .collection: .collection
            }
        case .list, .source: .collection
        }
    }

    private mutating func scalarSQL(_ operand: Operand) throws -> String {
        switch operand {
        case .scalar(let sql, _):
            if externalColumns.contains(sql) { throw Self.externalRefusal }
            return sql
        case .object(let key, _, _, _): return key
        case .constant(.null): return "NULL"
        case .constant(.attribute(let value)): return bind(value)
        case .constant(.object(let id)): return id.primaryKey.map { bindRaw(.integer($0)) } ?? "NULL"
        default: throw FetchPredicateError.unsupported("a collection where a single value is needed")
        }
    }

    // MARK: Operands

    private mutating func operand(_ expression: FetchExpression) throws -> Operand {
        switch expression {
        case .constant(let value):
            if Self.holdsComposite(value) {
                throw FetchPredicateError.unsupported("a composite value in a SQLite fetch: Core Data's SQLite columns for composite elements are not known from any Apple-written store")
            }
            return .constant(value)
        case .evaluatedObject: return .object(key: "t0.Z_PK", entityColumn: "t0.Z_ENT", entity: entity, alias: "t0")
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
            let filter = try sql(predicate)
            sources[index].conditions.append(filter)
            return .source(index)
        case .collectionOperator(let op, let collection, let path):
            switch try operand(collection) {
            case .source(let index):
                if op == .count { return .scalar("(\(select("COUNT(*)", from: index)))", .number) }
                var value = sources[index].element
                if !path.isEmpty {
                    guard case .object(_, _, let elementEntity, let alias?) = value else {
                        throw FetchPredicateError.unsupported("a key path after \(op.rawValue) on a collection of values")
                    }
                    value = try walk(from: alias, elementEntity, path)
                }
                guard case .scalar(let column, let kind) = value else {
                    throw FetchPredicateError.unsupported("\(op.rawValue) over objects or nested collections")
                }
                switch op {
                case .sum, .avg:
                    guard kind == .number else { throw FetchPredicateError.unsupported("\(op.rawValue) over values that are not numbers") }
                    return .scalar("(\(select(op == .sum ? "COALESCE(SUM(\(column)), 0)" : "AVG(\(column))", from: index)))", .number)
                default:
                    return .scalar("(\(select("\(op == .min ? "MIN" : "MAX")(\(column))", from: index)))", kind)
                }
            case .constant(let value):
                // A literal collection: computed here, as the evaluator computes it.
                let result = try PredicateEvaluator.value(.collectionOperator(op, .constant(value), path), PredicateEvaluator.Scope(object: PredicateValue.null, variables: [:]))
                return .constant(result)
            default:
                throw FetchPredicateError.notACollection(op.rawValue)
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
                    throw FetchPredicateError.unsupported("composite attribute '\(key)' of \(current) in a SQLite fetch: Core Data's SQLite columns for composite elements are not known from any Apple-written store, so Lade keeps composites in in-memory stores only, where such predicates are evaluated")
                }
                guard last else { throw FetchPredicateError.unsupported("a key path through attribute '\(key)'") }
                guard !attribute.isTransient, attribute.type != .undefined else {
                    throw FetchPredicateError.unsupported("transient attribute '\(key)' in a store fetch")
                }
                let declaring = TableLayout.declaringEntity(of: key, from: current, in: model)!
                let column = "\(alias).\(schema.columnName(for: .attribute(entity: declaring, name: key))!)"
                if keepsExternalMarkers && attribute.isKeptExternally { externalColumns.insert(column) }
                return finish(.scalar(column, Self.kind(of: attribute.type)))
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
            let keyColumn = "\(alias).\(schema.columnName(for: .toOne(entity: declaring, name: key))!)"
            if last {
                let entityColumn = schema.columnName(for: .toOneEntity(entity: declaring, name: key)).map { "\(alias).\($0)" }
                return finish(.object(key: keyColumn, entityColumn: entityColumn, entity: destination, alias: nil))
            }
            let joinKey = "\(alias).\(key)"
            if let existing = joinAliases[joinKey] {
                alias = existing
            } else {
                let next = newAlias()
                fromLists[list].append("LEFT JOIN \(schema.entity(named: destination)!.tableName) \(next) ON \(next).Z_PK = \(keyColumn)")
                joinAliases[joinKey] = next
                listOfAlias[next] = list
                alias = next
            }
            current = destination
        }
        return finish(.object(key: "\(alias).Z_PK", entityColumn: "\(alias).Z_ENT", entity: current, alias: alias))
    }

    /// The `FROM` fragments that reach a to-many relationship's destinations as `next`, and
    /// the condition tying them to the source row `alias`.
    private func toManyStep(from alias: String, declaring: String, _ relationship: RelationshipDescription, to next: String) throws -> ([String], String) {
        let destination = schema.entity(named: relationship.destinationEntityName)!
        let reference = TableLayout.PropertyReference(entity: declaring, name: relationship.name)
        if let join = schema.joinTable(for: reference) {
            let named = join.relationship == reference
            let mine = named ? join.sourceColumn : join.destinationColumn
            let theirs = named ? join.destinationColumn : join.sourceColumn
            let link = "\(next)_j"
            return (["\(join.name) \(link)", "JOIN \(destination.tableName) \(next) ON \(next).Z_PK = \(link).\(theirs)"], "\(link).\(mine) = \(alias).Z_PK")
        }
        guard let keyColumn = schema.ownerColumn(ofToMany: relationship.name, declaredBy: declaring, in: model) else {
            throw FetchPredicateError.unsupported("to-many relationship '\(relationship.name)' has neither a join table nor an inverse key")
        }
        let numbers = model.hierarchy(from: relationship.destinationEntityName).map { String(schema.entity(named: $0.name)!.number) }
        return (["\(destination.tableName) \(next)"], "(\(next).\(keyColumn) = \(alias).Z_PK AND \(next).Z_ENT IN (\(numbers.joined(separator: ", "))))")
    }

    static func holdsComposite(_ value: PredicateValue) -> Bool {
        switch value {
        case .attribute(.composite): true
        case .collection(let members): members.contains(where: holdsComposite)
        default: false
        }
    }

    /// A comparison or order of values kept as external binary data.
    static let externalRefusal = FetchPredicateError.unsupported(
        "comparing or sorting by an attribute kept as external binary data (allowsExternalBinaryDataStorage) in a SQLite store: its column holds a marker and, for long values, a file's name, so only '== nil' and '!= nil' are answered in SQL; fetch the objects and compare their values")

    private mutating func newAlias() -> String {
        aliasCount += 1
        return "t\(aliasCount)"
    }

    static func kind(of type: AttributeType) -> Kind {
        switch type {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean, .date: .number
        case .string, .uri: .text
        case .binary, .transformable, .uuid, .undefined, .composite: .bytes
        }
    }

    // MARK: Parameters

    /// Binds a value as the evaluator compares it: decimals as the integer or double SQLite
    /// keeps in a NUMERIC column.
    private mutating func bind(_ value: AttributeValue) -> String {
        if case .decimal = value, case .number(let double, let exact) = ValueComparison.key(value) {
            return bindRaw(exact.map { .integer($0) } ?? .real(double))
        }
        return bindRaw(SQLiteValueCoding.encode(value))
    }

    private mutating func bindRaw(_ value: SQLiteValue) -> String {
        arguments.append(value)
        return "?\(arguments.count)"
    }
}

extension SQLPredicateCompiler {
    /// The terms of nested ANDs (or ORs) as one list: `a AND (b AND c)` is `[a, b, c]`.
    static func flattened(_ parts: [FetchPredicate], and: Bool) -> [FetchPredicate] {
        var result: [FetchPredicate] = []
        var pending = Array(parts.reversed())
        while let part = pending.popLast() {
            switch part {
            case .and(let inner) where and && !inner.isEmpty: pending.append(contentsOf: inner.reversed())
            case .or(let inner) where !and && !inner.isEmpty: pending.append(contentsOf: inner.reversed())
            default: result.append(part)
            }
        }
        return result
    }

    /// Terms joined as a balanced tree of parenthesized halves, so a long list (a predicate
    /// with thousands of ORs) stays within SQLite's expression depth limit (1,000): depth grows
    /// with the logarithm of the count, not the count.
    static func balanced(_ terms: [String], _ separator: String) -> String {
        guard terms.count > 8 else { return "(" + terms.joined(separator: separator) + ")" }
        let middle = terms.count / 2
        return "(" + balanced(Array(terms[..<middle]), separator) + separator + balanced(Array(terms[middle...]), separator) + ")"
    }
}
