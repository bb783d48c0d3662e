import Foundation

/// An Xcode model folder (`NAME.xcdatamodel`) Lade writes: a folder holding one `contents`
/// file (`ManagedObjectModel.xcodeModelContents()`), as Xcode's model editor saves it.
///
/// ```swift
/// let model = try ManagedObjectModel(carriedByStoreAt: store)
/// try XcodeModelFolder.write(model, to: URL(fileURLWithPath: "App.xcdatamodel"), overwrite: false,
///                            role: "--write-model", reads: OutputFile.storeFiles(store))
/// ```
///
/// A new folder is built beside its path under a temporary name (`.NAME.xcdatamodel.lade-<UUID>`,
/// its `contents` flushed to disk) and renamed into place whole, so a run killed at any moment
/// leaves no folder or a complete one. With `overwrite`, a folder already there keeps
/// everything but its `contents` file, which is replaced atomically (written beside it,
/// flushed, renamed over it), as `AtomicFileWriter` replaces any file. Nothing is written over
/// a file the run reads (`reads`: the store and its companions, or the model).
package enum XcodeModelFolder {
    /// Writes `model` to `folder`, refusing a path already there unless `overwrite`; `role`
    /// names the path in messages (the option that gave it). Returns the `contents` file written.
    @discardableResult
    package static func write(_ model: ManagedObjectModel, to folder: URL, overwrite: Bool, role: String,
                              reads: [OutputFile.Read]) throws -> URL {
        // Everything that can fail on the model fails before anything is on disk.
        let contents = try model.xcodeModelContents()
        let file = folder.appendingPathComponent("contents")
        var info = stat()
        if lstat(folder.path, &info) == 0 {
            guard overwrite else {
                throw StoreError(.alreadyExists, path: folder.path, "\(role): something is already there; choose another path, or give --overwrite to replace the contents file of the model folder there")
            }
            guard stat(folder.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
                throw StoreError(.io, path: folder.path, "\(role) names something that is not a folder; an Xcode model is a folder (NAME.xcdatamodel) holding a contents file, and lade replaces only a folder's contents file")
            }
            guard try OutputFile.check(file, role: "\(role)'s contents file", reads: reads) == .regular else {
                throw StoreError(.io, path: file.path, "\(role)'s contents file is a device, pipe or socket; lade writes a model only as a regular file")
            }
            try AtomicFileWriter.replace(file, contents: .file) { try $0.write(contents) }
            return file
        }
        _ = try OutputFile.check(file, role: "\(role)'s contents file", reads: reads)
        let staged = try StagedFile(beside: folder)
        guard mkdir(staged.path, 0o755) == 0 else {
            throw StoreError(.io, path: folder.path, "cannot create a temporary folder in \(staged.directory) to write the model: \(String(cString: strerror(errno))); check that the directory is writable")
        }
        let stagedFile = staged.url.appendingPathComponent("contents")
        do {
            try AtomicFileWriter.create(stagedFile, contents: .file) { try $0.write(contents) }
            // rename(2) would silently replace an empty folder made meanwhile; one with anything
            // in it, or a file, makes it fail. Either way nothing of anyone's is lost.
            guard lstat(staged.target.path, &info) != 0 else {
                throw StoreError(.alreadyExists, path: folder.path, "another process created something here meanwhile; nothing was written")
            }
            guard rename(staged.path, staged.target.path) == 0 else {
                throw StoreError(.io, path: folder.path, "cannot move the new model folder into place: \(String(cString: strerror(errno))); nothing was written")
            }
        } catch {
            unlink(stagedFile.path)
            rmdir(staged.path)
            throw error
        }
        try FileSystem.fsync(path: staged.directory)
        return staged.target.appendingPathComponent("contents")
    }
}
