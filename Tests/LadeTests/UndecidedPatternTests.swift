import Foundation
import Testing
@testable import Lade
import LadeTestSupport

/// A pattern outside the native engine's subset is ICU's to match, and ICU gives up on some
/// texts (catastrophic backtracking) and then answers "no match" in silence. Such a value is
/// neither a match nor a mismatch: it is refused as undecided, never as breaking the pattern.
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

    @Test("the attribute validator refuses an undecided value by a rule of its own, naming the pattern")
    func validator() throws {
        let validator = AttributeValidator(AttributeDescription(name: "code", type: .string, regularExpression: Self.pattern))
        #expect(validator.violation(of: .string("aab")) == nil)
        #expect(validator.violation(of: .string("b"))?.rule == .pattern)
        let violation = try #require(validator.violation(of: .string(Self.undecided)))
        #expect(violation.rule.rawValue == "patternUndecided")
        #expect(violation.message.contains("/\(Self.pattern)/") && violation.message.contains("could not be decided"), "\(violation.message)")
        #expect(!violation.message.contains("does not match"))
    }

    @Test("a save names the attribute and says the value could not be checked against the pattern")
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
            #expect(performing: { try context.save() }, throws: { error in
                guard let validation = error as? ObjectValidationError, validation.failures.count == 1 else { return false }
                let failure = validation.failures[0]
                return failure.property == "code" && failure.rule.rawValue == "patternUndecided" && "\(validation)".contains("/\(Self.pattern)/")
            })
        }
    }
}
