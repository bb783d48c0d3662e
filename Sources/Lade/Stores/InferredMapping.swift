import Foundation

/// What a lightweight migration inferred between two versions of a model, as a store executes
/// it: where each destination entity, attribute and relationship comes from in the source, and,
/// for a SQLite store, each join table and entity number. `LightweightMigration` (in
/// `Migration/`) plans it, says what changes and refuses what cannot be carried; the store type
/// executes it (`StoreType.executeLightweightMigration`): a SQLite store with SQL in place
/// (`SQLiteStore+LightweightMigration.swift`), an atomic store through its objects
/// (`AtomicStore+LightweightMigration.swift`).
struct InferredMapping: Sendable {
    let source: ManagedObjectModel
    let destination: ManagedObjectModel
    let sourceSchema: TableLayout
    let destinationSchema: TableLayout
    /// Destination entity → source entity, for entities that existed before.
    var entityMap: [String: String] = [:]
    /// (destination entity, destination attribute) → source attribute, where it existed.
    var attributeMap: [String: [String: String]] = [:]
    /// (destination entity, destination relationship) → source relationship.
    var relationshipMap: [String: [String: String]] = [:]
    /// Destination join table → source join table, for many-to-many relationships kept, and
    /// whether the two name the same side's column first (else the columns swap).
    var joinMap: [String: (table: TableLayout.JoinTable, aligned: Bool)] = [:]
    /// Source entity number → destination entity number, for entities kept (SQLite).
    var numberMap: [Int64: Int64] = [:]
    /// Destination join tables filled from a to-one's key column (a to-one made to-many): the
    /// old table, its key column, the entity numbers whose rows hold the relationship, and
    /// whether the join table is named after that relationship (its objects' keys go in the
    /// source column) or after the inverse.
    var keyJoins: [String: (table: String, column: String, entities: [Int64], namedHere: Bool)] = [:]
    /// Owner columns filled from a to-one's key column (a to-one without an inverse made a
    /// to-many without one), by the new relationship: the old table, its key column and the
    /// entity numbers whose rows hold the relationship.
    var ownerFills: [TableLayout.PropertyReference: (table: String, column: String, entities: [Int64])] = [:]
    /// Required attributes without a default that objects may lack after the migration
    /// (`Entity.attribute`, by the declaring entity): added, or made required. The migration is
    /// refused when an object lacks one, as Core Data's validation of the new objects refuses it.
    var requiredWithoutValue: Set<String> = []

    init(from source: ManagedObjectModel, to destination: ManagedObjectModel) {
        self.source = source
        self.destination = destination
        sourceSchema = TableLayout(model: source)
        destinationSchema = TableLayout(model: destination)
    }

    /// Objects the migration cannot carry, found while executing it (nothing is changed):
    /// `LightweightMigration.run` reports them as a `MigrationRefusal` of the store.
    struct Refusal: Error {
        let reasons: [String]
    }

    static func split(_ place: String) -> (entity: String, attribute: String) {
        let dot = place.lastIndex(of: ".")!
        return (String(place[..<dot]), String(place[place.index(after: dot)...]))
    }

    /// Why objects without a value cannot be carried, the same for every store type.
    static func missingValuesReason(_ place: String, count: Int, first: String) -> String {
        "attribute \(place): required in the new version, without a default value, and \(count) object\(count == 1 ? " has" : "s have") no value for it (Z_PK \(first)\(count > 1 ? " and more" : "")); give it a default value in the new version, or give those objects a value in the store first"
    }

    /// Why a uniqueness constraint cannot be built, the same for every store type.
    static func sharedValuesReason(entity: String, constraint: [String], values: String, count: SQLiteValue, first: SQLiteValue, last: SQLiteValue) -> String {
        let objects = if case .integer(let number) = count { "\(number) objects" } else { "objects" }
        return "entity \(entity): the new version's uniqueness constraint on (\(constraint.joined(separator: ", "))) cannot hold, "
            + "because \(objects) share \(values) (Z_PK \(literal(first)) and \(literal(last))); Core Data refuses this migration too. "
            + "Make those values unique (or delete the extra objects) in the store at its current version, then migrate again"
    }

    static func literal(_ value: SQLiteValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer(let number): String(number)
        case .real(let number): number.isFinite ? "\(number)" : "NULL"
        case .text(let text): "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let data): "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }
}
