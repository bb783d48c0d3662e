import Foundation

extension StoreError {
    /// The refusal of a model with composite attributes by a store of `storeType` (at `path`),
    /// or nil when the model has none.
    ///
    /// Core Data keeps composites in SQLite stores only (`NSCompositeAttributeDescription`), so
    /// XML and binary stores refuse them as Core Data does. A SQLite store refuses them too:
    /// which columns Core Data's SQLite store makes for a composite's elements is not known
    /// from any Apple-written store, and a store laid out by guess could be misread by the app.
    /// An in-memory store writes nothing and keeps them; no command of the CLI makes one, so the
    /// refusal names it as what Swift code can do, beside the model change anyone can make.
    static func refusingComposites(in model: ManagedObjectModel, storeType: String, path: String) -> StoreError? {
        let paths = model.compositeAttributePaths
        guard !paths.isEmpty else { return nil }
        let which = "composite attribute\(paths.count == 1 ? "" : "s") \(paths.joined(separator: ", "))"
        let why = storeType == StoreMetadata.sqliteStoreType
            ? "Lade does not keep composite attributes in a SQLite store: Core Data's SQLite columns for composite elements are not known from any Apple-written store, and a store laid out by guess could be misread by Core Data"
            : "Core Data keeps composite attributes in SQLite stores only, not in \(storeType) stores"
        return StoreError(.unsupportedModel, path: path, "the model has \(which); \(why). No store Lade writes keeps them (SQLite, XML, binary and PostgreSQL stores all refuse them): use a model without composite attributes, or, from Swift code, keep this model in an in-memory store")
    }
}
