import Foundation

/// One thing wrong with a model, located as precisely as its source allows.
///
/// Its description reads as one line a user can act on:
/// `Catalog.xcdatamodel/contents:14: entity 'Product', property 'description': "description" is a reserved name in Core Data; rename the property`.
public struct ModelProblem: Sendable, Equatable, CustomStringConvertible {
    public var file: String?
    public var line: Int?
    public var entity: String?
    public var property: String?
    public var message: String

    package init(file: String? = nil, line: Int? = nil, entity: String? = nil, property: String? = nil, message: String) {
        self.file = file
        self.line = line
        self.entity = entity
        self.property = property
        self.message = message
    }

    public var description: String {
        var place = ""
        if let file {
            place = file
            if let line { place += ":\(line)" }
            place += ": "
        }
        var subject: [String] = []
        if let entity { subject.append("entity '\(entity)'") }
        if let property { subject.append("property '\(property)'") }
        let prefix = subject.isEmpty ? "" : subject.joined(separator: ", ") + ": "
        return place + prefix + message
    }
}

/// A model that could not be read or that breaks Core Data's rules. All problems found in one
/// model are reported together.
///
/// ```swift
/// do { _ = try ManagedObjectModel(contentsOf: url) }
/// catch let error as ModelError { for problem in error.problems { print(problem) } }
/// ```
public struct ModelError: Error, Sendable, Equatable, CustomStringConvertible {
    public var problems: [ModelProblem]

    package init(_ problems: [ModelProblem]) {
        self.problems = problems
    }

    package init(file: String? = nil, line: Int? = nil, entity: String? = nil, property: String? = nil, _ message: String) {
        self.problems = [ModelProblem(file: file, line: line, entity: entity, property: property, message: message)]
    }

    /// How many problems the description lists: a hostile model's 100,000 (an inheritance
    /// chain 100,000 deep) made a message of 13 MB; every one is still in `problems`.
    static let listedProblems = 100

    public var description: String {
        if problems.count == 1 { return problems[0].description }
        let listed = problems.prefix(Self.listedProblems).map { "  " + $0.description }.joined(separator: "\n")
        let more = problems.count > Self.listedProblems ? "\n  … and \(problems.count - Self.listedProblems) more" : ""
        return "the model has \(problems.count) problems:\n" + listed + more
    }
}

/// Where each part of a model was read from, so problems found later can name file and line.
/// Keys: `Entity`, `Entity.property`, `fetchRequest:NAME`, `configuration:NAME`.
struct ModelSourceMap: Sendable {
    var file: String
    var lines: [String: Int] = [:]

    func line(entity: String?, property: String? = nil) -> Int? {
        guard let entity else { return nil }
        if let property, let line = lines["\(entity).\(property)"] { return line }
        return lines[entity]
    }
}

extension ModelError: LadeError {
    public var code: String { "model" }
}
