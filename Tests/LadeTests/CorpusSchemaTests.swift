import Foundation
import Testing
@testable import Lade

/// For the corpus stores whose exact model is in the corpus, the entities and stored attributes
/// the loader yields must agree with the tables and columns Apple's Core Data wrote.
@Suite("Models agree with the stores Apple wrote from them", .needsCorpus)
struct CorpusSchemaTests {
    struct Pair: CustomTestStringConvertible, Sendable, Decodable {
        var store: String
        var model: String
        var version: String?
        var testDescription: String { store.split(separator: "/").last.map(String.init) ?? store }
    }

    /// The corpus's SQLite stores whose models the corpus holds in a form Lade reads
    /// (`Tests/Fixtures/corpus-sqlite-stores.json`, shared with the CLI tests); the two
    /// `Recipes.sqlite` stores come with Xcode 3 binary models (`elements`) only, which Lade
    /// refuses.
    static let pairs: [Pair] = (try? JSONDecoder().decode(
        [Pair].self, from: Data(contentsOf: Fixtures.root.appendingPathComponent("Tests/Fixtures/corpus-sqlite-stores.json")))) ?? []

    @Test("the shared list names five corpus stores, each with its model")
    func listed() {
        #expect(Self.pairs.count == 5)
        for pair in Self.pairs {
            #expect(FileManager.default.fileExists(atPath: Corpus.file(pair.store).path), "\(pair.store)")
            #expect(FileManager.default.fileExists(atPath: Corpus.file(pair.model).path), "\(pair.model)")
        }
    }

    static let systemTables: Set<String> = ["Z_METADATA", "Z_MODELCACHE", "Z_PRIMARYKEY"]

    @Test("tables are the model's root entities and columns its stored attributes and to-one keys", arguments: pairs)
    func schemaAgrees(pair: Pair) throws {
        let model = try ManagedObjectModel(contentsOf: Corpus.file(pair.model), version: pair.version)
        let facts = try StoreFacts(store: pair.store)

        // Many-to-many join tables are named Z_<n><RELATIONSHIP>; the rest are entity tables.
        let joinTables = facts.tables.keys.filter { $0.hasPrefix("Z_") && $0.dropFirst(2).first?.isNumber == true }
        let entityTables = Set(facts.tables.keys).subtracting(Self.systemTables).subtracting(joinTables)
        let roots = model.entities.filter { $0.parentName == nil }
        #expect(Set(roots.map { "Z" + $0.name.uppercased() }) == entityTables)

        for root in roots {
            let table = "Z" + root.name.uppercased()
            let columns = Set(try #require(facts.tables[table]))
            let hierarchy = model.hierarchy(from: root.name)
            let storedAttributes = hierarchy.flatMap(\.attributes).filter { !$0.isTransient }
            let toOneKeys = hierarchy.flatMap(\.relationships).filter { !$0.isToMany && !$0.isTransient }
            let attributeColumns = Set(storedAttributes.map { "Z" + $0.name.uppercased() })
            let keyColumns = Set(toOneKeys.map { "Z" + $0.name.uppercased() })
            #expect(columns.subtracting(["Z_PK", "Z_ENT", "Z_OPT"]) == attributeColumns.union(keyColumns), "\(table)")
            #expect(attributeColumns.count == storedAttributes.count, "\(table): two attributes share a column name")
        }

        let manyToMany = model.entities.flatMap { entity in
            entity.relationships.filter { $0.isToMany && (model.inverse(of: $0)?.isToMany ?? false) }
        }
        #expect(joinTables.count == manyToMany.count / 2)

        // Z_PRIMARYKEY names each entity by the name it had when the store was made: the model's
        // name, or its renaming identifier after a rename.
        #expect(facts.primaryKeyRows.count == model.entities.count)
        for row in facts.primaryKeyRows {
            #expect(model.entities.contains { $0.name == row.name || $0.renamingIdentifier == row.name }, "\(row.name)")
        }
        print("schema \(pair.testDescription): \(entityTables.count) tables, \(model.entities.count) entities — agree")
    }

    @Test("every index of Lade's layout for the model is in the store Apple wrote (lade check reports none missing)", arguments: pairs)
    func indexesAgree(pair: Pair) throws {
        let model = try ManagedObjectModel(contentsOf: Corpus.file(pair.model), version: pair.version)
        // A copy: opening a WAL store in place, even read-only, rewrites its -shm in the corpus.
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let connection = try SQLiteConnection(path: try copyCorpusStore(pair.store, to: temp).path, mode: .readOnly)
        let present = try connection.indexNames()
        let expected = TableLayout(model: model).indexes.map(\.name)
        #expect(expected.filter { !present.contains($0) } == [], "\(pair.store)")
    }
}
