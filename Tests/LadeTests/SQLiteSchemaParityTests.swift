import Foundation
import Testing
@testable import Lade

/// `SQLiteStore.create` from each corpus model whose exact store Apple wrote must give the same
/// tables, columns (with declared types) and indexes as Apple's store, order and spacing aside.
@Suite("SQLite schema parity with Apple's stores", .needsCorpus)
struct SQLiteSchemaParityTests {
    /// A schema reduced to what must agree: each table's columns with their types, each index's
    /// table, uniqueness and terms.
    struct NormalizedSchema: Equatable, CustomStringConvertible {
        var tables: [String: Set<String>] = [:]
        var indexes: Set<String> = []

        init(statements: [String]) {
            for raw in statements {
                let statement = raw.split(whereSeparator: \.isWhitespace).joined(separator: " ")
                if statement.hasPrefix("CREATE TABLE "), let open = statement.firstIndex(of: "("), let close = statement.lastIndex(of: ")") {
                    let name = String(statement.dropFirst("CREATE TABLE ".count).prefix { $0 != " " && $0 != "(" })
                    tables[name] = Set(Self.splitTopLevel(String(statement[statement.index(after: open)..<close]))
                        .map { $0.trimmingCharacters(in: .whitespaces) })
                } else if statement.contains("INDEX") {
                    indexes.insert(statement.replacingOccurrences(of: "( ", with: "(").replacingOccurrences(of: " )", with: ")"))
                }
            }
        }

        /// Splits on commas outside parentheses (`PRIMARY KEY (A, B)` stays whole).
        static func splitTopLevel(_ text: String) -> [String] {
            var parts: [String] = []
            var depth = 0
            var current = ""
            for character in text {
                if character == "(" { depth += 1 }
                if character == ")" { depth -= 1 }
                if character == "," && depth == 0 {
                    parts.append(current)
                    current = ""
                } else {
                    current.append(character)
                }
            }
            parts.append(current)
            return parts
        }

        var description: String {
            (tables.keys.sorted().map { "\($0): \(tables[$0]!.sorted())" } + indexes.sorted()).joined(separator: "\n")
        }
    }

    static func schemaStatements(of url: URL) throws -> [String] {
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        return try connection.rows("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL").compactMap {
            if case .text(let sql) = $0[0] { return sql } else { return nil }
        }
    }

    @Test("lade's layout equals Apple's", arguments: CorpusSchemaTests.pairs)
    func parity(pair: CorpusSchemaTests.Pair) throws {
        let model = try ManagedObjectModel(contentsOf: Corpus.file(pair.model), version: pair.version)
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = temp.appendingPathComponent("made.sqlite")
        try SQLiteStore.create(at: url, model: model)
        var ours = NormalizedSchema(statements: try Self.schemaStatements(of: url))
        let appleSQL = try String(contentsOf: URL(fileURLWithPath: Corpus.file("expected/" + pair.store).path + ".schema.sql"), encoding: .utf8)
        let apple = NormalizedSchema(statements: appleSQL.components(separatedBy: ";"))
        // The one difference kept on purpose: Lade writes Z_MODELCACHE as current Core Data does
        // (every corpus store from framework version 637 on has it); older Core Data did not.
        let frameworkVersion = try StoreFacts(store: pair.store).frameworkVersion
        if apple.tables["Z_MODELCACHE"] == nil, frameworkVersion < 637 {
            ours.tables["Z_MODELCACHE"] = nil
            print("schema parity \(pair.testDescription): kept difference: Z_MODELCACHE (Apple's store is from Core Data \(frameworkVersion), before the table existed)")
        }
        let tablesAgree = ours.tables == apple.tables
        let indexesAgree = ours.indexes == apple.indexes
        print("schema parity \(pair.testDescription): tables \(tablesAgree ? "same" : "DIFFER"), indexes \(indexesAgree ? "same" : "DIFFER")")
        #expect(ours.tables == apple.tables, "ours:\n\(ours)\napple:\n\(apple)")
        #expect(ours.indexes == apple.indexes, "ours:\n\(ours)\napple:\n\(apple)")
    }

    @Test("entity numbers follow Core Data's: depth-first, roots and children in name order", arguments: CorpusSchemaTests.pairs)
    func entityNumbers(pair: CorpusSchemaTests.Pair) throws {
        let model = try ManagedObjectModel(contentsOf: Corpus.file(pair.model), version: pair.version)
        let schema = TableLayout(model: model)
        let facts = try StoreFacts(store: pair.store)
        for row in facts.primaryKeyRows {
            let entity = try #require(schema.entity(number: Int64(row.entity)))
            #expect(entity.name == row.name || model.entity(named: entity.name)?.renamingIdentifier == row.name)
            #expect(entity.superNumber == Int64(row.superEntity))
        }
    }
}
