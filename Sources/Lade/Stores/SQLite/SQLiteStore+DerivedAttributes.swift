import CSQLite
import Foundation

// Derived attributes in a SQLite store, kept as Core Data keeps them: by `Z_DA_` triggers
// that SQLite runs on every write, whoever makes it, and that report each value they set
// through functions Core Data registers on its connection. Lade registers the same
// functions on every connection (so Apple's triggers run instead of failing with "no such
// function"), creates the same triggers in the stores it makes, and hands what the triggers
// report to the context that saved. See docs/derived-attributes.md.

/// What Core Data's triggers reported on one connection while a save was being recorded:
/// the table, `Z_ENT`, `Z_PK`, attribute name and new value of each object they changed.
/// Owned by its `SQLiteConnection`; touched only by the queue that holds the connection.
package final class TriggerReportLog {
    struct Report {
        let table: String
        let entityNumber: Int64
        let primaryKey: Int64
        let property: String
        let value: SQLiteValue
    }

    /// Off by default: batch writes (millions of rows) keep nothing; a save turns it on.
    var isRecording = false
    var reports: [Report] = []
}

/// The SQL functions Core Data's own triggers call, registered on every connection a
/// `SQLiteConnection` opens. Their names and argument counts are Core Data's (the
/// `NSCoreDataDATrigger…` names are in the `Z_DA_` triggers of Apple-written stores in the
/// corpus; the others in public write-ups of Core Data's SQL and its registration code).
///
/// - `NSCoreDataDATriggerUpdatedAffectedObjectValue(table, Z_ENT, Z_PK, property, value)`,
///   `NSCoreDataDATriggerInsertUpdatedAffectedObjectValue(…)`, and the older
///   `NSCoreDataTriggerUpdateAffectedObjectValue(…)`: record the object and value in the
///   connection's `TriggerReportLog` while it records; return NULL (the triggers discard it).
/// - `NSCoreDataNow()`: the time, in seconds since 2001 as Core Data stores dates (a `now()`
///   derivation's triggers call it).
/// - `NSCoreDataToLower(text)`, `NSCoreDataToUpper(text)`, `NSCoreDataCanonical(text)`:
///   `lowercase:`, `uppercase:` and `canonical:` derivations; the canonical form is Lade's
///   case- and diacritic-insensitive fold (`[cd]`), as Apple documents `canonical:`; its exact
///   Unicode treatment in Core Data is not known from any Apple-written store.
///
/// Related SQLite documentation: <https://www.sqlite.org/c3ref/create_function.html>
enum CoreDataTriggerFunctions {
    static let updatedAffectedObjectValue = "NSCoreDataDATriggerUpdatedAffectedObjectValue"
    static let insertUpdatedAffectedObjectValue = "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue"
    static let updateAffectedObjectValue = "NSCoreDataTriggerUpdateAffectedObjectValue"
    static let now = "NSCoreDataNow"
    static let lowercase = "NSCoreDataToLower"
    static let uppercase = "NSCoreDataToUpper"
    static let canonical = "NSCoreDataCanonical"

    static func register(on handle: OpaquePointer, log: TriggerReportLog) {
        let flags = SQLITE_UTF8
        let userData = Unmanaged.passUnretained(log).toOpaque()
        for name in [updatedAffectedObjectValue, insertUpdatedAffectedObjectValue, updateAffectedObjectValue] {
            sqlite3_create_function_v2(handle, name, 5, flags, userData, { context, count, values in
                guard let context else { return }
                sqlite3_result_null(context)
                guard count == 5, let values, let data = sqlite3_user_data(context) else { return }
                let log = Unmanaged<TriggerReportLog>.fromOpaque(data).takeUnretainedValue()
                guard log.isRecording,
                      case .text(let table) = CoreDataTriggerFunctions.value(values[0]),
                      case .integer(let entity) = CoreDataTriggerFunctions.value(values[1]),
                      case .integer(let key) = CoreDataTriggerFunctions.value(values[2]),
                      case .text(let property) = CoreDataTriggerFunctions.value(values[3]) else { return }
                log.reports.append(.init(table: table, entityNumber: entity, primaryKey: key, property: property,
                                         value: CoreDataTriggerFunctions.value(values[4])))
            }, nil, nil, nil)
        }
        sqlite3_create_function_v2(handle, now, 0, flags, nil, { context, _, _ in
            guard let context else { return }
            sqlite3_result_double(context, Date().timeIntervalSinceReferenceDate)
        }, nil, nil, nil)
        registerTextFunction(handle, lowercase) { $0.lowercased() }
        registerTextFunction(handle, uppercase) { $0.uppercased() }
        registerTextFunction(handle, canonical) { StringComparison.fold($0, [.caseInsensitive, .diacriticInsensitive]) }
    }

    /// A function of one text value; other values pass through unchanged.
    private static func registerTextFunction(_ handle: OpaquePointer, _ name: String, _ transform: @escaping @Sendable (String) -> String) {
        final class Box { let transform: @Sendable (String) -> String; init(_ transform: @escaping @Sendable (String) -> String) { self.transform = transform } }
        let box = Unmanaged.passRetained(Box(transform)).toOpaque()
        sqlite3_create_function_v2(handle, name, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, box, { context, _, values in
            guard let context, let values, let value = values[0], let data = sqlite3_user_data(context) else { return }
            guard case .text(let text) = CoreDataTriggerFunctions.value(value) else { return sqlite3_result_value(context, value) }
            var result = Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().transform(text)
            result.withUTF8 { buffer in
                sqlite3_result_text(context, UnsafeRawPointer(buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
                                    Int32(buffer.count), sqliteTransient)
            }
        }, nil, nil, { data in
            if let data { Unmanaged<Box>.fromOpaque(data).release() }
        })
    }

    static func value(_ value: OpaquePointer?) -> SQLiteValue {
        guard let value else { return .null }
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            guard let bytes = sqlite3_value_text(value) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value))), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(value))
            guard count > 0, let bytes = sqlite3_value_blob(value) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default: return .null
        }
    }
}

// MARK: Core Data's triggers

/// The triggers that keep one derived attribute, as Core Data names and writes them.
package struct DerivedAttributeTriggers: Sendable {
    package let attribute: DerivedAttribute
    /// `CREATE TRIGGER` statements.
    package let statements: [String]
    /// Trigger names, for `DROP TRIGGER IF EXISTS` before they are made again.
    package let names: [String]
    /// Sets the value of every existing row (a store migrated or opened without the triggers).
    package let recompute: String
}

extension TableLayout {
    /// Core Data's triggers for a `relationship.@count` derived attribute over a one-to-many
    /// relationship: the five triggers of Apple-written stores (`SampleModel2_V1.sqlite` in the
    /// corpus: `Z_DA_ZBOOK_Book_pagesCount_SOURCE_INSERT`, `Z_DA_ZPAGE_Book_pagesCount_PARAMETER_…`),
    /// written as Core Data writes them; nil for any other form.
    ///
    /// Where the declaring entity shares its table with entities outside its hierarchy, the
    /// new-row trigger is limited to its `Z_ENT` values (as public write-ups of Core Data's
    /// generator show; no Apple-written store with that case was at hand).
    package func derivedAttributeTriggers(for derived: DerivedAttribute, in model: ManagedObjectModel) -> DerivedAttributeTriggers? {
        guard let count = countDerivation(for: derived, in: model) else { return nil }
        let source = Self.quoted(count.sourceTable), parameter = Self.quoted(count.parameterTable)
        let (value, name) = (Self.quoted(count.valueColumn), derived.attribute.name)
        let fk = Self.quoted(count.foreignKey)
        let sourceName = Self.quoted(count.triggerName(onSource: true, "SOURCE_INSERT"))
        let parameterName = { (suffix: String) in Self.quoted(count.triggerName(onSource: false, "PARAMETER_" + suffix)) }
        // Rows of other entities in the declaring entity's table keep no value.
        var when = ""
        if let condition = count.entityCondition(column: "NEW.Z_ENT") { when = " WHEN " + condition }
        func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        func report(_ function: String, _ row: String) -> String {
            "SELECT \(function)(\(literal(count.sourceTable)), Z_ENT, Z_PK, \(literal(name)), \(value)) FROM \(source) WHERE Z_PK = \(row);"
        }
        let updated = CoreDataTriggerFunctions.updatedAffectedObjectValue
        let statements = [
            "CREATE TRIGGER \(sourceName) AFTER INSERT ON \(source) FOR EACH ROW\(when) BEGIN UPDATE \(source) SET \(value) = (SELECT IFNULL(COUNT(\(fk)), 0) FROM \(parameter) WHERE \(fk) = NEW.Z_PK) WHERE Z_PK = NEW.Z_PK; \(report(CoreDataTriggerFunctions.insertUpdatedAffectedObjectValue, "NEW.Z_PK")) END",
            "CREATE TRIGGER \(parameterName("DELETE")) AFTER DELETE ON \(parameter) FOR EACH ROW WHEN (OLD.\(fk) NOT NULL) BEGIN UPDATE \(source) SET \(value) = \(value) - 1 WHERE Z_PK = OLD.\(fk); \(report(updated, "OLD.\(fk)")) END",
            "CREATE TRIGGER \(parameterName("INSERT")) AFTER INSERT ON \(parameter) FOR EACH ROW WHEN (NEW.\(fk) NOT NULL) BEGIN UPDATE \(source) SET \(value) = IFNULL(\(value), 0) + 1 WHERE Z_PK = NEW.\(fk); \(report(updated, "NEW.\(fk)")) END",
            "CREATE TRIGGER \(parameterName("UPDATE_DECREMENT")) AFTER UPDATE OF \(fk) ON \(parameter) FOR EACH ROW WHEN (OLD.\(fk) NOT NULL) BEGIN UPDATE \(source) SET \(value) = \(value) - 1 WHERE Z_PK = OLD.\(fk); \(report(updated, "OLD.\(fk)")) END",
            "CREATE TRIGGER \(parameterName("UPDATE_INCREMENT")) AFTER UPDATE OF \(fk) ON \(parameter) FOR EACH ROW WHEN (NEW.\(fk) NOT NULL) BEGIN UPDATE \(source) SET \(value) = \(value) + 1 WHERE Z_PK = NEW.\(fk); \(report(updated, "NEW.\(fk)")) END",
        ]
        let names = [sourceName, parameterName("DELETE"), parameterName("INSERT"), parameterName("UPDATE_DECREMENT"), parameterName("UPDATE_INCREMENT")]
        let kinds = count.entityNumbers.map(String.init).joined(separator: ", ")
        let recompute = "UPDATE \(source) SET \(value) = (SELECT IFNULL(COUNT(d.\(fk)), 0) FROM \(parameter) d WHERE d.\(fk) = \(source).Z_PK) WHERE Z_ENT IN (\(kinds))"
        return DerivedAttributeTriggers(attribute: derived, statements: statements, names: names, recompute: recompute)
    }

    /// Where a `relationship.@count` derived attribute over a one-to-many relationship lives in
    /// Core Data's layout (nil for any other form), for the stores that keep it by triggers.
    package func countDerivation(for derived: DerivedAttribute, in model: ManagedObjectModel) -> CountDerivation? {
        guard let relationship = derived.countedRelationship(in: model),
              let sourceEntity = entity(named: derived.entity),
              let column = columnName(for: .attribute(entity: derived.entity, name: derived.attribute.name)),
              let destination = entity(named: relationship.destinationEntityName),
              let declaring = Self.declaringEntity(of: relationship.name, from: derived.entity, in: model),
              let key = ownerColumn(ofToMany: relationship.name, declaredBy: declaring, in: model) else { return nil }
        return CountDerivation(attribute: derived, sourceTable: sourceEntity.tableName, valueColumn: column,
                               parameterTable: destination.tableName, foreignKey: key,
                               entityNumbers: entityNumbers(from: derived.entity, in: model), sharesTable: sourceEntity.superNumber != 0)
    }
}

/// A `relationship.@count` derived attribute in Core Data's layout: the declaring entity's
/// table and column (the source), the counted entity's table and its to-one key column (the
/// parameter), as Core Data's `Z_DA_` triggers name them.
package struct CountDerivation: Sendable {
    package let attribute: DerivedAttribute
    package let sourceTable: String
    package let valueColumn: String
    package let parameterTable: String
    package let foreignKey: String
    /// `Z_ENT` of the declaring entity and its subentities.
    package let entityNumbers: [Int64]
    /// Whether the declaring entity shares its table with entities outside its hierarchy.
    package let sharesTable: Bool

    /// Core Data's name of a trigger on the source table or the parameter table:
    /// `Z_DA_ZBOOK_Book_pagesCount_SOURCE_INSERT`, `Z_DA_ZPAGE_Book_pagesCount_PARAMETER_DELETE`.
    package func triggerName(onSource: Bool, _ suffix: String) -> String {
        "Z_DA_\(onSource ? sourceTable : parameterTable)_\(attribute.entity)_\(attribute.attribute.name)_\(suffix)"
    }

    /// The condition on `column` (a `Z_ENT`) that keeps a value to the declaring entity's rows;
    /// nil when every row of its table is one.
    package func entityCondition(column: String) -> String? {
        guard sharesTable, let low = entityNumbers.min(), let high = entityNumbers.max() else { return nil }
        if Int(high - low) + 1 == entityNumbers.count {
            return low == high ? "\(low) = \(column)" : "\(low) <= \(column) AND \(column) <= \(high)"
        }
        return "\(column) IN (\(entityNumbers.map(String.init).joined(separator: ", ")))"
    }
}

extension SQLiteStore {
    /// Makes the triggers of every derived attribute of `model` in the store `connection` has
    /// open (dropping any of the same name first), and sets the value of the rows already
    /// there; a derived attribute of a form Lade keeps no triggers for is refused
    /// (`DerivedAttributeError`) before anything is made. For a new store, a migrated one, and
    /// one opened for writing without the triggers (`prepareDerivedAttributes`).
    static func installDerivedAttributeTriggers(schema: TableLayout, model: ManagedObjectModel, connection: SQLiteConnection,
                                                only: Set<DerivedAttribute>? = nil) throws {
        let derived = model.derivedAttributes.filter { only?.contains($0) ?? true }
        guard !derived.isEmpty else { return }
        var all: [DerivedAttributeTriggers] = []
        for attribute in derived {
            guard let triggers = schema.derivedAttributeTriggers(for: attribute, in: model) else { throw refusal(attribute) }
            all.append(triggers)
        }
        for triggers in all {
            for name in triggers.names { try connection.execute("DROP TRIGGER IF EXISTS \(name)") }
            for statement in triggers.statements { try connection.execute(statement) }
            try connection.execute(triggers.recompute)
        }
    }

    /// Why a derived attribute's form has no triggers in a SQLite store Lade makes.
    static func refusal(_ derived: DerivedAttribute) -> DerivedAttributeError {
        let expression = derived.attribute.derivationExpression ?? ""
        let reason: String = switch derived.form {
        case nil: "Lade does not recognise the expression (Core Data's forms: relationship.@count, relationship.@sum.attribute, attribute, toOne.attribute, lowercase:(attribute), uppercase:, canonical:, now())"
        case .count?: "Lade keeps a count by Core Data's triggers only over a to-many relationship whose inverse is to-one or that has no inverse (a many-to-many count's triggers were not seen in any Apple-written store)"
        case let form?: "\(form) is computed by Core Data's triggers, whose SQL for this form was not seen in any Apple-written store, so Lade does not write its own guess into a file Core Data will open"
        }
        return DerivedAttributeError(entity: derived.entity, attribute: derived.attribute.name, expression: expression,
                                     storeType: StoreMetadata.sqliteStoreType, reason: reason)
    }

    /// At opening for writing: derived attributes whose triggers the store lacks get them
    /// (their values set from the rows), when Lade can make them; a store that keeps a
    /// derived attribute of another form without its triggers is refused for writing, since
    /// every write would leave its values wrong. Triggers the store has (Apple's, for any
    /// form) are kept as they are: they run with the functions every connection registers.
    static func prepareDerivedAttributes(schema: TableLayout, model: ManagedObjectModel, connection: SQLiteConnection) throws {
        let derived = model.derivedAttributes
        guard !derived.isEmpty else { return }
        let triggers = Set(try connection.rows("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'Z\\_DA\\_%' ESCAPE '\\'").compactMap { row -> String? in
            if case .text(let name) = row[0] { return name } else { return nil }
        })
        let missing = derived.filter { attribute in
            !triggers.contains { $0.contains("_\(attribute.entity)_\(attribute.attribute.name)_") }
        }
        guard !missing.isEmpty else { return }
        try connection.transaction {
            try installDerivedAttributeTriggers(schema: schema, model: model, connection: connection, only: Set(missing))
        }
    }

    /// Runs a save's writes with the connection's trigger reports recorded, and passes them to
    /// `report` as objects and attribute values once `body` returns.
    func recordingDerivedValues<T>(_ connection: SQLiteConnection, into report: DerivedValueReport?, _ body: () throws -> T) throws -> T {
        guard let report, !model.derivedAttributes.isEmpty else { return try body() }
        let log = connection.triggerReports
        log.reports.removeAll()
        log.isRecording = true
        defer {
            log.isRecording = false
            log.reports.removeAll()
        }
        let result = try body()
        for entry in log.reports {
            guard let entity = schema.entityName(number: entry.entityNumber),
                  let attribute = model.attribute(entry.property, of: entity) else { continue }
            let value = try? SQLiteValueCoding.decode(entry.value, as: attribute.type)
            report.record(ManagedObjectID(entityName: entity, storeIdentifier: identifier, primaryKey: entry.primaryKey), entry.property, value ?? nil)
        }
        return result
    }
}
