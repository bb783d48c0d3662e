import Foundation

/// A fetch as PostgreSQL SQL: the entity's rows (and its subentities'), narrowed by the predicate
/// as `PostgreSQLPredicateCompiler` compiles it (exactly where PostgreSQL decides as the
/// evaluator does, by a necessary condition elsewhere), ordered by the sort descriptors where
/// SQL orders as they do. What SQL cannot say is left to the evaluator (`StoreRowEvaluation`),
/// so a PostgreSQL store answers every fetch as the evaluator would.
struct PostgreSQLQuery {
    /// The `FROM` table and its joins (the joined tables already after the store's schema).
    private let from: String
    private var conditions: [String]
    private var orderBy: [String]
    private(set) var parameters: [PostgreSQLValue] = []
    /// Whether the WHERE clause selects exactly the predicate's objects.
    private(set) var predicateIsExact: Bool
    /// Whether ORDER BY orders exactly as the sort descriptors do (ties by `Z_PK`).
    private(set) var orderIsExact: Bool
    private let limit: Int
    private let offset: Int

    init(_ request: StoreFetchRequest, store: PostgreSQLStore) throws {
        let schema = store.schema, model = store.model
        guard let entity = schema.entity(named: request.entityName) else { throw UnknownEntityError(request.entityName, in: model) }
        for descriptor in request.sortDescriptors { try descriptor.check(on: request.entityName, in: model) }
        let numbers = (request.includesSubentities ? model.hierarchy(from: request.entityName).map(\.name) : [request.entityName])
            .compactMap { schema.entity(named: $0)?.number }
        var compiler = PostgreSQLPredicateCompiler(model: model, schema: schema, entity: request.entityName, prefix: store.prefix, storeIdentifier: store.identifier)
        conditions = ["t0.\"Z_ENT\" IN (\(numbers.map(String.init).joined(separator: ", ")))"]
        // The rows SQL selects are a superset of the predicate's (exactly them when exact).
        let condition = try request.predicate.map { try compiler.condition($0) } ?? .exact("TRUE")
        if condition.necessary != "TRUE" { conditions.append(condition.necessary) }
        predicateIsExact = condition.isExact
        let order = try compiler.orderBy(request.sortDescriptors)
        orderBy = order ?? []
        orderIsExact = order != nil
        from = "\(postgreSQLQuoted(entity.tableName)) AS t0" + compiler.joins
        parameters = compiler.parameters
        limit = request.fetchLimit
        offset = request.fetchOffset
    }

    /// Whether the SQL alone answers the request (then limit and offset are in it too).
    var isExact: Bool { predicateIsExact && orderIsExact }

    /// The statement selecting `columns`, its tables after `prefix` (the store's schema).
    func select(_ columns: String, prefix: String) -> String {
        var sql = "SELECT \(columns) FROM \(prefix)\(from) WHERE \(conditions.joined(separator: " AND ")) ORDER BY \((orderBy + ["t0.\"Z_PK\""]).joined(separator: ", "))"
        if isExact {
            if limit > 0 { sql += " LIMIT \(limit)" }
            if offset > 0 { sql += " OFFSET \(offset)" }
        }
        return sql
    }
}
