import Foundation
@_exported import LadeTestSupport
@_exported import LadeTestTraits
import Lade
@testable import LadePipeline

/// Paths and builders the pipeline tests share.
enum PipelineFixtures {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let catalog = root.appendingPathComponent("samples/Catalog.xcdatamodeld")

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("lade-pipeline-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A job read from YAML text, with paths relative to `directory` (default: the repository's jobs/).
    static func job(_ yaml: String, directory: URL = root.appendingPathComponent("jobs")) throws -> Job {
        try Job(parsing: yaml, file: "test.yaml", directory: directory)
    }

    static func catalogModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(contentsOf: catalog)
    }
}
