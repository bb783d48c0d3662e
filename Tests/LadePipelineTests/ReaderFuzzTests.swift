import Foundation
@testable import LadePipeline
import Testing

/// Random and mutated inputs: the readers never crash or hang, every outcome is records (each
/// problem positioned) or one positioned error, and the outcome does not depend on how the
/// bytes arrive (a file read in large chunks, or a stream a few bytes at a time).
@Suite("Reader fuzzing")
struct ReaderFuzzTests {
    static let seeds: [(SourceFormat, String)] = [
        (.csv(CSVDialect()), "sku,name,price\r\nA-1,\"Lamp, \"\"big\"\"\",19.90\nB-2,\"two\nlines\",5\n\nC-3,Café,\n"),
        (.ndjson, "{\"sku\": \"A-1\", \"name\": \"Lamp \\\"big\\\" \\u00e9\\ud83d\\ude00\", \"price\": 19.90}\n\n{\"sku\": \"B\", \"d\": {\"w\": [1, 2.5e3, null, true]}}\n"),
        (.jsonArray, "[\n {\"sku\": \"A-1\", \"name\": \"Lamp\", \"price\": -0.5},\n {\"sku\": \"B\", \"d\": {\"w\": [1, {}, []]}}\n]\n"),
    ]
    static let alphabet = Array("{}[]\",:\\\n\r \t0123456789.-+eEtrufalsnu\u{e9}x;".utf8) + [0x00, 0xFF, 0xC3, 0xE2, 0x80]

    enum Outcome: Equatable {
        case records([ReadRecord])
        case failed([ReadRecord], ReaderError)
    }

    func outcome(_ bytes: [UInt8], _ format: SourceFormat, stream: ByteStream, batch: Int) -> Outcome {
        var records: [ReadRecord] = []
        do {
            let reader = try RecordReader(stream: stream, format: format, fields: ["sku", "name", "price", "d.w"], displayName: "fuzz")
            reader.maxRecordBytes = 4_096
            while let next = try reader.nextBatch(maxRecords: batch) {
                for record in next.records {
                    records.append(ReadRecord(values: record.values, line: record.line, recordIndex: record.recordIndex,
                                              endOffset: record.endOffset, endLine: record.endLine,
                                              raw: next.rawText(of: record), problem: record.problem))
                }
            }
            return .records(records)
        } catch let error as ReaderError {
            return .failed(records, error)
        } catch {
            Issue.record("not a ReaderError: \(error)")
            return .records([])
        }
    }

    func check(_ bytes: [UInt8], _ format: SourceFormat, _ random: inout SeededGenerator) {
        let whole = outcome(bytes, format, stream: TrickleStream(bytes, largestRead: 1 << 20), batch: 1 + random.int(4))
        let trickled = outcome(bytes, format, stream: TrickleStream(bytes, largestRead: 1 + random.int(9), seed: random.next()),
                               batch: 1 + random.int(4))
        #expect(whole == trickled, "input: \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        let lines = bytes.filter { $0 == ASCII.lineFeed || $0 == ASCII.carriageReturn }.count + 1
        func positioned(_ error: ReaderError) -> Bool {
            guard let line = error.line, let column = error.column else { return error.kind == .configuration }
            return line >= 1 && line <= lines && column >= 1 && column <= bytes.count + 1
        }
        switch whole {
        case .records(let records):
            for record in records {
                #expect(record.problem.map(positioned) ?? true, "\(record)")
                #expect(record.problem == nil || record.values.isEmpty)
                #expect(record.endOffset <= Int64(bytes.count))
            }
        case .failed(let records, let error):
            #expect(positioned(error), "\(error) for \(String(decoding: bytes, as: UTF8.self).debugDescription)")
            for record in records { #expect(record.problem.map(positioned) ?? true, "\(record)") }
        }
    }

    @Test("mutated documents never crash and give the same outcome however they arrive", arguments: 0..<3)
    func mutations(_ index: Int) {
        let (format, seed) = Self.seeds[index]
        var random = SeededGenerator(seed: UInt64(index) &* 7919 &+ 17)
        for _ in 0..<400 {
            var bytes = Array(seed.utf8)
            for _ in 0..<(1 + random.int(4)) {
                let at = random.int(bytes.count + 1)
                switch random.int(5) {
                case 0 where at < bytes.count: bytes.remove(at: at)
                case 1: bytes.insert(Self.alphabet[random.int(Self.alphabet.count)], at: at)
                case 2 where at < bytes.count: bytes[at] = Self.alphabet[random.int(Self.alphabet.count)]
                case 3: bytes = Array(bytes.prefix(at))
                default:
                    let from = random.int(bytes.count + 1)
                    bytes.insert(contentsOf: bytes[min(from, at)..<max(from, at)].prefix(20), at: at)
                }
            }
            check(bytes, format, &random)
        }
    }

    @Test("random bytes never crash and give the same outcome however they arrive", arguments: 0..<3)
    func randomBytes(_ index: Int) {
        let (format, _) = Self.seeds[index]
        var random = SeededGenerator(seed: UInt64(index) &+ 99)
        for _ in 0..<400 {
            let bytes = (0..<random.int(120)).map { _ in
                random.int(10) == 0 ? UInt8(random.int(256)) : Self.alphabet[random.int(Self.alphabet.count)]
            }
            check(bytes, format, &random)
        }
    }
}
