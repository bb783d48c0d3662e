import Foundation

/// The one error for an entity name the model does not have, wherever one is asked for (a
/// context, a store, a fetch, a job, an export).
public struct UnknownEntityError: LadeError, Sendable, Equatable {
    public let name: String
    /// The model's entity names, for the message.
    public let known: [String]

    package init(_ name: String, in model: ManagedObjectModel) {
        self.name = name
        self.known = model.entityNames
    }

    public var code: String { "model.unknownEntity" }

    public var description: String {
        let shown = known.prefix(20).joined(separator: ", ") + (known.count > 20 ? " and \(known.count - 20) more" : "")
        return "the model has no entity '\(name)'" + (known.isEmpty ? "" : "; its entities are \(shown)")
    }
}

extension ManagedObjectModel {
    /// The entity named `name`, or `UnknownEntityError`.
    package func requireEntity(_ name: String) throws -> EntityDescription {
        guard let entity = entity(named: name) else { throw UnknownEntityError(name, in: self) }
        return entity
    }
}
