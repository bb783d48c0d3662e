import Foundation
import Testing
@testable import Lade

@Suite("Models too deep to load in proportion are refused")
struct ModelSizeTests {
    /// `count` entities, each the parent of the next, each with an attribute of its own.
    static func chain(_ count: Int) -> String {
        (0..<count).map { index in
            "<entity name=\"C\(index)\"\(index > 0 ? " parentEntity=\"C\(index - 1)\"" : "")><attribute name=\"a\(index)\" optional=\"YES\" attributeType=\"String\"/></entity>"
        }.joined(separator: "\n")
    }

    @Test("an inheritance chain 2,000 deep is refused, naming the limit, without walking it for every entity")
    func deepChain() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Fixtures.writeXcodeModel(Self.chain(2_000), in: directory)
        let started = Date()
        #expect {
            try ManagedObjectModel(contentsOf: url)
        } throws: { error in
            "\(error)".contains("more than 100 ancestors")
        }
        // Quadratic work took 20 s (release) before; what remains is linear.
        #expect(Date().timeIntervalSince(started) < 10)
    }

    @Test("the refusal of a chain 2,000 deep lists 100 of its 1,899 problems and how many more (issue 43 §4 Slow)")
    func deepChainMessage() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Fixtures.writeXcodeModel(Self.chain(2_000), in: directory)
        let error = #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: url) }
        #expect(error?.problems.count == 1_899)
        let message = error?.description ?? ""
        #expect(message.hasPrefix("the model has 1899 problems:\n"), "\(message.prefix(200))")
        #expect(message.hasSuffix("\n  … and 1799 more"), "\(message.suffix(200))")
        #expect(message.split(separator: "\n").count == 102)
    }

    @Test("a chain 100 deep loads, every subentity holding its ancestors' attributes")
    func allowedChain() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(contentsOf: try Fixtures.writeXcodeModel(Self.chain(101), in: directory))
        #expect(model.attributes(of: "C100").count == 101)
    }
}
