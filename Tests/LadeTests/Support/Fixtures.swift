import Foundation
@_exported import LadeTestSupport
@_exported import LadeTestTraits
import Lade

/// Where the tests find the project's samples (the Core Data corpus is ``Corpus``).
enum Fixtures {
    /// The repository root, found from this file's path.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let catalog = root.appendingPathComponent("samples/Catalog.xcdatamodeld")

    /// A fresh temporary directory, removed by the caller's `defer`.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("lade-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Writes a model `contents` XML holding `body` inside `<model>` to `name.xcdatamodel/contents`.
    /// The body starts on line 3 of the file.
    static func writeXcodeModel(_ body: String, in directory: URL, name: String = "Test") throws -> URL {
        let model = directory.appendingPathComponent("\(name).xcdatamodel")
        try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
        let xml = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="">
            \(body)
            </model>
            """
        try Data(xml.utf8).write(to: model.appendingPathComponent("contents"))
        return model
    }
}
