import Foundation

/// A store that could not be created, opened, read or written, with what to do about it.
///
/// ```swift
/// do { _ = try coordinator.addPersistentStore(type: .sqlite, at: url) }
/// catch let error as StoreError { print(error) }   // "…catalog.sqlite: the store does not match the model: …"
/// ```
///
/// Declared with the file helpers (`FileSystem`, `AtomicFileWriter`, `OutputFile`), which raise
/// it for the files of every layer above; a SQLite error becomes one in `Stores/SQLite/`.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case notFound
        case alreadyExists
        case notAStore
        case wrongStoreType
        /// No model was named and the store carries none (no `Z_MODELCACHE`, or a store type
        /// that keeps no model).
        case noModel
        /// The store was made from another model (version); `entities` names those that differ.
        case modelMismatch(entities: [String])
        case readOnly
        case reservedMetadataKey
        /// Another transaction is open on the store's connection (a batch insert session, or a
        /// `StoreTransaction`) that this write cannot be part of.
        case transactionOpen
        case io
        /// The store's contents break Core Data's invariants (`lade check` lists them).
        case damaged([StoreDamage])
        case sqlite(code: Int32)
        /// The model has something this type of store cannot keep (composite attributes
        /// outside an in-memory store).
        case unsupportedModel
        /// A store location that cannot be used as written (a PostgreSQL URL libpq cannot read,
        /// or without a schema).
        case invalidLocation
        /// The database server cannot be reached, refused the login, or dropped the connection.
        case connection
        /// The PostgreSQL server refused a statement; `sqlState` is its SQLSTATE code.
        case postgresql(sqlState: String)
    }

    public let kind: Kind
    public let path: String
    public let message: String
    /// For `modelMismatch`: the store carries the model it was written with (`Z_MODELCACHE`),
    /// which is another than the one named; opening it with no model named reads that one.
    package var storeCarriesOtherModel = false

    package init(_ kind: Kind, path: String, _ message: String) {
        self.kind = kind
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}

extension StoreError: LadeError {
    public var code: String {
        switch kind {
        case .notFound: "store.notFound"
        case .alreadyExists: "store.alreadyExists"
        case .notAStore: "store.notAStore"
        case .wrongStoreType: "store.wrongType"
        case .noModel: "store.noModel"
        case .modelMismatch: "store.modelMismatch"
        case .readOnly: "store.readOnly"
        case .reservedMetadataKey: "store.reservedMetadataKey"
        case .transactionOpen: "store.transactionOpen"
        case .io: "store.io"
        case .sqlite: "store.sqlite"
        case .damaged: "store.damaged"
        case .unsupportedModel: "store.unsupportedModel"
        case .invalidLocation: "store.invalidLocation"
        case .connection: "store.connection"
        case .postgresql: "store.postgresql"
        }
    }
}
