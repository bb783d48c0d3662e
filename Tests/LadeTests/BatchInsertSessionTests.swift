import Foundation
import Testing
@testable import Lade

/// Batch insert sessions: rows written straight into a SQLite store in one transaction, held
/// to what managed objects and a save write (every table, `Z_OPT` and `Z_MAX` included).
///
/// The model: `Part` has one attribute of every stored type (some with defaults, `key` and
/// `code` each a uniqueness constraint), `bin` (to-one; `Bin.parts` is its unordered to-many
/// inverse) and `label` (one-to-one with `Label.part`). `Bin.name` is unique.
@Suite("Batch insert sessions")
struct BatchInsertSessionTests {
    static let attributes = ["key", "code", "i16", "i32", "i64", "decimal", "double", "float", "text", "flag", "date", "blob", "uuid", "uri", "transformed"]

    static func model() throws -> ManagedObjectModel {
        func attribute(_ name: String, _ type: AttributeType, optional: Bool = true, _ defaultValue: AttributeValue? = nil) -> AttributeDescription {
            AttributeDescription(name: name, type: type, isOptional: optional, defaultValue: defaultValue)
        }
        return try ManagedObjectModel(entities: [
            EntityDescription(name: "Part", attributes: [
                attribute("key", .string, optional: false), attribute("code", .string),
                attribute("i16", .integer16, .integer(7)), attribute("i32", .integer32), attribute("i64", .integer64, .integer(-64)),
                attribute("decimal", .decimal, .decimal(Decimal(string: "2.25")!)), attribute("double", .double), attribute("float", .float, .float(0.5)),
                attribute("text", .string, .string("none")), attribute("flag", .boolean, optional: false, .bool(true)),
                attribute("date", .date, .date(Date(timeIntervalSinceReferenceDate: 86_400.5))), attribute("blob", .binary),
                attribute("uuid", .uuid), attribute("uri", .uri), attribute("transformed", .transformable),
            ], relationships: [
                RelationshipDescription(name: "bin", destinationEntityName: "Bin", inverseName: "parts"),
                RelationshipDescription(name: "label", destinationEntityName: "Label", inverseName: "part"),
            ], uniquenessConstraints: [["key"], ["code"]]),
            EntityDescription(name: "Bin", attributes: [attribute("name", .string, optional: false), attribute("shelf", .integer32)], relationships: [
                RelationshipDescription(name: "parts", destinationEntityName: "Part", inverseName: "bin", isToMany: true),
            ], uniquenessConstraints: [["name"]]),
            EntityDescription(name: "Label", attributes: [attribute("text", .string)], relationships: [
                RelationshipDescription(name: "part", destinationEntityName: "Part", inverseName: "label"),
            ]),
        ])
    }

    /// A part row: the given attributes (a nil value clears one; an absent one is not given)
    /// and its bin by name (`.none`: not given, `.some(nil)`: cleared).
    struct Part {
        var values: [String: AttributeValue?]
        var bin: String?? = .none
    }

    /// A bin row: name and shelf.
    typealias Bin = (name: String, shelf: Int64)

    /// Twelve parts: some with only the key (defaults apply), some with every value, some
    /// with nil for attributes that have defaults; most in one of three bins.
    static func firstRound() -> [Part] {
        (0..<12).map { i in
            var values: [String: AttributeValue?] = ["key": .string("P\(i)")]
            switch i % 4 {
            case 1:
                let n = Int64(i)
                values.merge([
                    "code": .string("C\(i)"), "i16": .integer(Int64(Int16.min) + n), "i32": .integer(Int64(Int32.max) - n), "i64": .integer(Int64.min + n),
                    "decimal": .decimal(Decimal(string: "12345.678\(i)")!), "double": .double(-1e-300 * Double(i)), "float": .float(Float(i) / 7),
                    "text": .string("Zoë ✓ 日本 \(i)"), "flag": .bool(false), "date": .date(Date(timeIntervalSinceReferenceDate: -1000.125 * Double(i))),
                    "blob": .binary(Data([0, UInt8(i), 255])), "uuid": .uuid(UUID(uuidString: "7F3C1C2E-9A4B-4B8E-9A0D-2F6E1B9D4C\(10 + i)")!),
                    "uri": .uri(URL(string: "https://example.com/p/\(i)?a=b%20c#d")!), "transformed": .binary(Data(repeating: UInt8(i), count: 5)),
                ]) { $1 }
            case 2: values.merge(["code": .string("C\(i)"), "i16": nil, "text": nil, "date": nil, "decimal": nil, "i32": .integer(Int64(i))]) { $1 }
            case 3: values.merge(["double": .double(Double(i) / 3), "flag": .bool(false), "blob": .binary(Data(count: i))]) { $1 }
            default: break
            }
            return Part(values: values, bin: i % 5 == 4 ? .none : .some("B\(i % 3)"))
        }
    }

    /// Changes to the first round: some parts given again as they are (unchanged), some with
    /// new or cleared values, some moved (to a bin inserted now, to one updated now, out of
    /// any), and two new parts.
    static func secondRound() -> [Part] {
        let first = firstRound()
        return [
            first[1],                                                                         // unchanged, every value given
            Part(values: ["key": .string("P0")]),                                            // unchanged, nothing but the key
            Part(values: first[5].values.merging(["text": .string("new"), "double": .double(2.5)]) { $1 }, bin: "B2"),  // updated, same bin
            Part(values: ["key": .string("P2")], bin: "B3"),                                 // moved to a new bin, out of B2
            Part(values: ["key": .string("P3")], bin: "B1"),                                 // moved from B0 to B1 (B1 updated too)
            Part(values: ["key": .string("P4"), "i64": .integer(4)], bin: "B0"),             // had no bin
            Part(values: ["key": .string("P6"), "i32": nil], bin: .some(nil)),               // out of B0, a value cleared
            Part(values: ["key": .string("P7"), "text": nil, "flag": .bool(true)], bin: "B1"),  // updated, same bin
            Part(values: ["key": .string("P12"), "code": .string("C12")], bin: "B2"),
            Part(values: ["key": .string("P13")], bin: "B3"),
            Part(values: ["key": .string("P5"), "i16": .integer(99)]),                       // duplicates: an object updated,
            Part(values: ["key": .string("P12"), "text": .string("twice")], bin: "B0"),      // one inserted, in this commit
        ]
    }

    static let firstBins: [Bin] = [("B0", 10), ("B1", 11), ("B2", 12)]
    static let secondBins: [Bin] = [("B0", 10), ("B1", 21), ("B3", 13)]

    // MARK: Writing both ways

    /// A SQLite store holding the first round's bins and parts, and a private-queue context on
    /// it; the caller removes `directory`.
    func storeWithFirstRound() throws -> (directory: URL, url: URL, context: ManagedObjectContext) {
        let directory = try Fixtures.temporaryDirectory()
        let url = directory.appendingPathComponent("parts.sqlite")
        let context = try privateContext(model: try Self.model(), store: url, type: .sqlite)
        try writeBatch(context, bins: Self.firstBins, parts: Self.firstRound())
        return (directory, url, context)
    }

    /// A save that writes (and takes back) a bin: it goes through only when no session holds
    /// the store's write lock. Call on the context's queue.
    func saveGoesThrough(_ context: ManagedObjectContext) throws {
        let bin = try context.insertObject(forEntityName: "Bin")
        try bin.setValue("B9", forKey: "name")
        context.delete(bin)
        try context.save()
    }

    /// Writes bins and parts in one session, committed; returns the parts' outcomes.
    @discardableResult
    func writeBatch(_ context: ManagedObjectContext, bins: [Bin], parts: [Part]) throws -> [BatchInsertSession.Outcome] {
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Part")
            let binTarget = try session.target(entityName: "Bin", attributes: ["name", "shelf"], key: ["name"])
            _ = try session.write(bins.map { .init(values: [.string($0.name), .integer($0.shelf)]) }, to: binTarget)
            let names = Set(parts.compactMap { $0.bin ?? nil }).map { AttributeValue.string($0) }
            let binIDs = try session.objectIDs(entityName: "Bin", attribute: "name", values: names)
            let target = try session.target(entityName: "Part", attributes: Self.attributes, relationships: ["bin"], key: ["key"])
            let rows = parts.map { part in
                BatchInsertSession.Row(values: Self.attributes.map { part.values[$0] }, destinations: [part.bin.map { $0.map { binIDs[.string($0)]! } }])
            }
            let outcomes = try #require(try session.write(rows, to: target))
            try session.commit()
            return outcomes
        }
    }

    /// The same through managed objects: each found by fetching its key or inserted, only the
    /// given values set, one save.
    func writeObjects(_ context: ManagedObjectContext, bins: [Bin], parts: [Part]) throws {
        try context.performAndWait {
            func find(_ entity: String, _ attribute: String, _ value: String) throws -> ManagedObject {
                let request = FetchRequest(entityName: entity, predicate: try FetchPredicate(format: "\(attribute) == %@", .string(value)))
                if let found = try context.fetch(request).first { return found }
                let object = try context.insertObject(forEntityName: entity)
                try object.setAttributeValue(.string(value), forKey: attribute)
                return object
            }
            for bin in bins { try find("Bin", "name", bin.name).setAttributeValue(.integer(bin.shelf), forKey: "shelf") }
            for part in parts {
                guard case .string(let key)?? = part.values["key"] else { Issue.record("no key"); return }
                let object = try find("Part", "key", key)
                for (name, value) in part.values { try object.setAttributeValue(value, forKey: name) }
                if case .some(let bin) = part.bin { try object.setObject(try bin.map { try find("Bin", "name", $0) }, forKey: "bin") }
            }
            try context.save()
        }
    }

    /// Every table but Z_METADATA (whose store UUID differs), row by row.
    func tables(_ url: URL) throws -> [String: [String]] { try BatchRequestTests().tables(url) }

    func expectSameTables(_ batchURL: URL, _ objectURL: URL, _ round: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let batch = try tables(batchURL), objects = try tables(objectURL)
        #expect(batch.keys.sorted() == objects.keys.sorted(), sourceLocation: sourceLocation)
        for table in objects.keys.sorted() {
            let onlyBatch = (batch[table] ?? []).filter { !(objects[table] ?? []).contains($0) }
            let onlyObjects = (objects[table] ?? []).filter { !(batch[table] ?? []).contains($0) }
            #expect(batch[table] == objects[table], "\(round): \(table) differs; batch only \(onlyBatch); objects only \(onlyObjects)", sourceLocation: sourceLocation)
        }
    }

    func opt(_ url: URL, _ table: String, _ column: String, _ value: String) throws -> [[SQLiteValue]] {
        try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT Z_OPT FROM \(table) WHERE \(column) = ?", [.text(value)])
    }

    // MARK: Tests

    @Test("the same rows through a session and through managed objects give identical stores: first inserts, then updates, unchanged rows and moves")
    func sessionMatchesObjects() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try Self.model()
        let batchURL = directory.appendingPathComponent("batch.sqlite"), objectURL = directory.appendingPathComponent("objects.sqlite")
        let batch = try privateContext(model: model, store: batchURL, type: .sqlite)
        let objects = try privateContext(model: model, store: objectURL, type: .sqlite)

        let first = try writeBatch(batch, bins: Self.firstBins, parts: Self.firstRound())
        #expect(first == (1...12).map { .inserted(ManagedObjectID(entityName: "Part", storeIdentifier: batch.persistentStoreCoordinator!.persistentStores[0].identifier, primaryKey: $0)) })
        try writeObjects(objects, bins: Self.firstBins, parts: Self.firstRound())
        try expectSameTables(batchURL, objectURL, "first round")

        let second = try writeBatch(batch, bins: Self.secondBins, parts: Self.secondRound())
        let kinds = second.map { outcome -> String in
            switch outcome {
            case .inserted: "inserted"
            case .updated: "updated"
            case .unchanged: "unchanged"
            case .duplicate: "duplicate"
            default: "\(outcome)"
            }
        }
        #expect(kinds == ["unchanged", "unchanged"] + Array(repeating: "updated", count: 6) + ["inserted", "inserted", "duplicate", "duplicate"])
        try writeObjects(objects, bins: Self.secondBins, parts: Self.secondRound())
        try expectSameTables(batchURL, objectURL, "second round")

        // Held to fixed values too, so both paths cannot be wrong alike.
        for url in [batchURL, objectURL] {
            #expect(try opt(url, "ZPART", "ZKEY", "P1") == [[.integer(1)]], "unchanged: nothing written")
            #expect(try opt(url, "ZPART", "ZKEY", "P3") == [[.integer(2)]])
            #expect(try opt(url, "ZPART", "ZKEY", "P5") == [[.integer(2)]], "updated by two rows: advanced once")
            #expect(try opt(url, "ZPART", "ZKEY", "P12") == [[.integer(1)]], "inserted, then changed, in one commit")
            #expect(try opt(url, "ZBIN", "ZNAME", "B0") == [[.integer(2)]], "lost P3 and P6, gained P4 and P12: advanced once")
            #expect(try opt(url, "ZBIN", "ZNAME", "B1") == [[.integer(2)]], "shelf changed and gained P3: advanced once")
            #expect(try opt(url, "ZBIN", "ZNAME", "B3") == [[.integer(1)]], "inserted in this commit")
        }
        #expect(try SQLiteStore(url: batchURL, model: model, readOnly: true).damage(thorough: true) == [])
    }

    @Test("each row's outcome: inserted, updated, unchanged, duplicate, kept, missing and refused")
    func outcomes() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("parts.sqlite")
        let context = try privateContext(model: try Self.model(), store: url, type: .sqlite)
        func row(_ key: String, _ code: String? = nil, text: String? = nil, mayInsert: Bool = true) -> BatchInsertSession.Row {
            .init(values: [.string(key), code.map { .string($0) }, text.map { .string($0) }], mayInsert: mayInsert)
        }
        try context.performAndWait {
            let id = { (key: Int64) in ManagedObjectID(entityName: "Part", storeIdentifier: context.persistentStoreCoordinator!.persistentStores[0].identifier, primaryKey: key) }
            let first = try context.beginBatchInsert(entityName: "Part")
            let upsert = try first.target(entityName: "Part", attributes: ["key", "code", "text"], key: ["key"])
            #expect(try first.write([row("a", "A", text: "x"), row("b", "B", text: "y"), row("z", "Z", text: "z")], to: upsert) == [.inserted(id(1)), .inserted(id(2)), .inserted(id(3))])
            try first.commit()

            let session = try context.beginBatchInsert(entityName: "Part")
            let target = try session.target(entityName: "Part", attributes: ["key", "code", "text"], key: ["key"])
            let outcomes = try session.write([
                row("a", "A", text: "x"),           // as stored
                row("b", "B", text: "changed"),
                row("c", "C"),
                row("c", "C", text: "again"),       // the key of a row before it
                row("b", "B", text: "changed"),     // an object this session changed
                row("d", "A"),                      // code A is a's
                row("a", "B"),                      // code B is b's
                row("e", mayInsert: false),
            ], to: target)
            let found = try #require(outcomes)
            #expect(Array(found[0..<5]) == [.unchanged(id(1)), .updated(id(2)), .inserted(id(4)), .duplicate(id(4)), .duplicate(id(2))])
            for (index, outcome) in found[5..<7].enumerated() {
                guard case .refused(let property, let message, _) = outcome else { Issue.record("row \(index + 5): \(outcome)"); continue }
                #expect(property == "code" && message.contains("uniqueness constraint"), "\(message)")
            }
            #expect(found[7] == .missing)

            let decimal = try session.target(entityName: "Part", attributes: ["key", "decimal"], key: ["key"])
            let refused = try #require(try session.write([.init(values: [.string("f"), .decimal(Decimal(string: "1234567890.12345671")!)])], to: decimal))
            guard case .refused("decimal", let message, let value)? = refused.first else { Issue.record("\(refused)"); return }
            #expect(message.contains("18 significant digits") && value?.contains("1234567890.12345671") == true, "\(message) \(String(describing: value))")

            let keep = try session.target(entityName: "Part", attributes: ["key", "code", "text"], key: ["key"], onConflict: .keep)
            #expect(try session.write([row("z", "Z", text: "kept?"), row("c", "C", text: "third?")], to: keep) == [.kept(id(3)), .kept(id(4))])
            let onlyExisting = try session.target(entityName: "Part", attributes: ["key", "code", "text"], key: ["key"], insertsMissing: false)
            #expect(try session.write([row("g"), row("z", "Z", text: "z")], to: onlyExisting) == [.missing, .unchanged(id(3))])
            try session.commit()
        }
        let rows = try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT ZKEY, ZCODE, ZTEXT FROM ZPART ORDER BY Z_PK")
        #expect(rows == [[.text("a"), .text("A"), .text("x")], [.text("b"), .text("B"), .text("changed")], [.text("z"), .text("Z"), .text("z")], [.text("c"), .text("C"), .text("again")]])
        #expect(try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Part'") == [[.integer(4)]])
    }

    @Test("a batch refused by accept, or a batch block returning nil, is undone alone; rollback leaves the store as it was")
    func savepoints() throws {
        let (directory, url, context) = try storeWithFirstRound()
        defer { try? FileManager.default.removeItem(at: directory) }
        let before = try tables(url)
        func row(_ key: String, text: String, bin: ManagedObjectID?) -> BatchInsertSession.Row {
            .init(values: [.string(key), .string(text)], destinations: [bin])
        }
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Part")
            let target = try session.target(entityName: "Part", attributes: ["key", "text"], relationships: ["bin"], key: ["key"])
            let bins = try session.objectIDs(entityName: "Bin", attribute: "name", values: [.string("B0"), .string("B1"), .string("B2")])
            let b0 = bins[.string("B0")]!, b1 = bins[.string("B1")]!, b2 = bins[.string("B2")]!
            #expect(try session.write([row("N1", text: "kept", bin: b0)], to: target)?.count == 1)
            var seen: [BatchInsertSession.Outcome] = []
            // Refused: a new part in B1, and P0 (in B0) changed and moved to B2.
            #expect(try session.write([row("N2", text: "gone", bin: b1), row("P0", text: "gone", bin: b2)], to: target, accept: { seen = $0; return false }) == nil)
            #expect(seen.count == 2)
            let nested: Int? = try session.batch {
                _ = try session.write([row("N3", text: "gone", bin: b1)], to: target)
                _ = try session.write([row("P1", text: "gone", bin: b2)], to: target)
                return nil
            }
            #expect(nested == nil)
            #expect(try session.write([row("N4", text: "kept", bin: nil)], to: target)?.count == 1)
            try session.commit()
        }
        let connection = try SQLiteConnection(path: url.path, mode: .readOnly)
        #expect(try connection.rows("SELECT ZKEY, Z_PK FROM ZPART WHERE ZTEXT = 'kept' ORDER BY Z_PK") == [[.text("N1"), .integer(13)], [.text("N4"), .integer(14)]])
        #expect(try connection.rows("SELECT COUNT(*) FROM ZPART WHERE ZTEXT = 'gone' OR ZKEY IN ('N2', 'N3')") == [[.integer(0)]])
        #expect(try connection.rows("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Part'") == [[.integer(14)]])
        // Only B0 gained a part that stayed; B1 and B2 are as they were.
        #expect(try connection.rows("SELECT ZNAME, Z_OPT FROM ZBIN ORDER BY Z_PK") == [[.text("B0"), .integer(2)], [.text("B1"), .integer(1)], [.text("B2"), .integer(1)]])
        #expect(try connection.rows("SELECT Z_OPT FROM ZPART WHERE ZKEY IN ('P0', 'P1')") == [[.integer(1)], [.integer(1)]])

        let committed = try tables(url)
        #expect(committed != before)
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Part")
            let target = try session.target(entityName: "Part", attributes: ["key", "text"], relationships: ["bin"], key: ["key"])
            let b1 = try #require(try session.objectIDs(entityName: "Bin", attribute: "name", values: [.string("B1")]).values.first)
            _ = try session.write([row("R1", text: "rolled back", bin: b1), row("P2", text: "rolled back", bin: b1)], to: target)
            session.rollback()
            // The write lock is free again: a save goes through.
            try saveGoesThrough(context)
        }
        #expect(try tables(url) == committed)
    }

    @Test("after SQLite rolls the session's transaction back on its own, a write or commit ends the session instead of committing alone")
    func rolledBackBySQLite() throws {
        let (directory, url, context) = try storeWithFirstRound()
        defer { try? FileManager.default.removeItem(at: directory) }
        let before = try tables(url)
        for undoable in [true, false] {
            try context.performAndWait {
                let session = try context.beginBatchInsert(entityName: "Part")
                let target = try session.target(entityName: "Part", attributes: ["key", "text"], key: ["key"])
                _ = try session.write([.init(values: [.string("S1"), .string("lost")])], to: target, undoable: undoable)
                // What SQLite does after some errors: the transaction is gone, autocommit is back.
                let store = try #require(try context.coordinator().store(forEntity: "Part") as? SQLiteStore)
                try store.withConnection { try $0.execute("ROLLBACK") }
                #expect(performing: {
                    try session.write([.init(values: [.string("S2"), .string("alone")])], to: target, undoable: undoable)
                }, throws: { error in
                    guard let error = error as? StoreError, case .io = error.kind else { return false }
                    return error.message.contains("rolled the batch insert session's transaction back")
                })
                #expect(throws: (any Error).self) { try session.commit() }
                try saveGoesThrough(context)
            }
            // Without the check, S2 was committed on its own (its savepoint, or no savepoint, outside a transaction).
            #expect(try tables(url) == before, "undoable: \(undoable)")
        }
    }

    @Test("mayRefuse: a batch can be refused past a limit only by another uniqueness constraint, rows that may not insert, or values the store cannot keep")
    func mayRefuse() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = try privateContext(model: try Self.model(), store: directory.appendingPathComponent("parts.sqlite"), type: .sqlite)
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Part")
            defer { session.rollback() }
            let bins = try session.target(entityName: "Bin", attributes: ["name", "shelf"], key: ["name"])
            let rows: [BatchInsertSession.Row] = [.init(values: [.string("B0"), .integer(1)]), .init(values: [.string("B1"), nil])]
            #expect(!session.mayRefuse(rows, to: bins, moreThan: 0))
            let oneMayMiss = rows + [.init(values: [.string("B2"), .integer(2)], mayInsert: false)]
            #expect(session.mayRefuse(oneMayMiss, to: bins, moreThan: 0))
            #expect(!session.mayRefuse(oneMayMiss, to: bins, moreThan: 1))
            let onlyExisting = try session.target(entityName: "Bin", attributes: ["name", "shelf"], key: ["name"], insertsMissing: false)
            #expect(session.mayRefuse(rows, to: onlyExisting, moreThan: 1))
            #expect(!session.mayRefuse(rows, to: onlyExisting, moreThan: 2))
            // Part has a second uniqueness constraint (code): any row may break it.
            let parts = try session.target(entityName: "Part", attributes: ["key"], key: ["key"])
            let partRows: [BatchInsertSession.Row] = [.init(values: [.string("P0")]), .init(values: [.string("P1")])]
            #expect(session.mayRefuse(partRows, to: parts, moreThan: 1))
            #expect(!session.mayRefuse(partRows, to: parts, moreThan: 2))
            // Labels have no uniqueness constraint and no key: every row inserts.
            let labels = try session.target(entityName: "Label", attributes: ["text"], key: [])
            #expect(!session.mayRefuse([.init(values: [.string("a")]), .init(values: [nil])], to: labels, moreThan: 0))
            // A value the store cannot keep, set after the row was made, is seen by both.
            let decimals = try session.target(entityName: "Label", attributes: ["text"], key: [])
            var row = BatchInsertSession.Row(values: [.string("fine")])
            #expect(!session.mayRefuse([row], to: decimals, moreThan: 0))
            row.values[0] = .decimal(Decimal(string: "1234567890.12345671")!)
            #expect(session.mayRefuse([row], to: decimals, moreThan: 0))
            guard case .refused("text", let message, _)? = try session.write([row], to: decimals)?.first else { Issue.record("not refused"); return }
            #expect(message.contains("18 significant digits"), "\(message)")
            row.values = [.string("fine again")]
            #expect(!session.mayRefuse([row], to: decimals, moreThan: 0))
        }
    }

    @Test("a row that would insert with a model default the store cannot keep exactly is refused, and mayRefuse says so; it still updates an existing object, and one that gives the value inserts")
    func unkeepableDefault() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "key", type: .string, isOptional: false), AttributeDescription(name: "qty", type: .integer32),
                AttributeDescription(name: "amount", type: .decimal, defaultValue: .decimal(Decimal(string: "1234567890.12345671")!)),
            ], uniquenessConstraints: [["key"]]),
        ])
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("items.sqlite")
        let context = try privateContext(model: model, store: url, type: .sqlite)
        try context.performAndWait {
            let first = try context.beginBatchInsert(entityName: "Item")
            let withAmount = try first.target(entityName: "Item", attributes: ["key", "qty", "amount"], key: ["key"])
            #expect(try first.write([.init(values: [.string("a"), .integer(1), .decimal(2)])], to: withAmount)?.count == 1)
            try first.commit()

            let session = try context.beginBatchInsert(entityName: "Item")
            let target = try session.target(entityName: "Item", attributes: ["key", "qty"], key: ["key"])
            let rows: [BatchInsertSession.Row] = [.init(values: [.string("a"), .integer(5)]), .init(values: [.string("b"), .integer(6)])]
            #expect(session.mayRefuse(rows, to: target, moreThan: 1))
            let outcomes = try #require(try session.write(rows, to: target))
            #expect(outcomes.first.map { if case .updated = $0 { true } else { false } } == true, "\(outcomes)")
            guard case .refused("amount", let message, _)? = outcomes.last else { Issue.record("\(outcomes)"); return }
            #expect(message.hasPrefix("takes the model's default, which has 18 significant digits"), "\(message)")
            let given = try session.target(entityName: "Item", attributes: ["key", "amount"], key: ["key"])
            #expect(try session.write([.init(values: [.string("c"), .none])], to: given)?.first.map { if case .refused = $0 { true } else { false } } == true)
            #expect(try session.write([.init(values: [.string("c"), .decimal(3)])], to: given)?.first.map { if case .inserted = $0 { true } else { false } } == true)
            try session.commit()
        }
        let rows = try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT ZKEY, ZQTY, ZAMOUNT FROM ZITEM ORDER BY Z_PK")
        #expect(rows == [[.text("a"), .integer(5), .integer(2)], [.text("c"), .null, .integer(3)]])
    }

    @Test("a batch written with undoable: false gives the same store as one in a savepoint; refused or failed, it rolls the whole session back")
    func notUndoable() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "key", type: .string, isOptional: false), AttributeDescription(name: "amount", type: .decimal),
            ], uniquenessConstraints: [["key"]]),
        ])
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func item(_ key: String, _ amount: String) -> BatchInsertSession.Row { .init(values: [.string(key), .decimal(Decimal(string: amount)!)]) }
        let first = [item("a", "1.5"), item("b", "2"), item("a", "3.25")]
        let second = [item("c", "4"), item("b", "2"), item("d", "-0.5")]
        var stores: [URL] = []
        for undoable in [true, false] {
            let url = directory.appendingPathComponent("items-\(undoable).sqlite")
            stores.append(url)
            let context = try privateContext(model: model, store: url, type: .sqlite)
            try context.performAndWait {
                for rows in [first, second] {
                    let session = try context.beginBatchInsert(entityName: "Item")
                    let target = try session.target(entityName: "Item", attributes: ["key", "amount"], key: ["key"])
                    #expect(!session.mayRefuse(rows, to: target, moreThan: 0))
                    #expect(try session.write(rows, to: target, undoable: undoable)?.count == 3)
                    try session.commit()
                }
            }
        }
        #expect(try tables(stores[0]) == tables(stores[1]))

        let url = stores[1]
        let committed = try tables(url)
        let context = try privateContext(model: model, store: url, type: .sqlite)
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Item")
            let target = try session.target(entityName: "Item", attributes: ["key", "amount"], key: ["key"])
            #expect(try session.write([item("e", "5")], to: target, undoable: false)?.count == 1)
            // 18 significant digits, and no double reads back as it: refused by the store, and mayRefuse says so.
            let refused = [item("f", "6"), item("g", "1234567890.12345671")]
            #expect(session.mayRefuse(refused, to: target, moreThan: 0))
            #expect(!session.mayRefuse(refused, to: target, moreThan: 1))
            #expect(throws: BatchInsertSession.Unsupported.self) {
                try session.write(refused, to: target, undoable: false) { outcomes in !outcomes.contains { if case .refused = $0 { true } else { false } } }
            }
            // The session is over: e, written before, is gone with it, and commit says so.
            #expect(throws: BatchInsertSession.Unsupported.self) { try session.commit() }
            // An error inside a block that is not undoable rolls back as well.
            let again = try context.beginBatchInsert(entityName: "Item")
            let itemTarget = try again.target(entityName: "Item", attributes: ["key", "amount"], key: ["key"])
            struct Stop: Error {}
            #expect(throws: Stop.self) {
                _ = try again.batch(undoable: false) { () -> Int? in
                    _ = try again.write([item("h", "7")], to: itemTarget, undoable: false)
                    throw Stop()
                }
            }
            #expect(throws: BatchInsertSession.Unsupported.self) { try again.commit() }
        }
        #expect(try tables(url) == committed)
    }

    @Test("metadata staged on the coordinator is written by commit, in its transaction, and not by rollback")
    func metadata() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for commits in [true, false] {
            let url = directory.appendingPathComponent("\(commits).sqlite")
            let context = try privateContext(model: try Self.model(), store: url, type: .sqlite)
            try context.performAndWait {
                let coordinator = try #require(context.persistentStoreCoordinator)
                let store = coordinator.persistentStores[0]
                var metadata = coordinator.metadata(for: store)
                metadata["checkpoint"] = .string("line 42")
                try coordinator.setMetadata(metadata, for: store)
                let session = try context.beginBatchInsert(entityName: "Part")
                let target = try session.target(entityName: "Part", attributes: ["key"], key: ["key"])
                _ = try session.write([.init(values: [.string("a")])], to: target)
                if commits { try session.commit() } else { session.rollback() }
            }
            let stored = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
            #expect(stored["checkpoint"] == (commits ? .string("line 42") : nil), "commit: \(commits)")
            #expect(stored[StoreMetadata.Key.storeUUID] != nil)
            let count = try SQLiteConnection(path: url.path, mode: .readOnly).rows("SELECT COUNT(*) FROM ZPART")
            #expect(count == [[.integer(commits ? 1 : 0)]])
        }
    }

    @Test("a key that is no uniqueness constraint, a one-to-one relationship, and a store that is not SQLite are unsupported")
    func unsupported() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try Self.model()
        let url = directory.appendingPathComponent("parts.sqlite")
        let context = try privateContext(model: model, store: url, type: .sqlite)
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Part")
            defer { session.rollback() }
            #expect(throws: BatchInsertSession.Unsupported.self) { try session.target(entityName: "Part", attributes: ["key", "text"], key: ["text"]) }
            #expect(throws: BatchInsertSession.Unsupported.self) { try session.target(entityName: "Part", attributes: ["key"], key: ["key", "code"]) }
            let error = #expect(throws: BatchInsertSession.Unsupported.self) {
                try session.target(entityName: "Part", attributes: ["key"], relationships: ["label"], key: ["key"])
            }
            #expect(error?.reason.contains("a to-one") == true, "\(String(describing: error))")
            // The same session still takes a supported target.
            _ = try session.target(entityName: "Part", attributes: ["key"], relationships: ["bin"], key: ["key"])
        }
        for type in [PersistentStoreCoordinator.StoreType.inMemory, .xml] {
            let other = try privateContext(model: model, store: directory.appendingPathComponent("parts.\(type.name)"), type: type)
            _ = other.performAndWait {
                #expect(throws: BatchInsertSession.Unsupported.self, "\(type)") { try other.beginBatchInsert(entityName: "Part") }
            }
        }
    }

    @Test("a name the entity has no stored attribute or to-one for is the context's unknownKey, from target and from objectIDs")
    func unknownNames() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = try privateContext(model: try Self.model(), store: directory.appendingPathComponent("parts.sqlite"), type: .sqlite)
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Part")
            defer { session.rollback() }
            func isUnknownKey(_ error: any Error, _ key: String) -> Bool {
                guard case ContextError.unknownKey(entity: "Part", key: key) = error else { return false }
                return true
            }
            #expect(performing: { try session.target(entityName: "Part", attributes: ["key", "colour"], key: ["key"]) },
                    throws: { isUnknownKey($0, "colour") })
            #expect(performing: { try session.target(entityName: "Part", attributes: ["key"], relationships: ["parts"], key: ["key"]) },
                    throws: { isUnknownKey($0, "parts") })
            #expect(performing: { try session.objectIDs(entityName: "Part", attribute: "colour", values: [.string("red")]) },
                    throws: { isUnknownKey($0, "colour") })
        }
    }
}
