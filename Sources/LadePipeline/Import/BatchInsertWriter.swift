import Foundation
import Lade

/// Writes mapped batches as batch inserts (`BatchInsertSession`), straight into the SQLite
/// or PostgreSQL store, no managed objects: each batch is found by key and inserted, updated or left in
/// one savepoint, to-one relationships become foreign keys looked up per batch (destinations
/// with `create: true` inserted first), and the batches since the last commit stay in one
/// transaction that `commit(last:)` ends with the checkpoint. Counts, rejects and what
/// is written equal `BatchWriter`'s (the object path) with the same commits. Used on the
/// context's queue only.
final class BatchInsertWriter: ImportWriter {
    let context: ManagedObjectContext
    let plan: ImportPlan
    let model: ManagedObjectModel
    private var session: BatchInsertSession?
    private var target: BatchInsertSession.Target?
    private var destinationTargets: [Int: BatchInsertSession.Target] = [:]
    /// Destinations by relationship position, then by key; nil records a known miss. Kept
    /// until `forgetDestinations` (at the object path's reset points), so memory stays flat.
    private var destinations: [Int: [AttributeValue: ManagedObjectID?]] = [:]
    private let attributeNames: [String]
    private let relationshipNames: [String]
    /// The row rules this writer shares with the object writer.
    private let rules: RowRules
    /// Positions in `plan.relationships` with `create: true`: looked up once, not per row.
    private let creating: [Int]

    /// Why this job needs managed objects, or nil when batch inserts can write it.
    static func obstacle(plan: ImportPlan, model: ManagedObjectModel, store: StoreReference) -> String? {
        if !store.kind.bulkInserts { return "the store is \(store.kind.name), and batch inserts write SQLite and PostgreSQL stores" }
        let entity = plan.entity.name
        if !plan.step.key.isEmpty {
            if !model.isUniquenessConstraint(plan.step.key, of: entity) {
                return "the key \(plan.step.key.joined(separator: ", ")) is not a uniqueness constraint of \(entity)"
            }
        }
        for relationship in plan.relationships {
            let description = relationship.relationship
            let name = "\(entity).\(description.name)"
            if description.isToMany { return "\(name) is a to-many relationship" }
            if let inverse = model.inverse(of: description), !inverse.isTransient {
                if !inverse.isToMany { return "\(name) is one-to-one" }
                if inverse.isOrdered { return "\(name)'s inverse is ordered" }
            }
            if model.entity(entity, isKindOf: description.destinationEntityName) || model.entity(description.destinationEntityName, isKindOf: entity) {
                return "\(name) relates \(entity) objects to each other"
            }
            if relationship.settings.create && plan.step.key.count > 1 {
                return "\(name) creates destinations and the key is compound"
            }
        }
        return nil
    }

    /// A session shared with other writers (a seed's steps, one transaction committed once, by
    /// the last step's writer); nil: this writer begins its own at its first batch, and another
    /// after each commit.
    private let shared: BatchInsertSession?
    /// The number of the last batch written.
    private(set) var currentBatch = 0

    /// The reader's next batch when it is ready, without waiting for it (`ReaderThread.peek`):
    /// set by the import session, so that the next batch is prepared while the store finishes
    /// writing this one (`BatchInsertSession.write`'s `whileStoreFinishes`).
    var upcoming: (() -> MappedBatch?)?
    /// A batch prepared so, with where it ends: the next `write` of that batch takes it.
    private var ahead: (end: ResumePoint, records: Int, prepared: PreparedBatch)?
    /// How many written batches had been prepared so.
    private(set) var batchesPreparedAhead = 0

    init(context: ManagedObjectContext, plan: ImportPlan, model: ManagedObjectModel, session: BatchInsertSession? = nil) {
        self.context = context
        self.plan = plan
        self.model = model
        shared = session
        attributeNames = plan.attributes.map(\.attribute.name)
        relationshipNames = plan.relationships.map(\.relationship.name)
        rules = RowRules(plan: plan)
        creating = plan.creating
    }

    /// Whether the last target's last batch found most of its rows: carried to the target of
    /// the next session (each commit begins one), so a re-run's first batch after a commit
    /// looks its rows up rather than trying to insert them first.
    private var expectsExistingRows = false

    private func openSession() throws -> (BatchInsertSession, BatchInsertSession.Target) {
        if let session, let target { return (session, target) }
        let session = try shared ?? context.beginBatchInsert(entityName: plan.entity.name)
        let target = try session.target(
            entityName: plan.entity.name, attributes: attributeNames, relationships: relationshipNames, key: plan.step.key,
            onConflict: plan.step.mode == .insert ? .keep : .update, insertsMissing: plan.step.mode != .update)
        target.expectsExistingRows = expectsExistingRows
        destinationTargets = [:]
        for (index, relationship) in plan.relationships.enumerated() where relationship.settings.create {
            // Found by the matched attribute when it is a uniqueness constraint: a destination
            // another writer of the store made since this one looked (several workers on one
            // PostgreSQL store) is then linked to, never made twice or refused.
            let entity = relationship.relationship.destinationEntityName, match = relationship.match.name
            let unique = model.isUniquenessConstraint([match], of: entity)
            destinationTargets[index] = try session.target(entityName: entity, attributes: [match], key: unique ? [match] : [], onConflict: .keep)
        }
        self.session = session
        self.target = target
        return (session, target)
    }

    /// Commits the batches since the last commit with the metadata staged on the
    /// coordinator (the checkpoint, a seed's flag), in one transaction.
    func commit(last: Bool) throws {
        if let shared {
            session = nil
            target = nil
            try shared.commit()
            return
        }
        let (session, target) = try openSession()
        expectsExistingRows = target.expectsExistingRows
        self.session = nil
        self.target = nil
        try session.commit()
    }

    /// Takes back everything since the last commit.
    func rollback() {
        (session ?? shared)?.rollback()
        session = nil
        target = nil
        destinations.removeAll(keepingCapacity: true)
        ahead = nil
    }

    /// Forgets looked-up destinations (memory stays flat however many there are).
    func forgetDestinations() {
        destinations.removeAll(keepingCapacity: true)
    }

    /// Forgets looked-up destinations every `resetEvery` batches, right after a commit (as the
    /// object writer resets its context); on a shared session, which commits once at the end,
    /// after every batch.
    func trimMemory(batchesSinceReset: Int, resetEvery: Int, justCommitted: Bool) -> MemoryTrim {
        guard shared != nil || (batchesSinceReset >= resetEvery && justCommitted) else { return .kept }
        forgetDestinations()
        return .forgotLookups
    }

    /// Never: the store refuses rows as they are written, and they are rejected then.
    func takeBackRefused(_ error: Error) -> RefusedRows? { nil }

    /// Never: a refused commit is never retried (`takeBackRefused`).
    func dropBatches(from first: Int) -> Bool { false }

    /// Writes one batch unless more than `allowedRejects` of its rows are rejected (then
    /// nothing of it is written). Returns the rows rejected and whether it was written.
    func write(_ batch: MappedBatch, allowedRejects: Int, counts: inout ImportCounts) throws -> (rejects: [RejectedRow], applied: Bool) {
        currentBatch += 1
        let (session, target) = try openSession()
        var prepared: PreparedBatch
        if let ahead = self.ahead, ahead.end == batch.endPoint, ahead.records == batch.recordCount {
            prepared = ahead.prepared
            batchesPreparedAhead += 1
        } else {
            prepared = try prepare(batch, session: session)!
        }
        ahead = nil
        // Past the limit already, the batch is still written (and undone) to find which rows
        // have no object: the object writer knows that of every row before it gives up.
        var lookup = KeyLookup()
        try rejectMissingNewObjects(&prepared.rejects, &prepared.ordered, &prepared.sessionRows, rows: batch.rows, raw: batch.raw, problems: prepared.newObjectProblem,
                                    lookup: &lookup, session: session)
        let created = destinationsToCreate(prepared, rows: batch.rows, writing: try rowsWritten(prepared, rows: batch.rows, lookup: &lookup, session: session))
        var local = ImportCounts()
        var attempted: [BatchInsertSession.Outcome] = []
        // A batch whose rows cannot be refused past the limit needs no savepoint (and SQLite
        // then keeps no statement journal: 19 s → 15 s for 1M rows). An error while writing
        // it rolls back everything since the last commit, as the run's end does anyway.
        let undoable = prepared.rejects.count > allowedRejects
            || session.mayRefuse(prepared.sessionRows, to: target, moreThan: allowedRejects - prepared.rejects.count)
        let outcomes = try session.batch(undoable: undoable) { () -> [BatchInsertSession.Outcome]? in
            // Destinations first, in the order rows need them, so rows find them.
            try createDestinations(created, for: &prepared, rows: batch.rows, session: session, undoable: undoable, counts: &local)
            return try session.write(prepared.sessionRows, to: target, undoable: undoable, accept: { outcomes in
                attempted = outcomes
                let refused = outcomes.count { outcome in
                    switch outcome {
                    case .refused, .missing: true
                    default: false
                    }
                }
                return prepared.rejects.count + refused <= allowedRejects
            }, whileStoreFinishes: prepareUpcoming)
        }
        guard let outcomes else {
            ahead = nil
            return (overLimitRejects(prepared, attempted: attempted, batch: batch, allowedRejects: allowedRejects), false)
        }
        var written = prepared.rejects
        tally(outcomes, of: prepared, batch: batch, counts: &local, rejects: &written)
        local.rejected = written.count
        counts.add(local)
        return (written, true)
    }

    /// A batch made ready for the session: the rows the rules let through, in key order, each
    /// with the destinations found for it, and what the rules found.
    private struct PreparedBatch {
        /// Per relationship, per row: its destination, a known miss, or (.none) one to create.
        var known: [[ManagedObjectID??]]
        /// Rows rejected before writing.
        var rejects: [RejectedRow] = []
        /// The rows to write (positions in `batch.rows`), and their session rows (same order).
        var ordered: [Int] = []
        var sessionRows: [BatchInsertSession.Row] = []
        /// What a new object would lack, by position in `batch.rows`: such a row is written
        /// only when its object exists.
        var newObjectProblem: [Int: RejectedRow] = [:]
    }

    /// Prepares the reader's next batch, if it is ready and every destination it names is
    /// known already (the store is busy: nothing is looked up), for the next `write`. It runs
    /// before this batch's outcome is known, which changes nothing it works out: destinations
    /// this batch creates are made (and known) before its rows are sent, and a batch that is
    /// not applied ends the run.
    private func prepareUpcoming() {
        guard let batch = upcoming?() else { return }
        if let prepared = try? prepare(batch, session: nil) {
            ahead = (batch.endPoint, batch.recordCount, prepared)
        }
    }

    /// The batch's rows in key order with their destinations, less those missing a required
    /// link. Each row is read in place (`rows[index].…`): a copy of it retained and released
    /// its arrays. With no session, only known destinations are used: nil when one would have
    /// to be looked up.
    private func prepare(_ batch: MappedBatch, session: BatchInsertSession?) throws -> PreparedBatch? {
        let rows = batch.rows
        guard let known = try resolveDestinations(rows, session: session) else { return nil }
        var prepared = PreparedBatch(known: known)
        prepared.sessionRows.reserveCapacity(rows.count)
        prepared.ordered.reserveCapacity(rows.count)
        /// Whether the row's destination for `position` was looked up and none has the key.
        func absent(_ position: Int, _ index: Int) -> Bool {
            if case .some(nil) = known[position][index] { return true }
            return false
        }
        for index in batch.keyOrder {
            if let problem = rules.missingRequiredLink(in: rows[index], absent: { position, _ in absent(position, index) }) {
                prepared.rejects.append(problem.rejected(rows[index], raw: batch.raw))
                continue
            }
            var links: [ManagedObjectID??] = []
            links.reserveCapacity(plan.relationships.count)
            for position in plan.relationships.indices {
                guard let keys = rows[index].links[position] else { links.append(.none); continue }
                links.append(.some(keys.isEmpty ? nil : known[position][index] ?? nil))
            }
            // What a new object would lack: the row is then written only when its object exists.
            let problem = rules.newObjectProblem(in: rows[index], absent: { position, _ in absent(position, index) })?.rejected(rows[index], raw: batch.raw)
            if let problem { prepared.newObjectProblem[index] = problem }
            prepared.ordered.append(index)
            prepared.sessionRows.append(BatchInsertSession.Row(values: rows[index].values, destinations: links, mayInsert: problem == nil))
        }
        return prepared
    }

    /// Per relationship with `create: true`, the keys of the destinations to create, in the
    /// order rows (in key order) first need them; with `writing`, only for those rows.
    private func destinationsToCreate(_ prepared: PreparedBatch, rows: [MappedRow], writing: Set<Int>?) -> [(position: Int, keys: [AttributeValue])] {
        var created: [(position: Int, keys: [AttributeValue])] = []
        for (position, relationship) in plan.relationships.enumerated() where relationship.settings.create {
            var keys: [AttributeValue] = []
            var seen = Set<AttributeValue>()
            for index in prepared.ordered where writing?.contains(index) ?? true {
                guard case .none = prepared.known[position][index], let key = rows[index].links[position]?.first, seen.insert(key).inserted else { continue }
                keys.append(key)
            }
            if !keys.isEmpty { created.append((position, keys)) }
        }
        return created
    }

    /// The imported entity's objects by key, each key looked up once per batch: the rows checked
    /// before destinations are made (`rejectMissingNewObjects`, then `rowsWritten`) share it.
    private struct KeyLookup {
        private var asked = Set<AttributeValue>()
        private(set) var found: [AttributeValue: ManagedObjectID] = [:]

        mutating func look(up keys: [AttributeValue], entity: String, attribute: String, session: BatchInsertSession) throws {
            let new = keys.filter { asked.insert($0).inserted }
            guard !new.isEmpty else { return }
            found.merge(try session.objectIDs(entityName: entity, attribute: attribute, values: new)) { first, _ in first }
        }
    }

    /// Under `mode: insert` or `update`, the rows (positions in `batch.rows`) the session will
    /// write, found by their keys before destinations are made: under insert the first row of
    /// a key no object has that may make one (a later row of it, or one whose object exists, is
    /// left alone), under update a row whose object exists. Nil when every row may be written
    /// (`upsert`, or nothing to create). So a destination is created only for a row that is
    /// written, as the object writer creates it. A key another writer stores between this
    /// look-up and the write (PostgreSQL) can leave a destination made for a row then left
    /// alone, as it can with the object writer.
    private func rowsWritten(_ prepared: PreparedBatch, rows: [MappedRow], lookup: inout KeyLookup, session: BatchInsertSession) throws -> Set<Int>? {
        guard plan.step.mode != .upsert, !creating.isEmpty, !plan.step.key.isEmpty else { return nil }
        let naming = prepared.ordered.filter { index in
            creating.contains { position in
                if case .none = prepared.known[position][index], rows[index].links[position]?.first != nil { true } else { false }
            }
        }
        guard !naming.isEmpty else { return [] }
        // One key (a compound key with create: true needs managed objects: `obstacle`).
        try lookup.look(up: naming.compactMap { rows[$0].key.first }, entity: plan.entity.name, attribute: plan.step.key[0], session: session)
        let existing = lookup.found
        var writing = Set<Int>()
        // Whether a row of the current key (rows with one key are next to each other) inserts.
        var inserting = false
        for (offset, index) in prepared.ordered.enumerated() {
            let exists = rows[index].key.first.map { existing[$0] != nil } ?? false
            if offset == 0 || rows[index].key.isEmpty || rows[prepared.ordered[offset - 1]].key != rows[index].key { inserting = false }
            switch plan.step.mode {
            case .update:
                if exists { writing.insert(index) }
            default:
                // The first row of the key that may make an object makes it; the rest are left.
                if !exists && !inserting && prepared.sessionRows[offset].mayInsert {
                    inserting = true
                    writing.insert(index)
                }
            }
        }
        return writing
    }

    /// Inserts the destinations to create and points the rows that name them at them.
    private func createDestinations(_ created: [(position: Int, keys: [AttributeValue])], for prepared: inout PreparedBatch, rows: [MappedRow],
                                    session: BatchInsertSession, undoable: Bool, counts: inout ImportCounts) throws {
        for (position, keys) in created {
            guard let destinationTarget = destinationTargets[position] else { continue }
            let made = try session.write(keys.map { BatchInsertSession.Row(values: [.some($0)]) }, to: destinationTarget, undoable: undoable)!
            for (key, outcome) in zip(keys, made) {
                // Made here; or, on a store another writer fills at once (PostgreSQL), made by
                // that writer since this one looked: either way the row links to it.
                switch outcome {
                case .inserted(let id):
                    destinations[position, default: [:]][key] = .some(id)
                    counts.createdDestinations += 1
                case .updated(let id), .unchanged(let id), .kept(let id), .duplicate(let id):
                    destinations[position, default: [:]][key] = .some(id)
                case .missing, .refused:
                    continue
                }
            }
            for (offset, index) in prepared.ordered.enumerated() {
                guard case .none = prepared.known[position][index] else { continue }
                if let key = rows[index].links[position]?.first, let id = destinations[position]?[key] ?? nil {
                    prepared.sessionRows[offset].destinations[position] = .some(id)
                    prepared.known[position][index] = .some(id)
                }
            }
        }
    }

    /// The rejects of a batch over the limit, reported as the object path would: it finds the
    /// rows the rules reject (no object to update, what a new object lacks) before it saves,
    /// and gives up then when they are too many, before the store refuses any row.
    private func overLimitRejects(_ prepared: PreparedBatch, attempted: [BatchInsertSession.Outcome], batch: MappedBatch, allowedRejects: Int) -> [RejectedRow] {
        var written = prepared.rejects
        var refusals: [RejectedRow] = []
        for (offset, index) in prepared.ordered.enumerated() {
            let outcome = offset < attempted.count ? attempted[offset] : nil
            guard let problem = rejection(batch.rows[index], outcome: outcome, prepared.newObjectProblem[index], batch: batch) else { continue }
            if case .refused? = outcome { refusals.append(problem) } else { written.append(problem) }
        }
        return written.count > allowedRejects ? written : written + refusals
    }

    /// Counts what each written row became; the rows the store refused, or that found no
    /// object, join `rejects`.
    private func tally(_ outcomes: [BatchInsertSession.Outcome], of prepared: PreparedBatch, batch: MappedBatch, counts: inout ImportCounts, rejects: inout [RejectedRow]) {
        let rows = batch.rows
        for (offset, index) in prepared.ordered.enumerated() {
            switch outcomes[offset] {
            case .inserted: counts.inserted += 1
            case .updated: counts.updated += 1
            case .unchanged: counts.unchanged += 1
            case .duplicate: counts.duplicates += 1
            case .kept: counts.existing += 1; continue
            case .missing, .refused:
                rejects.append(rejection(rows[index], outcome: outcomes[offset], prepared.newObjectProblem[index], batch: batch)!)
                continue
            }
            // A key no destination has leaves the relationship empty.
            for position in plan.relationships.indices {
                guard rows[index].links[position]?.isEmpty == false else { continue }
                if case .some(.some) = prepared.sessionRows[offset].destinations[position] { continue }
                counts.unresolved += 1
                break
            }
        }
    }

    /// Why a row was not written: the store's refusal, a new object's lack, or `mode: update`.
    private func rejection(_ row: MappedRow, outcome: BatchInsertSession.Outcome?, _ problem: RejectedRow?, batch: MappedBatch) -> RejectedRow? {
        let raw = RowMapper.rawText(batch.raw, row.rawRange)
        switch outcome {
        case .refused(let property, let message, let value)?:
            let reason = message.hasPrefix("another ") ? message : "the store refused it: \(property) \(message)" + (value.map { " (value: \($0))" } ?? "")
            return RejectedRow(line: row.line, recordIndex: row.recordIndex, column: nil, field: nil, value: nil, reason: reason, raw: raw)
        case .missing?:
            if plan.step.mode == .update { return rules.noObjectToUpdate(row).rejected(row, raw: batch.raw) }
            return problem
        default:
            return nil
        }
    }

    /// Rows that lack what a new object needs are written only when their object exists. When
    /// such a row names a destination to create, it is checked first (by its key) and rejected
    /// now if no object has it and no earlier row of the batch makes one, so no destination is
    /// created for a row that is not written, as the object path creates none.
    private func rejectMissingNewObjects(_ rejects: inout [RejectedRow], _ ordered: inout [Int], _ sessionRows: inout [BatchInsertSession.Row],
                                         rows: [MappedRow], raw: [UInt8], problems: [Int: RejectedRow], lookup: inout KeyLookup,
                                         session: BatchInsertSession) throws {
        guard !problems.isEmpty, !creating.isEmpty else { return }
        let suspects = ordered.indices.filter { offset in
            let index = ordered[offset]
            guard problems[index] != nil else { return false }
            // An earlier row of the batch with the key (rows with one key are next to each
            // other) that may insert makes the object before this row is written.
            var earlier = offset - 1
            while earlier >= 0, !rows[index].key.isEmpty, rows[ordered[earlier]].key == rows[index].key {
                if problems[ordered[earlier]] == nil { return false }
                earlier -= 1
            }
            return creating.contains { position in rows[index].links[position]?.first.map { destinations[position]?[$0] == nil } ?? false }
        }
        guard !suspects.isEmpty else { return }
        if plan.step.key.count == 1 {
            try lookup.look(up: suspects.compactMap { rows[ordered[$0]].key.first }, entity: plan.entity.name, attribute: plan.step.key[0], session: session)
        }
        let existing = lookup.found
        var dropped = Set<Int>()
        for offset in suspects where rows[ordered[offset]].key.first.map({ existing[$0] == nil }) ?? true {
            // Under mode: update the row had no object to update, whatever a new one would lack.
            let index = ordered[offset]
            rejects.append(plan.step.mode == .update ? rules.noObjectToUpdate(rows[index]).rejected(rows[index], raw: raw) : problems[index]!)
            dropped.insert(offset)
        }
        guard !dropped.isEmpty else { return }
        ordered = ordered.enumerated().filter { !dropped.contains($0.offset) }.map(\.element)
        sessionRows = sessionRows.enumerated().filter { !dropped.contains($0.offset) }.map(\.element)
    }

    /// Looks up every destination key of the batch not known yet, one query per relationship.
    /// Returns per relationship, per row: the destination, `.some(nil)` when none has the key
    /// (and none is to be created), `.none` when one is to be created (or no key is given).
    /// With no session, nil when a key is not known yet.
    private func resolveDestinations(_ rows: [MappedRow], session: BatchInsertSession?) throws -> [[ManagedObjectID??]]? {
        var result: [[ManagedObjectID??]] = []
        for (position, relationship) in plan.relationships.enumerated() {
            var resolved = [ManagedObjectID??](repeating: .none, count: rows.count)
            var wanted: [AttributeValue] = []
            var pending: [Int] = []
            do {
                let known = destinations[position] ?? [:]
                for (index, row) in rows.enumerated() {
                    guard let key = row.links[position]?.first else { continue }
                    if let id = known[key] { resolved[index] = .some(id) } else { pending.append(index); wanted.append(key) }
                }
            }
            if !wanted.isEmpty {
                guard let session else { return nil }
                // Taken out while it changes, so the dictionary is not copied.
                var cache = destinations.removeValue(forKey: position) ?? [:]
                let unique = Array(Set(wanted))
                let found = try session.objectIDs(entityName: relationship.relationship.destinationEntityName, attribute: relationship.match.name, values: unique)
                for key in unique {
                    if let id = found[key] { cache[key] = .some(id) } else if !relationship.settings.create { cache[key] = .some(nil) }
                }
                for (index, key) in zip(pending, wanted) { resolved[index] = cache[key] }
                destinations[position] = cache
            }
            result.append(resolved)
        }
        return result
    }
}
