import Foundation

/// The Core Data corpus: models and stores written by Apple's tools, kept beside the project in
/// `../shared/coredata-corpus` (read-only there), or in the directory `LADE_CORPUS` names. Every
/// test finds it here, and every test that reads it carries ``Testing/Trait/needsCorpus``, so
/// that without it the test is skipped and counted.
public enum Corpus {
    /// The repository, found from this file's path (`Tests/LadeTestTraits/Corpus.swift`).
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `LADE_CORPUS` when set, else `../shared/coredata-corpus` beside the repository.
    public static let root: URL = {
        if let path = ProcessInfo.processInfo.environment["LADE_CORPUS"] { return URL(fileURLWithPath: path) }
        return repository.deletingLastPathComponent().appendingPathComponent("shared/coredata-corpus")
    }()

    /// Whether the corpus is there: its `MANIFEST.jsonl` is.
    public static var isPresent: Bool {
        FileManager.default.fileExists(atPath: root.appendingPathComponent("MANIFEST.jsonl").path)
    }

    /// `relative` inside the corpus.
    public static func file(_ relative: String) -> URL { root.appendingPathComponent(relative) }

    /// Every `.xcdatamodel` directory in the corpus, sorted by path.
    public static func modelDirectories() -> [URL] {
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        var found: [URL] = []
        for case let url as URL in walker where url.pathExtension == "xcdatamodel" {
            found.append(url)
        }
        return found.sorted { $0.path < $1.path }
    }
}
