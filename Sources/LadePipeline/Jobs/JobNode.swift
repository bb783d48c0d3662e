import Foundation
import Yams

/// A value in a job file with where it sits (line, column, field path), so every complaint
/// about it can say exactly where to look. Job files are YAML; JSON job files are read by the
/// same parser (JSON is YAML).
struct JobNode {
    let node: Node
    let file: String
    /// The dotted path from the top of the job, e.g. `source.nulls`.
    let path: String

    static func parse(_ text: String, file: String) throws -> JobNode {
        do {
            // No tag resolution: every scalar is read by its text here (`string()`, `bool()`,
            // `positiveInt()`), and Yams' default resolver compiles its rules as
            // NSRegularExpressions, which loads ICU into every run (1.5 MiB of resident
            // memory on `make bench`'s import, for nothing).
            guard let root = try Yams.compose(yaml: text, .basic) else {
                throw JobError(file: file, "the job file is empty; see jobs/README.md for the fields a job needs")
            }
            return JobNode(node: root, file: file, path: "")
        } catch let error as YamlError {
            throw Self.describe(error, file: file)
        }
    }

    private static func describe(_ error: YamlError, file: String) -> JobError {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            let detail = context.map { "\(problem) \($0.text)" } ?? problem
            return JobError(file: file, line: mark.line, column: mark.column, "not valid YAML or JSON: \(detail)")
        case .reader(let problem, _, _, _):
            return JobError(file: file, "cannot be read as text: \(problem)")
        default:
            return JobError(file: file, "not valid YAML or JSON: \(error)")
        }
    }

    func error(_ message: String) -> JobError {
        JobError(file: file, line: node.mark?.line, column: node.mark?.column, field: path, message)
    }

    private func child(_ node: Node, _ key: String) -> JobNode {
        JobNode(node: node, file: file, path: path.isEmpty ? key : "\(path).\(key)")
    }

    // MARK: Shapes

    var isMapping: Bool { node.mapping != nil }
    var isNull: Bool { node.scalar.map { $0.style == .plain && ["", "~", "null", "Null", "NULL"].contains($0.string) } ?? false }

    /// The mapping's entries in file order; keys must be strings and unique.
    func entries() throws -> [(key: String, value: JobNode)] {
        guard let mapping = node.mapping else { throw error("expected a mapping of names to values (key: value)") }
        var seen: Set<String> = []
        var result: [(String, JobNode)] = []
        for (key, value) in mapping {
            guard let name = key.scalar?.string else {
                throw JobError(file: file, line: key.mark?.line, column: key.mark?.column, field: path, "keys must be plain names")
            }
            guard seen.insert(name).inserted else {
                throw JobError(file: file, line: key.mark?.line, column: key.mark?.column, field: path, "'\(name)' is given twice")
            }
            result.append((name, child(value, name)))
        }
        return result
    }

    /// A mapping whose keys are all among `allowed`: an unknown key is a typo until proven otherwise.
    func fields(allowed: [String]) throws -> [String: JobNode] {
        var result: [String: JobNode] = [:]
        for (key, value) in try entries() {
            guard allowed.contains(key) else {
                let suggestion = allowed.min { Self.distance($0, key) < Self.distance($1, key) }
                    .flatMap { Self.distance($0, key) <= 2 ? " (did you mean '\($0)'?)" : nil } ?? ""
                throw JobError(file: file, line: value.node.mark?.line, column: value.node.mark?.column, field: value.path,
                               "unknown field\(suggestion); allowed here: \(allowed.joined(separator: ", "))")
            }
            result[key] = value
        }
        return result
    }

    func items() throws -> [JobNode] {
        guard let sequence = node.sequence else { throw error("expected a list ([a, b] or one '- item' per line)") }
        return sequence.enumerated().map { child($0.element, "[\($0.offset)]") }
    }

    // MARK: Scalars

    func string() throws -> String {
        guard let scalar = node.scalar, !isNull else { throw error("expected a text value") }
        return scalar.string
    }

    func nonEmptyString() throws -> String {
        let text = try string()
        guard !text.isEmpty else { throw error("must not be empty") }
        return text
    }

    func bool() throws -> Bool {
        guard let scalar = node.scalar else { throw error("expected true or false") }
        switch scalar.string.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: throw error("expected true or false, found '\(scalar.string)'")
        }
    }

    func positiveInt() throws -> Int {
        guard let scalar = node.scalar, let value = Int(scalar.string), value > 0 else {
            throw error("expected a whole number above 0, found '\(node.scalar?.string ?? "a \(kind)")'")
        }
        return value
    }

    /// A number above 0 (`2`, `0.5`), finite.
    func positiveNumber() throws -> Double {
        guard let scalar = node.scalar, let value = Double(scalar.string), value.isFinite, value > 0 else {
            throw error("expected a number above 0, found '\(node.scalar?.string ?? "a \(kind)")'")
        }
        return value
    }

    func nonNegativeInt() throws -> Int {
        guard let scalar = node.scalar, let value = Int(scalar.string), value >= 0 else {
            throw error("expected a whole number, 0 or more, found '\(node.scalar?.string ?? "a \(kind)")'")
        }
        return value
    }

    func oneOf(_ choices: [String]) throws -> String {
        let value = try string()
        guard choices.contains(value) else {
            throw error("expected one of \(choices.joined(separator: ", ")), found '\(value)'")
        }
        return value
    }

    /// A string, or a list of strings (`key: sku` or `key: [sku, region]`).
    func stringOrList() throws -> [String] {
        if node.sequence != nil { return try items().map { try $0.nonEmptyString() } }
        return [try nonEmptyString()]
    }

    private var kind: String {
        switch node {
        case .mapping: "mapping"
        case .sequence: "list"
        case .scalar: "value"
        case .alias: "alias"
        }
    }

    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
