import Lade

// The pipeline's errors in Lade's one vocabulary (see `LadeError`).

extension JobError: LadeError {
    public var code: String { "job" }
}

extension ReaderError: LadeError {
    public var code: String { "source" }
}

extension StoreLock.Busy: LadeError {
    public var code: String { "store.locked" }
}

extension StoreMetadataEditor.AssignmentError: LadeError {
    public var code: String { "meta.value" }
}

extension StoreQuery.SortSyntaxError: LadeError {
    public var code: String { "sort" }
}
