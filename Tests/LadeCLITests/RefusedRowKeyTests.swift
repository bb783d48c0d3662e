import Foundation
import Lade
import Testing

/// Rows the store refuses take no primary keys, with either writer: the object writer's refused
/// save gives its keys back, so both writers number the kept rows alike.
@Suite("lade run: rows the store refuses use up no keys")
struct RefusedRowKeyTests {
    @Test("both writers give the kept rows the same Z_PK and leave the same Z_MAX when the store refuses rows (Decimals over 15 digits no double reads back as)")
    func sameKeys() throws {
        let sandbox = try ImportSandbox()
        try sandbox.xcodeModel("D", """
              <entity name="T">
                <attribute name="key" attributeType="String"/>
                <attribute name="dec" optional="YES" attributeType="Decimal"/>
                <uniquenessConstraints><uniquenessConstraint><constraint value="key"/></uniquenessConstraint></uniquenessConstraints>
              </entity>
            """)
        // Rows 1, 3 and 5 hold Decimals a SQLite store cannot keep exactly; batches of 3 put a
        // refused row in each batch, and the second batch's save follows one that was retried.
        try sandbox.write("src.ndjson", """
            {"key":"a","dec":"11111111111111111111111111111111111111"}
            {"key":"b","dec":"1.5"}
            {"key":"c","dec":"900719925474099.3"}
            {"key":"d","dec":"2"}
            {"key":"e","dec":"9999999999999999.5"}
            {"key":"f","dec":"3"}

            """)
        var results: [String: [String]] = [:]
        for writer in ["batch", "objects"] {
            try sandbox.job("""
                model: D.xcdatamodel
                store: { type: sqlite, path: \(writer).sqlite }
                source: src.ndjson
                entity: T
                key: key
                writer: \(writer)
                batch: { size: 3 }
                onError: { policy: skip, rejects: \(writer).rej }

                """, named: "\(writer).yaml")
            let run = try sandbox.lade(["run", "\(writer).yaml", "--quiet"])
            #expect(run.status == 2, "\(writer): \(run.stderr)")
            let store = sandbox.url("\(writer).sqlite")
            let rows = try StoreReading.column(store, "SELECT Z_PK || '=' || ZKEY FROM ZT ORDER BY Z_PK").map(StoreReading.describe)
            let largest = try StoreReading.integer(store, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'T'")
            results[writer] = rows + ["Z_MAX \(largest)"]
        }
        #expect(results["batch"] == ["t'1=b'", "t'2=d'", "t'3=f'", "Z_MAX 3"])
        #expect(results["objects"] == results["batch"])
    }
}
