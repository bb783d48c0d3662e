/// The parsed form of a pattern in the subset of ICU syntax that Lade matches natively.
///
/// ```swift
/// // "(foo|bar)+baz"
/// .concatenation([
///     .repetition(.alternation([foo, bar]), minimum: 1, maximum: nil),
///     b, a, z,
/// ])
/// ```
indirect enum RegularExpressionSyntax: Hashable, Sendable {
    /// Matches the empty string: `()`, an empty alternative.
    case empty
    /// One scalar from a set: a literal, `.`, `[...]`, `\d`.
    case scalar(RegularExpressionScalarSet)
    case concatenation([RegularExpressionSyntax])
    case alternation([RegularExpressionSyntax])
    /// `x*` is (0, nil), `x+` (1, nil), `x?` (0, 1), `x{2,5}` (2, 5). Lazy and greedy
    /// forms are the same here: whether a match exists does not depend on preference.
    case repetition(RegularExpressionSyntax, minimum: Int, maximum: Int?)
    case assertion(Assertion)

    /// Whether the node can match the empty string.
    ///
    /// ```swift
    /// // (a|)   true
    /// // a+     false
    /// ```
    var canMatchEmpty: Bool {
        switch self {
        case .empty, .assertion: return true
        case .scalar: return false
        case .concatenation(let items): return items.allSatisfy(\.canMatchEmpty)
        case .alternation(let branches): return branches.contains(where: \.canMatchEmpty)
        case .repetition(let body, let minimum, _): return minimum == 0 || body.canMatchEmpty
        }
    }

    /// Zero-width tests of the position, with ICU's default (not multiline) meanings.
    enum Assertion: UInt8, Hashable, Sendable {
        /// `^`, `\A`: the start of the text.
        case start
        /// `$`, `\Z`: the end, or just before a line terminator that ends the text
        /// (before a final CR LF too, but not between its CR and LF).
        case endOrBeforeFinalLineTerminator
        /// `\z`: the end of the text.
        case end
        /// `\b`: between a word and a non-word scalar, skipping combining marks and format characters.
        case wordBoundary
        /// `\B`: anywhere `\b` is not.
        case notWordBoundary
    }
}
