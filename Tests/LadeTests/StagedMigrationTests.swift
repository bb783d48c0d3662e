import Foundation
import Testing
@testable import Lade

/// Which version wrote a store, and which steps a migration takes, decided by the library.
@Suite("Store versions and staged migration plans")
struct StagedMigrationTests {
    static let item = #"<attribute name="key" attributeType="String"/><attribute name="name" optional="YES" attributeType="String"/>"#
    static let unique = "<uniquenessConstraints><uniquenessConstraint><constraint value=\"key\"/></uniquenessConstraint></uniquenessConstraints>"

    /// A bundle U.xcdatamodeld: V1 an Item, V2 the same Item with a uniqueness constraint on `key` (current).
    func constraintBundle(in directory: URL) throws -> URL {
        let bundle = directory.appendingPathComponent("U.xcdatamodeld")
        for (version, body) in [("V1", "<entity name=\"Item\">\(Self.item)</entity>"), ("V2", "<entity name=\"Item\">\(Self.item)\(Self.unique)</entity>")] {
            let folder = bundle.appendingPathComponent("\(version).xcdatamodel")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data("<?xml version=\"1.0\"?><model type=\"com.apple.IDECoreDataModeler.DataModel\" documentVersion=\"1.0\">\(body)</model>".utf8)
                .write(to: folder.appendingPathComponent("contents"))
        }
        try Data("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>_XCCurrentVersionName</key><string>V2.xcdatamodel</string></dict></plist>".utf8)
            .write(to: bundle.appendingPathComponent(".xccurrentversion"))
        return bundle
    }

    /// A store of `type` written with `version`, then given the hashes an earlier Lade wrote
    /// (the first scheme, which leaves uniqueness constraints out), as a store of Lade 4a5b175 has.
    func earlierStore(_ type: PersistentStoreCoordinator.StoreType, version: String, bundle: URL, in directory: URL) throws -> URL {
        let model = try ManagedObjectModel(contentsOf: bundle, version: version)
        let url = directory.appendingPathComponent("\(version).\(type)")
        let context = try privateContext(model: model, store: url, type: type)
        try context.performAndWait {
            for key in ["a", "b"] { try context.insertObject(forEntityName: "Item").setValue(key, forKey: "key") }
            try context.save()
        }
        var metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
        let hashes = model.ladeVersionHashes(scheme: .sha256v1)
        metadata[StoreMetadata.Key.versionHashes] = .dictionary(hashes.mapValues { .data($0) })
        metadata[StoreMetadata.Key.versionHashesDigest] = .string(StoreMetadata.digest(of: hashes).base64EncodedString())
        metadata[StoreMetadata.Key.ladeVersionHashKind] = .string(VersionHash.Scheme.sha256v1.rawValue)
        try PersistentStoreCoordinator.setMetadata(metadata, at: url)
        return url
    }

    @Test("a store an earlier Lade wrote (lade-sha256-1) is recognised: a SQLite store at its own version, by its hashes and its unique indexes; an XML or binary one at the first of the versions differing only in constraints, from which a migration checks them")
    func earlierScheme() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = try constraintBundle(in: directory)
        for (type, version, found) in [(PersistentStoreCoordinator.StoreType.sqlite, "V1", "V1"), (.sqlite, "V2", "V2"), (.xml, "V1", "V1"), (.xml, "V2", "V1"), (.binary, "V2", "V1")] {
            let folder = directory.appendingPathComponent("\(type)-\(version)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let store = try earlierStore(type, version: version, bundle: bundle, in: folder)
            let match = try StoreVersionMatch(storeAt: store, bundle: bundle)
            #expect(match.version == found, "\(type) written at \(version): \(match)")
            let migration = try StagedMigration(store: store, bundle: bundle)
            #expect(migration.sourceVersion == found)
            try migration.run()
            #expect(try StoreVersionMatch(storeAt: store, bundle: bundle).version == "V2")
            // Now with the current scheme's hashes, the store says V2 alone.
            #expect(try StoreVersionMatch(storeAt: store, bundle: bundle).matching == ["V2"], "\(type) written at \(version)")
        }
    }

    @Test("a compiled mapping model whose recorded entity hashes match no step is refused, naming them, when the versions carry Apple's hashes (a .momd)",
          .needsCorpus)
    func compiledMappingHashes() throws {
        let base = "alemar11/CoreDataPlus/Tests/Resources/SampleModel/"
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("SampleModel_V2.sqlite")
        try copyWritable(at: Corpus.file(base + "Fixtures/SampleModel_V2.sqlite"), to: store)
        let bundle = Corpus.file(base + "SampleModel.xcdatamodeld"), momd = Corpus.file(base + "Fixtures/SampleModel.momd")
        // CoreDataPlus's own V2 → V3 mapping, its policy class taken out (so that it would run),
        // and every hash it records changed: it is no longer the mapping between those versions.
        var mapping = try MappingModel(contentsOf: Corpus.file(base + "Fixtures/V2toV3.cdm"))
        for index in mapping.entityMappings.indices where mapping.entityMappings[index].kind == .custom {
            mapping.entityMappings[index].migrationPolicyClassName = nil
            mapping.entityMappings[index].kind = .transform
        }
        let planned = try StagedMigration(store: store, bundle: bundle, to: "SampleModel3", compiledModel: momd, mappingModels: [mapping])
        #expect(planned.steps.count == 1 && planned.steps.first?.label.hasPrefix("mapping model") == true, "the mapping as recorded fits its step")
        mapping.entityVersionHashes = mapping.entityVersionHashes.mapValues { _ in .init(source: Data(repeating: 7, count: 32), destination: Data(repeating: 9, count: 32)) }
        #expect {
            _ = try StagedMigration(store: store, bundle: bundle, to: "SampleModel3", compiledModel: momd, mappingModels: [mapping])
        } throws: { error in
            let text = "\(error)"
            return error is MappingModelError && text.contains("match no step") && text.contains(Data(repeating: 7, count: 32).base64EncodedString())
                && text.contains("SampleModel2 ")
        }
    }
}
