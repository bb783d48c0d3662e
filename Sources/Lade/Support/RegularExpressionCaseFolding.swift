/// Case-insensitive matching as ICU does it (`UREGEX_CASE_INSENSITIVE`, `(?i)`, `MATCHES[c]`),
/// for the native engine.
///
/// ICU closes every set over simple case folding before negating it: `(?i)[a-z]` holds `ſ`
/// and `K` (KELVIN SIGN), `(?i)[^a]` refuses both `a` and `A`, `(?i)σ` matches `ς`, and the
/// dotless and dotted Turkish i stay apart from `i`. Those sets are matched natively, as
/// case-sensitive ones are, in linear time.
///
/// For literal characters ICU uses full case folding, where one character may stand for two
/// (`ß` and `ss`, `ﬁ` and `fi`, `İ` and `i̇`). That the native engine does not do: a pattern
/// with such a character among its literals is refused, and so (at match time) is a text
/// holding one whose folding starts with a character the pattern's literals match. Everything
/// else gets ICU's answer; the differential tests hold both engines to it.
enum RegularExpressionCaseFolding {
    /// Each cased scalar's orbit under simple case folding (itself included), by scalar.
    static let orbits: [UInt32: [UInt32]] = tables.orbits
    /// Scalars whose full case folding is more than one scalar, with that folding.
    static let multipleFoldings: [UInt32: [UInt32]] = tables.multiple

    private static let tables: (orbits: [UInt32: [UInt32]], multiple: [UInt32: [UInt32]]) = {
        func single(_ mapping: String) -> UInt32? {
            var scalars = mapping.unicodeScalars.makeIterator()
            guard let first = scalars.next(), scalars.next() == nil else { return nil }
            return first.value
        }
        // Full folding, as lower(upper(c)) taken to a fixed point (ẞ → ß → ss).
        func fullFolding(_ value: UInt32) -> [UInt32] {
            var current = [value]
            for _ in 0..<3 {
                let next = current.flatMap { value -> [UInt32] in
                    guard let scalar = Unicode.Scalar(value), scalar.properties.changesWhenCaseMapped else { return [value] }
                    return scalar.properties.uppercaseMapping.lowercased().unicodeScalars.map(\.value)
                }
                if next == current { break }
                current = next
            }
            return current
        }
        var byFolding: [UInt32: [UInt32]] = [:]
        var multiple: [UInt32: [UInt32]] = [:]
        // Every cased character is below U+20000 (the last, in Adlam, is U+1E943).
        for value in UInt32(0)...0x1FFFF {
            guard let scalar = Unicode.Scalar(value), scalar.properties.changesWhenCaseMapped else { continue }
            let folding = fullFolding(value)
            if folding.count > 1 { multiple[value] = folding }
            // Simple folding: the single-scalar uppercase, then lowercase (the Turkish dotted and
            // dotless i have no simple folding to i).
            guard value != 0x130, value != 0x131 else { continue }
            let properties = scalar.properties
            let upper = single(properties.uppercaseMapping) ?? value
            let simple = Unicode.Scalar(upper).flatMap { single($0.properties.lowercaseMapping) } ?? upper
            byFolding[simple, default: [simple]].append(value)
        }
        var orbits: [UInt32: [UInt32]] = [:]
        for (_, members) in byFolding {
            let orbit = Array(Set(members)).sorted()
            guard orbit.count > 1 else { continue }
            for member in orbit { orbits[member] = orbit }
        }
        return (orbits, multiple)
    }()

    /// `syntax` with every set closed over simple case folding; throws for a literal whose
    /// full folding is more than one character.
    static func close(_ syntax: RegularExpressionSyntax, pattern: String) throws(RegularExpressionParser.Stop) -> RegularExpressionSyntax {
        switch syntax {
        case .empty, .assertion: return syntax
        case .scalar(let set):
            if let literal = set.singleScalar, let folding = multipleFoldings[literal] {
                let shown = String(String.UnicodeScalarView(folding.compactMap(Unicode.Scalar.init)))
                throw .outsideSubset(RegularExpressionError(
                    pattern: pattern, offset: 0,
                    reason: "its literal '\(Unicode.Scalar(literal).map(String.init) ?? "?")' folds to '\(shown)', more than one character, which Lade's engine does not match case-insensitively"))
            }
            return .scalar(closed(set))
        case .concatenation(let items): return .concatenation(try items.map { item throws(RegularExpressionParser.Stop) in try close(item, pattern: pattern) })
        case .alternation(let branches): return .alternation(try branches.map { branch throws(RegularExpressionParser.Stop) in try close(branch, pattern: pattern) })
        case .repetition(let body, let minimum, let maximum): return .repetition(try close(body, pattern: pattern), minimum: minimum, maximum: maximum)
        }
    }

    /// The set with every case variant of its ranges' scalars added (before its negation).
    static func closed(_ set: RegularExpressionScalarSet) -> RegularExpressionScalarSet {
        if let literal = set.singleScalar {
            var result = RegularExpressionScalarSet()
            for scalar in orbits[literal] ?? [literal] { result.insert(scalar...scalar) }
            return result
        }
        var result = set
        var added: [UInt32] = []
        for (scalar, orbit) in orbits where set.rangesContain(scalar) {
            added += orbit
        }
        for scalar in added where !result.rangesContain(scalar) { result.insert(scalar...scalar) }
        return result
    }

    /// Whether ICU's backtracking over `syntax` stays within a small polynomial of the text:
    /// nothing but scalars and assertions under a quantifier that repeats more than once, and
    /// at most two long repetitions (unbounded, or more than 64), so at most quadratic work
    /// (`.*ss.*`, `[a-z]+@x`; not `(a+)+`, `(a|ab)*` or `.*a.*b.*c`).
    static func backtracksBoundedly(_ syntax: RegularExpressionSyntax) -> Bool {
        var longRepetitions = 0
        func check(_ syntax: RegularExpressionSyntax, underRepetition: Bool) -> Bool {
            switch syntax {
            case .empty, .assertion, .scalar: return true
            case .concatenation(let items): return items.allSatisfy { check($0, underRepetition: underRepetition) }
            case .alternation(let branches): return !underRepetition && branches.allSatisfy { check($0, underRepetition: false) }
            case .repetition(let body, _, let maximum):
                if underRepetition { return false }
                if maximum.map({ $0 > 64 }) ?? true { longRepetitions += 1 }
                return check(body, underRepetition: maximum.map { $0 > 1 } ?? true)
            }
        }
        return check(syntax, underRepetition: false) && longRepetitions <= 2
    }

    /// The scalars the pattern's literals (single-scalar sets) match, closed over case.
    static func literalScalars(_ syntax: RegularExpressionSyntax) -> Set<UInt32> {
        switch syntax {
        case .empty, .assertion: return []
        case .scalar(let set):
            guard let literal = set.singleScalar else { return [] }
            return Set(orbits[literal] ?? [literal])
        case .concatenation(let items): return items.reduce(into: []) { $0.formUnion(literalScalars($1)) }
        case .alternation(let branches): return branches.reduce(into: []) { $0.formUnion(literalScalars($1)) }
        case .repetition(let body, _, _): return literalScalars(body)
        }
    }
}

extension RegularExpressionScalarSet {
    /// The one scalar of a set that holds exactly one (a literal, or `[x]`), else nil.
    var singleScalar: UInt32? {
        guard !isNegated, properties.isEmpty, ranges.count == 1, ranges[0].lowerBound == ranges[0].upperBound else { return nil }
        return ranges[0].lowerBound
    }
}
