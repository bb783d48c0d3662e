import Foundation

extension PostgreSQLStore {
    /// Drops the store in `connection`'s schema, in the caller's transaction, for a store that
    /// replaces it (`lade convert --overwrite`): its own tables (`Z_PRIMARYKEY`, `Z_METADATA`,
    /// `Z_MODELCACHE`, `Z_LADECHECKPOINT`, the history tables, each hierarchy's `Z<ROOT>` table as
    /// `Z_PRIMARYKEY` names the roots, the `Z_<n><NAME>` join tables) with their triggers, and
    /// the functions its triggers call (`lade_history_note_<n>`, `Z_DA_…`). Nothing else: a
    /// table of the user's in the schema stays, and is returned so the new store is made beside
    /// it. Anything outside the store that depends on its tables (a view in any schema, a
    /// foreign key) refuses the drop, naming it: `DROP SCHEMA … CASCADE` would take it along.
    static func dropStoreObjects(_ connection: PostgreSQLConnection) throws -> Set<String> {
        let location = connection.location
        let schema = location.schema
        let tables = Set(try connection.execute("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = $1", [.text(schema)]).column(0))
        var own: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE", checkpointTable, "ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"]
        for name in try connection.execute("SELECT \"Z_NAME\" FROM \(postgreSQLQuoted(schema)).\"Z_PRIMARYKEY\" WHERE \"Z_SUPER\" = 0").column(0) {
            own.insert("Z" + name.uppercased())
        }
        for table in tables where isJoinTableName(table) { own.insert(table) }
        own.formIntersection(tables)
        let names = "{" + own.sorted().map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }.joined(separator: ",") + "}"
        let dependents = try connection.execute("""
            WITH own AS (
                SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = $1 AND c.relname = ANY($2::text[]))
            SELECT DISTINCT format('%s %I.%I (on %s)', CASE v.relkind WHEN 'm' THEN 'materialized view' ELSE 'view' END, vn.nspname, v.relname, d.refobjid::regclass)
            FROM pg_catalog.pg_depend d
            JOIN pg_catalog.pg_rewrite r ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = r.oid
            JOIN pg_catalog.pg_class v ON v.oid = r.ev_class
            JOIN pg_catalog.pg_namespace vn ON vn.oid = v.relnamespace
            WHERE d.refclassid = 'pg_catalog.pg_class'::regclass AND d.refobjid IN (SELECT oid FROM own) AND v.oid NOT IN (SELECT oid FROM own)
            UNION
            SELECT DISTINCT format('foreign key %I of table %s (on %s)', con.conname, con.conrelid::regclass, con.confrelid::regclass)
            FROM pg_catalog.pg_constraint con
            WHERE con.contype = 'f' AND con.confrelid IN (SELECT oid FROM own) AND con.conrelid NOT IN (SELECT oid FROM own)
            ORDER BY 1
            """, [.text(schema), .text(names)]).column(0)
        guard dependents.isEmpty else {
            throw StoreError(.alreadyExists, path: location.redacted,
                             "the store in schema \(postgreSQLQuoted(schema)) is not replaced: \(dependents.count == 1 ? "an object outside it depends" : "\(dependents.count) objects outside it depend") on its tables (\(dependents.prefix(10).joined(separator: "; "))\(dependents.count > 10 ? "; and \(dependents.count - 10) more" : "")); drop or change \(dependents.count == 1 ? "it" : "them") first, or convert into another schema")
        }
        if !own.isEmpty {
            try connection.execute("DROP TABLE " + own.sorted().map { postgreSQLQuoted(schema) + "." + postgreSQLQuoted($0) }.joined(separator: ", "))
        }
        let functions = try connection.execute("""
            SELECT format('%I.%I(%s)', n.nspname, p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid))
            FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = $1 AND (p.proname LIKE 'lade\\_history\\_note\\_%' OR p.proname LIKE 'Z\\_DA\\_%')
            """, [.text(schema)]).column(0)
        for function in functions { try connection.execute("DROP FUNCTION \(function)") }
        return tables.subtracting(own)
    }

    /// Whether `name` is a join table's: `Z_<digits><NAME>`.
    private static func isJoinTableName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count > 3, bytes[0] == UInt8(ascii: "Z"), bytes[1] == UInt8(ascii: "_"), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[2]) else { return false }
        return true
    }
}
