import Foundation

/// Compiles a predicate and sort descriptors over one entity into SQL for a SQLite store in
/// Core Data's layout. Values are always bound as parameters. The SQL means what
/// `PredicateEvaluator` means: equality is SQLite's two-valued `IS` (nil equals only nil, and
/// `!=` is true for nil), a negated part cannot turn NULL into true, strings compare by bytes.
struct SQLPredicateCompiler {
    let model: ManagedObjectModel
    let schema: SQLiteSchema
    let entity: String

    /// `FROM` with the joins key paths need, `WHERE` and `ORDER BY` clauses, and the arguments.
    struct Query {
        var from: String
        var whereClause: String
        var orderBy: String
        var arguments: [SQLiteValue]
    }

    private var joins: [String] = []
    private var joinAliases: [[String]: String] = [:]
    private var arguments: [SQLiteValue] = []

    init(model: ManagedObjectModel, schema: SQLiteSchema, entity: String) {
        self.model = model
        self.schema = schema
        self.entity = entity
    }

    mutating func compile(_ predicate: Predicate?, sortDescriptors: [SortDescriptor], entityNumbers: [Int64]) throws -> Query {
        let table = schema.entity(named: entity)!.tableName
        var conditions: [String] = []
        // Restrict to the requested entities when the table holds others too.
        let inTable = schema.entities.filter { $0.tableName == table }.count
        if entityNumbers.count < inTable {
            conditions.append(entityNumbers.count == 1 ? "t0.Z_ENT = \(entityNumbers[0])" : "t0.Z_ENT IN (\(entityNumbers.map(String.init).joined(separator: ", ")))")
        }
        if let predicate, predicate != .true {
            conditions.append(try sql(predicate))
        }
        var order: [String] = []
        for descriptor in sortDescriptors {
            guard descriptor.comparator == .compare else {
                throw PredicateError.unsupported("sorting with \(descriptor.comparator) in SQL")
            }
            let (column, _) = try columnFor(descriptor.keyPath)
            order.append("\(column) \(descriptor.ascending ? "ASC" : "DESC")")
        }
        order.append("t0.Z_PK")
        return Query(
            from: "\(table) t0" + joins.map { " " + $0 }.joined(),
            whereClause: conditions.isEmpty ? "1" : conditions.joined(separator: " AND "),
            orderBy: order.joined(separator: ", "), arguments: arguments)
    }

    private mutating func sql(_ predicate: Predicate) throws -> String {
        switch predicate {
        case .true: return "1"
        case .false: return "0"
        case .and(let parts): return parts.isEmpty ? "1" : "(" + (try parts.map { try sql($0) }).joined(separator: " AND ") + ")"
        case .or(let parts): return parts.isEmpty ? "0" : "(" + (try parts.map { try sql($0) }).joined(separator: " OR ") + ")"
        case .not(let inner): return "NOT COALESCE(\(try sql(inner)), 0)"
        case .comparison(let left, let op, let right, let options):
            guard options.isEmpty else { throw PredicateError.unsupported("[c] and [d] options") }
            if case .constant = left, case .keyPath = right, let flipped = op.flipped {
                return try comparison(right, flipped, left)
            }
            return try comparison(left, op, right)
        }
    }

    private mutating func comparison(_ left: Expression, _ op: ComparisonOperator, _ right: Expression) throws -> String {
        let lhs = try operand(left)
        switch op {
        case .equal, .notEqual:
            let keyword = op == .equal ? "IS" : "IS NOT"
            if case .objectReference(let key, let entityColumn) = lhs {
                return try objectComparison(key: key, entityColumn: entityColumn, right, negated: op == .notEqual)
            }
            return "\(try scalar(lhs)) \(keyword) \(try scalar(try operand(right)))"
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            return "\(try scalar(lhs)) \(op.rawValue) \(try scalar(try operand(right)))"
        case .in:
            guard case .constant(.collection(let items)) = right else { throw PredicateError.unsupported("IN with a right side that is not a constant collection") }
            let column = try scalar(lhs)
            let values = items.filter { $0 != .null }
            var parts: [String] = []
            if !values.isEmpty {
                let placeholders = try values.map { try bind($0) }
                parts.append("\(column) IN (\(placeholders.joined(separator: ", ")))")
            }
            if values.count != items.count { parts.append("\(column) IS NULL") }
            return parts.isEmpty ? "0" : "(" + parts.joined(separator: " OR ") + ")"
        case .between:
            guard case .constant(.collection(let bounds)) = right, bounds.count == 2 else { throw PredicateError.unsupported("BETWEEN needs {low, high}") }
            let column = try scalar(lhs)
            return "(\(column) >= \(try bind(bounds[0])) AND \(column) <= \(try bind(bounds[1])))"
        case .beginsWith:
            return "instr(\(try scalar(lhs)), \(try scalar(try operand(right)))) = 1"
        case .contains:
            return "instr(\(try scalar(lhs)), \(try scalar(try operand(right)))) > 0"
        case .endsWith:
            let column = try scalar(lhs)
            let needle = try scalar(try operand(right))
            return "(\(column) IS NOT NULL AND (length(\(needle)) = 0 OR substr(\(column), -length(\(needle))) = \(needle)))"
        }
    }

    /// A to-one relationship (or SELF) compared with an object or nil.
    private mutating func objectComparison(key: String, entityColumn: String?, _ right: Expression, negated: Bool) throws -> String {
        guard case .constant(let value) = right else { throw PredicateError.unsupported("comparing a relationship with something other than an object or nil") }
        let test: String
        switch value {
        case .null: test = "\(key) IS NULL"
        case .object(let id):
            guard let key2 = id.primaryKey, id.storeIdentifier == storeIdentifier,
                  let number = schema.entity(named: id.entityName)?.number
            else { test = "0"; break }
            var parts = ["\(key) = \(bindRaw(.integer(key2)))"]
            if let entityColumn { parts.append("\(entityColumn) = \(number)") }
            test = "(" + parts.joined(separator: " AND ") + ")"
        default:
            throw PredicateError.unsupported("comparing a relationship with a value that is not an object")
        }
        return negated ? "NOT COALESCE(\(test), 0)" : test
    }

    /// The store whose object IDs the compiled SQL may name; set by the store.
    var storeIdentifier: String?

    private enum Operand {
        case column(String)
        case parameter(String)
        case objectReference(key: String, entityColumn: String?)
    }

    private func scalar(_ operand: Operand) throws -> String {
        switch operand {
        case .column(let column), .parameter(let column): return column
        case .objectReference: throw PredicateError.unsupported("ordering or string tests on a relationship")
        }
    }

    private mutating func operand(_ expression: Expression) throws -> Operand {
        switch expression {
        case .constant(let value): return .parameter(try bind(value))
        case .variable(let name): throw PredicateError.missingVariable(name)
        case .evaluatedObject: return .objectReference(key: "t0.Z_PK", entityColumn: "t0.Z_ENT")
        case .keyPath(let path):
            let (column, isRelationship) = try columnFor(path)
            if let isRelationship { return .objectReference(key: column, entityColumn: isRelationship) }
            return .column(column)
        }
    }

    /// The SQL column a key path reads, joining to-one relationships on the way. For a path
    /// that ends in a to-one relationship, the second value is its entity column (or "" when
    /// the destination has no subentities).
    private mutating func columnFor(_ path: [String]) throws -> (String, String?) {
        var alias = "t0"
        var current = entity
        for (position, key) in path.enumerated() {
            let last = position == path.count - 1
            if let attribute = model.attribute(key, of: current) {
                guard last else { throw PredicateError.unsupported("a key path through attribute '\(key)'") }
                guard !attribute.isTransient else { throw PredicateError.unsupported("transient attribute '\(key)' in a store fetch") }
                let declaring = SQLiteSchema.declaringEntity(of: key, from: current, in: model)!
                return ("\(alias).\(schema.columnName(for: .attribute(entity: declaring, name: key))!)", nil)
            }
            guard let relationship = model.relationship(key, of: current) else {
                throw PredicateError.unknownKey(entity: current, key: key)
            }
            guard !relationship.isToMany else { throw PredicateError.unsupported("to-many key path '\(path.joined(separator: "."))' (ANY, ALL, @count come with the predicate language)") }
            let declaring = SQLiteSchema.declaringEntity(of: key, from: current, in: model)!
            let keyColumn = "\(alias).\(schema.columnName(for: .toOne(entity: declaring, name: key))!)"
            if last {
                let entityColumn = schema.columnName(for: .toOneEntity(entity: declaring, name: key)).map { "\(alias).\($0)" }
                return (keyColumn, entityColumn)
            }
            let prefix = Array(path[...position])
            if let existing = joinAliases[prefix] {
                alias = existing
            } else {
                let next = "t\(joinAliases.count + 1)"
                let table = schema.entity(named: relationship.destinationEntityName)!.tableName
                joins.append("LEFT JOIN \(table) \(next) ON \(next).Z_PK = \(keyColumn)")
                joinAliases[prefix] = next
                alias = next
            }
            current = relationship.destinationEntityName
        }
        return ("\(alias).Z_PK", "\(alias).Z_ENT")
    }

    private mutating func bind(_ value: PredicateValue) throws -> String {
        switch value {
        case .null: return "NULL"
        case .attribute(let attribute): return bindRaw(SQLiteValueCoding.encode(attribute))
        case .object(let id):
            guard let key = id.primaryKey else { return "NULL" }
            return bindRaw(.integer(key))
        case .collection: throw PredicateError.unsupported("a collection outside IN or BETWEEN")
        }
    }

    private mutating func bindRaw(_ value: SQLiteValue) -> String {
        arguments.append(value)
        return "?"
    }
}

extension ComparisonOperator {
    /// The operator with its sides swapped (`5 < x` is `x > 5`).
    var flipped: ComparisonOperator? {
        switch self {
        case .equal, .notEqual: self
        case .lessThan: .greaterThan
        case .lessThanOrEqual: .greaterThanOrEqual
        case .greaterThan: .lessThan
        case .greaterThanOrEqual: .lessThanOrEqual
        default: nil
        }
    }
}
