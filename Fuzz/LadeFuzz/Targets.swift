// make fuzz: every parser and reader Lade exposes to files, run by libFuzzer (coverage-guided
// generation and mutation) one target per process. Built only when LADE_FUZZ=1 (Package.swift),
// with `-sanitize=fuzzer`; main.swift hands libFuzzer's driver the entry point below, called
// once per input. A thrown error is an answer; a trap, a signal, a timeout (-timeout) or
// memory over the limit (-rss_limit_mb) is a finding, written by libFuzzer as a crash file.
import Foundation
@testable import Lade
@testable import LadePipeline

/// The target this process fuzzes, from `LADE_FUZZ_TARGET`.
enum FuzzTarget: String, CaseIterable {
    case csv, ndjson, json, gzip, modelXML = "model-xml", modelJSON = "model-json", jobYAML = "job-yaml"
    case xmlStore = "xml-store", binaryStore = "binary-store", plist, predicate, regex, mappingModel = "mapping-model"
    case modelArchive = "model-archive"

    static let current: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["LADE_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("LADE_FUZZ_TARGET must be one of: \(names) (got '\(name)')\n".utf8))
            exit(64)
        }
        return target
    }()
}

/// A source held in memory, read a few bytes at a time so that buffer boundaries move.
final class FuzzStream: ByteStream {
    private let bytes: [UInt8]
    private var offset = 0
    private let largestRead: Int
    init(_ bytes: [UInt8], largestRead: Int) { self.bytes = bytes; self.largestRead = largestRead }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, largestRead, bytes.count - offset)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: count)
        }
        offset += count
        return count
    }
    var bytesRead: Int64 { Int64(offset) }
    var totalBytes: Int64? { Int64(bytes.count) }
}

/// Files the store targets read: written once per input in memory-backed /dev/shm when it exists.
let scratch: URL = {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    let url = URL(fileURLWithPath: base).appendingPathComponent("lade-fuzz-\(getpid())")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(atPath: "/dev/shm/lade-fuzz-\(getpid())") }
    return url
}()

/// The model the store targets read with: the sample Catalog model (every relationship kind).
let catalogModel: ManagedObjectModel = {
    let path = ProcessInfo.processInfo.environment["LADE_FUZZ_MODEL"] ?? "samples/Catalog.xcdatamodeld"
    do {
        return try ManagedObjectModel(contentsOf: URL(fileURLWithPath: path))
    } catch {
        FileHandle.standardError.write(Data("cannot load the fuzzing model \(path): \(error)\n".utf8))
        exit(66)
    }
}()

/// Equality where NaN equals NaN (its payload is not kept by Foundation's writer).
func same(_ a: PropertyListValue, _ b: PropertyListValue) -> Bool {
    switch (a, b) {
    case (.real(let x), .real(let y)): return x == y || (x.isNaN && y.isNaN)
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(same)
    case (.dictionary(let x), .dictionary(let y)):
        return x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
    default: return a == b
    }
}

func readAll(_ reader: RecordReader) throws {
    reader.maxRecordBytes = 64 * 1024
    while let batch = try reader.nextBatch(maxRecords: 7) {
        for record in batch.records { _ = batch.rawText(of: record) }
    }
}

func fuzz(_ bytes: [UInt8]) {
    let fields: [FieldPath] = ["sku", "name", "price", "d.w", "a.b.c"]
    let chunk = 1 + Int(bytes.first ?? 0) % 97
    do {
        switch FuzzTarget.current {
        case .csv:
            var dialect = CSVDialect()
            if bytes.first.map({ $0 & 1 == 1 }) ?? false { dialect.delimiter = UInt8(ascii: ";") }
            try readAll(try RecordReader(stream: FuzzStream(bytes, largestRead: chunk), format: .csv(dialect),
                                         fields: fields, displayName: "fuzz.csv"))
        case .ndjson:
            try readAll(try RecordReader(stream: FuzzStream(bytes, largestRead: chunk), format: .ndjson,
                                         fields: fields, displayName: "fuzz.ndjson"))
        case .json:
            try readAll(try RecordReader(stream: FuzzStream(bytes, largestRead: chunk), format: .jsonArray,
                                         fields: fields, displayName: "fuzz.json"))
        case .gzip:
            let stream = try GzipByteStream(wrapping: FuzzStream(bytes, largestRead: chunk), displayName: "fuzz.gz")
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var total = 0
            while total < 256 << 20 {
                let count = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
                if count == 0 { break }
                total += count
            }
        case .modelXML:
            _ = try XcodeModelReader.read(Data(bytes), file: "fuzz/contents", versionName: nil)
        case .modelJSON:
            _ = try ManagedObjectModel(jsonData: Data(bytes), file: "fuzz.json")
        case .jobYAML:
            _ = try Job(parsing: String(decoding: bytes, as: UTF8.self), file: "fuzz.yaml", directory: scratch)
        case .xmlStore:
            let url = scratch.appendingPathComponent("store.xml")
            try Data(bytes).write(to: url)
            _ = try? XMLStoreFile.readMetadata(at: url)
            _ = try XMLStoreFile.read(at: url, model: catalogModel)
        case .binaryStore:
            let url = scratch.appendingPathComponent("store.binary")
            try Data(bytes).write(to: url)
            _ = try? BinaryStoreFile.readMetadata(at: url)
            _ = try BinaryStoreFile.read(at: url, model: catalogModel)
        case .plist:
            let value = try PropertyListValue.decode(Data(bytes))
            // What was read can be written and reads back the same.
            let again = try PropertyListValue.decode(try value.binaryPropertyList())
            if !same(again, value) { fatalError("a property list does not read back the same: \(value) → \(again)") }
        case .predicate:
            let text = String(decoding: bytes, as: UTF8.self)
            let predicate = try FetchPredicate(format: text, arguments: ["x", 1, 2.5, .null])
            if (try? FetchPredicate(format: predicate.description)) != predicate {
                fatalError("a predicate's description does not read back the same: \(text.debugDescription) → \(predicate.description.debugDescription)")
            }
        case .modelArchive:
            // A compiled model (.mom, a keyed archive) and, the same bytes, a store's model cache
            // (raw deflate of one): each read into a model, or refused.
            for model in [try? ManagedObjectModel(compiledModel: Data(bytes), origin: "fuzz.mom"),
                          try? ManagedObjectModel(modelCache: Data(bytes), origin: "fuzz, Z_MODELCACHE")] {
                guard let model else { continue }
                for entity in model.entities { _ = model.attributes(of: entity.name).map(\.derivationExpression) }
                _ = model.versionHashes
            }
        case .mappingModel:
            // Xcode's xcmapping.xml or a compiled .cdm (a keyed archive), read, fitted to the
            // Catalog model (mapped to itself), and its custom code and expressions described.
            let url = scratch.appendingPathComponent("mapping")
            try Data(bytes).write(to: url)
            let mapping = try MappingModel(contentsOf: url)
            _ = mapping.customCode
            for entity in mapping.entityMappings {
                for property in entity.attributeMappings + entity.relationshipMappings { _ = property.valueExpression?.description }
            }
            _ = try mapping.resolved(from: catalogModel, to: catalogModel)
        case .regex:
            // The pattern, a NUL, then a text to match.
            let parts = bytes.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false)
            let pattern = String(decoding: parts[0], as: UTF8.self)
            let text = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : "aaaaaaaaaaaaaaaaaaaaaaaaaaaaab"
            // As MATCHES runs it: Lade's linear-time engine, or a refusal for patterns it cannot
            // match without backtracking (the ICU fallback that model rules still use is ICU's code).
            if let expression = try? StringComparison.linearExpression(pattern) {
                _ = expression.matchesWhole(text)
                _ = expression.matchesSomewhere(text)
            }
            // And as MATCHES[c] runs it: case closure, ICU only for texts it folds boundedly.
            let insensitive = try StringComparison.linearExpression(pattern, caseInsensitive: true)
            _ = try? insensitive.matchesWholeExactly(text)
            _ = insensitive.matchesSomewhere(text)
        }
    } catch {
        // A refusal is an answer: it must say something.
        if "\(error)".isEmpty { fatalError("an error with no message for \(FuzzTarget.current)") }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = start.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    fuzz(bytes)
    return 0
}
