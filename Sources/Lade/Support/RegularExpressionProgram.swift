/// A Thompson NFA compiled from ``RegularExpressionSyntax``, and the linear-time simulation
/// that runs it (every live state advanced together, so no input makes it backtrack).
///
/// The simulation handles every native construct, `\b` included; ``RegularExpressionAutomaton``
/// is the fast path built from the same program when it has no word-boundary assertions.
///
/// ```swift
/// let program = try RegularExpressionProgram(RegularExpressionParser.parse("(a*)*b"))
/// program.matches(Array("aaab".unicodeScalars.map(\.value)), whole: true)   // true
/// ```
struct RegularExpressionProgram: Sendable {
    enum Opcode: UInt8, Sendable {
        /// Consumes one scalar in `sets[operand]`, then goes to `next`.
        case consume
        /// Goes to both `next` and `alternative`; a plain jump when `alternative` is -1.
        case split
        /// Goes to `next` when the assertion whose raw value is `operand` holds here.
        case assert
        /// The whole pattern has matched.
        case match
    }

    struct Instruction: Sendable {
        var opcode: Opcode
        var operand: Int32
        var next: Int32
        var alternative: Int32
    }

    /// Programs above this many instructions (huge counted repetitions) go to ICU instead.
    static let largestSize = 20_000

    private(set) var instructions: [Instruction] = []
    /// The distinct scalar sets the `consume` instructions test.
    private(set) var sets: [RegularExpressionScalarSet] = []
    private(set) var start: Int32 = 0
    /// The index of the single `match` instruction.
    let matchIndex: Int32 = 0
    /// The assertions the program uses.
    private(set) var assertions: Set<RegularExpressionSyntax.Assertion> = []

    init(_ syntax: RegularExpressionSyntax) throws(RegularExpressionParser.Stop) {
        var setIndices: [RegularExpressionScalarSet: Int32] = [:]
        instructions.append(Instruction(opcode: .match, operand: 0, next: -1, alternative: -1))
        start = try emit(syntax, then: matchIndex, setIndices: &setIndices)
    }

    /// Emits `syntax` so that it continues at `continuation`; returns its entry.
    private mutating func emit(
        _ syntax: RegularExpressionSyntax, then continuation: Int32, setIndices: inout [RegularExpressionScalarSet: Int32]
    ) throws(RegularExpressionParser.Stop) -> Int32 {
        switch syntax {
        case .empty:
            return continuation
        case .scalar(let set):
            let index: Int32
            if let known = setIndices[set] {
                index = known
            } else {
                index = Int32(sets.count)
                sets.append(set)
                setIndices[set] = index
            }
            return try append(.consume, operand: index, next: continuation)
        case .assertion(let assertion):
            assertions.insert(assertion)
            return try append(.assert, operand: Int32(assertion.rawValue), next: continuation)
        case .concatenation(let items):
            var entry = continuation
            for item in items.reversed() {
                entry = try emit(item, then: entry, setIndices: &setIndices)
            }
            return entry
        case .alternation(let branches):
            var entry = try emit(branches[branches.count - 1], then: continuation, setIndices: &setIndices)
            for branch in branches.dropLast().reversed() {
                let branchEntry = try emit(branch, then: continuation, setIndices: &setIndices)
                entry = try append(.split, next: branchEntry, alternative: entry)
            }
            return entry
        case .repetition(let body, let minimum, let maximum):
            var entry = continuation
            if let maximum {
                // x{0,2} is (x(x)?)?: each optional copy may stop and go on to the continuation.
                for _ in 0..<(maximum - minimum) {
                    let copy = try emit(body, then: entry, setIndices: &setIndices)
                    entry = try append(.split, next: copy, alternative: continuation)
                }
            } else {
                let loop = try append(.split, next: -1, alternative: continuation)
                instructions[Int(loop)].next = try emit(body, then: loop, setIndices: &setIndices)
                entry = loop
            }
            for _ in 0..<minimum {
                entry = try emit(body, then: entry, setIndices: &setIndices)
            }
            return entry
        }
    }

    private mutating func append(
        _ opcode: Opcode, operand: Int32 = 0, next: Int32, alternative: Int32 = -1
    ) throws(RegularExpressionParser.Stop) -> Int32 {
        guard instructions.count < Self.largestSize else {
            throw .outsideSubset(RegularExpressionError(pattern: "", offset: 0, reason: "the pattern expands to too large a program"))
        }
        instructions.append(Instruction(opcode: opcode, operand: operand, next: next, alternative: alternative))
        return Int32(instructions.count - 1)
    }

    // MARK: Closure

    /// Reusable marks for ``closure(of:into:scratch:holds:)``, so a run allocates once.
    struct Scratch {
        var marks: [UInt32]
        var generation: UInt32 = 0
        var stack: [Int32] = []

        init(size: Int) { marks = Array(repeating: 0, count: size) }
    }

    /// Adds to `states` every instruction reachable from `seeds` without consuming a scalar:
    /// `consume` and `match` instructions, and `assert` instructions for which `holds` answers
    /// nil (undecided here: the automaton keeps end-of-text tests pending).
    func closure(
        of seeds: some Sequence<Int32>, into states: inout [Int32], scratch: inout Scratch,
        holds: (RegularExpressionSyntax.Assertion) -> Bool?
    ) {
        scratch.generation &+= 1
        if scratch.generation == 0 {
            for index in scratch.marks.indices { scratch.marks[index] = 0 }
            scratch.generation = 1
        }
        let generation = scratch.generation
        for seed in seeds.reversed() { scratch.stack.append(seed) }
        while let pc = scratch.stack.popLast() {
            guard scratch.marks[Int(pc)] != generation else { continue }
            scratch.marks[Int(pc)] = generation
            let instruction = instructions[Int(pc)]
            switch instruction.opcode {
            case .consume, .match:
                states.append(pc)
            case .split:
                if instruction.alternative >= 0 { scratch.stack.append(instruction.alternative) }
                scratch.stack.append(instruction.next)
            case .assert:
                switch holds(RegularExpressionSyntax.Assertion(rawValue: UInt8(instruction.operand))!) {
                case true?: scratch.stack.append(instruction.next)
                case false?: break
                case nil: states.append(pc)
                }
            }
        }
    }

    // MARK: Simulation

    /// Whether the pattern matches all of `text` (`whole`) or some part of it.
    func matches(_ text: [UInt32], whole: Bool) -> Bool {
        var scratch = Scratch(size: instructions.count)
        var current: [Int32] = []
        var next: [Int32] = []
        var seeds: [Int32] = []
        let count = text.count
        closure(of: [start], into: &current, scratch: &scratch) { Self.holds($0, at: 0, in: text) }
        for position in 0...count {
            if current.contains(matchIndex) && (!whole || position == count) { return true }
            if position == count { return false }
            if whole && current.isEmpty { return false }
            let scalar = text[position]
            let facts = RegularExpressionScalarProperties(scalar)
            seeds.removeAll(keepingCapacity: true)
            for pc in current {
                let instruction = instructions[Int(pc)]
                if instruction.opcode == .consume, sets[Int(instruction.operand)].contains(scalar, facts: facts) {
                    seeds.append(instruction.next)
                }
            }
            if !whole { seeds.append(start) }
            next.removeAll(keepingCapacity: true)
            closure(of: seeds, into: &next, scratch: &scratch) { Self.holds($0, at: position + 1, in: text) }
            swap(&current, &next)
        }
        return false
    }

    /// Whether `assertion` holds at `position` of `text`, exactly as ICU decides it.
    static func holds(_ assertion: RegularExpressionSyntax.Assertion, at position: Int, in text: [UInt32]) -> Bool {
        let count = text.count
        switch assertion {
        case .start:
            return position == 0
        case .end:
            return position == count
        case .endOrBeforeFinalLineTerminator:
            if position == count { return true }
            if position == count - 1 {
                let last = text[position]
                return RegularExpressionScalarProperties.isLineTerminator(last)
                    && !(last == 0x0A && position > 0 && text[position - 1] == 0x0D)
            }
            return position == count - 2 && text[position] == 0x0D && text[position + 1] == 0x0A
        case .wordBoundary:
            return isWordBoundary(at: position, in: text)
        case .notWordBoundary:
            return !isWordBoundary(at: position, in: text)
        }
    }

    /// ICU's `\b`: never just before a combining mark or format character; otherwise whether
    /// the scalar here and the previous one that is neither differ in being word scalars.
    static func isWordBoundary(at position: Int, in text: [UInt32]) -> Bool {
        var isWord = false
        if position < text.count {
            let scalar = text[position]
            if RegularExpressionScalarProperties.isIgnoredByWordBoundary(scalar) { return false }
            isWord = RegularExpressionScalarProperties(scalar).has(.word)
        }
        var previousIsWord = false
        var index = position
        while index > 0 {
            index -= 1
            let previous = text[index]
            if !RegularExpressionScalarProperties.isIgnoredByWordBoundary(previous) {
                previousIsWord = RegularExpressionScalarProperties(previous).has(.word)
                break
            }
        }
        return isWord != previousIsWord
    }
}
