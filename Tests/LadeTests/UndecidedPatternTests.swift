import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// A pattern outside the native engine's subset is ICU's to match, and ICU gives up on some
/// texts (catastrophic backtracking) and then answers "no match" in silence. Such a value is
/// neither a match nor a mismatch: it is accepted (an import warns), never refused as breaking
/// the pattern.
@Suite("Patterns ICU cannot decide for a value")
struct UndecidedPatternTests {
    /// Lookahead takes the pattern to ICU; `(a+)+c` backtracks exponentially before `a+b` is tried.
    static let pattern = "(?=a)((a+)+c|a+b)"
    static let undecided = String(repeating: "a", count: 30) + "b"

    @Test("matchesWholeExactly throws for a text ICU gives up on, and answers the texts it decides")
    func expression() throws {
        let expression = try RegularExpression(Self.pattern)
        #expect(!expression.isNative)
        #expect(try expression.matchesWholeExactly("aab"))
        #expect(try expression.matchesWholeExactly(String(repeating: "a", count: 30) + "c"))
        #expect(try !expression.matchesWholeExactly("b"))
        #expect(try !expression.matchesWholeExactly("aabx"))
        #expect(performing: { try expression.matchesWholeExactly(Self.undecided) }, throws: { error in
            "\(error)".contains("/\(Self.pattern)/") && "\(error)".contains("could not")
        })
    }

    @Test("the attribute validator accepts a value the pattern could not be decided for (never a mismatch), and answers the values ICU decides")
    func validator() throws {
        let validator = AttributeValidator(AttributeDescription(name: "code", type: .string, regularExpression: Self.pattern))
        #expect(validator.violation(of: .string("aab")) == nil)
        #expect(validator.violation(of: .string("aaab")) == nil)
        #expect(validator.violation(of: .string("b"))?.rule == .pattern)
        let violation = validator.violation(of: .string(Self.undecided))
        #expect(violation == nil, "an undecided value was refused: \(violation?.message ?? "")")
    }

    @Test("a save keeps a value the pattern could not be decided for")
    func save() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try ManagedObjectModel(entities: [EntityDescription(name: "Item", attributes: [
            AttributeDescription(name: "code", type: .string, regularExpression: Self.pattern),
        ])])
        let context = try privateContext(model: model, store: directory.appendingPathComponent("items.sqlite"), type: .sqlite)
        try context.performAndWait {
            let item = try context.insertObject(forEntityName: "Item")
            try item.setValue(Self.undecided, forKey: "code")
            try context.save()
        }
    }
}
