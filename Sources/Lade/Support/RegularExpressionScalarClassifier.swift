/// Splits all Unicode scalars into the few classes a program cannot tell apart: two scalars
/// are in the same class when every scalar set of the program holds both or neither.
///
/// ASCII scalars are classified by a 128-entry table. Any other scalar is classified by the
/// region of code points it falls in (bounded by the sets' range ends) and by the properties
/// the sets test (``RegularExpressionScalarProperties``), so the automaton never needs a
/// slow path for non-ASCII text.
///
/// ```swift
/// // [A-Z0-9][A-Z0-9-]{2,31}: classes {A-Z, 0-9}, {-}, everything else
/// classifier.classCount          // 3
/// classifier.classify(0x41)      // the class of "A"
/// ```
struct RegularExpressionScalarClassifier: Sendable {
    /// The class of each ASCII scalar.
    let asciiClasses: [UInt16]
    /// Sorted starts of the non-ASCII regions; the first is 0x80.
    let regionStarts: [UInt32]
    /// The class of region `r` for property bits `b` is `regionClasses[r << 5 | b]`.
    let regionClasses: [UInt16]
    /// The property bits any set tests; other bits are masked off before classifying.
    let propertyMask: UInt8
    /// For each class, whether each set of the program holds its scalars.
    let membership: [[Bool]]
    /// For each class, whether its scalars are word scalars and whether `\b` looks through
    /// them (only told apart when the program asks, else false).
    let isWord: [Bool]
    let isIgnoredByWordBoundary: [Bool]

    var classCount: Int { membership.count }

    /// Classes for `sets`; `distinguishingWords` also separates what `\b` and `\B` tell apart.
    init(sets: [RegularExpressionScalarSet], distinguishingWords: Bool) {
        var classOfSignature: [[Bool]: UInt16] = [:]
        var membership: [[Bool]] = []
        func classOf(_ signature: [Bool]) -> UInt16 {
            if let known = classOfSignature[signature] { return known }
            let id = UInt16(membership.count)
            membership.append(signature)
            classOfSignature[signature] = id
            return id
        }
        let wordBits = RegularExpressionScalarProperties.Property.word.bit | RegularExpressionScalarProperties.Property.ignoredByWordBoundary.bit
        let mask = sets.reduce(distinguishingWords ? wordBits : 0) { $0 | $1.propertyMask }
        func signature(_ facts: RegularExpressionScalarProperties, _ member: (RegularExpressionScalarSet) -> Bool) -> [Bool] {
            var signature = sets.map(member)
            if distinguishingWords { signature += [facts.has(.word), facts.has(.ignoredByWordBoundary)] }
            return signature
        }
        asciiClasses = (0..<128).map { scalar in
            let facts = RegularExpressionScalarProperties(UInt32(scalar))
            return classOf(signature(facts) { $0.contains(UInt32(scalar), facts: facts) })
        }
        var boundaries: Set<UInt32> = [0x80]
        for set in sets {
            for range in set.ranges {
                if range.lowerBound > 0x80 { boundaries.insert(range.lowerBound) }
                if range.upperBound >= 0x80 && range.upperBound < 0x10FFFF { boundaries.insert(range.upperBound + 1) }
            }
        }
        regionStarts = boundaries.sorted()
        var regionClasses: [UInt16] = []
        let combinations = RegularExpressionScalarProperties.combinations
        regionClasses.reserveCapacity(regionStarts.count * combinations)
        for start in regionStarts {
            for bits in 0..<UInt8(combinations) {
                let facts = RegularExpressionScalarProperties(bits: bits & mask)
                regionClasses.append(classOf(signature(facts) { $0.contains(inRanges: $0.rangesContain(start), facts: facts) }))
            }
        }
        self.regionClasses = regionClasses
        self.propertyMask = mask
        self.membership = membership
        self.isWord = membership.map { distinguishingWords && $0[sets.count] }
        self.isIgnoredByWordBoundary = membership.map { distinguishingWords && $0[sets.count + 1] }
    }

    /// The class of a scalar at or above 0x80.
    @inline(__always)
    func classify(nonASCII scalar: UInt32) -> Int {
        var region = 0
        if regionStarts.count > 1 {
            var low = 0
            var high = regionStarts.count
            while high - low > 1 {
                let middle = (low + high) / 2
                if regionStarts[middle] <= scalar { low = middle } else { high = middle }
            }
            region = low
        }
        let bits = propertyMask == 0 ? 0 : RegularExpressionScalarProperties.lookUp(scalar) & propertyMask
        return Int(regionClasses[region << 5 | Int(bits)])
    }

    /// The class of any scalar.
    func classify(_ scalar: UInt32) -> Int {
        scalar < 0x80 ? Int(asciiClasses[Int(scalar)]) : classify(nonASCII: scalar)
    }
}
