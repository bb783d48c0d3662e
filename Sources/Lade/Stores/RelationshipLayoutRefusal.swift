import Foundation

extension StoreError {
    /// The refusal to make a table-layout store (SQLite or PostgreSQL, at `path`) for a model
    /// with relationships whose Core Data layout is not known (``TableLayout/UnknownLayout``),
    /// or nil when it has none. A store laid out by guess could be misread by Core Data, and
    /// Lade never writes a guess into a file Core Data will open.
    static func refusingUnknownLayouts(of schema: TableLayout, storeType: String, path: String) -> StoreError? {
        guard !schema.unknownLayouts.isEmpty else { return nil }
        let reasons = schema.unknownLayouts.map { "\($0.relationship.entity).\($0.relationship.name): \($0.reason)" }
        return StoreError(
            .unsupportedModel, path: path,
            "Lade does not make a \(storeType) store for this model: " + reasons.joined(separator: "; ")
                + ". Give the relationship an inverse that names it back (Xcode's model editor warns about a relationship without one), or use an XML, binary or in-memory store")
    }

    /// The refusal to open a table-layout store that lacks where the model's relationships are
    /// kept: a to-many without an inverse whose owner column is not in its table (a store
    /// Lade made before it kept Core Data's layout has a join table instead), or a relationship
    /// of unknown layout whose join table is not there. `columns` gives a table's columns,
    /// upper-cased.
    static func refusingMissingRelationshipStorage(of schema: TableLayout, tables: Set<String>, path: String,
                                                   columns: (String) throws -> Set<String>) throws -> StoreError? {
        var missing: [String] = []
        var entities: Set<String> = []
        var columnsByTable: [String: Set<String>] = [:]
        for owner in schema.ownerKeys {
            guard tables.contains(owner.table) else { continue }  // a missing table is the mismatch check's to report
            if columnsByTable[owner.table] == nil { columnsByTable[owner.table] = try columns(owner.table) }
            guard !columnsByTable[owner.table]!.contains(owner.column.uppercased()) else { continue }
            let earlier = schema.earlierJoinTableName(for: owner).map { tables.contains($0) ? " (it has \($0), the join table Lade used before it kept Core Data's layout: convert it with the Lade version that made it to an XML store, then back with this one)" : "" } ?? ""
            entities.insert(owner.relationship.entity)
            missing.append("\(owner.table) lacks column \(owner.column), where Core Data keeps \(owner.relationship.entity).\(owner.relationship.name) (a to-many without an inverse)\(earlier)")
        }
        for unknown in schema.unknownLayouts {
            guard let join = schema.joinTable(for: unknown.relationship), !tables.contains(join.name) else { continue }
            entities.insert(unknown.relationship.entity)
            missing.append("table \(join.name) is missing, and the layout of \(unknown.relationship.entity).\(unknown.relationship.name) in a store Core Data wrote is not known (\(unknown.reason))")
        }
        guard !missing.isEmpty else { return nil }
        return StoreError(.modelMismatch(entities: entities.sorted()),
                          path: path, "the store does not keep the model's relationships where Lade reads them: " + missing.joined(separator: "; "))
    }
}

extension TableLayout {
    /// The join table Lade made for a to-many without an inverse before it kept Core Data's
    /// owner column (`Z_<source number><NAME>`).
    func earlierJoinTableName(for owner: OwnerKey) -> String? {
        entity(named: owner.relationship.entity).map { "Z_\($0.number)" + owner.relationship.name.uppercased() }
    }
}
