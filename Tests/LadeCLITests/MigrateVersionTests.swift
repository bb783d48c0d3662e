import Foundation
import Lade
import Testing

/// `lade migrate` never claims a migration it did not make: which version wrote a store is the
/// store's own word (its hashes, or its tables), a uniqueness constraint is part of a version,
/// a bundle without a current version names no target, and a migration between versions
/// further apart keeps what both ends have (issue 31, items 1, 2, 4 and 7).
@Suite("lade migrate: versions told apart, the steps chosen")
struct MigrateVersionTests {
    static let item = #"<attribute name="key" attributeType="String"/><attribute name="name" optional="YES" attributeType="String"/>"#
    static let unique = "<uniquenessConstraints><uniquenessConstraint><constraint value=\"key\"/></uniquenessConstraint></uniquenessConstraints>"

    /// Writes a bundle of the given versions (name, entities), the last one current unless `current` is false.
    func bundle(_ sandbox: ImportSandbox, _ name: String, _ versions: [(String, String)], current: Bool = true) throws -> String {
        let bundle = sandbox.url("\(name).xcdatamodeld")
        for (index, (version, body)) in versions.enumerated() {
            try MigrateCLITests.writeVersion(version, of: bundle, body, current: current && index == versions.count - 1)
        }
        return bundle.path
    }

    /// A store of `type` at `version`, holding the rows of `csv` (columns named as the entity's
    /// attributes) as objects of `entity`, imported without a key (so keys may repeat).
    func store(_ sandbox: ImportSandbox, _ bundle: String, version: String, type: String, entity: String = "Item", csv: String) throws -> URL {
        let store = sandbox.url("s.\(type)")
        try sandbox.write("rows.csv", csv)
        try sandbox.job("model: { path: \(bundle), version: \(version) }\nstore: { type: \(type), path: \(store.lastPathComponent) }\nsource: rows.csv\nentity: \(entity)\n",
                        named: "fill.yaml")
        let run = try sandbox.lade(["run", "fill.yaml", "--quiet"])
        try #require(run.status == 0, "filling the store: \(run.stderr)")
        return store
    }

    /// The store's objects of `entity`, as `lade fetch --format csv` prints them (without URIs).
    func rows(_ sandbox: ImportSandbox, _ store: URL, _ bundle: String, entity: String) throws -> [String] {
        let run = try sandbox.lade(["fetch", store.path, "--model", bundle, "--entity", entity, "--format", "csv"])
        try #require(run.status == 0, "lade fetch: \(run.stderr)")
        return run.stdout.split(separator: "\r\n").map { line in line.split(separator: ",", omittingEmptySubsequences: false).dropFirst().joined(separator: ",") }
    }

    @Test("a uniqueness constraint added in a new version makes a new version: the store is told to be at the old one, objects sharing a key refuse the migration (naming the entity and the key), and without them the unique index is built",
          arguments: ["sqlite", "xml", "binary"])
    func constraintAdded(type: String) throws {
        let sandbox = try ImportSandbox()
        let bundle = try bundle(sandbox, "U", [("V1", "<entity name=\"Item\">\(Self.item)</entity>"), ("V2", "<entity name=\"Item\">\(Self.item)\(Self.unique)</entity>")])
        let store = try store(sandbox, bundle, version: "V1", type: type, csv: "key,name\ni1,first\ni1,second\ni2,third\n")
        let inspect = try sandbox.lade(["inspect", store.path, "--model", bundle])
        #expect(inspect.stdout.contains("Model version: V1 (the current version is V2: migration needed)"), "\(inspect.stdout)")
        let before = try storeFileDigests(store)
        let dryRun = try sandbox.lade(["migrate", store.path, "--model", bundle, "--dry-run"])
        #expect(dryRun.status == 0 && dryRun.stdout.contains("V1 → V2") && dryRun.stdout.contains("uniqueness constraint (key) added"), "\(dryRun.stdout)\(dryRun.stderr)")
        let refused = try sandbox.lade(["migrate", store.path, "--model", bundle])
        #expect(refused.status == 1, "\(refused.stdout)")
        #expect(refused.stderr.contains("entity Item") && refused.stderr.contains("key = 'i1'") && refused.stderr.contains("[migration.refused]"), "\(refused.stderr)")
        #expect(try storeFileDigests(store) == before, "the store is unchanged")
        #expect(try sandbox.lade(["inspect", store.path, "--model", bundle]).stdout.contains("Model version: V1"))

        // Without the duplicate: migrated, sound, and at V2.
        let fine = try ImportSandbox()
        let fineBundle = try self.bundle(fine, "U", [("V1", "<entity name=\"Item\">\(Self.item)</entity>"), ("V2", "<entity name=\"Item\">\(Self.item)\(Self.unique)</entity>")])
        let fineStore = try self.store(fine, fineBundle, version: "V1", type: type, csv: "key,name\ni1,first\ni2,second\n")
        let migrated = try fine.lade(["migrate", fineStore.path, "--model", fineBundle])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(try fine.lade(["check", fineStore.path, "--model", fineBundle]).status == 0)
        #expect(try fine.lade(["inspect", fineStore.path, "--model", fineBundle]).stdout.contains("Model version: V2 (current)"))
        if type == "sqlite" {
            #expect(try StoreReading.column(fineStore, "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'Z_Item_UNIQUE_key'") == [.text("Z_Item_UNIQUE_key")])
        }
        #expect(try rows(fine, fineStore, fineBundle, entity: "Item") == ["key,name", "i1,first", "i2,second"])
    }

    @Test("--from is for a store that cannot tell: a store whose hashes say V1 is refused with --from V2, and left as it was")
    func fromContradicted() throws {
        let sandbox = try ImportSandbox()
        let bundle = try bundle(sandbox, "B", [
            ("V1", #"<entity name="Item"><attribute name="key" optional="YES" attributeType="String"/><attribute name="name" optional="YES" attributeType="String"/></entity>"#),
            ("V2", #"<entity name="Item"><attribute name="key" optional="YES" attributeType="String"/><attribute name="title" optional="YES" attributeType="String" elementID="name"/></entity>"#),
        ])
        let store = sandbox.url("s.sqlite")
        #expect(try sandbox.lade(["init", store.path, "--model", bundle, "--model-version", "V1"]).status == 0)
        let before = try storeFileDigests(store)
        let run = try sandbox.lade(["migrate", store.path, "--model", bundle, "--from", "V2"])
        #expect(run.status == 1, "\(run.stdout)")
        #expect(run.stderr.contains("written with version V1") && run.stderr.contains("not V2") && run.stderr.contains("--from"), "\(run.stderr)")
        #expect(try storeFileDigests(store) == before)
        // Agreeing with the store, --from is taken.
        let agreed = try sandbox.lade(["migrate", store.path, "--model", bundle, "--from", "V1"])
        #expect(agreed.status == 0 && agreed.stdout.contains("V1 → V2"), "\(agreed.stdout)\(agreed.stderr)")
    }

    @Test("an attribute a middle version drops and the last one has again keeps its values: the store goes from the first version to the last in one step inferred directly",
          arguments: ["sqlite", "xml"])
    func droppedInTheMiddle(type: String) throws {
        let sandbox = try ImportSandbox()
        let bundle = try bundle(sandbox, "S", [
            ("V1", #"<entity name="Item"><attribute name="key" optional="YES" attributeType="String"/><attribute name="txt" optional="YES" attributeType="String"/></entity>"#),
            ("V2", #"<entity name="Item"><attribute name="key" optional="YES" attributeType="String"/></entity>"#),
            ("V3", #"<entity name="Item"><attribute name="extra" optional="YES" attributeType="String"/><attribute name="key" optional="YES" attributeType="String"/><attribute name="txt" optional="YES" attributeType="String"/></entity>"#),
        ])
        let store = try store(sandbox, bundle, version: "V1", type: type, csv: "key,txt\na,keep me\nb,me too\n")
        let run = try sandbox.lade(["migrate", store.path, "--model", bundle])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("V1 → V3 (lightweight, in place; inferred directly, past V2)"), "\(run.stdout)")
        #expect(try rows(sandbox, store, bundle, entity: "Item") == ["extra,key,txt", ",a,keep me", ",b,me too"])
    }

    @Test("renames each version declares (an entity and an attribute renamed twice, Renaming ID naming the version before) are followed, directly or step by step",
          arguments: ["sqlite", "xml"])
    func renamesFollowed(type: String) throws {
        let sandbox = try ImportSandbox()
        let versions = [
            ("V1", #"<entity name="Item"><attribute name="key" optional="YES" attributeType="String"/><attribute name="a" optional="YES" attributeType="String"/></entity>"#),
            ("V2", #"<entity name="Item"><attribute name="key" optional="YES" attributeType="String"/><attribute name="b" optional="YES" attributeType="String" elementID="a"/></entity>"#),
            ("V3", #"<entity name="Thing" elementID="Item"><attribute name="key" optional="YES" attributeType="String"/><attribute name="c" optional="YES" attributeType="String" elementID="b"/></entity>"#),
            ("V4", #"<entity name="Gadget" elementID="Thing"><attribute name="d" optional="YES" attributeType="String" elementID="c"/><attribute name="key" optional="YES" attributeType="String"/></entity>"#),
        ]
        let bundle = try bundle(sandbox, "C", versions)
        let store = try store(sandbox, bundle, version: "V1", type: type, csv: "key,a\nk1,A1\nk2,A2\n")
        let copy = sandbox.url("copy.\(type)")
        try FileManager.default.copyItem(at: store, to: copy)
        let direct = try sandbox.lade(["migrate", store.path, "--model", bundle])
        #expect(direct.status == 0 && direct.stdout.contains("Gadget: renamed from Item") && direct.stdout.contains("Gadget.d: renamed from a"), "\(direct.stdout)\(direct.stderr)")
        #expect(try rows(sandbox, store, bundle, entity: "Gadget") == ["d,key", "A1,k1", "A2,k2"])
        for version in ["V2", "V3", "V4"] {
            let step = try sandbox.lade(["migrate", copy.path, "--model", bundle, "--to", version])
            #expect(step.status == 0, "\(version): \(step.stdout)\(step.stderr)")
        }
        #expect(try rows(sandbox, copy, bundle, entity: "Gadget") == ["d,key", "A1,k1", "A2,k2"])
        #expect(try sandbox.lade(["check", copy.path, "--model", bundle]).status == 0)
    }

    @Test("what the versions in between would drop is refused when the ends cannot be joined directly, naming it and asking for a mapping model")
    func steppingWouldDrop() throws {
        let sandbox = try ImportSandbox()
        // V1 → V3 directly changes `n` from String to Integer 64 (not inferred); through V2,
        // which drops `n` and has `txt` removed, V3's `txt` would lose its values.
        let bundle = try bundle(sandbox, "D", [
            ("V1", #"<entity name="Item"><attribute name="n" optional="YES" attributeType="String"/><attribute name="txt" optional="YES" attributeType="String"/></entity>"#),
            ("V2", #"<entity name="Item"><attribute name="other" optional="YES" attributeType="String"/></entity>"#),
            ("V3", #"<entity name="Item"><attribute name="n" optional="YES" attributeType="Integer 64"/><attribute name="txt" optional="YES" attributeType="String"/></entity>"#),
        ])
        let store = try store(sandbox, bundle, version: "V1", type: "sqlite", csv: "n,txt\nx,keep\n")
        let before = try storeFileDigests(store)
        let run = try sandbox.lade(["migrate", store.path, "--model", bundle])
        #expect(run.status == 1, "\(run.stdout)")
        #expect(run.stderr.contains("V1 → V3 cannot be inferred directly") && run.stderr.contains("would drop Item.txt") && run.stderr.contains("mapping model"), "\(run.stderr)")
        #expect(try storeFileDigests(store) == before)
    }

    @Test("a bundle without .xccurrentversion names no version to migrate to: refused as lade inspect refuses it, unless --to names one")
    func noCurrentVersion() throws {
        let sandbox = try ImportSandbox()
        let bundle = try bundle(sandbox, "N", [
            ("V1", #"<entity name="Item"><attribute name="key" optional="YES" attributeType="String"/></entity>"#),
            ("V2", #"<entity name="Item"><attribute name="b" optional="YES" attributeType="String"/><attribute name="key" optional="YES" attributeType="String"/></entity>"#),
            ("V3", #"<entity name="Item"><attribute name="c" optional="YES" attributeType="String"/><attribute name="key" optional="YES" attributeType="String"/></entity>"#),
        ], current: false)
        let store = sandbox.url("s.sqlite")
        #expect(try sandbox.lade(["init", store.path, "--model", bundle, "--model-version", "V1"]).status == 0)
        let before = try storeFileDigests(store)
        let run = try sandbox.lade(["migrate", store.path, "--model", bundle])
        #expect(run.status == 1, "\(run.stdout)")
        #expect(run.stderr.contains("no .xccurrentversion") && run.stderr.contains("--to") && run.stderr.contains("V1, V2, V3"), "\(run.stderr)")
        #expect(run.stderr.hasSuffix("; name the version to migrate to with `--to VERSION` [migration.noCurrentVersion]\n"), "\(run.stderr)")
        #expect(try storeFileDigests(store) == before)
        let named = try sandbox.lade(["migrate", store.path, "--model", bundle, "--to", "V2"])
        #expect(named.status == 0 && named.stdout.contains("is at V2"), "\(named.stdout)\(named.stderr)")
    }
}
