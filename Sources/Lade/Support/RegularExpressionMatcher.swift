/// The native engine of one pattern: its NFA program, the scalar classes, and an automaton for
/// each question (whole, somewhere) when one could be built within its size limit.
///
/// Each question goes to its automaton when there is one and it can answer, else to the NFA
/// simulation; both are linear in the text, so no pattern can make matching hang.
///
/// ```swift
/// let matcher = try RegularExpressionMatcher(RegularExpressionParser.parse("(foo|bar)+baz"))
/// matcher.matches("foobarbaz", whole: true)   // true
/// ```
final class RegularExpressionMatcher: Sendable {
    let program: RegularExpressionProgram
    let classifier: RegularExpressionScalarClassifier
    let wholeAutomaton: RegularExpressionAutomaton?
    let searchAutomaton: RegularExpressionAutomaton?

    init(_ syntax: RegularExpressionSyntax) throws(RegularExpressionParser.Stop) {
        program = try RegularExpressionProgram(syntax)
        classifier = RegularExpressionScalarClassifier(
            sets: program.sets,
            distinguishingWords: program.assertions.contains(.wordBoundary) || program.assertions.contains(.notWordBoundary))
        wholeAutomaton = RegularExpressionAutomaton(program: program, classifier: classifier, whole: true)
        searchAutomaton = RegularExpressionAutomaton(program: program, classifier: classifier, whole: false)
    }

    func matches(_ text: String, whole: Bool) -> Bool {
        // Each automaton used where it is stored: binding one to a local copied it, retaining
        // and releasing its tables, for every value an import checks.
        if let answer = whole ? wholeAutomaton?.run(text, classifier: classifier) : searchAutomaton?.run(text, classifier: classifier) {
            return answer
        }
        return program.matches(text.unicodeScalars.map(\.value), whole: whole)
    }
}
