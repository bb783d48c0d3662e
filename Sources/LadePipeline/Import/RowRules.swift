import Foundation
import Lade

/// The rules a mapped row is held to where what the store holds decides, said once for both
/// writers (`BatchWriter`, `BatchInsertWriter`), so they reject the same rows with the same
/// words. The rules that need no store are the mapper's (`RowMapper`) and come first. Then, in
/// this order, which both writers keep:
/// 1. a relationship the job requires (`required: true`) with no key, or whose key no
///    destination has (`missingRequiredLink`);
/// 2. `mode: update` and no object has the row's key (`noObjectToUpdate`);
/// 3. no object has the key, and a new one made from the row would lack a required attribute
///    or to-one relationship, or take a model default the store cannot keep exactly
///    (`newObjectProblem`).
///
/// Then the store may still refuse the object the row is applied to (another uniqueness
/// constraint than the key).
///
/// A class: the writers ask it of every row, and a struct holding the plan was copied (each of
/// the plan's references retained and released) at each call.
final class RowRules {
    /// Why a row is rejected: the field (column or key path) and value it is about, and why.
    struct Problem {
        let field: String?
        let value: String?
        let reason: String

        func rejected(_ row: MappedRow, raw: [UInt8]) -> RejectedRow {
            RejectedRow(line: row.line, recordIndex: row.recordIndex, column: nil, field: field, value: value, reason: reason,
                        raw: RowMapper.rawText(raw, row.rawRange))
        }
    }

    let plan: ImportPlan
    /// `plan.requiredByJob`, `plan.requiredWithoutDefault`, `plan.requiredToOne` and
    /// `plan.unkeepableDefaults`, worked out once.
    private let requiredByJob: [Int]
    private let requiredWithoutDefault: [Int]
    private let requiredToOne: [Int]
    private let unkeepableDefaults: [(position: Int?, attribute: String, problem: String)]

    init(plan: ImportPlan) {
        self.plan = plan
        requiredByJob = plan.requiredByJob
        requiredWithoutDefault = plan.requiredWithoutDefault
        requiredToOne = plan.requiredToOne
        unkeepableDefaults = plan.unkeepableDefaults
    }

    private func from(_ index: Int) -> String {
        plan.relationships[index].settings.from.components.joined(separator: ".")
    }

    /// The first relationship the job requires whose field the row gives empty, or names a
    /// destination no object has by: `absent(relationship, key)` says whether none has `key`.
    func missingRequiredLink(in row: MappedRow, absent: (Int, AttributeValue) -> Bool) -> Problem? {
        for index in requiredByJob {
            guard let keys = row.links[index] else { continue }
            let relationship = plan.relationships[index]
            if keys.isEmpty {
                return Problem(field: from(index), value: nil, reason: "\(relationship.relationship.name) is required and the record gives no key")
            }
            if let missing = keys.first(where: { absent(index, $0) }) {
                return Problem(field: from(index), value: missing.canonicalText,
                               reason: "no \(relationship.relationship.destinationEntityName) has \(relationship.match.name) '\(missing.canonicalText)' (the relationship \(relationship.relationship.name) is required)")
            }
        }
        return nil
    }

    /// `mode: update`, and no object has the row's key.
    func noObjectToUpdate(_ row: MappedRow) -> Problem {
        Problem(field: plan.step.key.joined(separator: ", "), value: row.key.map(\.canonicalText).joined(separator: ", "),
                reason: "no \(plan.entity.name) has \(plan.step.key.joined(separator: ", ")) \(row.key.map { "'\($0.canonicalText)'" }.joined(separator: ", ")) to update (mode: update)")
    }

    /// What a new object made from the row would lack: a required attribute without a default
    /// the row gives no value for, a default the store cannot keep exactly for an attribute the
    /// row gives no value for, or a required to-one relationship whose key the row leaves out
    /// or no destination has (`absent` as for `missingRequiredLink`). Nil: it lacks nothing.
    func newObjectProblem(in row: MappedRow, absent: (Int, AttributeValue) -> Bool) -> Problem? {
        for index in requiredWithoutDefault {
            if case .none = row.values[index] {
                let attribute = plan.attributes[index]
                return Problem(field: attribute.fieldIndices.first.map { plan.readerFields[$0].components.joined(separator: ".") }, value: nil,
                               reason: "\(attribute.attribute.name) is required and the record has no value for it")
            }
        }
        for refused in unkeepableDefaults {
            if let position = refused.position, case .some = row.values[position] { continue }
            return Problem(field: refused.position.flatMap { plan.attributes[$0].fieldIndices.first }.map { plan.readerFields[$0].components.joined(separator: ".") },
                           value: nil, reason: refused.problem)
        }
        for index in requiredToOne {
            let keys = row.links[index] ?? []
            if keys.isEmpty || keys.contains(where: { absent(index, $0) }) {
                let relationship = plan.relationships[index]
                return Problem(field: from(index), value: keys.first?.canonicalText,
                               reason: "\(relationship.relationship.name) is required and the record names no existing \(relationship.relationship.destinationEntityName)")
            }
        }
        return nil
    }
}
