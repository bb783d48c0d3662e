import Foundation
import Testing
@testable import Lade

/// Files that declare more than they hold, or expand far beyond their size, are refused before
/// the memory is spent: binary stores, models with DTDs, XML stores with entity declarations.
@Suite("Hostile files are refused within bounds")
struct HostileFileTests {
    /// Writes a binary store whose header and metadata are genuine and whose body `write` makes.
    static func binaryStore(at url: URL, _ write: (BodyWriter) throws -> Void) throws {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let output = FileOutput(descriptor: descriptor, path: url.path)
        try BinaryStoreFile.writeHeader(["NSStoreType": .string("Binary"), "NSStoreUUID": .string(UUID().uuidString)], to: output)
        let body = try BodyWriter(output: output)
        body.uvarint(1)                        // next key
        body.uvarint(1)                        // one entity table: Product, with its thumbnail
        body.string("Product")
        body.uvarint(1)
        body.string("thumbnail")
        body.uvarint(0)
        try write(body)
        try body.finish()
        try output.flush()
    }

    static func catalog() throws -> ManagedObjectModel { try ManagedObjectModel(contentsOf: Fixtures.catalog) }

    @Test("a binary store declaring a 300 MiB value is refused before reading it")
    func declaredValue() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let hostile = directory.appendingPathComponent("declared.binary")
        try Self.binaryStore(at: hostile) { body in
            body.uvarint(1); body.uvarint(0); body.uvarint(1); body.uvarint(1)
            body.uvarint(1); body.uvarint(0)
            body.rawForTesting([BinaryStoreFile.ValueTag.binary.rawValue])
            body.uvarint(300 << 20)
            body.rawForTesting([1, 2, 3])
        }
        #expect {
            try BinaryStoreFile.read(at: hostile, model: Self.catalog())
        } throws: { error in
            "\(error)".contains("a value holds at most 256 MiB")
        }
    }

    @Test("a binary store whose small body inflates past 100 times the file is refused", .slow)
    func inflationBomb() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("zeros.binary")
        let objects = 300
        try Self.binaryStore(at: url) { body in
            body.uvarint(UInt64(objects))
            for key in 1...objects {
                body.uvarint(0); body.uvarint(UInt64(key)); body.uvarint(1)
                body.uvarint(1); body.uvarint(0)
                body.value(.binary(Data(count: 1 << 20)))   // 1 MiB of zeros: ~1 KiB compressed
                body.uvarint(0)
                try body.flushIfFull()
            }
        }
        let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
        #expect(size < 2 << 20, "the file is small: \(size) bytes")
        #expect {
            try BinaryStoreFile.read(at: url, model: Self.catalog())
        } throws: { error in
            "\(error)".contains("inflates to more than 256 MiB")
        }
    }

    /// Found by `make fuzz` (target binary-store): an object key beyond 63 bits trapped on conversion.
    @Test("a binary store with a key beyond 63 bits is refused, not a crash")
    func hugeKey() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("key.binary")
        try Self.binaryStore(at: url) { body in
            body.uvarint(1); body.uvarint(0); body.uvarint(UInt64.max); body.uvarint(1)
            body.uvarint(0); body.uvarint(0)
        }
        #expect {
            try BinaryStoreFile.read(at: url, model: Self.catalog())
        } throws: { error in
            "\(error)".contains("beyond 63 bits")
        }
    }

    @Test("a binary store's metadata length beyond the file is refused")
    func metadataLength() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("header.binary")
        try Self.binaryStore(at: url) { body in body.uvarint(0) }
        var bytes = try Data(contentsOf: url)
        for index in 16..<24 { bytes[index] = 0xFF }
        try bytes.write(to: url)
        #expect {
            try BinaryStoreFile.readMetadata(at: url)
        } throws: { error in
            "\(error)".contains("more than the file holds")
        }
    }

    @Test("a model with a DTD is refused, naming the line")
    func modelDTD() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("contents")
        try Data("""
            <?xml version="1.0"?>
            <!DOCTYPE model [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
            <model><entity name="Thing"><attribute name="x" optional="YES" attributeType="String" defaultValueString="&b;&b;&b;"/></entity></model>
            """.utf8).write(to: url)
        #expect {
            try ManagedObjectModel(contentsOf: url)
        } throws: { error in
            "\(error)".contains("contents:2") && "\(error)".contains("document type declaration")
        }
    }

    @Test("an XML store whose DTD declares entities is refused; Apple's external DTD line is fine")
    func storeDTD() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("laughs.xml")
        try Data("""
            <?xml version="1.0" standalone="yes"?>
            <!DOCTYPE database [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
            <database><databaseInfo><version>134481920</version></databaseInfo></database>
            """.utf8).write(to: url)
        #expect {
            _ = try XMLStreamReader(path: url.path)
        } throws: { error in
            "\(error)".contains("declares its own entities")
        }
        try Data("""
            <?xml version="1.0" standalone="yes"?>
            <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">
            <database></database>
            """.utf8).write(to: url)
        _ = try XMLStreamReader(path: url.path)
    }
}
