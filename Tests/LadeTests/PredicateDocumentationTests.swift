import Foundation
import Testing
@testable import Lade

@Suite("docs/predicates.md")
struct PredicateDocumentationTests {
    @Test("every format string in the documentation's predicate blocks parses, and its errors read as documented")
    func examples() throws {
        let text = try String(contentsOf: Fixtures.root.appendingPathComponent("docs/predicates.md"), encoding: .utf8)
        var formats: [String] = []
        var errors: [(String, String)] = []
        var block: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("```") {
                block = block == nil ? String(line.dropFirst(3)) : nil
                continue
            }
            if block == "predicate" { formats.append(line) }
            if block == "text", let arrow = line.range(of: "→") {
                errors.append((line[..<arrow.lowerBound].trimmingCharacters(in: .whitespaces), line[arrow.upperBound...].trimmingCharacters(in: .whitespaces)))
            }
        }
        #expect(formats.count >= 20 && errors.count >= 3)
        for format in formats {
            #expect(throws: Never.self, "\(format)") { _ = try FetchPredicate(format: format, arguments: [[1, 2]]) }
        }
        for (format, message) in errors {
            #expect(throws: PredicateSyntaxError.self) { try FetchPredicate(format: format) }
            do { _ = try FetchPredicate(format: format) } catch { #expect(error.description == message) }
        }
    }
}
