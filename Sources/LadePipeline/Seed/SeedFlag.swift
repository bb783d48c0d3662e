import Foundation
import Lade

/// The value `lade seed` stores under a seed's flag (the metadata key the job names), written
/// in the same commit as the seed's rows: when the seed was applied, by which job, and what each
/// step did. A dictionary, so an app can read it from the store's metadata:
///
/// ```swift
/// let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
/// let flag = SeedFlag(metadata["com.example.catalog.seed.v1"])
/// flag?.seededAt          // 2026-03-01 12:00:00 +0000
/// flag?.steps[1].inserted // 10
/// ```
///
/// Whether a store is seeded depends only on the key being present, whatever its value, so a
/// flag set by other means (by hand, by an app) also counts.
public struct SeedFlag: Sendable, Equatable {
    /// What one step of the seed did.
    public struct Step: Sendable, Equatable {
        public var entity: String
        /// The source as the job names it.
        public var source: String
        /// Records read.
        public var rows: Int64
        public var inserted: Int
        public var updated: Int
        public var unchanged: Int
        /// Destinations made for relationship keys (`create: true`).
        public var createdDestinations: Int
        /// Rows with a relationship key no object has (left empty, as `required: false` allows).
        public var unresolved: Int

        package init(entity: String, source: String, rows: Int64 = 0, inserted: Int = 0, updated: Int = 0, unchanged: Int = 0, createdDestinations: Int = 0, unresolved: Int = 0) {
            self.entity = entity
            self.source = source
            self.rows = rows
            self.inserted = inserted
            self.updated = updated
            self.unchanged = unchanged
            self.createdDestinations = createdDestinations
            self.unresolved = unresolved
        }

        var propertyList: PropertyListValue {
            .dictionary([
                "entity": .string(entity), "source": .string(source), "rows": .integer(rows),
                "inserted": .integer(Int64(inserted)), "updated": .integer(Int64(updated)),
                "unchanged": .integer(Int64(unchanged)), "createdDestinations": .integer(Int64(createdDestinations)),
                "unresolved": .integer(Int64(unresolved)),
            ])
        }
    }

    /// When the seed was committed.
    public var seededAt: Date
    /// The job file's name.
    public var job: String
    public var steps: [Step]

    package init(seededAt: Date, job: String, steps: [Step]) {
        self.seededAt = seededAt
        self.job = job
        self.steps = steps
    }

    /// `{ seededAt: <date>, job: <file name>, steps: [{ entity, source, rows, inserted, updated,
    /// unchanged, createdDestinations, unresolved }, …] }`.
    package var propertyList: PropertyListValue {
        .dictionary(["seededAt": .date(seededAt), "job": .string(job), "steps": .array(steps.map(\.propertyList))])
    }

    /// Reads a value `propertyList` wrote; nil for any other value.
    package init?(_ value: PropertyListValue?) {
        guard case .dictionary(let dictionary)? = value, case .date(let date)? = dictionary["seededAt"],
              case .string(let job)? = dictionary["job"], case .array(let items)? = dictionary["steps"]
        else { return nil }
        var steps: [Step] = []
        for item in items {
            guard case .dictionary(let step) = item, case .string(let entity)? = step["entity"], case .string(let source)? = step["source"] else { return nil }
            func number(_ key: String) -> Int64 { step[key]?.integerValue ?? 0 }
            steps.append(Step(
                entity: entity, source: source, rows: number("rows"), inserted: Int(number("inserted")), updated: Int(number("updated")),
                unchanged: Int(number("unchanged")), createdDestinations: Int(number("createdDestinations")), unresolved: Int(number("unresolved"))))
        }
        self.init(seededAt: date, job: job, steps: steps)
    }
}
