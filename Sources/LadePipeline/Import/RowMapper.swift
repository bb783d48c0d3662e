import Foundation
import Lade

/// A source record turned into values for one object: its key, its attribute values, and the
/// destination keys of its relationships.
package struct MappedRow: Sendable {
    package var line: Int
    package var recordIndex: Int64
    package var rawRange: Range<Int>
    /// The key attributes' values (empty when the step has no key).
    package var key: KeyList
    /// Per `ImportPlan.attributes`: `.none` leaves the attribute as it is, `.some(nil)` clears it.
    package var values: [AttributeValue??]
    /// Per `ImportPlan.relationships`: `nil` when the record has no such field, otherwise the
    /// destination keys (none clears the relationship; one for a to-one).
    package var links: [KeyList?]
}

/// A row the import could not take, with everything needed to find and fix it.
package struct RejectedRow: Error, Sendable, Equatable {
    package var line: Int
    package var recordIndex: Int64
    /// The column number (CSV, 1-based), when the problem is in one field.
    package var column: Int?
    /// The field (column or key path) or attribute the problem is in.
    package var field: String?
    package var value: String?
    package var reason: String
    /// The record as it was in the source.
    package var raw: String

    /// One line, as `lade run` and `lade seed` both say it:
    /// `products.csv:1042:3: field 'price': value '-1': price must be at least 0` (the value
    /// only when the reason does not quote it already, clipped to 80 characters).
    package func description(source: String) -> String {
        var text = "\(source):\(line)"
        if let column { text += ":\(column)" }
        text += ": "
        if let field { text += "field '\(field)': " }
        if let value, !value.isEmpty {
            // Not when the reason quotes it already (as it is, or as messages show it).
            let shown = ValueConverter.clip(value)
            if !reason.contains(value) && !reason.contains(shown) { text += "value '\(shown)': " }
        }
        return text + reason
    }
}

/// A batch of records after mapping: rows to write, rows rejected, and where the batch ends.
package struct MappedBatch: Sendable {
    package var rows: [MappedRow]
    package var rejects: [RejectedRow]
    package var raw: [UInt8]
    package var endPoint: ResumePoint
    package var recordCount: Int
    /// Physical bytes of the source read when the batch was made (for progress).
    package var bytesRead: Int64
    /// Positions in `rows` in key order (see `BatchWriter.keyOrder`): worked out on the
    /// reader's thread, so the writer's thread only writes.
    package var keyOrder: [Int]
    /// One line per value accepted though its attribute's pattern could not be decided for it
    /// (`AttributeValidator.Verdict.undecided`), naming the source, line and attribute.
    package var undecided: [String] = []
}

/// Maps records to rows on the reader's thread, so the writer's thread only does object work.
/// Everything a row can be rejected for without looking in the store is found here, once for
/// both writers: unreadable records, values that do not parse, values that break the model's
/// rules or that the store could not keep exactly (on SQLite, a Decimal of more than 15
/// significant digits that no double reads back as), missing keys, keys a destination cannot
/// be created with. So a row is judged by its values first: under `mode: update` a row with
/// such a value is rejected for it, whether an object has its key or not, and a row is
/// rejected for its own values even when a later row of the batch sets the same object's.
/// What the store holds decides the rest (`RowRules`).
package struct RowMapper {
    package let plan: ImportPlan
    /// Per reader field: its column number in a CSV header (for messages).
    private let columnNumbers: [Int?]
    /// `plan.creating`, worked out once.
    private let creating: [Int]

    package init(plan: ImportPlan, columns: [String]?) {
        self.plan = plan
        creating = plan.creating
        let positions = Dictionary((columns ?? []).enumerated().map { ($0.element, $0.offset + 1) }, uniquingKeysWith: { first, _ in first })
        columnNumbers = plan.readerFields.map { positions[$0.components.joined(separator: ".")] }
    }

    /// Reads the next batch from `reader` and maps it, each record as soon as it is read
    /// (``RecordReader/nextBatch(maxRecords:each:)``), so no batch of records is made and freed
    /// first; nil at the end of the source. Errors as the reader's.
    package func nextBatch(from reader: RecordReader, maxRecords: Int) throws -> MappedBatch? {
        var mapping = BatchMapping(capacity: min(maxRecords, 8_192))
        guard let text = try reader.nextBatch(maxRecords: maxRecords, each: { record in
            let outcome = map(record, undecided: &mapping.undecided)
            mapping.add(outcome, record.rawRange)
        }) else { return nil }
        return mapping.finish(raw: text.raw, endPoint: text.endPoint, recordCount: text.recordCount, bytesRead: reader.bytesRead,
                              keyed: !plan.keyIndices.isEmpty)
    }

    /// A batch's rows and rejects as they are mapped; a reject's raw text is added at the end,
    /// when the batch's raw text is complete.
    private struct BatchMapping {
        var rows: [MappedRow] = []
        var rejects: [RejectedRow] = []
        var rejectRanges: [Range<Int>] = []
        var undecided: [String] = []

        init(capacity: Int) { rows.reserveCapacity(capacity) }

        mutating func add(_ outcome: Result<MappedRow, RejectedRow>, _ rawRange: Range<Int>) {
            switch outcome {
            case .success(let row): rows.append(row)
            case .failure(let reject):
                rejects.append(reject)
                rejectRanges.append(rawRange)
            }
        }

        consuming func finish(raw: [UInt8], endPoint: ResumePoint, recordCount: Int, bytesRead: Int64, keyed: Bool) -> MappedBatch {
            for index in rejects.indices { rejects[index].raw = RowMapper.rawText(raw, rejectRanges[index]) }
            return MappedBatch(rows: rows, rejects: rejects, raw: raw, endPoint: endPoint, recordCount: recordCount, bytesRead: bytesRead,
                               keyOrder: BatchWriter.keyOrder(rows, keyed: keyed), undecided: undecided)
        }
    }

    static func rawText(_ raw: [UInt8], _ range: Range<Int>) -> String {
        let clamped = range.clamped(to: 0..<raw.count)
        var text = String(decoding: raw[clamped], as: UTF8.self)
        while text.last == "\n" || text.last == "\r" { text.removeLast() }
        return text
    }

    private func fieldName(_ index: Int) -> String {
        plan.readerFields[index].components.joined(separator: ".")
    }

    private func rejection(_ record: Record, _ fieldIndex: Int?, _ value: SourceValue?, _ reason: String) -> RejectedRow {
        RejectedRow(
            line: record.line, recordIndex: record.recordIndex,
            column: fieldIndex.flatMap { columnNumbers[$0] }, field: fieldIndex.map(fieldName),
            value: value.flatMap(Self.text), reason: reason, raw: "")
    }

    static func text(_ value: SourceValue) -> String? {
        switch value {
        case .string(let text), .number(let text): text
        case .bool(let flag): flag ? "true" : "false"
        case .null: "null"
        case .missing, .array, .object: nil
        }
    }

    /// A destination's key as the relationship matches it; nil when the value gives none.
    private func destinationKey(_ text: SourceValue, _ relationship: ImportPlan.RelationshipPlan, _ record: Record) -> Result<AttributeValue?, RejectedRow> {
        switch relationship.matchConverter.convert(text) {
        case .absent, .value(nil): return .success(nil)
        case .value(let value?): return .success(value)
        case .failure(let reason):
            return .failure(rejection(record, relationship.fieldIndex, text, "\(relationship.relationship.name): \(reason)"))
        }
    }

    /// A record as a row (its values, key and links), or the first reason it is rejected.
    /// A value accepted undecided is told in `undecided`.
    private func map(_ record: Record, undecided: inout [String]) -> Result<MappedRow, RejectedRow> {
        if let problem = record.problem {
            return .failure(RejectedRow(line: record.line, recordIndex: record.recordIndex, column: nil, field: nil, value: nil, reason: problem.description, raw: ""))
        }
        var values: [AttributeValue??] = []
        if let rejected = mapValues(record, into: &values, undecided: &undecided) { return .failure(rejected) }
        var key = KeyList()
        if let rejected = mapKey(record, values: values, into: &key) { return .failure(rejected) }
        var links: [KeyList?] = []
        if let rejected = mapLinks(record, into: &links) { return .failure(rejected) }
        if let rejected = checkCreatable(record, links: links) { return .failure(rejected) }
        return .success(MappedRow(line: record.line, recordIndex: record.recordIndex, rawRange: record.rawRange, key: key, values: values, links: links))
    }

    /// Each attribute's value (by position in `plan.attributes`): a constant, or the first of
    /// its fields the record has, converted and checked; nil when that is all right, else why not.
    private func mapValues(_ record: Record, into values: inout [AttributeValue??], undecided: inout [String]) -> RejectedRow? {
        values.reserveCapacity(plan.attributes.count)
        // Each attribute's plan used in place (`attributes[position].…`): a copy of it, made
        // per attribute and row, retained and released its converter's and validator's fields.
        let attributes = plan.attributes
        for position in attributes.indices {
            if let constant = attributes[position].constant {
                values.append(.some(constant))
                continue
            }
            var source: SourceValue = .missing
            var sourceIndex: Int?
            for index in attributes[position].fieldIndices {
                let candidate = record.values[index]
                if candidate != .missing {
                    source = candidate
                    sourceIndex = index
                    break
                }
            }
            switch attributes[position].converter.convert(source) {
            case .absent:
                values.append(.none)
            case .value(let value):
                switch attributes[position].validator.verdict(of: value) {
                case .meets: break
                case .breaks(let violation):
                    // A missing required value on update leaves the stored one; clearing it is the error.
                    return rejection(record, sourceIndex, source, "\(attributes[position].attribute.name) \(violation.message)" + (value.map { " (value: \(ValueConverter.clip($0.canonicalText)))" } ?? ""))
                case .undecided(let why):
                    // Neither a match nor a mismatch is known: the row goes on, and the run says so.
                    undecided.append("\(plan.step.source.displayPath):\(record.line): \(attributes[position].attribute.name) \(why); the value was accepted unchecked"
                                     + (value.map { " (value: \(ValueConverter.clip($0.canonicalText)))" } ?? ""))
                }
                if let value, let store = attributes[position].refusingStore, let refusal = store.refusal(of: value) {
                    return rejection(record, sourceIndex, source, "\(attributes[position].attribute.name) \(refusal) (value: \(ValueConverter.clip(value.canonicalText)))")
                }
                values.append(.some(value))
            case .failure(let reason):
                return rejection(record, sourceIndex, source, reason)
            }
        }
        return nil
    }

    /// The row's key from its values; every key attribute must have one.
    private func mapKey(_ record: Record, values: [AttributeValue??], into key: inout KeyList) -> RejectedRow? {
        // One key attribute (nearly always) held inline; a compound key as a list.
        for index in plan.keyIndices {
            guard case .some(.some(let value)) = values[index] else {
                let attribute = plan.attributes[index]
                return rejection(record, attribute.fieldIndices.first, nil, "the key attribute '\(attribute.attribute.name)' has no value")
            }
            key.append(value)
        }
        return nil
    }

    /// Each relationship's destination keys (by position in `plan.relationships`): nil when the
    /// record lacks the field, empty for a null or empty one.
    private func mapLinks(_ record: Record, into links: inout [KeyList?]) -> RejectedRow? {
        links.reserveCapacity(plan.relationships.count)
        for relationship in plan.relationships {
            let source = record.values[relationship.fieldIndex]
            var texts: [SourceValue]
            switch source {
            case .missing:
                links.append(nil)
                continue
            case .null:
                texts = []
            case .array(let items):
                guard relationship.relationship.isToMany else {
                    return rejection(record, relationship.fieldIndex, source, "\(relationship.relationship.name) is to-one: expected one key, found a list")
                }
                texts = items
            case .string(let text) where relationship.relationship.isToMany:
                texts = relationship.settings.separator.isEmpty || text.isEmpty ? (text.isEmpty ? [] : [.string(text)])
                    : text.components(separatedBy: relationship.settings.separator).map { .string($0.trimmingCharacters(in: .whitespaces)) }
            default:
                // One key (a to-one's): converted as it is, without a list of one made first.
                switch destinationKey(source, relationship, record) {
                case .success(let key): links.append(key.map(KeyList.init) ?? [])
                case .failure(let rejected): return rejected
                }
                continue
            }
            var keys = KeyList()
            for text in texts {
                switch destinationKey(text, relationship, record) {
                case .success(let key): if let key { keys.append(key) }
                case .failure(let rejected): return rejected
                }
            }
            links.append(keys)
        }
        return nil
    }

    /// A destination made from a key must itself be valid (checked whether or not one has the key).
    private func checkCreatable(_ record: Record, links: [KeyList?]) -> RejectedRow? {
        for index in creating {
            for key in links[index] ?? [] {
                if let problem = plan.relationships[index].creationProblem(key) {
                    return rejection(record, plan.relationships[index].fieldIndex, .string(key.canonicalText), problem)
                }
            }
        }
        return nil
    }
}
