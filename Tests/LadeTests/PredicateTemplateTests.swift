import Foundation
import Testing
@testable import Lade

@Suite("Fetch request templates and fetched properties")
struct PredicateTemplateTests {
    static func stack() throws -> PredicateTestStack {
        let model = try PredicateTestStack.makeModel(
            fetchRequestTemplates: [
                FetchRequestTemplate(name: "scoredAbove", entityName: "Owner", predicateString: "score > $MINIMUM", fetchLimit: 2),
                FetchRequestTemplate(name: "everything", entityName: "Item"),
            ],
            ownerFetchedProperties: [
                FetchedPropertyDescription(
                    name: "flaggedItems",
                    fetchRequest: FetchRequestTemplate(name: "flaggedItems", entityName: "Item", predicateString: "owner == $FETCH_SOURCE AND flag == YES")),
                FetchedPropertyDescription(
                    name: "colleagues",
                    fetchRequest: FetchRequestTemplate(name: "colleagues", entityName: "Owner", predicateString: "manager == $FETCH_SOURCE.manager AND SELF != $FETCH_SOURCE")),
                FetchedPropertyDescription(
                    name: "bigItems",
                    fetchRequest: FetchRequestTemplate(name: "bigItems", entityName: "Item", predicateString: "owner == $FETCH_SOURCE AND str BEGINSWITH[c] $FETCHED_PROPERTY.userInfo.prefix"),
                    userInfo: ["prefix": "big"]),
            ])
        return try PredicateTestStack(model: model)
    }

    @Test("a template by name, its variables substituted, carries its entity, predicate and fetch limit")
    func template() throws {
        let stack = try Self.stack()
        let context = stack.context()
        try context.performAndWait {
            for score in [1, 5, 9, 12] {
                try context.insertObject(forEntityName: "Owner").setValue(score, forKey: "score")
            }
            try context.save()
            let request = try stack.model.fetchRequest(fromTemplateNamed: "scoredAbove", substitutionVariables: ["MINIMUM": 4])
            #expect(request.entityName == "Owner" && request.fetchLimit == 2)
            #expect(request.predicate == .compare(.keyPath("score"), .greaterThan, .constant(4)))
            #expect(try context.fetch(request).compactMap { $0["score"] as? Int } == [5, 9], "the template's fetch limit")
            var unlimited = request
            unlimited.fetchLimit = 0
            #expect(try context.count(for: unlimited) == 3)
            #expect(try stack.model.fetchRequest(fromTemplateNamed: "everything").predicate == nil)
        }
        #expect(throws: FetchPredicateError.missingVariable("MINIMUM")) { try stack.model.fetchRequest(fromTemplateNamed: "scoredAbove") }
        #expect(throws: FetchPredicateError.unknownTemplate("nothing")) { try stack.model.fetchRequest(fromTemplateNamed: "nothing") }
        // A model with a template that does not parse loads (the error comes when it is used),
        // but gets no SQLite store: its model cache could not hold it (ModelCacheWriterTests).
        let withBroken = try PredicateTestStack.makeModel(fetchRequestTemplates: [
            FetchRequestTemplate(name: "broken", entityName: "Item", predicateString: "str ==== 1"),
        ])
        let broken = #expect(throws: FetchPredicateError.self) { try withBroken.fetchRequest(fromTemplateNamed: "broken") }
        #expect(broken?.description == "fetch request 'broken': its predicate 'str ==== 1' does not parse: expected a value after '==', found '==' at column 7")
    }

    @Test("a fetched property fetches with $FETCH_SOURCE as the object, key paths from it, and $FETCHED_PROPERTY's userInfo")
    func fetchedProperty() throws {
        let stack = try Self.stack()
        let context = stack.context()
        let annID = try context.performAndWait { () throws -> ManagedObjectID in
            let boss = try context.insertObject(forEntityName: "Owner")
            let ann = try context.insertObject(forEntityName: "Owner")
            let bob = try context.insertObject(forEntityName: "Owner")
            try ann.setValue("Ann", forKey: "name")
            try bob.setValue("Bob", forKey: "name")
            try ann.setObject(boss, forKey: "manager")
            try bob.setObject(boss, forKey: "manager")
            for (owner, flag, size) in [(ann, true, 3), (ann, false, 30), (bob, true, 12), (ann, true, 11)] {
                let item = try context.insertObject(forEntityName: "Item")
                try item.setValue(size >= 10 ? "Big one" : "small one", forKey: "str")
                try item.setObject(owner, forKey: "owner")
                try item.setValue(flag, forKey: "flag")
                try item.setValue(size, forKey: "i32")
            }
            // Unsaved objects count, as in any fetch…
            #expect(try context.fetchedProperty(named: "flaggedItems", of: ann).compactMap { $0["i32"] as? Int }.sorted() == [3, 11])
            try context.save()
            return ann.objectID
        }
        // …and saved ones are found by SQL.
        let reader = stack.context()
        try reader.performAndWait { () throws -> Void in
                let annAgain = reader.object(with: annID)
                #expect(try reader.fetchedProperty(named: "flaggedItems", of: annAgain).compactMap { $0["i32"] as? Int }.sorted() == [3, 11])
                #expect(try reader.fetchedProperty(named: "colleagues", of: annAgain).compactMap { $0["name"] as? String } == ["Bob"])
                #expect(try reader.fetchedProperty(named: "bigItems", of: annAgain).compactMap { $0["i32"] as? Int }.sorted() == [11, 30])
                #expect(throws: FetchPredicateError.unknownTemplate("Owner.nothing")) { try reader.fetchedProperty(named: "nothing", of: annAgain) }
        }
    }

    @Test("every predicate string of the corpus models' fetch request templates and fetched properties parses", .needsCorpus)
    func corpus() throws {
        var parsed = 0
        for directory in Corpus.modelDirectories() where ModelLoader.contentsKind(of: directory) == .contents {
            let model = try ManagedObjectModel(contentsOf: directory)
            let templates = model.fetchRequestTemplates + model.entities.flatMap(\.fetchedProperties).map(\.fetchRequest)
            for template in templates {
                guard let format = template.predicateString else { continue }
                #expect(throws: Never.self, "\(directory.path): \(template.name): \(format)") { _ = try FetchPredicate(format: format) }
                parsed += 1
            }
        }
        print("corpus: \(parsed) predicate strings parsed")
        #expect(parsed >= 3)
    }
}
