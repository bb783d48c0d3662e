import Foundation
@testable import LadePipeline
import Testing

@Suite("Reader fuzzing against Foundation")
struct ReaderDifferentialTests {
    /// A random JSON value written out, with what the reader should make of it.
    func randomValue(_ random: inout SeededGenerator, depth: Int) -> (text: String, value: SourceValue) {
        switch random.int(depth > 2 ? 5 : 7) {
        case 0:
            let pieces = ["a", "é", "\\n", "\\\"", "\\\\", "\\/", "\\u00e9", "\\ud83d\\ude00", "中", " ", "\\t", "\\u0000"]
            let decoded = ["a", "é", "\n", "\"", "\\", "/", "é", "😀", "中", " ", "\t", "\u{0}"]
            var text = "\"", value = ""
            for _ in 0..<random.int(6) {
                let k = random.int(pieces.count)
                text += pieces[k]
                value += decoded[k]
            }
            return (text + "\"", .string(value))
        case 1:
            let numbers = ["0", "-0", "12", "-7.25", "1e10", "3.0E-2", "19.90", "123456789012345678901234567890", "-0.0e+0"]
            let number = numbers[random.int(numbers.count)]
            return (number, .number(number))
        case 2: return ("true", .bool(true))
        case 3: return ("false", .bool(false))
        case 4: return ("null", .null)
        case 5:
            let elements = (0..<random.int(4)).map { _ in randomValue(&random, depth: depth + 1) }
            return ("[" + elements.map(\.text).joined(separator: ", ") + "]", .array(elements.map(\.value)))
        default:
            let members = (0..<random.int(4)).map { k in ("k\(k)", randomValue(&random, depth: depth + 1).text) }
            return ("{" + members.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ",") + "}", .object)
        }
    }

    @Test("random valid objects read back as the values they were written from")
    func roundTrip() throws {
        var random = SeededGenerator(seed: 4242)
        var lines: [String] = []
        var expected: [[SourceValue]] = []
        for _ in 0..<500 {
            let a = randomValue(&random, depth: 0), b = randomValue(&random, depth: 0)
            lines.append("{\"a\": \(a.text), \"skip\": \(randomValue(&random, depth: 0).text), \"b\" :\(b.text)}")
            expected.append([a.value, b.value])
        }
        let records = try read(lines.joined(separator: "\n"), named: "r.ndjson", fields: ["a", "b"])
        #expect(records.map(\.values) == expected)
        let arrayRecords = try read("[" + lines.joined(separator: ",\n") + "]", named: "r.json", fields: ["a", "b"])
        #expect(arrayRecords.map(\.values) == expected)
    }

    @Test("a mutated line is accepted exactly when JSONSerialization accepts it as an object (trailing commas and huge exponents aside)")
    func validityAgreesWithFoundation() throws {
        var random = SeededGenerator(seed: 777)
        let alphabet = Array("{}[]\",:\\ 0123456789.-+eEtrufalsnu/bfnrtxdD\t".utf8) + [0xFF, 0xC3, 0xA9, 0x80, 0x01]
        var disagreements: [String] = []
        for _ in 0..<6_000 {
            var bytes = Array(randomValue(&random, depth: 0).text.utf8)
            bytes = Array("{\"v\": ".utf8) + bytes + Array("}".utf8)
            for _ in 0..<random.int(3) {
                let at = random.int(bytes.count)
                switch random.int(3) {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(alphabet[random.int(alphabet.count)], at: at)
                default: bytes[at] = alphabet[random.int(alphabet.count)]
                }
            }
            guard !bytes.contains(ASCII.lineFeed) else { continue }
            let text = String(decoding: bytes, as: UTF8.self)
            // Foundation accepts a comma before '}' or ']'; RFC 8259 does not, and neither do we.
            if text.replacingOccurrences(of: " ", with: "").contains(",}") || text.replacingOccurrences(of: " ", with: "").contains(",]") { continue }
            // Foundation refuses numbers beyond a Double's range; the reader keeps their exact text for the mapper to judge.
            if text.range(of: "[eE][-+]?[0-9]{3}", options: .regularExpression) != nil { continue }
            let foundation = (try? JSONSerialization.jsonObject(with: Data(bytes))) is [String: Any]
            let records = try readAll(RecordReader(stream: TrickleStream(bytes, largestRead: 1 << 20), format: .ndjson, fields: ["v"],
                                                   displayName: "d.ndjson"))
            let ours = records.count == 1 && records[0].problem == nil
            if records.isEmpty { continue }   // only whitespace left: a blank line
            if ours != foundation { disagreements.append(String(decoding: bytes, as: UTF8.self)) }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(10))")
    }
}
