import Foundation
import Lade
import Testing
@testable import LadePipeline

@Suite("lade meta set --json-values: only what can be read back")
struct MetadataValueTests {
    static func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }

    @Test("511 levels of arrays fit beside the metadata dictionary; 512 and 60,000 are refused without a crash")
    func depth() throws {
        let (_, value) = try StoreMetadataEditor.assignment("deep=\(Self.nested(511))", json: true)
        #expect(PropertyListValue.dictionary(["deep": value]).nestingDepth == PropertyListValue.maximumDepth)
        #expect(try PropertyListValue.decode(try PropertyListValue.dictionary(["deep": value]).binaryPropertyList()) == .dictionary(["deep": value]))
        for depth in [512, 60_000] {
            #expect {
                try StoreMetadataEditor.assignment("deep=\(Self.nested(depth))", json: true)
            } throws: { error in
                let text = "\(error)"
                return text.contains("nest deeper than 511 levels") && text.count < 400
            }
        }
    }

    @Test("an unpaired surrogate escape is refused, not replaced", arguments: ["\"\\ud800\"", "\"\\udc00x\"", "\"\\ud800\\u0041\""])
    func surrogates(_ json: String) {
        #expect(throws: StoreMetadataEditor.AssignmentError.self) { try StoreMetadataEditor.assignment("k=\(json)", json: true) }
    }

    @Test("a surrogate pair is one character")
    func pair() throws {
        #expect(try StoreMetadataEditor.assignment("k=\"\\ud83d\\ude00\"", json: true).value == .string("\u{1F600}"))
    }

    @Test("a null inside a JSON value is valid JSON a property list cannot hold: refused saying so, at its path, never as 'not JSON'",
          arguments: [
            ("a={\"a\":[1,null]}", "a.a[1]"), ("b=[null]", "b[0]"), ("c={\"x y\":{\"z\":null}}", "c[\"x y\"].z"),
          ])
    func nestedNull(_ argument: String, _ path: String) throws {
        #expect {
            try StoreMetadataEditor.assignment(argument, json: true)
        } throws: { error in
            let text = "\(error)"
            return text.contains("null") && text.contains("property list") && text.contains(path) && !text.contains("not JSON")
        }
    }

    @Test("a null as the whole value says to delete the key instead")
    func topLevelNull() throws {
        #expect {
            try StoreMetadataEditor.assignment("k=null", json: true)
        } throws: { error in
            "\(error)".contains("lade meta delete") && !"\(error)".contains("not JSON")
        }
    }
}
