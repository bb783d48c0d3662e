import Foundation

/// A fetch as PostgreSQL SQL: the entity's rows (and its subentities'), narrowed by what of the
/// predicate SQL says exactly as the evaluator means it, ordered by what of the sort SQL orders
/// the same way. What SQL cannot say is left to the evaluator (`StoreRowEvaluation`), so a
/// PostgreSQL store answers every fetch as the evaluator would.
struct PostgreSQLQuery {
    /// `FROM … WHERE …` (without `SELECT`), its tables after the store's schema.
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
        from = "\(postgreSQLQuoted(entity.tableName)) AS t0"
        conditions = ["t0.\"Z_ENT\" IN (\(numbers.map(String.init).joined(separator: ", ")))"]
        orderBy = []
        let predicate = request.predicate.flatMap { $0 == .true ? nil : $0 }
        predicateIsExact = predicate == nil
        orderIsExact = request.sortDescriptors.isEmpty
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
