import Foundation
import Testing
@testable import Lade

@Suite("Model validation names file, line, entity and property")
struct ModelValidationTests {
    /// Loads `body` as a model and returns its problems; the body starts on line 3.
    func problems(_ body: String) throws -> (file: String, problems: [ModelProblem]) {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try Fixtures.writeXcodeModel(body, in: temp)
        do {
            _ = try ManagedObjectModel(contentsOf: url)
            return (url.appendingPathComponent("contents").path, [])
        } catch let error as ModelError {
            return (url.appendingPathComponent("contents").path, error.problems)
        }
    }

    /// Expects exactly one problem, located at `line`, naming `entity` and `property`, whose message contains `text`.
    func expectProblem(_ body: String, line: Int, entity: String?, property: String?, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (file, found) = try problems(body)
        #expect(found.count == 1, "expected one problem, got \(found)", sourceLocation: sourceLocation)
        guard let problem = found.first else { return }
        #expect(problem.file == file, sourceLocation: sourceLocation)
        #expect(problem.line == line, "\(problem)", sourceLocation: sourceLocation)
        #expect(problem.entity == entity, sourceLocation: sourceLocation)
        #expect(problem.property == property, sourceLocation: sourceLocation)
        #expect(problem.message.contains(text), "\(problem.message)", sourceLocation: sourceLocation)
        #expect(problem.description.hasPrefix("\(file):\(line): "), sourceLocation: sourceLocation)
    }

    @Test("unknown destination entity")
    func unknownDestination() throws {
        try expectProblem("""
            <entity name="A">
                <relationship name="b" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="B"/>
            </entity>
            """, line: 4, entity: "A", property: "b", "destination entity 'B' is not in the model")
    }

    @Test("unknown parent entity")
    func unknownParent() throws {
        try expectProblem(#"<entity name="A" parentEntity="Ghost"/>"#, line: 3, entity: "A", property: nil, "parent entity 'Ghost' is not in the model")
    }

    @Test("an inheritance loop")
    func inheritanceLoop() throws {
        let (_, found) = try problems("""
            <entity name="A" parentEntity="B"/>
            <entity name="B" parentEntity="A"/>
            """)
        #expect(found.count == 2)
        #expect(found.allSatisfy { $0.message.contains("own ancestor") })
    }

    @Test("an inverse that does not point back")
    func inverseNotPointingBack() throws {
        try expectProblem("""
            <entity name="A">
                <relationship name="bs" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="B" inverseName="a" inverseEntity="B"/>
                <relationship name="other" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="B"/>
            </entity>
            <entity name="B">
                <relationship name="a" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="A" inverseName="other" inverseEntity="A"/>
            </entity>
            """, line: 4, entity: "A", property: "bs", "names 'other' as its inverse, not 'bs'")
    }

    @Test("an inverse missing from the destination, and one leading elsewhere")
    func inverseMissingOrElsewhere() throws {
        let (_, found) = try problems("""
            <entity name="A">
                <relationship name="b" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="B" inverseName="nothing" inverseEntity="B"/>
                <relationship name="c" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="C" inverseName="toB" inverseEntity="C"/>
            </entity>
            <entity name="B"/>
            <entity name="C">
                <relationship name="toB" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="B"/>
            </entity>
            """)
        #expect(found.map(\.property) == ["b", "c"])
        #expect(found[0].message.contains("inverse 'nothing' is not a relationship of destination entity 'B'"))
        #expect(found[1].message.contains("leads to 'B', not back to 'A'"))
    }

    @Test("duplicate entity names")
    func duplicateEntities() throws {
        try expectProblem("""
            <entity name="A"/>
            <entity name="A"/>
            """, line: 4, entity: "A", property: nil, "more than once")
    }

    @Test("duplicate property names, and a subentity redeclaring its parent's property")
    func duplicateProperties() throws {
        try expectProblem("""
            <entity name="A">
                <attribute name="x" optional="YES" attributeType="String"/>
                <attribute name="x" optional="YES" attributeType="Integer 16"/>
            </entity>
            """, line: 5, entity: "A", property: "x", "more than once")
        try expectProblem("""
            <entity name="A">
                <attribute name="x" optional="YES" attributeType="String"/>
            </entity>
            <entity name="B" parentEntity="A">
                <attribute name="x" optional="YES" attributeType="String"/>
            </entity>
            """, line: 7, entity: "B", property: "x", "already a property of parent entity 'A'")
    }

    @Test("a property named like a reserved word Core Data refuses")
    func reservedName() throws {
        try expectProblem("""
            <entity name="Product">
                <attribute name="description" optional="YES" attributeType="String"/>
            </entity>
            """, line: 4, entity: "Product", property: "description", "reserved name")
    }

    @Test("an unknown attributeType")
    func unknownAttributeType() throws {
        try expectProblem("""
            <entity name="A">
                <attribute name="x" optional="YES" attributeType="Integer 128"/>
            </entity>
            """, line: 4, entity: "A", property: "x", "unknown attributeType 'Integer 128'")
    }

    @Test("a default value that does not parse for its type")
    func badDefault() throws {
        try expectProblem("""
            <entity name="A">
                <attribute name="count" optional="YES" attributeType="Integer 16" defaultValueString="40000"/>
            </entity>
            """, line: 4, entity: "A", property: "count", "'40000' is not a valid Integer 16 value")
        try expectProblem("""
            <entity name="A">
                <attribute name="on" optional="YES" attributeType="Boolean" defaultValueString="perhaps"/>
            </entity>
            """, line: 4, entity: "A", property: "on", "not a valid Boolean value")
    }

    @Test("a to-one relationship marked ordered")
    func orderedToOne() throws {
        try expectProblem("""
            <entity name="A">
                <relationship name="b" optional="YES" maxCount="1" deletionRule="Nullify" ordered="YES" destinationEntity="B"/>
            </entity>
            <entity name="B"/>
            """, line: 4, entity: "A", property: "b", "a to-one relationship cannot be ordered")
    }

    @Test("bounds, patterns, constraints and templates that name nothing")
    func otherRules() throws {
        let (_, found) = try problems("""
            <entity name="A">
                <attribute name="n" optional="YES" attributeType="Integer 32" minValueString="10" maxValueString="5"/>
                <attribute name="s" optional="YES" attributeType="String" regularExpressionString="(unclosed"/>
                <attribute name="u" optional="YES" attributeType="Undefined"/>
                <uniquenessConstraints><uniquenessConstraint><constraint value="missing"/></uniquenessConstraint></uniquenessConstraints>
            </entity>
            <fetchRequest name="all" entity="Nowhere"/>
            <configuration name="Main"><memberEntity name="Nobody"/></configuration>
            """)
        let messages = found.map(\.message)
        #expect(found.count == 6, "\(found)")
        #expect(messages.contains { $0.contains("minimum 10 is greater than maximum 5") })
        #expect(messages.contains { $0.contains("does not compile") })
        #expect(messages.contains { $0.contains("'Undefined' is allowed only for transient") })
        #expect(messages.contains { $0.contains("names 'missing', which is not a property") })
        #expect(found.contains { $0.message.contains("'Nowhere'") && $0.line == 9 })
        #expect(found.contains { $0.message.contains("'Nobody'") && $0.line == 10 })
    }

    @Test("a fetch index element needs a property or an expression, and a known type")
    func fetchIndexElements() throws {
        let (_, found) = try problems("""
            <entity name="A">
                <attribute name="x" optional="YES" attributeType="String"/>
                <fetchIndex name="odd">
                    <fetchIndexElement type="Binary" order="ascending"/>
                    <fetchIndexElement property="x" type="Hash" order="ascending"/>
                </fetchIndex>
            </entity>
            """)
        #expect(found.map(\.message) == [
            "fetch index 'odd' has an element with neither a property nor an expression",
            "fetch index 'odd' has element type 'Hash'; expected Binary or RTree",
        ])
    }

    @Test("all problems of one model are reported together")
    func allTogether() throws {
        let (_, found) = try problems("""
            <entity name="A">
                <attribute name="description" optional="YES" attributeType="String"/>
                <attribute name="x" optional="YES" attributeType="Money"/>
                <relationship name="b" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Nope"/>
            </entity>
            """)
        #expect(found.map(\.line) == [5, 4, 6])
    }

    @Test("a legacy Xcode 3 model is refused with advice to re-save it in a current Xcode")
    func legacyModel() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let legacy = temp.appendingPathComponent("Old.xcdatamodel")
        try FileManager.default.createDirectory(at: legacy, withIntermediateDirectories: true)
        try Data("bplist00fake".utf8).write(to: legacy.appendingPathComponent("elements"))
        for url in [legacy, legacy.appendingPathComponent("elements")] {
            let error = #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: url) }
            let text = error?.description ?? ""
            #expect(text.contains("legacy Xcode 3 model"))
            #expect(text.contains("Open the model in a current Xcode and save it"))
        }
    }

    @Test("models built in code are checked by the same rules")
    func programmaticModels() throws {
        let error = #expect(throws: ModelError.self) {
            try ManagedObjectModel(entities: [
                EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destinationEntityName: "B", isOrdered: true)])
            ])
        }
        #expect(error?.problems.count == 2)
        #expect(error?.problems.allSatisfy { $0.file == nil && $0.entity == "A" && $0.property == "b" } == true)
    }
}
