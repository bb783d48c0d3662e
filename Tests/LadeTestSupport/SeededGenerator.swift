import Foundation

/// SplitMix64: a small, fast generator whose sequence a seed fixes, so a generated case (a
/// data set, a kill point, a fuzz input) is the same on every run and a failing one replays
/// from the seed the test prints. Shared by every test target.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// 0..<bound.
    public mutating func int(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    /// A number in `range`.
    public mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + int(range.count) }
    /// True `percent` times in 100.
    public mutating func chance(_ percent: Int) -> Bool { int(100) < percent }
    public mutating func pick<T>(_ values: [T]) -> T { values[int(values.count)] }
    public mutating func bytes(_ count: Int) -> Data { Data((0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }) }
    public mutating func uuid() -> UUID {
        let b = [UInt8](bytes(16))
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }
}
