import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// Every difference between two models, each naming the entity, property and field.
///
/// `compiled` is read from a `.mom` or a store's cache, `source` from the `.xcdatamodel`. Two
/// things the compiler does not keep are not differences: a transformable attribute's custom
/// class when the compiled form has none (Xcode's compiler leaves `NSAttributeValueClassName`
/// empty for a class it cannot resolve), an entity class a store's cache does not name, and an
/// empty version identifier (`userDefinedModelVersionIdentifier=""` compiles to no identifier).
func modelDifferences(compiled: ManagedObjectModel, source: ManagedObjectModel, comparesVersionName: Bool = true) -> [String] {
    var differences: [String] = []
    func check<T: Equatable>(_ place: String, _ field: String, _ a: T, _ b: T) {
        if a != b { differences.append("\(place): \(field): compiled \(a), source \(b)") }
    }
    // Fields compared as values where they are hashable (a dictionary's text depends on its order).
    func same(_ a: Any, _ b: Any) -> Bool {
        if let a = a as? AnyHashable, let b = b as? AnyHashable { return a == b }
        return "\(a)" == "\(b)"
    }
    if comparesVersionName { check("model", "versionName", compiled.versionName, source.versionName) }
    check("model", "versionIdentifiers", compiled.versionIdentifiers.filter { !$0.isEmpty }, source.versionIdentifiers.filter { !$0.isEmpty })
    check("model", "entities", compiled.entityNames.sorted(), source.entityNames.sorted())
    check("model", "fetchRequestTemplates", compiled.fetchRequestTemplates.sorted { $0.name < $1.name }, source.fetchRequestTemplates.sorted { $0.name < $1.name })
    check("model", "configurations", compiled.configurations.map { ModelConfiguration(name: $0.name, entityNames: $0.entityNames.sorted()) }.sorted { $0.name < $1.name },
          source.configurations.map { ModelConfiguration(name: $0.name, entityNames: $0.entityNames.sorted()) }.sorted { $0.name < $1.name })
    for entity in source.entities {
        guard let other = compiled.entity(named: entity.name) else { continue }
        let place = "entity \(entity.name)"
        check(place, "parent", other.parentName, entity.parentName)
        check(place, "abstract", other.isAbstract, entity.isAbstract)
        // A store's cache may lack class names the .mom has (SampleModel_V2.sqlite's cache has none).
        if other.representedClassName != nil { check(place, "class", other.representedClassName, entity.representedClassName) }
        check(place, "renamingIdentifier", other.renamingIdentifier, entity.renamingIdentifier)
        check(place, "versionHashModifier", other.versionHashModifier, entity.versionHashModifier)
        check(place, "uniquenessConstraints", other.uniquenessConstraints, entity.uniquenessConstraints)
        check(place, "fetchIndexes", other.fetchIndexes, entity.fetchIndexes)
        check(place, "compoundIndexes", other.compoundIndexes, entity.compoundIndexes)
        check(place, "userInfo", other.userInfo, entity.userInfo)
        check(place, "appleVersionHash", other.appleVersionHash, entity.appleVersionHash)
        check(place, "properties", other.propertyNames.sorted(), entity.propertyNames.sorted())
        for attribute in entity.attributes {
            guard var mine = other.attributes.first(where: { $0.name == attribute.name }) else { continue }
            if mine.customClassName == nil, attribute.type == .transformable { mine.customClassName = attribute.customClassName }
            let at = "\(place), attribute \(attribute.name)"
            let mirrorA = Mirror(reflecting: mine), mirrorB = Mirror(reflecting: attribute)
            for (a, b) in zip(mirrorA.children, mirrorB.children) where !same(a.value, b.value) {
                differences.append("\(at): \(a.label ?? "?"): compiled \(a.value), source \(b.value)")
            }
        }
        for relationship in entity.relationships {
            guard let mine = other.relationships.first(where: { $0.name == relationship.name }) else { continue }
            let at = "\(place), relationship \(relationship.name)"
            for (a, b) in zip(Mirror(reflecting: mine).children, Mirror(reflecting: relationship).children) where !same(a.value, b.value) {
                differences.append("\(at): \(a.label ?? "?"): compiled \(a.value), source \(b.value)")
            }
        }
        for fetched in entity.fetchedProperties {
            guard let mine = other.fetchedProperties.first(where: { $0.name == fetched.name }) else { continue }
            check("\(place), fetched property \(fetched.name)", "description", mine, fetched)
        }
    }
    return differences
}

@Suite("Compiled models (.mom, .momd) and a store's Z_MODELCACHE", .needsCorpus)
struct CompiledModelTests {
    static let plus = "alemar11/CoreDataPlus/Tests/Resources/"

    /// Each compiled model beside the source version it was compiled from.
    static let compiled: [(mom: String, source: String)] = [
        ("SampleModel/Fixtures/SampleModel.momd/SampleModel.mom", "SampleModel/SampleModel.xcdatamodeld/SampleModel.xcdatamodel"),
        ("SampleModel/Fixtures/SampleModel.momd/SampleModel2.mom", "SampleModel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel"),
        ("SampleModel/Fixtures/SampleModel.momd/SampleModel3.mom", "SampleModel/SampleModel.xcdatamodeld/SampleModel3.xcdatamodel"),
        ("SampleModel3/Fixtures/SampleModel3.momd/SampleModel3.mom", "SampleModel3/SampleModel3.xcdatamodeld/SampleModel3.xcdatamodel"),
        ("SampleModel3/Fixtures/SampleModel3.momd/SampleModel3_v2.mom", "SampleModel3/SampleModel3.xcdatamodeld/SampleModel3_v2.xcdatamodel"),
        ("SampleModel3/Fixtures/SampleModel3.momd/SampleModel3_v3.mom", "SampleModel3/SampleModel3.xcdatamodeld/SampleModel3_v3.xcdatamodel"),
    ]

    /// Copies a corpus file or directory to a temporary directory.
    static func copy(_ relative: String, into directory: URL) throws -> URL {
        let source = Corpus.file(relative)
        let target = directory.appendingPathComponent(source.lastPathComponent)
        try FileManager.default.copyItem(at: source, to: target)
        return target
    }

    @Test("every corpus .mom equals the model read from its .xcdatamodel, Apple's hashes included", arguments: compiled.map(\.mom))
    func momEqualsSource(mom: String) throws {
        let pair = Self.compiled.first { $0.mom == mom }!
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let momd = try Self.copy(Self.plus + (mom as NSString).deletingLastPathComponent, into: temp)
        let momURL = momd.appendingPathComponent((mom as NSString).lastPathComponent)
        let decoded = try ManagedObjectModel(contentsOf: momURL)
        let source = try ManagedObjectModel(contentsOf: Corpus.file(Self.plus + pair.source), compiledModel: momd)
        #expect(modelDifferences(compiled: decoded, source: source) == [])
        #expect(decoded.entities.allSatisfy { $0.appleVersionHash != nil })
        #expect(decoded.versionHashes == source.versionHashes)
    }

    @Test("a .momd loads its current version (VersionInfo.plist), or the version named")
    func momdVersions() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let momd = try Self.copy(Self.plus + "SampleModel3/Fixtures/SampleModel3.momd", into: temp)
        let current = try ManagedObjectModel(contentsOf: momd)
        #expect(current.versionName == "SampleModel3")
        let named = try ManagedObjectModel(contentsOf: momd, version: "SampleModel3_v2")
        #expect(named.versionName == "SampleModel3_v2")
        #expect(named.entityNames.sorted() == ["Pet", "User"])
        let versions = try ManagedObjectModel.versions(at: momd)
        #expect(versions.names == ["SampleModel3", "SampleModel3_v2", "SampleModel3_v3"])
        #expect(versions.current == "SampleModel3")
        #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: momd, version: "SampleModel3_v9") }
        let mom = momd.appendingPathComponent("SampleModel3_v3.mom")
        #expect(try ManagedObjectModel.versions(at: mom) == ModelVersions(names: ["SampleModel3_v3"], current: "SampleModel3_v3"))
        #expect(try ManagedObjectModel(contentsOf: mom).versionName == "SampleModel3_v3")
    }

    /// Each store with a cache, and the source version its metadata's hashes say it was written with.
    static let cachedStores: [(store: String, source: String?)] = [
        (plus + "SampleModel/Fixtures/SampleModel_V1.sqlite", plus + "SampleModel/SampleModel.xcdatamodeld/SampleModel.xcdatamodel"),
        (plus + "SampleModel/Fixtures/SampleModel_V2.sqlite", plus + "SampleModel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel"),
        (plus + "SampleModel3/Fixtures/SampleModel3_V1.sqlite", plus + "SampleModel3/SampleModel3.xcdatamodeld/SampleModel3.xcdatamodel"),
        ("bignerdranch/CoreDataStack/Sample Model/Deprecated/TestModel.sqlite", "bignerdranch/CoreDataStack/Sample Model/Deprecated/Sample.xcdatamodeld/TestModel.xcdatamodel"),
        (plus + "SampleModel2/Fixtures/SampleModel2_V1.sqlite", nil),
        (plus + "SampleModel2/Fixtures/SampleModel2_V2.sqlite", nil),
    ]

    @Test("each corpus store's Z_MODELCACHE equals the model it was written with", arguments: cachedStores.map(\.store))
    func cacheEqualsSource(store: String) throws {
        let pair = Self.cachedStores.first { $0.store == store }!
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let url = try copyCorpusStore(store, to: temp)
        let before = try sha256(ofFile: url.path)
        let cached = try #require(try ManagedObjectModel.modelCache(ofStoreAt: url))
        #expect(try sha256(ofFile: url.path) == before)
        #expect(!FileManager.default.fileExists(atPath: url.path + "-shm") || FileManager.default.fileExists(atPath: Corpus.file(store).path + "-shm"))
        // The store's metadata hashes are the model's: the cache carries them.
        let metadata = try SQLiteStore.readMetadata(at: url)
        let recorded = metadata[StoreMetadata.Key.versionHashes]?.dictionaryValue?.compactMapValues(\.dataValue)
        #expect(cached.versionHashes == recorded)
        guard let source = pair.source else { return }
        // The version the store was written with is the one whose Apple hashes (the .momd's)
        // equal the store's; where no .momd was kept, the store's own hashes stand in.
        let momd = Corpus.file((source as NSString).deletingLastPathComponent.replacingOccurrences(of: ".xcdatamodeld", with: ".momd").replacingOccurrences(of: "/SampleModel.momd", with: "/Fixtures/SampleModel.momd").replacingOccurrences(of: "/SampleModel3.momd", with: "/Fixtures/SampleModel3.momd"))
        var model = try ManagedObjectModel(contentsOf: Corpus.file(source))
        if FileManager.default.fileExists(atPath: momd.path) {
            model = try ManagedObjectModel(contentsOf: Corpus.file(source), compiledModel: momd)
        } else if let recorded {
            model = try model.withAppleVersionHashes(recorded, source: "metadata")
        }
        #expect(modelDifferences(compiled: cached, source: model, comparesVersionName: false) == [])
    }

    @Test("SampleModel2's cache holds what its Swift source declares: derived, fetched and validated properties, configurations")
    func sampleModel2() throws {
        let temp = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let v1 = try #require(try ManagedObjectModel.modelCache(ofStoreAt: try copyCorpusStore(Self.plus + "SampleModel2/Fixtures/SampleModel2_V1.sqlite", to: temp)))
        #expect(v1.entityNames.sorted() == ["Author", "Book", "Feedback", "GraphicNovel", "Page", "Writer"])
        #expect(v1.configurations.map(\.name) == ["SampleConfigurationV1"])
        let book = try #require(v1.entity(named: "Book"))
        let author = try #require(v1.entity(named: "Author"))
        let pagesCount = try #require(book.attributes.first { $0.name == "pagesCount" })
        #expect(pagesCount.derivationExpression == "pages.@count")
        #expect(pagesCount.type == .integer64)
        let title = try #require(book.attributes.first { $0.name == "title" })
        #expect(title.minValue == .integer(3))
        #expect(title.maxValue == .integer(50))
        #expect(!title.isOptional)
        #expect(v1.warnings.contains { $0.property == "title" && $0.message.contains("SELF CONTAINS \"title\"") })
        #expect(book.uniquenessConstraints == [["uniqueID"]])
        let cover = try #require(book.attributes.first { $0.name == "cover" })
        #expect(cover.type == .transformable)
        #expect(cover.valueTransformerName == "CoverTransformer")
        #expect(cover.customClassName == "Cover")
        #expect(cover.defaultValue == nil)
        #expect(v1.warnings.contains { $0.property == "cover" && $0.message.contains("archived object of the app's") })
        let pages = try #require(book.relationships.first { $0.name == "pages" })
        #expect(pages.isToMany && pages.minCount == 1 && pages.maxCount == 10_000 && pages.deleteRule == .cascade && pages.inverseName == "book")
        let writer = try #require(v1.entity(named: "Writer"))
        #expect(writer.isAbstract)
        #expect(author.parentName == "Writer")
        // Inherited properties are the superentity's, not repeated.
        #expect(!author.attributes.contains { $0.name == "age" })
        #expect(try #require(v1.entity(named: "GraphicNovel")).propertyNames == ["isBlackAndWhite"])
        let feedbacks = try #require(author.fetchedProperties.first { $0.name == "feedbacks" })
        #expect(feedbacks.fetchRequest.entityName == "Feedback")
        #expect(feedbacks.fetchRequest.predicateString == "authorAlias == $FETCH_SOURCE.alias")
        let favourites = try #require(author.fetchedProperties.first { $0.name == "favFeedbacks" })
        #expect(favourites.fetchRequest.predicateString == "authorAlias == $FETCH_SOURCE.alias AND comment CONTAINS[c] $FETCHED_PROPERTY.userInfo.search")
        #expect(favourites.userInfo == ["search": "great"])
        let v2 = try #require(try ManagedObjectModel.modelCache(ofStoreAt: try copyCorpusStore(Self.plus + "SampleModel2/Fixtures/SampleModel2_V2.sqlite", to: temp)))
        #expect(v2.configurations.map(\.name) == ["SampleConfigurationV2Part1", "SampleConfigurationV2Part2"])
        #expect(v2.configuration(named: "SampleConfigurationV2Part2")?.entityNames == ["Feedback"])
        #expect(v2.entity(named: "Book")?.representedClassName == "BookV2")
        let frontCover = try #require(v2.entity(named: "Book")?.attributes.first { $0.name == "frontCover" })
        #expect(frontCover.renamingIdentifier == "cover")
    }
}

@Suite("Compiled model archives: predicates and validation rules read back as the source's text")
struct CompiledModelArchiveTests {
    /// Builds `$left OP constant` (a key path from SELF, an operator of `type`, a constant).
    static func comparison(_ builder: inout ModelArchiveBuilder, keyPath: String?, type: Int64, options: Int64 = 0, modifier: Int64 = 0, constant: PropertyListValue) -> PropertyListValue {
        let selfExpression = builder.object("NSSelfExpression", ["NSExpressionType": .integer(1)])
        var left = selfExpression
        if let keyPath {
            let specifier = builder.object("NSKeyPathSpecifierExpression", ["NSKeyPath": builder.add(.string(keyPath)), "NSExpressionType": .integer(10)])
            let arguments = builder.array([specifier])
            left = builder.object("NSKeyPathExpression", ["NSOperand": selfExpression, "NSArguments": arguments, "NSSelectorName": builder.add(.string("valueForKey:"))])
        }
        let value: PropertyListValue
        if case .string = constant { value = builder.add(constant) } else { value = constant }
        let right = builder.object("NSConstantValueExpression", ["NSConstantValue": value, "NSExpressionType": .integer(0)])
        let predicateOperator = builder.object("NSComparisonPredicateOperator", ["NSOperatorType": .integer(type), "NSOptions": .integer(options), "NSModifier": .integer(modifier)])
        return builder.object("NSComparisonPredicate", ["NSLeftExpression": left, "NSRightExpression": right, "NSPredicateOperator": predicateOperator])
    }

    static func compound(_ builder: inout ModelArchiveBuilder, _ type: Int64, _ members: [PropertyListValue]) -> PropertyListValue {
        let list = builder.array(members)
        return builder.object("NSCompoundPredicate", ["NSCompoundPredicateType": .integer(type), "NSSubpredicates": list])
    }

    @Test("a template's predicate, bounds and a pattern compiled into validation predicates read back as format strings and bounds")
    func predicatesAndBounds() throws {
        var builder = ModelArchiveBuilder()
        let nameRule = Self.comparison(&builder, keyPath: "length", type: 3, constant: .integer(2))
        let pattern = Self.comparison(&builder, keyPath: nil, type: 6, constant: .string("[a-z]+"))
        let name = builder.object("NSAttributeDescription", [
            "NSPropertyName": builder.add(.string("name")), "NSAttributeType": .integer(700),
            "NSValidationPredicates": builder.array([nameRule, pattern]),
        ])
        let low = Self.comparison(&builder, keyPath: nil, type: 3, constant: .integer(1))
        let high = Self.comparison(&builder, keyPath: nil, type: 1, constant: .integer(9))
        let odd = Self.comparison(&builder, keyPath: nil, type: 5, constant: .integer(5))
        let rank = builder.object("NSAttributeDescription", [
            "NSPropertyName": builder.add(.string("rank")), "NSAttributeType": .integer(200), "NSIsOptional": .bool(true),
            "NSValidationPredicates": builder.array([Self.compound(&builder, 1, [low, high]), odd]),
            "NSValidationWarnings": builder.array([builder.add(.string("one to nine")), builder.add(.string("not five"))]),
        ])
        let entity = builder.object("NSEntityDescription", [
            "NSEntityName": builder.add(.string("Item")),
            "NSProperties": builder.dictionary([("name", name), ("rank", rank)]),
        ])
        let startsWith = Self.comparison(&builder, keyPath: "name", type: 8, options: 3, constant: .string("a\"b"))
        let anyRank = Self.comparison(&builder, keyPath: "rank", type: 2, modifier: 2, constant: .integer(3))
        let notLow = Self.compound(&builder, 0, [Self.comparison(&builder, keyPath: "rank", type: 0, constant: .integer(2))])
        let predicate = Self.compound(&builder, 2, [Self.compound(&builder, 1, [startsWith, anyRank]), notLow])
        let request = builder.object("NSFetchRequest", ["NSEntityName": builder.add(.string("Item")), "NSPredicate": predicate, "NSFetchLimit": .integer(5)])
        let model = try ManagedObjectModel(compiledModel: try builder.model([("Item", entity)], templates: [("search", request)]), origin: "built.mom")

        let template = try #require(model.fetchRequestTemplate(named: "search"))
        #expect(template.predicateString == "(name BEGINSWITH[cd] \"a\\\"b\" AND ANY rank > 3) OR (NOT rank < 2)")
        #expect(template.fetchLimit == 5)
        #expect(try FetchPredicate(format: template.predicateString!) == FetchPredicate(format: "(name BEGINSWITH[cd] 'a\"b' AND ANY rank > 3) OR NOT (rank < 2)"))
        let item = try #require(model.entity(named: "Item"))
        let nameAttribute = try #require(item.attributes.first { $0.name == "name" })
        #expect(nameAttribute.minValue == .integer(2) && nameAttribute.maxValue == nil)
        #expect(nameAttribute.regularExpression == "[a-z]+")
        #expect(!nameAttribute.isOptional)
        let rankAttribute = try #require(item.attributes.first { $0.name == "rank" })
        #expect(rankAttribute.minValue == .integer(1) && rankAttribute.maxValue == .integer(9))
        #expect(model.warnings.map(\.description) == ["built.mom: entity 'Item', property 'rank': the validation predicate 'SELF != 5' ('not five') is not a bound or a regular expression, which are what Lade checks: Lade does not check it"])
    }
}
