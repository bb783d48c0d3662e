import Foundation

extension ManagedObjectContext {
    /// After a save: the derived values the stores set on their own (Core Data's triggers in a
    /// SQLite store, the write path of an atomic one) replace what this context's objects and
    /// their snapshots hold, as Core Data updates its objects from what its triggers report.
    /// Without it an object would keep a stale value (a book's page count from before its new
    /// pages) until refreshed. The triggers leave `Z_OPT` as it was, so snapshots keep their
    /// version and a later save of the object meets no optimistic-locking conflict.
    func applyDerivedValues(_ report: DerivedValueReport) {
        for (id, values) in report.changes {
            guard let object = registeredObjectIfLoaded(id), object.managedObjectContext === self, !object.isDeleted else { continue }
            if let snapshot = object.snapshot {
                var stored = snapshot.values
                for (name, value) in values {
                    if let index = object.layout.attributeIndex(of: name), index < stored.count { stored[index] = value }
                }
                object.snapshot = StoreRow(objectID: snapshot.objectID, version: snapshot.version, layout: snapshot.layout,
                                           values: stored, toOneIDs: snapshot.toOneIDs)
            }
            guard object.isMaterialized else { continue }
            // A value the app changed since the save (none yet, right after it) is its own.
            for (name, value) in values where !object.changedKeys.contains(name) {
                if let index = object.layout.attributeIndex(of: name), index < object.values.count { object.values[index] = value }
            }
        }
    }
}
