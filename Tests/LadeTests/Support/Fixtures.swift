import Foundation
@_exported import LadeTestSupport
import Lade

/// Where the tests find the project's samples and the shared Core Data corpus.
enum Fixtures {
    /// The repository root, found from this file's path.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let catalog = root.appendingPathComponent("samples/Catalog.xcdatamodeld")

    /// `../shared/coredata-corpus`, or `LADE_CORPUS` when set.
    static let corpus: URL = {
        if let path = ProcessInfo.processInfo.environment["LADE_CORPUS"] { return URL(fileURLWithPath: path) }
        return root.deletingLastPathComponent().appendingPathComponent("shared/coredata-corpus")
    }()

    static var corpusAvailable: Bool {
        FileManager.default.fileExists(atPath: corpus.appendingPathComponent("MANIFEST.jsonl").path)
    }

    static func corpusFile(_ relative: String) -> URL { corpus.appendingPathComponent(relative) }

    /// Every `.xcdatamodel` directory in the corpus, sorted by path.
    static func corpusModelDirectories() -> [URL] {
        guard let walker = FileManager.default.enumerator(at: corpus, includingPropertiesForKeys: nil) else { return [] }
        var found: [URL] = []
        for case let url as URL in walker where url.pathExtension == "xcdatamodel" {
            found.append(url)
        }
        return found.sorted { $0.path < $1.path }
    }

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
