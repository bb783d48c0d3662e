import Foundation

// Derived attributes in a PostgreSQL store: the form a SQLite store keeps by Core Data's own
// triggers, `relationship.@count` over a one-to-many relationship (`CountDerivation`), kept
// here by triggers too, so every writer (a context's save, the batch writer's COPY and
// `INSERT … ON CONFLICT`, `psql`) leaves the count right. The counted table's are
// statement-level triggers over transition tables: one `UPDATE` of the counting rows per
// statement, whatever its size, where Core Data's row triggers would run once per page of a
// million-row COPY. A new counting row takes its count in a row trigger before it is written,
// so no update of it follows its insert (which history would note as a change of its own).
//
// The counts change as Core Data's triggers change them: a new source row counts its
// parameter rows; a new parameter row adds one to its source's count (a NULL count becomes
// 1); a deleted one takes one away, and a parameter row moved to another source takes one
// from the old and adds one to the new (a NULL count stays NULL, as in Core Data's SQL).
//
// A saving context learns the values the triggers set as a SQLite store's context does: the
// save turns on `lade.derived_report` for its transaction, the triggers then append the keys
// of the rows they changed to `lade.derived_touched` (both transaction-local settings, so no
// other session and no later transaction sees them), and the store reads those rows before
// the commit. Other writers skip that bookkeeping.

extension PostgreSQLStore {
    /// The derived attributes of `model` in the order the triggers number them (their
    /// `lade.derived_touched` entries are `index:key,key`).
    static func derivedAttributesNumbered(_ model: ManagedObjectModel) -> [DerivedAttribute] {
        model.derivedAttributes.sorted { ($0.entity, $0.attribute.name) < ($1.entity, $1.attribute.name) }
    }

    /// The SQL that keeps one count: functions and triggers, the statements that drop them
    /// (to make them again), and the statement that sets every existing row's count.
    struct CountTriggers {
        let names: [String]
        let create: [String]
        let drop: [String]
        let recompute: String
    }

    /// The triggers of `count` in the schema `prefix` names; `number`: its place in
    /// `derivedAttributesNumbered`.
    static func countTriggers(_ count: CountDerivation, number: Int, prefix: String) -> CountTriggers {
        let source = prefix + postgreSQLQuoted(count.sourceTable), parameter = prefix + postgreSQLQuoted(count.parameterTable)
        let value = postgreSQLQuoted(count.valueColumn), fk = postgreSQLQuoted(count.foreignKey)
        // `UPDATE source s … FROM (SELECT k, d …) c WHERE s."Z_PK" = c.k`, recorded when asked.
        // Counts the triggers themselves change fire the table's update trigger again (a
        // source that is also counted, or counts itself); no key moves there, so that one
        // returns at once rather than join its rows.
        func body(_ update: String, nested: Bool) -> String {
            """
            DECLARE lade_keys text;
            BEGIN
              \(nested ? "" : "IF pg_trigger_depth() > 1 THEN RETURN NULL; END IF;")
              IF current_setting('lade.derived_report', true) = 'on' THEN
                WITH changed AS (\(update) RETURNING s."Z_PK")
                SELECT string_agg("Z_PK"::text, ',') INTO lade_keys FROM changed;
                IF lade_keys IS NOT NULL THEN
                  PERFORM set_config('lade.derived_touched', concat_ws(' ', NULLIF(current_setting('lade.derived_touched', true), ''), '\(number):' || lade_keys), true);
                END IF;
              ELSE
                \(update);
              END IF;
              RETURN NULL;
            END
            """
        }
        func adding(_ deltas: String, nullAsZero: Bool) -> String {
            "UPDATE \(source) s SET \(value) = \(nullAsZero ? "COALESCE(s.\(value), 0)" : "s.\(value)") + c.d FROM (\(deltas)) c WHERE s.\"Z_PK\" = c.k"
        }
        let moved = "FROM lade_old o JOIN lade_new n ON n.\"Z_PK\" = o.\"Z_PK\" WHERE o.\(fk) IS DISTINCT FROM n.\(fk)"
        let parts: [(suffix: String, event: String, transition: String, update: String)] = [
            ("PARAMETER_INSERT", "INSERT", "NEW TABLE AS lade_new",
             adding("SELECT \(fk) AS k, count(*) AS d FROM lade_new WHERE \(fk) IS NOT NULL GROUP BY \(fk)", nullAsZero: true)),
            ("PARAMETER_DELETE", "DELETE", "OLD TABLE AS lade_old",
             adding("SELECT \(fk) AS k, -count(*) AS d FROM lade_old WHERE \(fk) IS NOT NULL GROUP BY \(fk)", nullAsZero: false)),
            ("PARAMETER_UPDATE", "UPDATE", "OLD TABLE AS lade_old NEW TABLE AS lade_new",
             adding("SELECT k, sum(d) AS d FROM (SELECT o.\(fk) AS k, -1 AS d \(moved) AND o.\(fk) IS NOT NULL UNION ALL SELECT n.\(fk), 1 \(moved) AND n.\(fk) IS NOT NULL) m GROUP BY k HAVING sum(d) <> 0", nullAsZero: false)),
        ]
        var names: [String] = [], create: [String] = [], drop: [String] = []
        // A new source row takes its count as it is written (a row trigger before the insert),
        // so no write of the row follows its insert: history notes it as an insert alone.
        let sourceName = fittedIdentifier(count.triggerName(onSource: true, "SOURCE_INSERT"))
        let sourceFunction = prefix + postgreSQLQuoted(sourceName)
        let when = count.entityCondition(column: "NEW.\"Z_ENT\"").map { " WHEN (\($0))" } ?? ""
        names.append(sourceName)
        create.append("""
            CREATE FUNCTION \(sourceFunction)() RETURNS trigger LANGUAGE plpgsql AS \(dollarQuoted("""
            BEGIN
              NEW.\(value) := (SELECT count(p.\(fk)) FROM \(parameter) p WHERE p.\(fk) = NEW."Z_PK");
              IF current_setting('lade.derived_report', true) = 'on' THEN
                PERFORM set_config('lade.derived_touched', concat_ws(' ', NULLIF(current_setting('lade.derived_touched', true), ''), '\(number):' || NEW."Z_PK"), true);
              END IF;
              RETURN NEW;
            END
            """))
            """)
        create.append("CREATE TRIGGER \(postgreSQLQuoted(sourceName)) BEFORE INSERT ON \(source) FOR EACH ROW\(when) EXECUTE FUNCTION \(sourceFunction)()")
        drop.append("DROP TRIGGER IF EXISTS \(postgreSQLQuoted(sourceName)) ON \(source)")
        drop.append("DROP FUNCTION IF EXISTS \(sourceFunction)()")
        for part in parts {
            let name = fittedIdentifier(count.triggerName(onSource: false, part.suffix))
            let function = prefix + postgreSQLQuoted(name)
            let text = body(part.update, nested: part.event != "UPDATE")
            names.append(name)
            create.append("CREATE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS \(dollarQuoted(text))")
            create.append("CREATE TRIGGER \(postgreSQLQuoted(name)) AFTER \(part.event) ON \(parameter) REFERENCING \(part.transition) FOR EACH STATEMENT EXECUTE FUNCTION \(function)()")
            drop.append("DROP TRIGGER IF EXISTS \(postgreSQLQuoted(name)) ON \(parameter)")
            drop.append("DROP FUNCTION IF EXISTS \(function)()")
        }
        let kinds = count.entityNumbers.map(String.init).joined(separator: ", ")
        let recompute = "UPDATE \(source) s SET \(value) = (SELECT count(p.\(fk)) FROM \(parameter) p WHERE p.\(fk) = s.\"Z_PK\") WHERE s.\"Z_ENT\" IN (\(kinds))"
        return CountTriggers(names: names, create: create, drop: drop, recompute: recompute)
    }

    /// `text` in dollar quotes whose tag it does not hold (an identifier in it may hold any text).
    static func dollarQuoted(_ text: String) -> String {
        var tag = "$lade$"
        var number = 0
        while text.contains(tag) {
            number += 1
            tag = "$lade\(number)$"
        }
        return tag + text + tag
    }

    /// The counts of `model`'s derived attributes, or the refusal of the first that a
    /// PostgreSQL store does not keep.
    static func countDerivations(schema: TableLayout, model: ManagedObjectModel) throws -> [(number: Int, count: CountDerivation)] {
        try derivedAttributesNumbered(model).enumerated().map { number, derived in
            guard let count = schema.countDerivation(for: derived, in: model) else { throw derivedAttributeRefusal(derived) }
            return (number, count)
        }
    }

    /// Why a derived attribute has no triggers in a PostgreSQL store.
    static func derivedAttributeRefusal(_ derived: DerivedAttribute) -> DerivedAttributeError {
        let reason = switch derived.form {
        case nil: "Lade does not recognise the expression (Core Data's forms: relationship.@count, relationship.@sum.attribute, attribute, toOne.attribute, lowercase:(attribute), uppercase:, canonical:, now())"
        case .count?: "a PostgreSQL store keeps a count only over a to-many relationship whose inverse is to-one or that has no inverse, as a SQLite store does"
        case let form?: "a PostgreSQL store keeps only the form a SQLite store keeps by Core Data's triggers, a to-many count (relationship.@count), not \(form)"
        }
        return DerivedAttributeError(entity: derived.entity, attribute: derived.attribute.name, expression: derived.attribute.derivationExpression ?? "",
                                     storeType: storeType, reason: reason)
    }

    /// Makes the triggers of `model`'s derived attributes (`only`: of these alone) in the store
    /// `prefix` names, in the caller's transaction, dropping any of the same name first, and
    /// sets the count of every row already there.
    static func installDerivedAttributes(schema: TableLayout, model: ManagedObjectModel, prefix: String,
                                         only: Set<DerivedAttribute>? = nil, _ connection: PostgreSQLConnection) throws {
        let counts = try countDerivations(schema: schema, model: model)
        if only == nil {
            // All of them: a migrated store's functions of attributes the new version no longer
            // derives go too (with their triggers, where their tables are still there).
            let old = try connection.execute("SELECT proname FROM pg_catalog.pg_proc WHERE pronamespace = $1::regnamespace AND proname LIKE 'Z\\_DA\\_%'",
                                             [.text(postgreSQLQuoted(connection.location.schema))])
            for row in 0..<old.count {
                guard let name = old.text(row, 0) else { continue }
                try connection.execute("DROP FUNCTION IF EXISTS \(prefix)\(postgreSQLQuoted(name))() CASCADE")
            }
        }
        for (number, count) in counts where only?.contains(count.attribute) ?? true {
            let triggers = countTriggers(count, number: number, prefix: prefix)
            for statement in triggers.drop + triggers.create + [triggers.recompute] { try connection.execute(statement) }
        }
    }

    /// At opening for writing: derived attributes whose triggers the store lacks get them, in
    /// one transaction (their counts set from the rows); a form the store cannot keep is
    /// refused, since every write would leave its values wrong.
    static func prepareDerivedAttributes(schema: TableLayout, model: ManagedObjectModel, prefix: String, _ connection: PostgreSQLConnection) throws {
        let counts = try countDerivations(schema: schema, model: model)
        guard !counts.isEmpty else { return }
        let result = try connection.execute("SELECT t.tgname FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = $1::regnamespace AND NOT t.tgisinternal",
                                            [.text(postgreSQLQuoted(connection.location.schema))])
        let present = Set((0..<result.count).compactMap { result.text($0, 0) })
        let missing = counts.filter { number, count in
            !countTriggers(count, number: number, prefix: prefix).names.allSatisfy(present.contains)
        }
        guard !missing.isEmpty else { return }
        try connection.transaction {
            try installDerivedAttributes(schema: schema, model: model, prefix: prefix, only: Set(missing.map(\.count.attribute)), connection)
            // What the history's triggers noted of the counts set here is no save's change.
            if try connection.execute("SELECT to_regclass('\(PostgreSQLHistory.notesTable)') IS NOT NULL").text(0, 0) == "t" {
                try connection.execute("DELETE FROM \(PostgreSQLHistory.notesTable)")
            }
        }
    }

    /// Runs a save's writes (in its transaction) with the triggers noting the rows whose
    /// derived values they set, and returns those values, read before the commit; nothing is
    /// noted when `report` is nil or the model derives nothing.
    func writingDerivedValues(into report: DerivedValueReport?, _ connection: PostgreSQLConnection, _ body: () throws -> Void) throws -> [(ManagedObjectID, String, AttributeValue?)] {
        guard report != nil, !model.derivedAttributes.isEmpty else {
            try body()
            return []
        }
        try connection.execute("SELECT set_config('lade.derived_report', 'on', true), set_config('lade.derived_touched', '', true)")
        try body()
        let noted = try connection.execute("SELECT current_setting('lade.derived_touched', true), set_config('lade.derived_report', 'off', true)").text(0, 0) ?? ""
        var keys: [Int: Set<Int64>] = [:]
        for entry in noted.split(separator: " ") {
            guard let colon = entry.firstIndex(of: ":"), let number = Int(entry[..<colon]) else { continue }
            keys[number, default: []].formUnion(entry[entry.index(after: colon)...].split(separator: ",").compactMap { Int64($0) })
        }
        let numbered = Self.derivedAttributesNumbered(model)
        var values: [(ManagedObjectID, String, AttributeValue?)] = []
        for (number, primaryKeys) in keys.sorted(by: { $0.key < $1.key }) where numbered.indices.contains(number) {
            guard let count = schema.countDerivation(for: numbered[number], in: model) else { continue }
            let result = try connection.execute(
                "SELECT \"Z_PK\", \"Z_ENT\", \(postgreSQLQuoted(count.valueColumn)) FROM \(prefix)\(postgreSQLQuoted(count.sourceTable)) WHERE \"Z_PK\" = ANY($1::bigint[])",
                [.text("{" + primaryKeys.sorted().map(String.init).joined(separator: ",") + "}")])
            for row in 0..<result.count {
                guard let key = result.integer(row, 0), let entityNumber = result.integer(row, 1), count.entityNumbers.contains(entityNumber),
                      let entity = schema.entity(number: entityNumber) else { continue }
                let value = try? PostgreSQLValueCoding.decode(result.value(row, 2), as: count.attribute.attribute.type)
                values.append((ManagedObjectID(entityName: entity.name, storeIdentifier: identifier, primaryKey: key), count.attribute.attribute.name, value ?? nil))
            }
        }
        return values
    }
}
