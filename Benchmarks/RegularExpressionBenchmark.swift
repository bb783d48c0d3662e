// Nanoseconds per match of RegularExpression against NSRegularExpression and Swift's Regex,
// on patterns typical of Core Data models. Not part of the package (Package.swift is shared);
// build it optimized from the sources it measures:
//
//     swiftc -O -wmo -parse-as-library Sources/Lade/Support/RegularExpression*.swift \
//         Benchmarks/RegularExpressionBenchmark.swift -o /tmp/regex-benchmark && /tmp/regex-benchmark
import Foundation

@main
struct RegularExpressionBenchmark {
    static let cases: [(pattern: String, text: String)] = [
        ("[A-Z0-9][A-Z0-9-]{2,31}", "SKU-00012345"),
        ("[^@\\s]+@[^@\\s]+", "jane.doe@example.com"),
        ("\\d{3}-\\d{4}", "555-0199"),
        ("(foo|bar)+baz", "foobarfoobaz"),
        ("[\\w ]+straße \\d+", "Königsallee straße 12"),
        ("\\p{L}+", "Zürich"),  // outside the subset: NSRegularExpression inside
        ("^[-_A-Za-z0-9]{1,64}$", "release-notes_2024"),
        ("\\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}\\b", "jane.doe@example.com"),
    ]

    static func main() throws {
        let iterations = 200_000
        print("pattern | text | native? | RegularExpression ns | NSRegularExpression ns | Swift Regex ns")
        for (pattern, text) in cases {
            let expression = try RegularExpression(pattern)
            let ours = measure(iterations) { expression.matchesWhole(text) }
            let ns = try NSRegularExpression(pattern: pattern)
            let whole = NSRange(text.startIndex..., in: text)
            let theirs = measure(iterations / 10) { ns.firstMatch(in: text, options: [.anchored], range: whole)?.range == whole }
            var swiftRegex = "-"
            if let regex = try? Regex(pattern) {
                swiftRegex = String(format: "%.0f", measure(iterations / 10) { (try? regex.wholeMatch(in: text)) != nil })
            }
            print("`\(pattern)` | `\(text)` | \(expression.isNative) | \(String(format: "%.0f", ours)) | \(String(format: "%.0f", theirs)) | \(swiftRegex)")
        }
        let pathological = try RegularExpression("(a*)*b")
        let text = String(repeating: "a", count: 30)
        print("`(a*)*b` on 30 a: \(String(format: "%.0f", measure(10_000) { pathological.matchesWhole(text) })) ns")
    }

    /// Mean nanoseconds per call of `body`, best of five runs.
    static func measure(_ iterations: Int, _ body: () -> Bool) -> Double {
        var best = Double.infinity
        var sink = 0
        for _ in 0..<5 {
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<iterations where body() { sink &+= 1 }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(iterations)
            best = min(best, elapsed)
        }
        if sink == -1 { print(sink) }
        return best
    }
}
