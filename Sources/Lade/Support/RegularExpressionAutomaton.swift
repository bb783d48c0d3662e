/// A deterministic automaton built ahead of time from a ``RegularExpressionProgram`` (subset
/// construction over the classifier's scalar classes): one table look-up per scalar, straight
/// over the string's UTF-8, with no allocation.
///
/// Assertions are settled when what they depend on is known: `^`/`\A` by whether a scalar has
/// been read; `\b`/`\B` wait in the state (with whether the last counted scalar was a word
/// scalar) until the next scalar's class or the end; `$`, `\Z` and `\z` wait for the end. A
/// text that ends with a line terminator, where `$` might hold one or two scalars before the
/// end, is left to the simulation (``run(_:classifier:)`` answers nil).
///
/// ```swift
/// let automaton = RegularExpressionAutomaton(program: program, classifier: classifier, whole: true)
/// automaton?.run("SKU-00012345", classifier: classifier)   // true for [A-Z0-9][A-Z0-9-]{2,31}
/// ```
struct RegularExpressionAutomaton: Sendable {
    /// `transitions[state * classCount + class]`; state 0 is the empty set of NFA states
    /// (no match possible when matching whole).
    let transitions: [Int32]
    let classCount: Int
    let startState: Int32
    /// Whether a match ends here, whatever follows (used when matching somewhere).
    let acceptsNow: [Bool]
    /// Whether a match ends here when this is the end of a non-empty text.
    let acceptsAtEnd: [Bool]
    /// Whether each scalar restarts the pattern (matching somewhere) or not (matching whole).
    let isSearching: Bool
    /// Whether a final line terminator would need `$` settled before the end.
    let settlesDollarBeforeEnd: Bool

    /// More states than this (or a larger table) and the question keeps to the simulation:
    /// building it would cost more than it saves (searching for `x{2,31}` anywhere needs a
    /// state per subset of counts). Matching a whole text rarely needs more states than the
    /// program has instructions.
    static func largestStateCount(instructionCount: Int, classCount: Int) -> Int {
        min(4 * instructionCount + 64, 2048, (1 << 16) / max(classCount, 1))
    }

    /// NFA states visited while building, at most: a program of thousands of instructions
    /// (`(a|b){500}`) with many states would otherwise spend seconds here; past it, the
    /// question keeps to the simulation, which is linear in the text.
    static let largestBuildWork = 1_000_000

    init?(program: RegularExpressionProgram, classifier: RegularExpressionScalarClassifier, whole: Bool) {
        typealias Assertion = RegularExpressionSyntax.Assertion
        let tellsWords = program.assertions.contains(.wordBoundary) || program.assertions.contains(.notWordBoundary)
        var scratch = RegularExpressionProgram.Scratch(size: program.instructions.count)
        func closure(_ seeds: [Int32], _ holds: (Assertion) -> Bool?) -> [Int32] {
            var states: [Int32] = []
            program.closure(of: seeds, into: &states, scratch: &scratch, holds: holds)
            return states.sorted()
        }
        // Between scalars, word boundaries wait for the next scalar and end tests for the end.
        func pendingClosure(_ seeds: [Int32], atStart: Bool) -> [Int32] {
            closure(seeds) { $0 == .start ? atStart : nil }
        }
        // A state is its NFA states plus two facts: whether the last scalar `\b` counts was a
        // word scalar, and whether no scalar has been read yet. The key appends them as one
        // negative number.
        struct State { var states: [Int32]; var previousIsWord: Bool; var atStart: Bool }
        var idOfKey: [[Int32]: Int32] = [:]
        var states: [State] = []
        let stateLimit = Self.largestStateCount(instructionCount: program.instructions.count, classCount: classifier.classCount)
        func intern(_ state: State) -> Int32? {
            let key = state.states + [-1 - (state.previousIsWord ? 1 : 0) - (state.atStart ? 2 : 0)]
            if let known = idOfKey[key] { return known }
            guard states.count < stateLimit else { return nil }
            idOfKey[key] = Int32(states.count)
            states.append(state)
            return Int32(states.count - 1)
        }
        guard intern(State(states: [], previousIsWord: false, atStart: false)) == 0,
            let start = intern(State(states: pendingClosure([program.start], atStart: true), previousIsWord: false, atStart: true))
        else { return nil }
        // Searching, a match found while settling word boundaries ends the search: this
        // absorbing state says so.
        let found: Int32? = whole ? nil : intern(State(states: [program.matchIndex], previousIsWord: false, atStart: false))

        let classCount = classifier.classCount
        var work = 0
        var transitions: [Int32] = []
        var seeds: [Int32] = []
        var index = 0
        while index < states.count {
            let state = states[index]
            index += 1
            if let found, index - 1 == Int(found) {
                transitions += Array(repeating: found, count: classCount)
                continue
            }
            let pending = state.states.filter { program.instructions[Int($0)].opcode == .assert }
            for scalarClass in 0..<classCount {
                let isWord = classifier.isWord[scalarClass]
                let isIgnored = classifier.isIgnoredByWordBoundary[scalarClass]
                var consumers = state.states
                if !pending.isEmpty {
                    // Now the scalar after this position is known: settle what waited for it.
                    let boundary = !isIgnored && isWord != state.previousIsWord
                    consumers += closure(pending) { assertion in
                        switch assertion {
                        case .start: return state.atStart
                        case .end, .endOrBeforeFinalLineTerminator: return false
                        case .wordBoundary: return boundary
                        case .notWordBoundary: return !boundary
                        }
                    }
                    if let found, consumers.contains(program.matchIndex) {
                        transitions.append(found)
                        continue
                    }
                }
                seeds.removeAll(keepingCapacity: true)
                let memberOf = classifier.membership[scalarClass]
                for pc in consumers {
                    let instruction = program.instructions[Int(pc)]
                    if instruction.opcode == .consume && memberOf[Int(instruction.operand)] {
                        seeds.append(instruction.next)
                    }
                }
                if !whole { seeds.append(program.start) }
                let next = State(
                    states: pendingClosure(seeds, atStart: false),
                    previousIsWord: tellsWords && (isIgnored ? state.previousIsWord : isWord),
                    atStart: false)
                work += consumers.count + next.states.count
                guard work <= Self.largestBuildWork, let target = intern(next) else { return nil }
                transitions.append(target)
            }
        }
        self.transitions = transitions
        self.classCount = classCount
        self.startState = start
        self.acceptsNow = states.map { $0.states.contains(program.matchIndex) }
        self.acceptsAtEnd = states.map { state in
            // At the end there is no next scalar: `\b` holds after a word scalar.
            let pending = state.states.filter { program.instructions[Int($0)].opcode != .consume }
            return closure(pending) { assertion in
                switch assertion {
                case .start: return state.atStart
                case .end, .endOrBeforeFinalLineTerminator: return true
                case .wordBoundary: return state.previousIsWord
                case .notWordBoundary: return !state.previousIsWord
                }
            }.contains(program.matchIndex)
        }
        self.isSearching = !whole
        self.settlesDollarBeforeEnd = program.assertions.contains(.endOrBeforeFinalLineTerminator)
    }

    /// Whether the pattern matches `text` (whole or somewhere, as built), or nil when the text
    /// ends with a line terminator that a `$` might stand before.
    func run(_ text: String, classifier: RegularExpressionScalarClassifier) -> Bool? {
        text.withUTF8Bytes { run(utf8: $0, classifier: classifier) }
    }

    private func run(utf8 bytes: UnsafeBufferPointer<UInt8>, classifier: RegularExpressionScalarClassifier) -> Bool? {
        let count = bytes.count
        if count == 0 { return acceptsAtEnd[Int(startState)] }
        if settlesDollarBeforeEnd && Self.endsWithLineTerminator(bytes) { return nil }
        return transitions.withUnsafeBufferPointer { table in
            classifier.asciiClasses.withUnsafeBufferPointer { asciiClasses in
                acceptsNow.withUnsafeBufferPointer { acceptsNow in
                    var state = Int(startState)
                    if isSearching && acceptsNow[state] { return true }
                    var index = 0
                    while index < count {
                        let lead = bytes[index]
                        let scalarClass: Int
                        if lead < 0x80 {
                            scalarClass = Int(asciiClasses[Int(lead)])
                            index &+= 1
                        } else {
                            scalarClass = classifier.classify(nonASCII: Self.decode(bytes, at: &index))
                        }
                        state = Int(table[state &* classCount &+ scalarClass])
                        if isSearching {
                            if acceptsNow[state] { return true }
                        } else if state == 0 {
                            return false
                        }
                    }
                    return acceptsAtEnd[state]
                }
            }
        }
    }

    /// Decodes the multi-byte scalar at `index` of valid UTF-8 and moves past it.
    @inline(__always)
    private static func decode(_ bytes: UnsafeBufferPointer<UInt8>, at index: inout Int) -> UInt32 {
        let lead = UInt32(bytes[index])
        if lead < 0xE0 {
            defer { index &+= 2 }
            return (lead & 0x1F) << 6 | UInt32(bytes[index &+ 1] & 0x3F)
        }
        if lead < 0xF0 {
            defer { index &+= 3 }
            return (lead & 0x0F) << 12 | UInt32(bytes[index &+ 1] & 0x3F) << 6 | UInt32(bytes[index &+ 2] & 0x3F)
        }
        defer { index &+= 4 }
        return (lead & 0x07) << 18 | UInt32(bytes[index &+ 1] & 0x3F) << 12
            | UInt32(bytes[index &+ 2] & 0x3F) << 6 | UInt32(bytes[index &+ 3] & 0x3F)
    }

    /// Whether the last scalar is one of ICU's line terminators (U+000A–U+000D, U+0085, U+2028, U+2029).
    private static func endsWithLineTerminator(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = bytes.count
        let last = bytes[count - 1]
        if (0x0A...0x0D).contains(last) { return true }
        if count >= 2 && bytes[count - 2] == 0xC2 && last == 0x85 { return true }
        return count >= 3 && bytes[count - 3] == 0xE2 && bytes[count - 2] == 0x80 && (last == 0xA8 || last == 0xA9)
    }
}
