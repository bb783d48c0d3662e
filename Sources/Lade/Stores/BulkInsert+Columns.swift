import Foundation

extension BulkInsert {
    /// What a bulk insert target means in Core Data's table layout (`TableLayout`), whatever
    /// store keeps the tables (SQLite, PostgreSQL): its columns, its key, which found rows it may
    /// change, and which rows a store may refuse. Worked out once per target by
    /// `TargetColumns.resolve`; each store adds its statements.
    struct TargetColumns {
        let entity: String
        let entityNumber: Int64
        let rootNumber: Int64
        let table: String
        let write: TableWritePlan
        /// Layout positions of the target's attributes, their columns and types.
        let attributePositions: [Int]
        let attributeColumns: [String]
        let attributeTypes: [AttributeType]
        /// Layout positions of the target's to-one relationships, their key columns and their
        /// entity columns (a destination with subentities).
        let toOnePositions: [Int]
        let toOneColumns: [String]
        let toOneEntityColumns: [String?]
        /// Per to-one: the root entity number of its destination when its inverse is a
        /// to-many (whose owner's `Z_OPT` then advances), else nil.
        let inverseRoots: [Int64?]
        /// The key's positions among the target's attributes, and its columns.
        let keyPositions: [Int]
        let keyColumns: [String]
        /// Entity numbers a found row may have to be updated (the entity and its subentities).
        let acceptedNumbers: Set<Int64>
        /// Whether the store may refuse any row whatever its values: the entity has another
        /// uniqueness constraint than the key, or its table holds rows of entities outside it.
        let refusesAnyRow: Bool
        /// For every column of the write plan: the target attribute or to-one that fills it
        /// (nil: the layout's default, or NULL).
        enum Source { case attribute(Int?, layoutIndex: Int), toOne(Int?), toOneEntity(Int?) }
        let sources: [Source]
        /// Model defaults a new row would take that the store cannot keep exactly:
        /// `position` among the target's attributes (taken when the row gives none), nil when
        /// the target does not set it.
        let refusedDefaults: [(position: Int?, name: String, reason: String, value: String)]

        /// Resolves `target` against `schema`; `refusal` is the store's rule for a value it
        /// cannot keep exactly.
        static func resolve(_ target: TargetDescription, model: ManagedObjectModel, schema: TableLayout, writePlans: [String: TableWritePlan],
                            refusal: (AttributeValue) -> String?) throws -> TargetColumns {
            guard let mapped = schema.entity(named: target.entity), let write = writePlans[target.entity] else { throw UnknownEntityError(target.entity, in: model) }
            guard let rootMapped = schema.entity(named: mapped.rootName) else { throw UnknownEntityError(mapped.rootName, in: model) }
            let layout = write.layout
            var attributeColumns: [String] = []
            var attributePositions: [Int] = []
            for name in target.attributes {
                guard let position = layout.attributeIndex(of: name), !layout.attributes[position].isTransient,
                      let declaring = TableLayout.declaringEntity(of: name, from: target.entity, in: model),
                      let column = schema.columnName(for: .attribute(entity: declaring, name: name)) else {
                    throw UnknownProperty(entity: target.entity, name: name)
                }
                attributePositions.append(position)
                attributeColumns.append(column)
            }
            var toOnePositions: [Int] = []
            var toOneColumns: [String] = []
            var toOneEntityColumns: [String?] = []
            var inverseRoots: [Int64?] = []
            for name in target.relationships {
                guard let position = layout.relationshipIndex(of: name), let relationship = model.relationship(name, of: target.entity),
                      !relationship.isToMany, !relationship.isTransient,
                      let declaring = TableLayout.declaringEntity(of: name, from: target.entity, in: model),
                      let column = schema.columnName(for: .toOne(entity: declaring, name: name)) else {
                    throw UnknownProperty(entity: target.entity, name: name)
                }
                let inverse = model.inverse(of: relationship)
                if let inverse, !inverse.isTransient, !inverse.isToMany || inverse.isOrdered {
                    throw Unsupported(reason: "\(target.entity).\(name)'s inverse \(relationship.destinationEntityName).\(inverse.name) is \(inverse.isToMany ? "an ordered to-many" : "a to-one"); a batch insert sets only to-one relationships whose inverse is an unordered to-many or none")
                }
                toOnePositions.append(position)
                toOneColumns.append(column)
                toOneEntityColumns.append(schema.columnName(for: .toOneEntity(entity: declaring, name: name)))
                inverseRoots.append(inverse == nil || inverse!.isTransient ? nil : schema.entity(named: model.rootEntity(of: relationship.destinationEntityName)!.name)?.number)
            }
            var keyPositions: [Int] = []
            for name in target.key {
                guard let index = target.attributes.firstIndex(of: name) else {
                    throw Unsupported(reason: "the key \(name) is not one of the attributes the rows give")
                }
                keyPositions.append(index)
            }
            // The key must be a uniqueness constraint: its unique index finds a row by it, and
            // decides conflicts when rows are inserted first.
            if !target.key.isEmpty, !model.isUniquenessConstraint(target.key, of: target.entity) {
                throw Unsupported(reason: "the key \(target.key.joined(separator: ", ")) is not a uniqueness constraint of \(target.entity)")
            }
            let positionOfAttribute = Dictionary(uniqueKeysWithValues: attributePositions.enumerated().map { ($0.element, $0.offset) })
            let positionOfToOne = Dictionary(uniqueKeysWithValues: toOnePositions.enumerated().map { ($0.element, $0.offset) })
            var sources: [Source] = []
            var refusedDefaults: [(position: Int?, name: String, reason: String, value: String)] = []
            for column in write.columns {
                switch column.kind {
                case .attribute(let name, let index):
                    if let value = layout.defaultValues[index], let reason = refusal(value) {
                        refusedDefaults.append((positionOfAttribute[index], name, "takes the model's default, which \(reason)", "\(value)"))
                    }
                    sources.append(.attribute(positionOfAttribute[index], layoutIndex: index))
                case .toOne(_, let index): sources.append(.toOne(positionOfToOne[index]))
                case .toOneEntity(_, let index): sources.append(.toOneEntity(positionOfToOne[index]))
                }
            }
            let numbers = Set(model.hierarchy(from: target.entity).compactMap { schema.entity(named: $0.name)?.number })
            let tableNumbers = Set(model.hierarchy(from: mapped.rootName).compactMap { schema.entity(named: $0.name)?.number })
            let otherConstraint = model.uniquenessConstraints(of: target.entity).contains { Set($0) != Set(target.key) }
            return TargetColumns(
                entity: target.entity, entityNumber: mapped.number, rootNumber: rootMapped.number, table: mapped.tableName, write: write,
                attributePositions: attributePositions, attributeColumns: attributeColumns, attributeTypes: attributePositions.map { layout.attributeTypes[$0] },
                toOnePositions: toOnePositions, toOneColumns: toOneColumns, toOneEntityColumns: toOneEntityColumns, inverseRoots: inverseRoots,
                keyPositions: keyPositions, keyColumns: keyPositions.map { attributeColumns[$0] }, acceptedNumbers: numbers,
                refusesAnyRow: otherConstraint || (!keyPositions.isEmpty && !tableNumbers.isSubset(of: numbers)),
                sources: sources, refusedDefaults: refusedDefaults)
        }
    }
}
