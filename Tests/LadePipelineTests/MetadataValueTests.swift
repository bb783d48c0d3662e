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
}
