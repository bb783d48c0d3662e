import Foundation
import Lade
import Testing

/// `lade migrate --mapping`: the corpus' mapping models that need no code, run over stores of
/// their source versions and checked against what their authors' tests expect; those that
/// need the app's code refused before anything is written. Skipped without the corpus.
@Suite("lade migrate with mapping models, run as a process", .needsCorpus)
struct MappingMigrationCLITests {
    static let corpus = Corpus.root
    static let moody = corpus.appendingPathComponent("objcio/core-data/Migrations/Migrations")
    static let unCloudNotes = corpus.appendingPathComponent("CoderDream/Core-Data-by-Tutorials/SourceCode/Core Data by Tutorials v6/06-versioning-and-migration/final/UnCloudNotes")
    static let coreStore = corpus.appendingPathComponent("JohnEstropia/CoreStore/Demo/Sources/Demos/Advanced/EvolutionDemo")
    static let sampleModel = corpus.appendingPathComponent("alemar11/CoreDataPlus/Tests/Resources/SampleModel")

    // MARK: Moody (objc.io, "Core Data", the Migrations project)

    /// objc.io's test data (MigrationsTests/V2.swift): 4 moods in 3 countries on 2 continents,
    /// with the counters as the fixtures hold them.
    struct MoodyMood { let remoteID: String; let country: Int64; let date: Double; let latitude: Double; let longitude: Double; let colors: String }
    static let moods = [
        MoodyMood(remoteID: "64C6E1D4-7C2E-4F04-B867-1A9E2941F9FF", country: 704, date: 464441952.529884, latitude: 13.154376, longitude: 108.193359, colors: "a2Va3d/kSEIxJyQLiIeGCwkDOSwLmJmd"),
        MoodyMood(remoteID: "47300BAD-DE7D-4B54-B94C-04A3EE4CD0C5", country: 710, date: 464369360.734390, latitude: -26, longitude: 28, colors: "a2Va3d/kSEIxJyQLiIeGCwkDOSwLmJmd"),
        MoodyMood(remoteID: "83922344-ED0B-4ABE-B8B0-E00F4E7E1D94", country: 231, date: 464442000.641578, latitude: 7.013668, longitude: 41.308594, colors: "8fP4YVtDZWU3usfgRT8gTE8cTTktfHlf"),
        MoodyMood(remoteID: "3A9BAEFD-7716-41C0-9FFF-A7C4BCE32679", country: 710, date: 464369352.554507, latitude: -26, longitude: 28, colors: "XkUa493ZlI1/epW2MSIOFQ8HQSoOTUAs"),
    ]
    /// Country code → (moods, updatedAt, continent code).
    static let countries: [Int64: (moods: Int64, updatedAt: Double, continent: Int64)] = [
        710: (2, 464687061.782827, 10004), 704: (1, 464687061.722586, 10005), 231: (1, 464687061.668211, 10004),
    ]
    /// Continent code → (moods, countries, updatedAt).
    static let continents: [Int64: (moods: Int64, countries: Int64, updatedAt: Double)] = [
        10005: (8, 6, 465131737.392830), 10004: (8, 4, 464687061.663903),
    ]

    /// A store of `version` (Moody 2, 3 or 4) holding objc.io's test data; the context that wrote it is returned
    /// (while it lives, a SQLite store's data stays in its `-wal`).
    @discardableResult
    static func moody2Store(at url: URL, type: PersistentStoreCoordinator.StoreType, version: String = "Moody 2") throws -> ManagedObjectContext {
        let model = try ManagedObjectModel(contentsOf: moody.appendingPathComponent("Moody.xcdatamodeld"), version: version)
        let context = try privateContext(model: model, store: url, type: type)
        try context.performAndWait {
            var continents: [Int64: ManagedObject] = [:]
            for (code, values) in Self.continents {
                let continent = try context.insertObject(forEntityName: "Continent")
                try continent.setValue(Int16(code), forKey: "numericISO3166Code")
                try continent.setValue(values.moods, forKey: "numberOfMoods")
                try continent.setValue(values.countries, forKey: "numberOfCountries")
                try continent.setValue(Date(timeIntervalSinceReferenceDate: values.updatedAt), forKey: "updatedAt")
                continents[code] = continent
            }
            var countries: [Int64: ManagedObject] = [:]
            for (code, values) in Self.countries {
                let country = try context.insertObject(forEntityName: "Country")
                try country.setValue(Int16(code), forKey: "numericISO3166Code")
                try country.setValue(values.moods, forKey: "numberOfMoods")
                try country.setValue(Date(timeIntervalSinceReferenceDate: values.updatedAt), forKey: "updatedAt")
                try country.setObject(continents[values.continent], forKey: "continent")
                countries[code] = country
            }
            for values in moods {
                let mood = try context.insertObject(forEntityName: "Mood")
                try mood.setValue(values.remoteID, forKey: "remoteID")
                try mood.setValue("__defaultOwner__", forKey: "creatorID")
                try mood.setValue(Date(timeIntervalSinceReferenceDate: values.date), forKey: "date")
                try mood.setValue(values.latitude, forKey: "latitude")
                try mood.setValue(values.longitude, forKey: "longitude")
                try mood.setAttributeValue(.binary(Data(base64Encoded: values.colors)!), forKey: "colors")
                try mood.setObject(countries[values.country], forKey: "country")
                // From Moody 3 on, a mood also names its continent (its country's).
                if model.relationship("continent", of: "Mood") != nil {
                    try mood.setObject(continents[Self.countries[values.country]!.continent], forKey: "continent")
                }
            }
            try context.save()
        }
        return context
    }

    /// What objc.io's tests check of a store after 2→3 (and, unchanged, after 3→4): every
    /// mood, country and continent with its values; a mood's continent is its country's; a
    /// continent's moods are its countries' moods.
    static func expectMoodyV3(_ url: URL, version: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let model = try ManagedObjectModel(contentsOf: moody.appendingPathComponent("Moody.xcdatamodeld"), version: version)
        let context = try privateContext(model: model, store: url)
        try context.performAndWait {
            let moods = try context.fetch(FetchRequest(entityName: "Mood"))
            let countries = try context.fetch(FetchRequest(entityName: "Country"))
            let continents = try context.fetch(FetchRequest(entityName: "Continent"))
            #expect(moods.count == 4 && countries.count == 3 && continents.count == 2, sourceLocation: sourceLocation)
            func code(_ object: ManagedObject?) -> Int64? {
                if case .integer(let n)? = object?.attributeValue(forKey: "numericISO3166Code") { return n }
                return nil
            }
            for expected in Self.moods {
                let mood = try #require(moods.first { $0.attributeValue(forKey: "remoteID") == .string(expected.remoteID) }, sourceLocation: sourceLocation)
                #expect(mood.attributeValue(forKey: "date") == .date(Date(timeIntervalSinceReferenceDate: expected.date)), sourceLocation: sourceLocation)
                #expect(mood.attributeValue(forKey: "latitude") == .double(expected.latitude), sourceLocation: sourceLocation)
                #expect(mood.attributeValue(forKey: "longitude") == .double(expected.longitude), sourceLocation: sourceLocation)
                #expect(mood.attributeValue(forKey: "colors") == .binary(Data(base64Encoded: expected.colors)!), sourceLocation: sourceLocation)
                #expect(mood.attributeValue(forKey: "creatorID") == .string("__defaultOwner__"), sourceLocation: sourceLocation)
                #expect(mood.attributeValue(forKey: "rating") == .integer(0), sourceLocation: sourceLocation)
                #expect(mood.attributeValue(forKey: "markedForRemoteDeletion") == .bool(false), sourceLocation: sourceLocation)
                #expect(code(mood.object(forKey: "country")) == expected.country, sourceLocation: sourceLocation)
                #expect(code(mood.object(forKey: "continent")) == Self.countries[expected.country]!.continent, sourceLocation: sourceLocation)
            }
            for country in countries {
                let own = try #require(code(country), sourceLocation: sourceLocation)
                let expected = try #require(Self.countries[own], sourceLocation: sourceLocation)
                #expect(country.attributeValue(forKey: "numberOfMoods") == .integer(expected.moods), sourceLocation: sourceLocation)
                #expect(country.attributeValue(forKey: "updatedAt") == .date(Date(timeIntervalSinceReferenceDate: expected.updatedAt)), sourceLocation: sourceLocation)
                #expect(code(country.object(forKey: "continent")) == expected.continent, sourceLocation: sourceLocation)
                #expect(country.objects(forKey: "moods").count == Int(expected.moods), sourceLocation: sourceLocation)
            }
            for continent in continents {
                let own = try #require(code(continent), sourceLocation: sourceLocation)
                let expected = try #require(Self.continents[own], sourceLocation: sourceLocation)
                #expect(continent.attributeValue(forKey: "numberOfMoods") == .integer(expected.moods), sourceLocation: sourceLocation)
                #expect(continent.attributeValue(forKey: "numberOfCountries") == .integer(expected.countries), sourceLocation: sourceLocation)
                #expect(continent.attributeValue(forKey: "updatedAt") == .date(Date(timeIntervalSinceReferenceDate: expected.updatedAt)), sourceLocation: sourceLocation)
                let countryCodes = Set(Self.countries.filter { $0.value.continent == own }.keys)
                #expect(Set(continent.objects(forKey: "countries").compactMap(code)) == countryCodes, sourceLocation: sourceLocation)
                let moodIDs = Set(Self.moods.filter { countryCodes.contains($0.country) }.map(\.remoteID))
                #expect(Set(continent.objects(forKey: "moods").compactMap { $0.attributeValue(forKey: "remoteID") }) == Set(moodIDs.map { .string($0) }), sourceLocation: sourceLocation)
            }
        }
    }

    static func mapping(_ name: String) -> String { moody.appendingPathComponent("\(name).xcmappingmodel").path }

    @Test("Moody 2 → 3 → 4 → 5 by objc.io's mapping models, one step at a time and in one command (batches of 5,000 and of 1)", .slow,
          arguments: [PersistentStoreCoordinator.StoreType.sqlite, .xml, .binary], ["5000", "1"])
    func moody(type: PersistentStoreCoordinator.StoreType, batch: String) throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("moody.\(type.name)")
        let bundle = Self.moody.appendingPathComponent("Moody.xcdatamodeld").path
        let writer = try Self.moody2Store(at: store, type: type)
        if type == .sqlite {
            let pending = (try? FileManager.default.attributesOfItem(atPath: store.path + "-wal")[.size] as? Int) ?? 0
            #expect(pending > 0, "the test data is in the -wal while its writer lives")
        }
        let uuid = try PersistentStoreCoordinator.metadataForPersistentStore(at: store)["NSStoreUUID"]
        var run = try LadeProcess.run(["migrate", store.path, "--model", bundle, "--to", "Moody 3", "--batch-size", batch, "--mapping", Self.mapping("Moody 2-Moody 3")])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("Moody 2 → Moody 3 (mapping model"), "\(run.stdout)")
        #expect(run.stdout.contains("ContinentToContinent (copy): Continent → Continent"), "\(run.stdout)")
        // The old store's data was in its -wal (its context still open); no -wal of it is left
        // beside the new file to be read as the new file's.
        let wal = (try? FileManager.default.attributesOfItem(atPath: store.path + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0)
        withExtendedLifetime(writer) {}
        try Self.expectMoodyV3(store, version: "Moody 3")
        #expect(try PersistentStoreCoordinator.metadataForPersistentStore(at: store)["NSStoreUUID"] == uuid)
        #expect(try LadeProcess.run(["check", store.path, "--model", bundle, "--model-version", "Moody 3"]).status == 0)
        // 3 → 4 removes the abstract parent: only the layout changes (objc.io checks v3's data).
        run = try LadeProcess.run(["migrate", store.path, "--model", bundle, "--to", "Moody 4", "--batch-size", batch, "--mapping", Self.mapping("Moody 3-Moody 4")])
        #expect(run.status == 0, "\(run.stderr)")
        try Self.expectMoodyV3(store, version: "Moody 4")
        run = try LadeProcess.run(["migrate", store.path, "--model", bundle, "--to", "Moody 5", "--batch-size", batch, "--mapping", Self.mapping("Moody 4-Moody 5")])
        #expect(run.status == 0, "\(run.stderr)")
        try Self.expectMoodyV5(store)
        #expect(run.stdout.contains("Country: 3"), "\(run.stdout)")
        // Staged: 2 → 5 in one command, each step with its own mapping model.
        let staged = sandbox.url("staged.\(type.name)")
        try Self.moody2Store(at: staged, type: type)
        run = try LadeProcess.run(["migrate", staged.path, "--model", bundle, "--to", "Moody 5", "--batch-size", batch,
                                   "--mapping", Self.mapping("Moody 4-Moody 5"), "--mapping", Self.mapping("Moody 2-Moody 3"), "--mapping", Self.mapping("Moody 3-Moody 4")])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("migrated: \(staged.path) is at Moody 5 (3 steps)"), "\(run.stdout)")
        try Self.expectMoodyV5(staged)
        // The same command again (cron, or a run killed just after its new store was in
        // place): nothing to do, the mapping models notwithstanding.
        let again = try LadeProcess.run(["migrate", staged.path, "--model", bundle, "--to", "Moody 5",
                                         "--mapping", Self.mapping("Moody 4-Moody 5"), "--mapping", Self.mapping("Moody 2-Moody 3"), "--mapping", Self.mapping("Moody 3-Moody 4")])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("already at Moody 5; nothing to do"), "\(again.stdout)")
        // Nothing left beside the stores but SQLite's companions and the lock files.
        let left = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") && !$0.hasSuffix(".lade-lock") }
        #expect(left.sorted() == [store.lastPathComponent, staged.lastPathComponent].sorted())
    }

    @Test("each of objc.io's mapping models over a store Lade writes at its source version with their test data",
          arguments: [("Moody 2", "Moody 3"), ("Moody 3", "Moody 4"), ("Moody 4", "Moody 5")])
    func moodyEachStep(from: String, to: String) throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("moody.sqlite")
        try Self.moody2Store(at: store, type: .sqlite, version: from)
        let run = try LadeProcess.run(["migrate", store.path, "--model", Self.moody.appendingPathComponent("Moody.xcdatamodeld").path,
                                       "--to", to, "--mapping", Self.mapping("\(from)-\(to)")])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("\(from) → \(to) (mapping model"), "\(run.stdout)")
        if to == "Moody 5" { try Self.expectMoodyV5(store) } else { try Self.expectMoodyV3(store, version: to) }
    }

    /// After 4 → 5: no continents; each country keeps its continent's code in `isoContinent`.
    static func expectMoodyV5(_ url: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let model = try ManagedObjectModel(contentsOf: moody.appendingPathComponent("Moody.xcdatamodeld"), version: "Moody 5")
        let context = try privateContext(model: model, store: url)
        try context.performAndWait {
            let countries = try context.fetch(FetchRequest(entityName: "Country"))
            #expect(countries.count == 3, sourceLocation: sourceLocation)
            for country in countries {
                guard case .integer(let code)? = country.attributeValue(forKey: "numericISO3166Code") else { Issue.record("no code"); continue }
                #expect(country.attributeValue(forKey: "isoContinent") == .integer(Self.countries[code]!.continent), sourceLocation: sourceLocation)
                #expect(country.objects(forKey: "moods").count == Int(Self.countries[code]!.moods), sourceLocation: sourceLocation)
            }
            #expect(try context.count(for: FetchRequest(entityName: "Mood")) == 4, sourceLocation: sourceLocation)
        }
    }

    // MARK: UnCloudNotes (Core Data by Tutorials, chapter 6)

    static let notesBundle = unCloudNotes.appendingPathComponent("UnCloudNotesDataModel.xcdatamodeld")

    /// A v2 store of three notes, two with an image (`dated`: whether notes have a creation date).
    static func notesV2Store(at url: URL, type: PersistentStoreCoordinator.StoreType, dated: Bool = true) throws {
        let model = try ManagedObjectModel(contentsOf: notesBundle, version: "UnCloudNotesDataModel v2")
        let context = try privateContext(model: model, store: url, type: type)
        try context.performAndWait {
            for (index, image) in [Data([0x89, 0x50, 0x4E, 0x47, 1]), nil, Data([0x89, 0x50, 0x4E, 0x47, 3])].enumerated() {
                let note = try context.insertObject(forEntityName: "Note")
                try note.setValue("note \(index)", forKey: "title")
                try note.setValue("body \(index)", forKey: "body")
                try note.setValue(Int64(index), forKey: "displayIndex")
                if dated { try note.setValue(Date(timeIntervalSinceReferenceDate: 600_000_000 + Double(index)), forKey: "dateCreated") }
                try note.setAttributeValue(image.map { .binary($0) }, forKey: "image")
            }
            try context.save()
        }
    }

    @Test("UnCloudNotes v2 → v3: every note kept, and one attachment for each note with an image (a filtered second mapping)", arguments: [PersistentStoreCoordinator.StoreType.sqlite, .xml])
    func unCloudNotes(type: PersistentStoreCoordinator.StoreType) throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("notes.\(type.name)")
        try Self.notesV2Store(at: store, type: type)
        let run = try LadeProcess.run(["migrate", store.path, "--model", Self.notesBundle.path, "--to", "UnCloudNotesDataModel v3",
                                       "--mapping", Self.unCloudNotes.appendingPathComponent("UnCloudNotesMappingModel_v2_to_v3.xcmappingmodel").path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("NoteToAttachment (transform): Note where image != nil → Attachment; sets dateCreated, image, note"), "\(run.stdout)")
        #expect(run.stdout.contains("Attachment: 2") && run.stdout.contains("Note: 3"), "\(run.stdout)")
        let model = try ManagedObjectModel(contentsOf: Self.notesBundle, version: "UnCloudNotesDataModel v3")
        let context = try privateContext(model: model, store: store)
        try context.performAndWait {
            let notes = try context.fetch(FetchRequest(entityName: "Note"))
            #expect(notes.count == 3)
            for note in notes {
                guard case .integer(let index)? = note.attributeValue(forKey: "displayIndex") else { Issue.record("no index"); continue }
                #expect(note.attributeValue(forKey: "title") == .string("note \(index)"))
                #expect(note.attributeValue(forKey: "body") == .string("body \(index)"))
                let attachments = note.objects(forKey: "attachments")
                if index == 1 {
                    #expect(attachments.isEmpty)
                } else {
                    #expect(attachments.count == 1)
                    #expect(attachments.first?.attributeValue(forKey: "image") == .binary(Data([0x89, 0x50, 0x4E, 0x47, UInt8(index + 1)])))
                    #expect(attachments.first?.attributeValue(forKey: "dateCreated") == note.attributeValue(forKey: "dateCreated"))
                }
            }
        }
    }

    @Test("objects the new version does not accept fail the migration with the reason, the store byte for byte as it was")
    func invalidResult() throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("notes.sqlite")
        // v3's Attachment.dateCreated is required: notes with an image and no date cannot map.
        try Self.notesV2Store(at: store, type: .sqlite, dated: false)
        _ = try SQLiteConnection(path: store.path, mode: .readWrite(create: false)).rows("PRAGMA wal_checkpoint(TRUNCATE)")
        let before = try Data(contentsOf: store)
        let listing = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).sorted()
        let run = try LadeProcess.run(["migrate", store.path, "--model", Self.notesBundle.path, "--to", "UnCloudNotesDataModel v3",
                                       "--mapping", Self.unCloudNotes.appendingPathComponent("UnCloudNotesMappingModel_v2_to_v3.xcmappingmodel").path])
        #expect(run.status == 1)
        #expect(run.stderr.contains("the migration failed and the store is unchanged"), "\(run.stderr)")
        #expect(run.stderr.contains("dateCreated"), "\(run.stderr)")
        #expect(try Data(contentsOf: store) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).filter { !$0.hasSuffix(".lade-lock") }.sorted() == listing)
    }

    // MARK: CoreStore's EvolutionDemo

    @Test("CoreStore V2 → V1 by V1.FromV2: numberOfFlagella from numberOfFlippers, dnaCode kept")
    func coreStore() throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("creatures.sqlite")
        let bundle = Self.coreStore.appendingPathComponent("Advanced.EvolutionDemo.V1.xcdatamodeld")
        let v2 = try ManagedObjectModel(contentsOf: bundle, version: "Advanced.EvolutionDemo.V2")
        let context = try privateContext(model: v2, store: store, type: .sqlite)
        try context.performAndWait {
            for (dna, flippers) in [(1001, 4), (1002, 0), (1003, 2)] as [(Int64, Int32)] {
                let creature = try context.insertObject(forEntityName: "Creature")
                try creature.setValue(dna, forKey: "dnaCode")
                try creature.setValue(flippers, forKey: "numberOfFlippers")
            }
            try context.save()
        }
        let run = try LadeProcess.run(["migrate", store.path, "--model", bundle.path, "--to", "Advanced.EvolutionDemo.V1",
                                       "--mapping", Self.coreStore.appendingPathComponent("Advanced.EvolutionDemo.V1.FromV2.xcmappingmodel").path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("Advanced.EvolutionDemo.V2 → Advanced.EvolutionDemo.V1 (mapping model"), "\(run.stdout)")
        let v1 = try ManagedObjectModel(contentsOf: bundle, version: "Advanced.EvolutionDemo.V1")
        let migrated = try privateContext(model: v1, store: store)
        try migrated.performAndWait {
            let creatures = try migrated.fetch(FetchRequest(entityName: "Creature"))
            let pairs = Set(creatures.map { "\($0.attributeValue(forKey: "dnaCode")!.canonicalText):\($0.attributeValue(forKey: "numberOfFlagella")!.canonicalText)" })
            #expect(pairs == ["1001:4", "1002:0", "1003:2"])
        }
    }

    // MARK: Refusals

    /// `lade migrate` with `mapping` over `store`: exit 1 naming `expected`, the store byte for
    /// byte as it was, nothing new beside it.
    static func expectRefused(_ store: URL, bundle: URL, to version: String, mapping: URL, naming expected: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let directory = store.deletingLastPathComponent()
        let before = try Data(contentsOf: store)
        let listing = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasSuffix(".lade-lock") }.sorted()
        let run = try LadeProcess.run(["migrate", store.path, "--model", bundle.path, "--to", version, "--mapping", mapping.path])
        #expect(run.status == 1, "\(run.stdout)", sourceLocation: sourceLocation)
        #expect(run.stderr.contains("the mapping model cannot carry this store to the new version, nothing was changed"), "\(run.stderr)", sourceLocation: sourceLocation)
        for text in expected { #expect(run.stderr.contains(text), "\(text): \(run.stderr)", sourceLocation: sourceLocation) }
        #expect(try Data(contentsOf: store) == before, sourceLocation: sourceLocation)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasSuffix(".lade-lock") }.sorted() == listing, sourceLocation: sourceLocation)
    }

    @Test("CoreDataPlus V2toV3 (the document and the .cdm) is refused for its migration policy, before anything is written", arguments: [
        "MappingModels/V2toV3.xcmappingmodel", "Fixtures/V2toV3.cdm",
    ])
    func coreDataPlusRefused(mapping: String) throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("SampleModel_V2.sqlite")
        try copyWritable(at: Self.sampleModel.appendingPathComponent("Fixtures/SampleModel_V2.sqlite"), to: store)
        try Self.expectRefused(store, bundle: Self.sampleModel.appendingPathComponent("SampleModel.xcdatamodeld"), to: "SampleModel3",
                               mapping: Self.sampleModel.appendingPathComponent(mapping),
                               naming: ["SampleModel2 → SampleModel3", "V2to3MakerPolicy", "CarToCar, LuxuryCarToLuxuryCar, SportCarToSportCar"])
    }

    @Test("Moody 5 → 6 and UnCloudNotes v3 → v4 are refused for their migration policies")
    func policiesRefused() throws {
        let sandbox = try ImportSandbox()
        let moodyStore = sandbox.url("moody5.sqlite")
        let moodyBundle = Self.moody.appendingPathComponent("Moody.xcdatamodeld")
        #expect(try LadeProcess.run(["init", moodyStore.path, "--model", moodyBundle.path, "--model-version", "Moody 5"]).status == 0)
        try Self.expectRefused(moodyStore, bundle: moodyBundle, to: "Moody 6", mapping: Self.moody.appendingPathComponent("Moody 5-Moody 6.xcmappingmodel"),
                               naming: ["Country5ToCountry6Policy", "CountryToCountry"])
        let notesStore = sandbox.url("notes3.xml")
        #expect(try LadeProcess.run(["init", notesStore.path, "--model", Self.notesBundle.path, "--model-version", "UnCloudNotesDataModel v3"]).status == 0)
        try Self.expectRefused(notesStore, bundle: Self.notesBundle, to: "UnCloudNotesDataModel v4",
                               mapping: Self.unCloudNotes.appendingPathComponent("UnCloudNotesMappingModel_v3_to_v4.xcmappingmodel"),
                               naming: ["AttachmentToImageAttachmentMigrationPolicyV3toV4", "AttachmentToImageAttachment"])
    }

    @Test("a mapping model for versions the migration does not pass through is a usage error naming them")
    func wrongStep() throws {
        let sandbox = try ImportSandbox()
        let store = sandbox.url("moody.sqlite")
        try Self.moody2Store(at: store, type: .sqlite)
        let run = try LadeProcess.run(["migrate", store.path, "--model", Self.moody.appendingPathComponent("Moody.xcdatamodeld").path,
                                       "--to", "Moody 3", "--mapping", Self.mapping("Moody 4-Moody 5")])
        #expect(run.status == 1)
        #expect(run.stderr.contains("it maps Moody 4 → Moody 5, which is not a step of this migration (Moody 2 → Moody 3)"), "\(run.stderr)")
    }
}
