import Foundation
import Lade
import LadeTestSupport
import Testing

/// Issue 43 §2 from the command line: a SQLite store holding external binary data in Core
/// Data's encoding (docs/external-binary-data.md: `01` + bytes inline, `02` + UUID + `00` naming
/// a file in `.<store>_SUPPORT/_EXTERNAL_DATA/`), made here as the sources describe Apple's
/// stores, converted SQLite → PostgreSQL → XML → SQLite and exported with every byte equal;
/// a store moved without its folder; and an import of long values killed with SIGKILL.
@Suite("lade on a store with external binary data (allowsExternalBinaryDataStorage)")
struct ExternalBinaryDataCLITests {
    static let model = """
        {"format": "lade-model", "formatVersion": 1, "entities": [
          {"name": "Photo", "uniquenessConstraints": [["number"]], "attributes": [
            {"name": "number", "type": "Integer 64", "optional": false},
            {"name": "caption", "type": "String"},
            {"name": "image", "type": "Binary", "externalStorage": true}
          ], "relationships": []}
        ]}
        """

    static func bytes(_ count: Int, seed: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ seed &* 5 &+ ($0 >> 9)) })
    }

    static let fileName = "0B6C7D24-1A2B-4C3D-8E9F-A1B2C3D4E5F6"

    /// `Photos.sqlite` in `sandbox` as Apple's stores hold such values: 1 inline (1,000 bytes),
    /// 2 in a file (300,000 bytes), 3 empty, 4 nil, with Core Data's framework version.
    static func appleStore(_ sandbox: ImportSandbox) throws -> URL {
        _ = try sandbox.write("photos-model.json", model)
        let store = sandbox.url("Photos.sqlite")
        let made = try sandbox.lade(["init", store.path, "--model", "photos-model.json"])
        try #require(made.status == 0, "\(made.stderr)")
        let folder = sandbox.url(".Photos_SUPPORT/_EXTERNAL_DATA")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try bytes(300_000, seed: 2).write(to: folder.appendingPathComponent(fileName))
        let connection = try SQLiteConnection(path: store.path, mode: .readWrite(create: false))
        let insert = try connection.prepare("INSERT INTO ZPHOTO (Z_PK, Z_ENT, Z_OPT, ZNUMBER, ZCAPTION, ZIMAGE) VALUES (?, 1, 1, ?, ?, ?)")
        try insert.run([.integer(1), .integer(1), .text("inline"), .blob(Data([1]) + bytes(1_000, seed: 1))])
        try insert.run([.integer(2), .integer(2), .text("external"), .blob(Data([2]) + Data(fileName.utf8) + Data([0]))])
        try insert.run([.integer(3), .integer(3), .text("empty"), .blob(Data([1]))])
        try insert.run([.integer(4), .integer(4), .text("nil"), .null])
        try connection.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 4 WHERE Z_NAME = 'Photo'")
        return store
    }

    /// Each exported photo's values but its URI (which names its store), by number.
    static func exported(_ sandbox: ImportSandbox, _ store: String, _ extra: [String] = [], out: String) throws -> [Int: [String: String]] {
        let result = try sandbox.lade(["export", store, "--format", "ndjson", "--out", out] + extra)
        try #require(result.status == 0, "\(result.stderr)")
        var photos: [Int: [String: String]] = [:]
        for line in try String(contentsOf: sandbox.url(out).appendingPathComponent("Photo.ndjson"), encoding: .utf8).split(separator: "\n") {
            var record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            record["_uri"] = nil
            let number = try #require(record["number"] as? Int)
            photos[number] = record.mapValues { "\($0)" }
        }
        return photos
    }

    @Test("converted SQLite → PostgreSQL → XML → SQLite, every value exported byte for byte equal; the last store keeps Core Data's form and passes lade check")
    func conversions() throws {
        let server = try PostgresTestServer.fromEnvironment()
        let schema = server.newSchemaName("external_data")
        defer { try? server.dropSchema(schema) }
        let sandbox = try ImportSandbox()
        let store = try Self.appleStore(sandbox)
        let original = try Self.exported(sandbox, store.path, out: "export0")
        #expect(original.count == 4)
        #expect(original[2]?["image"] == Self.bytes(300_000, seed: 2).base64EncodedString())
        #expect(original[1]?["image"] == Self.bytes(1_000, seed: 1).base64EncodedString())
        #expect(original[3]?["image"] == "", "empty data: \(String(describing: original[3]))")

        let url = server.storeURL(schema: schema)
        for (from, to, extra) in [(store.path, url, [String]()), (url, "Photos.xml", []), ("Photos.xml", "Back.sqlite", ["--model", "photos-model.json"])] {
            let converted = try sandbox.lade(["convert", from, to] + extra)
            try #require(converted.status == 0, "\(from) → \(to): \(converted.stderr)")
            let read = try Self.exported(sandbox, to, to == "Photos.xml" ? ["--model", "photos-model.json"] : [], out: "export-\(to.count)")
            #expect(read == original, "\(to)")
        }
        let back = sandbox.url("Back.sqlite")
        let files = try FileManager.default.contentsOfDirectory(atPath: sandbox.url(".Back_SUPPORT/_EXTERNAL_DATA").path)
        #expect(files.count == 1)
        let reference = try StoreReading.column(back, "SELECT ZIMAGE FROM ZPHOTO WHERE ZNUMBER = 2").first
        #expect(reference == .blob(Data([2]) + Data(files[0].utf8) + Data([0])))
        #expect(try StoreReading.column(back, "SELECT ZIMAGE FROM ZPHOTO WHERE ZNUMBER = 3").first == .blob(Data([1])))
        let checked = try sandbox.lade(["check", back.path])
        #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path).filter { $0.contains(".lade-") && !$0.hasSuffix(".lade-lock") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test("a store copied without its support folder: export and fetch fail naming the missing file, never empty data")
    func movedWithoutFolder() throws {
        let sandbox = try ImportSandbox()
        let store = try Self.appleStore(sandbox)
        let elsewhere = sandbox.url("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: store, to: elsewhere.appendingPathComponent("Photos.sqlite"))
        for arguments in [["export", "elsewhere/Photos.sqlite", "--format", "ndjson", "--out", "x"], ["fetch", "elsewhere/Photos.sqlite", "--entity", "Photo"]] {
            let result = try sandbox.lade(arguments)
            #expect(result.status != 0)
            #expect(result.stderr.contains(Self.fileName) && result.stderr.contains(".Photos_SUPPORT"), "\(result.stderr)")
        }
        let checked = try sandbox.lade(["check", "elsewhere/Photos.sqlite", "--json"])
        #expect(checked.status == 1 && checked.stdout.contains("missingExternalFile"), "\(checked.stdout)")
    }

    /// Photo `index`'s image: long (a file) for most, short (inline) for every fifth.
    static func image(_ index: Int) -> Data {
        bytes(index % 5 == 4 ? 2_000 : 140_000 + (index * 7_919) % 60_000, seed: index)
    }

    /// Every file in the store's folder is named by a row, and every row's file is there.
    static func filesMatchRows(_ store: URL, folder: URL, _ label: String) throws {
        guard FileManager.default.fileExists(atPath: store.path) else { return }
        var named: Set<String> = []
        for value in try StoreReading.column(store, "SELECT ZIMAGE FROM ZPHOTO WHERE substr(ZIMAGE, 1, 1) = X'02'") {
            guard case .blob(let bytes) = value, let name = String(bytes: bytes.dropFirst().prefix(36), encoding: .ascii) else { continue }
            named.insert(name)
        }
        let files = Set((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
        #expect(files == named, "\(label): files no row names \(files.subtracting(named).sorted()), rows naming no file \(named.subtracting(files).sorted())")
    }

    @Test("an import of long values killed by SIGKILL at 20 points: after lade check --repair no file is orphaned and no row names a missing one; the last run loads every value", .slow,
          arguments: ["auto", "objects"])
    func killedImport(writer: String) throws {
        try ImportSandbox.$writer.withValue(writer) { try killedImportRuns(writer: writer) }
    }

    private func killedImportRuns(writer: String) throws {
        let sandbox = try ImportSandbox()
        _ = try sandbox.write("photos-model.json", Self.model)
        let count = 200
        var source = ""
        for index in 0..<count {
            source += "{\"number\": \(index), \"caption\": \"photo \(index)\", \"image\": \"\(Self.image(index).base64EncodedString())\"}\n"
        }
        _ = try sandbox.write("photos.ndjson", source)
        _ = try sandbox.job("""
            model: photos-model.json
            store: { path: Photos.sqlite }
            source: photos.ndjson
            entity: Photo
            key: number
            batch: { size: 2, commitEvery: 1 }

            """)
        let store = sandbox.url("Photos.sqlite"), folder = sandbox.url(".Photos_SUPPORT/_EXTERNAL_DATA")
        var random = SeededGenerator(seed: writer == "auto" ? 20_261_207 : 20_261_208)
        var repaired = 0
        for kill in 1...20 {
            // Every run (--force) starts again at the first row: kills land before 70% of them.
            let target = random.int(count * 7 / 10)
            let child = try LadeChild(["run", "job.yaml", "--progress", "0.005", "--force"], in: sandbox.directory)
            if child.wait(until: { child.rowsReported >= target }) { usleep(useconds_t(random.int(15_000))) }
            child.send(SIGKILL)
            child.finish()
            try #require(child.endedBySignal == SIGKILL, "kill \(kill): the run ended before the kill at \(target) rows: \(child.stderr.suffix(400))")
            guard FileManager.default.fileExists(atPath: store.path) else { continue }
            let check = try sandbox.lade(["check", "Photos.sqlite", "--repair", "--json"])
            let report = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any], "kill \(kill): \(check.stdout)\(check.stderr)")
            repaired += (report["removedFiles"] as? [String])?.count ?? 0
            let kinds = (report["problems"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }
            #expect(!kinds.contains("missingExternalFile") && !kinds.contains("orphanExternalFile") && !kinds.contains("wrongType"), "kill \(kill): \(kinds)")
            try Self.filesMatchRows(store, folder: folder, "kill \(kill)")
        }
        let (result, _) = try sandbox.run("job.yaml", ["--force"])
        #expect(result.status == 0, "\(result.stderr)")
        try Self.filesMatchRows(store, folder: folder, "after the last run")
        let exported = try Self.exported(sandbox, "Photos.sqlite", out: "export")
        #expect(exported.count == count)
        #expect((0..<count).allSatisfy { exported[$0]?["image"] == Self.image($0).base64EncodedString() }, "every value byte for byte")
        let checked = try sandbox.lade(["check", "Photos.sqlite"])
        #expect(checked.status == 0, "\(checked.stdout)")
        print("external data kill test (\(writer)): \(repaired) orphaned files removed by lade check --repair over 20 kills")
    }
}
