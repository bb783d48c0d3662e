import Foundation
import Testing
@testable import Lade

/// A batch insert's rows found together (`key IN (…)`, a chunk at a time) before the batch is
/// written, against the same rows looked up one by one: the same outcomes and the same store.
/// And the pieces it stands on: a stored value compared in place, a decimal's nearest double.
@Suite("Batch lookups")
struct BatchLookupTests {
    typealias Part = BatchInsertSessionTests.Part
    static let attributes = BatchInsertSessionTests.attributes

    /// Part `i` of the stored round: every attribute type, in one of three bins.
    static func stored(_ i: Int) -> Part {
        let n = Int64(i)
        let values: [String: AttributeValue?] = [
            "key": .string(String(format: "P%03d", i)), "code": .string("C\(i)"), "i16": .integer(n % 300 - 150), "i32": .integer(n * 1000), "i64": .integer(-n),
            "decimal": .decimal(Decimal(string: "\(i).\(i % 100)")!), "double": .double(Double(i) / 7), "float": .float(Float(i) / 4),
            "text": i % 7 == 0 ? nil : .string("Zoë \(i)"), "flag": .bool(i % 2 == 0), "date": .date(Date(timeIntervalSinceReferenceDate: 1000.5 * Double(i))),
            "blob": .binary(Data([UInt8(i % 256), 1])), "uuid": nil, "uri": .uri(URL(string: "https://example.com/\(i)")!), "transformed": nil,
        ]
        return Part(values: values, bin: .some("B\(i % 3)"))
    }

    /// The batch under test, in the key's byte order (as `lade run` gives rows): parts as
    /// stored, changed in each kind of value, moved, cleared, given by key alone; new keys
    /// between them; duplicates; and a key that equals a stored one under Swift's canonical
    /// equivalence but not in SQLite (NFD "é" beside the stored NFC one).
    static func batch(_ range: Range<Int> = 0..<500, composedKeys: Bool = true) -> [Part] {
        var parts: [Part] = []
        for i in range {
            var part = stored(i)
            switch i % 6 {
            case 0: break
            case 1: part.values["text"] = .string("changed \(i)")
            case 2: part.values["decimal"] = .decimal(Decimal(string: "\(i).5")!); part.values["date"] = nil
            case 3: part.bin = i % 4 == 3 ? .some(nil) : .some("B\((i + 1) % 3)")
            case 4: part = Part(values: ["key": part.values["key"]!])
            default: part.values["i16"] = .integer(7); part.values["double"] = .double(-0.0)
            }
            parts.append(part)
            if i % 50 == 10 {
                parts.append(Part(values: ["key": .string(String(format: "P%03d", i) + "5"), "text": .string("new \(i)")], bin: .some("B1")))
            }
            if i % 97 == 5 {
                parts.append(Part(values: ["key": .string(String(format: "P%03d", i)), "text": .string("twice \(i)")]))
            }
        }
        guard composedKeys else { return parts }
        parts.append(Part(values: ["key": .string("Pe\u{301}"), "text": .string("decomposed")]))
        parts.append(Part(values: ["key": .string("P\u{E9}"), "text": .string("composed, changed")]))
        return parts
    }

    /// A store holding the stored round (and the composed "Pé"); the caller removes the directory.
    func store() throws -> (directory: URL, url: URL, context: ManagedObjectContext) {
        let directory = try Fixtures.temporaryDirectory()
        let url = directory.appendingPathComponent("parts.sqlite")
        let context = try privateContext(model: try BatchInsertSessionTests.model(), store: url, type: .sqlite)
        var parts = (0..<500).map(Self.stored)
        parts.append(Part(values: ["key": .string("P\u{E9}"), "text": .string("composed")]))
        try BatchInsertSessionTests().writeBatch(context, bins: BatchInsertSessionTests.firstBins, parts: parts)
        return (directory, url, context)
    }

    /// Writes `parts` in one session to a target whose last batch found most of its rows in
    /// the store (as after a first batch of a re-run), so each row is looked up; returns the
    /// outcomes (kind and `Z_PK`: the stores' identifiers differ) and how many rows were
    /// found together.
    func write(_ parts: [Part], into context: ManagedObjectContext, together: Bool) throws -> (outcomes: [String], foundTogether: Int) {
        try context.performAndWait {
            let session = try context.beginBatchInsert(entityName: "Part")
            session.sqlite.findsRowsTogether = together
            let names = ["B0", "B1", "B2"].map { AttributeValue.string($0) }
            let bins = try session.objectIDs(entityName: "Bin", attribute: "name", values: names)
            let target = try session.target(entityName: "Part", attributes: Self.attributes, relationships: ["bin"], key: ["key"])
            target.plan.mostlyExisting = true
            let rows = parts.map { part in
                BatchInsertSession.Row(values: Self.attributes.map { part.values[$0] }, destinations: [part.bin.map { $0.map { bins[.string($0)]! } }])
            }
            let outcomes = try #require(try session.write(rows, to: target))
            try session.commit()
            return (outcomes.map(Self.shown), session.sqlite.rowsFoundTogether)
        }
    }

    /// An outcome without the store's identifier: its kind and the row's `Z_PK`.
    static func shown(_ outcome: BatchInsertSession.Outcome) -> String {
        switch outcome {
        case .inserted(let id): "inserted \(id.primaryKey ?? 0)"
        case .updated(let id): "updated \(id.primaryKey ?? 0)"
        case .unchanged(let id): "unchanged \(id.primaryKey ?? 0)"
        case .duplicate(let id): "duplicate \(id.primaryKey ?? 0)"
        case .kept(let id): "kept \(id.primaryKey ?? 0)"
        case .missing: "missing"
        case .refused(let property, let message, _): "refused \(property) \(message)"
        }
    }

    /// Every table's rows, text compared by its bytes.
    func tables(_ url: URL) throws -> [String: [[UInt8]]] {
        try BatchRequestTests().tables(url).mapValues { $0.map { Array($0.utf8) } }
    }

    @Test("rows found together give the outcomes and the store of rows looked up one by one: unchanged, updated, moved, new, duplicate, and a key equal only under canonical equivalence")
    func togetherMatchesOneByOne() throws {
        let batch = Self.batch()
        #expect(batch.map { Array(($0.values["key"]!!.stringValue ?? "").utf8) }.isSorted(), "the batch comes in the key's byte order")
        let together = try store(), oneByOne = try store()
        defer {
            try? FileManager.default.removeItem(at: together.directory)
            try? FileManager.default.removeItem(at: oneByOne.directory)
        }
        let found = try write(batch, into: together.context, together: true)
        let looked = try write(batch, into: oneByOne.context, together: false)
        #expect(found.foundTogether == 501, "each stored key's first row (and the composed \"Pé\") found its stored row together")
        #expect(looked.foundTogether == 0)
        #expect(found.outcomes == looked.outcomes)
        var kinds: [String: Int] = [:]
        for outcome in found.outcomes { kinds[String(outcome.prefix { $0 != " " }), default: 0] += 1 }
        #expect(kinds["inserted"] == 11 && kinds["duplicate"] == 6 && kinds["other"] == nil, "\(kinds)")
        #expect((kinds["updated"] ?? 0) > 300 && (kinds["unchanged"] ?? 0) > 100, "\(kinds)")
        #expect(try tables(together.url) == tables(oneByOne.url))
        let keys = try SQLiteConnection(path: together.url.path, mode: .readOnly).rows("SELECT ZTEXT FROM ZPART WHERE ZKEY IN ('P\u{E9}', 'Pe\u{301}') ORDER BY Z_PK")
        #expect(keys == [[.text("composed, changed")], [.text("decomposed")]])
    }

    @Test("a target expects existing rows once a batch found most of its rows; a new target told so finds its first batch's rows together")
    func expectsExistingRows() throws {
        let store = try store()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        try store.context.performAndWait {
            let session = try store.context.beginBatchInsert(entityName: "Part")
            defer { session.rollback() }
            let rows = (0..<20).map(Self.stored).map { part in BatchInsertSession.Row(values: Self.attributes.map { part.values[$0] }) }
            let first = try session.target(entityName: "Part", attributes: Self.attributes, key: ["key"])
            #expect(!first.expectsExistingRows)
            _ = try session.write(rows, to: first)
            #expect(first.expectsExistingRows)
            #expect(session.sqlite.rowsFoundTogether == 0, "a new target tries to insert first")
            let second = try session.target(entityName: "Part", attributes: Self.attributes, key: ["key"])
            second.expectsExistingRows = true
            #expect(try session.write(rows, to: second)?.count == 20)
            #expect(session.sqlite.rowsFoundTogether == 20)
        }
    }

    @Test("a stored value that cannot be the attribute's type fails the batch when a row is written over it, found together or one by one; a row kept by policy is not failed for it", arguments: [true, false])
    func damagedStoredValue(together: Bool) throws {
        let store = try store()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let writer = try SQLiteConnection(path: store.url.path, mode: .readWrite(create: false))
        try writer.execute("UPDATE ZPART SET ZI32 = 'many' WHERE ZKEY = 'P101'")
        let before = try tables(store.url)
        try store.context.performAndWait {
            let session = try store.context.beginBatchInsert(entityName: "Part")
            defer { session.rollback() }
            session.sqlite.findsRowsTogether = together
            let rows = Self.batch().map { part in BatchInsertSession.Row(values: Self.attributes.map { part.values[$0] }) }
            let update = try session.target(entityName: "Part", attributes: Self.attributes, key: ["key"])
            update.expectsExistingRows = true
            let error = #expect(throws: StoreError.self) { try session.write(rows, to: update) }
            guard case .damaged(let damage)? = error?.kind else { Issue.record("not damage: \(String(describing: error))"); return }
            #expect(damage.first?.kind == .wrongType && damage.first?.place == "Part.i32", "\(damage)")
            #expect(damage.first?.example.contains("TEXT \"many\" in ZI32") == true, "\(damage)")
            let keep = try session.target(entityName: "Part", attributes: Self.attributes, key: ["key"], onConflict: .keep)
            keep.expectsExistingRows = true
            let kept = try #require(try session.write(rows, to: keep))
            #expect(kept.allSatisfy { if case .kept = $0 { true } else if case .inserted = $0 { true } else { false } }, "\(kept.map(Self.shown))")
        }
        #expect(try tables(store.url) == before)
    }

    @Test("after a batch whose stored rows lay together, the next batch's rows are found by their place (as in a re-run of the source the store was loaded from), with the outcomes and the store of rows looked up one by one; rows not where expected are found by key")
    func foundByPlace() throws {
        // Loaded as a load writes them: 1,000 parts in the key's order, `Z_PK` 1 to 1,000.
        // Then three batches: the first half (found by key: nothing to go by yet), the second
        // half changed here and there, with new keys and duplicates (found by place, after the
        // first half's `Z_PK`s), and the first 100 again (not after the second half's: by key).
        let batches = [Self.batch(0..<500, composedKeys: false), Self.batch(500..<1000, composedKeys: false), Self.batch(0..<100, composedKeys: false)]
        func run(together: Bool) throws -> (outcomes: [String], inPlace: Int, all: Int, tables: [String: [[UInt8]]]) {
            let directory = try Fixtures.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let url = directory.appendingPathComponent("parts.sqlite")
            let context = try privateContext(model: try BatchInsertSessionTests.model(), store: url, type: .sqlite)
            _ = try BatchInsertSessionTests().writeBatch(context, bins: BatchInsertSessionTests.firstBins, parts: (0..<1000).map(Self.stored))
            let (outcomes, inPlace, all) = try context.performAndWait {
                let session = try context.beginBatchInsert(entityName: "Part")
                session.sqlite.findsRowsTogether = together
                let bins = try session.objectIDs(entityName: "Bin", attribute: "name", values: ["B0", "B1", "B2"].map { AttributeValue.string($0) })
                let target = try session.target(entityName: "Part", attributes: Self.attributes, relationships: ["bin"], key: ["key"])
                target.plan.mostlyExisting = true
                var outcomes: [String] = []
                for parts in batches {
                    let rows = parts.map { part in
                        BatchInsertSession.Row(values: Self.attributes.map { part.values[$0] }, destinations: [part.bin.map { $0.map { bins[.string($0)]! } }])
                    }
                    outcomes += try #require(try session.write(rows, to: target)).map(Self.shown)
                }
                try session.commit()
                return (outcomes, session.sqlite.rowsFoundInPlace, session.sqlite.rowsFoundTogether)
            }
            return (outcomes, inPlace, all, try tables(url))
        }
        let found = try run(together: true), looked = try run(together: false)
        // By place: the second half's 500, and two of the last batch's: the keys the first
        // batch added (`Z_PK` 1,001 and 1,002, right after the second half's rows).
        #expect(found.inPlace == 502, "the second half's stored rows were found by their place")
        #expect(found.all == 1102, "and every stored key's first row found its stored row, by place or by key")
        #expect(looked.all == 0)
        #expect(found.outcomes == looked.outcomes)
        #expect(found.outcomes.filter { $0.hasPrefix("inserted") }.count == 20 && found.outcomes.filter { $0.hasPrefix("updated") }.count > 500)
        #expect(found.tables == looked.tables)
    }

    @Test("rows with an integer key found together give the outcomes and the store of rows looked up one by one; so do text keys bound in place, the empty one among them")
    func integerAndEmptyKeysTogether() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Tag", attributes: [
                AttributeDescription(name: "number", type: .integer64, isOptional: false), AttributeDescription(name: "name", type: .string),
            ], uniquenessConstraints: [["number"]]),
            EntityDescription(name: "Word", attributes: [
                AttributeDescription(name: "text", type: .string, isOptional: false), AttributeDescription(name: "count", type: .integer32),
            ], uniquenessConstraints: [["text"]]),
        ])
        // Stored: numbers -150…149 and words "", "w000"…; the batch (in key order) keeps some,
        // changes some, adds keys between them and repeats one.
        func tags(_ numbers: [Int64], _ name: (Int64) -> String) -> [BatchInsertSession.Row] {
            numbers.map { BatchInsertSession.Row(values: [.some(.integer($0)), .some(.string(name($0)))]) }
        }
        func words(_ texts: [String], _ count: (String) -> Int64) -> [BatchInsertSession.Row] {
            texts.map { BatchInsertSession.Row(values: [.some(.string($0)), .some(.integer(count($0)))]) }
        }
        let storedNumbers = Array(Int64(-150)..<150)
        let storedWords = [""] + (0..<300).map { String(format: "w%03d", $0) }
        var batchNumbers = storedNumbers.flatMap { $0 % 40 == 7 ? [$0, $0 + 1_000] : [$0] }.sorted()
        batchNumbers.insert(12, at: batchNumbers.firstIndex(of: 12)!)
        let batchWords = storedWords.flatMap { $0.hasSuffix("7") ? [$0, $0 + "x"] : [$0] }
        #expect(batchWords.map { Array($0.utf8) }.isSorted())
        func run(together: Bool) throws -> (outcomes: [String], foundTogether: Int, tables: [String: [String]]) {
            let directory = try Fixtures.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let url = directory.appendingPathComponent("keys.sqlite")
            let context = try privateContext(model: model, store: url, type: .sqlite)
            let result = try context.performAndWait {
                let first = try context.beginBatchInsert(entityName: "Tag")
                _ = try first.write(tags(storedNumbers) { "tag \($0)" }, to: first.target(entityName: "Tag", attributes: ["number", "name"], key: ["number"]))
                _ = try first.write(words(storedWords) { Int64($0.count) }, to: first.target(entityName: "Word", attributes: ["text", "count"], key: ["text"]))
                try first.commit()
                let session = try context.beginBatchInsert(entityName: "Tag")
                session.sqlite.findsRowsTogether = together
                let tagTarget = try session.target(entityName: "Tag", attributes: ["number", "name"], key: ["number"])
                let wordTarget = try session.target(entityName: "Word", attributes: ["text", "count"], key: ["text"])
                tagTarget.plan.mostlyExisting = true
                wordTarget.plan.mostlyExisting = true
                let tagOutcomes = try #require(try session.write(tags(batchNumbers) { $0 % 3 == 0 ? "changed \($0)" : "tag \($0)" }, to: tagTarget))
                let wordOutcomes = try #require(try session.write(words(batchWords) { $0.hasSuffix("5") ? -1 : Int64($0.count) }, to: wordTarget))
                try session.commit()
                return ((tagOutcomes + wordOutcomes).map(Self.shown), session.sqlite.rowsFoundTogether)
            }
            return (result.0, result.1, try BatchRequestTests().tables(url))
        }
        let found = try run(together: true), looked = try run(together: false)
        #expect(found.foundTogether == storedNumbers.count + storedWords.count, "each stored key's first row, \"\" among them, found its stored row together")
        #expect(looked.foundTogether == 0)
        #expect(found.outcomes == looked.outcomes)
        #expect(found.outcomes.filter { $0.hasPrefix("unchanged") }.count > 300 && found.outcomes.filter { $0.hasPrefix("updated") }.count > 100)
        #expect(found.outcomes.filter { $0.hasPrefix("inserted") }.count == 4 + 30, "7, 47, 87, 127 and the 30 words with an x")
        #expect(found.outcomes.filter { $0.hasPrefix("duplicate") }.count == 1)
        #expect(found.tables == looked.tables)
    }

    @Test("rows out of the key's order are looked up one by one")
    func outOfOrderOneByOne() throws {
        let store = try store()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let found = try write(Self.batch().reversed(), into: store.context, together: true)
        #expect(found.foundTogether == 0)
        #expect(found.outcomes.count == Self.batch().count)
    }

    @Test("a column holds a value only as the same storage class with the same bytes")
    func holds() throws {
        let connection = try SQLiteConnection(path: ":memory:", mode: .readWrite(create: true))
        let statement = try connection.prepare("SELECT 'Pe\u{301}', 'P\u{E9}', '', 42, 42.0, -0.0, x'00ff', NULL")
        #expect(try statement.step())
        #expect(statement.holds(.text("Pe\u{301}"), at: 0) && !statement.holds(.text("P\u{E9}"), at: 0))
        #expect(statement.holds(.text("P\u{E9}"), at: 1) && !statement.holds(.text("P\u{E9}x"), at: 1) && !statement.holds(.text("P"), at: 1))
        #expect(statement.holds(.text(""), at: 2) && !statement.holds(.null, at: 2) && !statement.holds(.blob(Data()), at: 2))
        #expect(statement.holds(.integer(42), at: 3) && !statement.holds(.real(42), at: 3) && !statement.holds(.text("42"), at: 3))
        #expect(statement.holds(.real(42), at: 4) && !statement.holds(.integer(42), at: 4))
        #expect(statement.holds(.real(-0.0), at: 5) && !statement.holds(.real(0.0), at: 5))
        #expect(statement.holds(.blob(Data([0, 255])), at: 6) && !statement.holds(.blob(Data([0])), at: 6))
        #expect(statement.holds(.null, at: 7) && !statement.holds(.integer(0), at: 7))
    }

    @Test("a decimal's nearest double is the correctly rounded one, and a column holding it reads back as the decimal")
    func nearestDouble() throws {
        var random = SeededGenerator(seed: 7)
        for _ in 0..<20_000 {
            let digits = Int.random(in: 1...15, using: &random)
            let mantissa = UInt64.random(in: 1...UInt64(pow(10.0, Double(digits))) - 1, using: &random)
            let exponent = Int.random(in: -22...8, using: &random)
            let decimal = Decimal(sign: Bool.random(using: &random) ? .minus : .plus, exponent: exponent, significand: Decimal(mantissa))
            guard let nearest = DecimalText.nearestDouble(decimal) else { Issue.record("\(decimal)"); continue }
            #expect(nearest == Double(decimal.description)!, "\(decimal)")
            #expect(try SQLiteValueCoding.decode(.real(nearest), as: .decimal) == .decimal(decimal), "\(decimal)")
        }
        #expect(DecimalText.nearestDouble(Decimal(string: "1234567890123456")!) == nil, "16 digits")
        #expect(DecimalText.nearestDouble(Decimal(string: "1e23")!) == nil)
        #expect(DecimalText.nearestDouble(Decimal(0)) == nil)
    }

    @Test("significant digits of a decimal text: from the first non-zero digit to the last, exponent aside")
    func significantDigits() {
        let cases: [(String, Int)] = [("0", 0), ("0.000", 0), ("100", 1), ("10.01", 4), ("-0.0050", 1), ("-001.2300e5", 3), ("12345678901234567890", 19), ("7", 1), ("1.5E-3", 2)]
        for (text, count) in cases { #expect(DecimalText.significantDigits(text) == count, "\(text)") }
    }
}

private extension AttributeValue {
    var stringValue: String? { if case .string(let text) = self { text } else { nil } }
}

private extension Array where Element == [UInt8] {
    func isSorted() -> Bool { zip(self, dropFirst()).allSatisfy { !$1.lexicographicallyPrecedes($0) } }
}

extension BatchInsertSession {
    /// The SQLite transaction under the session, for tests of how it finds rows.
    var sqlite: SQLiteBatchInsertTransaction { transaction as! SQLiteBatchInsertTransaction }
}
