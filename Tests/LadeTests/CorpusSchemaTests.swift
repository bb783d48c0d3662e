import Foundation
import Testing
@testable import Lade

/// For the corpus stores whose exact model is in the corpus, the entities and stored attributes
/// the loader yields must agree with the tables and columns Apple's Core Data wrote.
@Suite("Models agree with the stores Apple wrote from them", .enabled(if: Fixtures.corpusAvailable))
struct CorpusSchemaTests {
    struct Pair: CustomTestStringConvertible, Sendable {
        var store: String
        var model: String
        var version: String?
        var testDescription: String { store.split(separator: "/").last.map(String.init) ?? store }
    }

    static let pairs: [Pair] = [
        Pair(store: "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V1.sqlite",
             model: "alemar11/CoreDataPlus/Tests/Resources/SampleModel/SampleModel.xcdatamodeld", version: "SampleModel"),
        Pair(store: "alemar11/CoreDataPlus/Tests/Resources/SampleModel/Fixtures/SampleModel_V2.sqlite",
             model: "alemar11/CoreDataPlus/Tests/Resources/SampleModel/SampleModel.xcdatamodeld", version: "SampleModel2"),
        Pair(store: "alemar11/CoreDataPlus/Tests/Resources/SampleModel3/Fixtures/SampleModel3_V1.sqlite",
             model: "alemar11/CoreDataPlus/Tests/Resources/SampleModel3/SampleModel3.xcdatamodeld", version: "SampleModel3"),
        Pair(store: "bignerdranch/CoreDataStack/Sample Model/Deprecated/TestModel.sqlite",
             model: "bignerdranch/CoreDataStack/Sample Model/Deprecated/Sample.xcdatamodeld", version: "TestModel"),
        Pair(store: "CoderDream/Core-Data-by-Tutorials/SourceCode/Core Data by Tutorials v6/09-multiple-managed-object-contexts/final/SurfJournal/SurfJournal/CoreDataSeed/SurfJournalModel.sqlite",
             model: "CoderDream/Core-Data-by-Tutorials/SourceCode/Core Data by Tutorials v6/09-multiple-managed-object-contexts/final/SurfJournal/SurfJournal/SurfJournalModel.xcdatamodeld", version: nil),
    ]

    static let systemTables: Set<String> = ["Z_METADATA", "Z_MODELCACHE", "Z_PRIMARYKEY"]

    @Test("tables are the model's root entities and columns its stored attributes and to-one keys", arguments: pairs)
    func schemaAgrees(pair: Pair) throws {
        let model = try ManagedObjectModel(contentsOf: Fixtures.corpusFile(pair.model), version: pair.version)
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
}
