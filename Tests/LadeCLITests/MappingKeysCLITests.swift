import Foundation
import Lade
import Testing

/// Keys a mapping model names that its versions lack: refused while the migration is planned,
/// as Core Data's `fetchRequestForSourceEntityNamed:predicateString:` raises on them.
@Suite("lade migrate refuses a mapping model's unknown keys")
struct MappingKeysCLITests {
    @Test("a filter naming a key the source entity lacks: exit 1 naming the key and the entity, dry run too, the store byte for byte as it was (issue 31, r5.sh)")
    func unknownFilterKey() throws {
        let sandbox = try ImportSandbox()
        let bundle = sandbox.url("F.xcdatamodeld")
        let item = #"<entity name="Item"><attribute name="key" optional="YES" attributeType="String"/><attribute name="n" optional="YES" attributeType="Integer 32"/></entity>"#
        try MigrateCLITests.writeVersion("V1", of: bundle, item)
        try MigrateCLITests.writeVersion("V2", of: bundle, item + #"<entity name="Note"><attribute name="t" optional="YES" attributeType="String"/></entity>"#, current: true)
        try sandbox.write("items.csv", "key,n\na,1\nb,2\nc,3\n")
        try sandbox.job("model: { path: F.xcdatamodeld, version: V1 }\nstore: { type: sqlite, path: s.sqlite }\nsource: items.csv\nentity: Item\n", named: "v1.yaml")
        let imported = try sandbox.lade(["run", "v1.yaml", "--quiet"])
        try #require(imported.status == 0, "\(imported.stderr)")
        let mapping = sandbox.url("M.xcmappingmodel")
        try MappingDocument(bundleName: "F", from: "V1", to: "V2", entities: [
            .init(source: "Item", destination: "Item", attributes: ["key", "n"], filter: "nosuch > 0"),
        ]).write(to: mapping)
        let store = sandbox.url("s.sqlite")
        let before = try storeFileDigests(store)
        for extra in [["--dry-run"], []] {
            let run = try sandbox.lade(["migrate", store.path, "--model", bundle.path, "--mapping", mapping.path] + extra)
            #expect(run.status == 1, "\(extra): \(run.stdout)")
            for text in [mapping.path, "entity mapping ItemToItem", "'nosuch' is not a property of entity 'Item'"] {
                #expect(run.stderr.contains(text), "\(extra) \(text): \(run.stderr)")
            }
            #expect(try storeFileDigests(store) == before, "\(extra)")
        }
        let fetched = try sandbox.lade(["fetch", store.path, "--model", bundle.path, "--model-version", "V1", "--entity", "Item"])
        #expect(fetched.status == 0 && fetched.stdout.contains("(3 objects)"), "\(fetched.stdout) \(fetched.stderr)")
    }
}
