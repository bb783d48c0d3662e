import Foundation
import Testing
@testable import Lade

/// Patterns that expand to large programs compile and match within bounds (make fuzz found
/// `(…|…){55}` taking seconds to build its automaton).
@Suite("RegularExpression: large programs stay bounded")
struct RegularExpressionSizeTests {
    @Test("counted repetitions of alternations build and match in well under a second each", arguments: [
        "(ab|cd|ef){55}", "((a|b)(c|d)){300}", "([a-z]|[0-9]x){1000}", "(a|b|c|d|e|f|g|h){2,400}",
    ])
    func countedAlternations(_ pattern: String) throws {
        let started = Date()
        let expression = try RegularExpression(pattern)
        _ = expression.matchesWhole(String(repeating: "ab", count: 60))
        _ = expression.matchesSomewhere(String(repeating: "cd", count: 500))
        #expect(Date().timeIntervalSince(started) < 2, "\(pattern) took \(Date().timeIntervalSince(started)) s")
    }
}
