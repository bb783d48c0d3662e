import Foundation
import Lade
import LadeTestSupport
import Testing

/// Values a store cannot keep exactly are rejected, never rounded into others (issue 43 §4.10),
/// and what `lade export` writes `lade run` reads back: a date whose microseconds the double
/// Core Data keeps it in cannot hold (`9999-12-31T23:59:59.999999Z` would be year 10000); NaN
/// and the infinities, spelt as an export spells them; a NaN that a SQLite store would keep as NULL.
@Suite("lade run: values kept exactly, and an export's values read back")
struct ValueKeptExactlyCLITests {
    static let model = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
        <entity name="Reading"><attribute name="name" attributeType="String"/><attribute name="at" optional="YES" attributeType="Date"/>
        <attribute name="value" optional="YES" attributeType="Double" usesScalarValueType="YES"/>
        <uniquenessConstraints><uniquenessConstraint><constraint value="name"/></uniquenessConstraint></uniquenessConstraints></entity>
        </model>
        """

    static func sandbox() throws -> ImportSandbox {
        let sandbox = try ImportSandbox()
        try FileManager.default.createDirectory(at: sandbox.url("Readings.xcdatamodel"), withIntermediateDirectories: true)
        try sandbox.write("Readings.xcdatamodel/contents", model)
        try sandbox.write("readings.csv", """
            name,at,value
            late,9999-12-31T23:59:59.999999Z,1
            fraction,2024-03-01T12:30:00.123456Z,2.5
            nan,2024-03-01T00:00:00Z,NaN
            up,2024-03-01T00:00:00Z,Infinity
            down,9999-12-31T23:59:59Z,-Infinity

            """)
        return sandbox
    }

    static func job(store: String, source: String = "readings.csv") -> String {
        """
        kind: import
        model: Readings.xcdatamodel
        store: \(store)
        source: \(source)
        entity: Reading
        key: name
        onError: { policy: skip, rejects: rejects.ndjson }

        """ + (ImportSandbox.writer.map { "writer: \($0)\n" } ?? "")
    }

    @Test("SQLite: the date past a double's microseconds and the NaN are rejected, each with its reason; the infinities and the rest are kept")
    func sqlite() throws {
        let sandbox = try Self.sandbox()
        try sandbox.write("job.yaml", Self.job(store: "{ path: readings.sqlite }"))
        let (result, report) = try sandbox.run()
        #expect(result.status == 2, "\(result.stderr)")
        #expect(report?["inserted"] as? Int == 3 && report?["rejected"] as? Int == 2, "\(String(describing: report))")
        let rejects = try sandbox.rejectedRows()
        #expect(rejects.map { $0["line"] as? Int } == [2, 4])
        let reasons = rejects.map { "\($0["reason"] ?? $0)" }
        #expect(reasons.first?.contains("cannot be kept exactly") == true && reasons.first?.contains("10000-01-01T00:00:00Z") == true, "\(reasons)")
        #expect(reasons.last?.contains("NaN, which a SQLite store keeps as NULL") == true, "\(reasons)")
        let exported = try sandbox.lade(["export", "readings.sqlite", "--model", "Readings.xcdatamodel", "--format", "ndjson", "--out", "export"])
        #expect(exported.status == 0, "\(exported.stderr)")
        let text = try String(contentsOf: sandbox.url("export/Reading.ndjson"), encoding: .utf8)
        #expect(text.contains("\"Infinity\"") && text.contains("\"-Infinity\"") && text.contains("2024-03-01T12:30:00.123456Z") && text.contains("9999-12-31T23:59:59Z"), "\(text)")
    }

    @Test("PostgreSQL: NaN and the infinities are kept, and an export of them imports again into a new store with the same values")
    func postgresqlExportReadBack() throws {
        let sandbox = try Self.sandbox()
        let server = try PostgresTestServer.fromEnvironment()
        let (first, second) = (server.newSchemaName("kept_first"), server.newSchemaName("kept_second"))
        defer { try? server.dropSchema(first); try? server.dropSchema(second) }
        try sandbox.write("job.yaml", Self.job(store: "{ url: \"\(server.storeURL(schema: first))\" }"))
        let (result, report) = try sandbox.run()
        #expect(result.status == 2, "\(result.stderr)")
        #expect(report?["inserted"] as? Int == 4 && report?["rejected"] as? Int == 1, "\(String(describing: report))")
        let exported = try sandbox.lade(["export", server.storeURL(schema: first), "--model", "Readings.xcdatamodel", "--format", "ndjson", "--out", "export"])
        #expect(exported.status == 0, "\(exported.stderr)")
        let text = try String(contentsOf: sandbox.url("export/Reading.ndjson"), encoding: .utf8)
        #expect(text.contains("\"NaN\""), "\(text)")
        try sandbox.write("again.yaml", Self.job(store: "{ url: \"\(server.storeURL(schema: second))\" }", source: "export/Reading.ndjson"))
        let (again, againReport) = try sandbox.run("again.yaml")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(againReport?["inserted"] as? Int == 4)
        let values = try server.psql("SELECT string_agg(\"ZNAME\" || '=' || \"ZVALUE\"::text, ' ' ORDER BY \"ZNAME\") FROM \(PostgresTestServer.quotedIdentifier(second)).\"ZREADING\"")
        #expect(values == "down=-Infinity fraction=2.5 nan=NaN up=Infinity", "\(values)")
    }
}
