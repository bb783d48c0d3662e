import Foundation

/// The store types a coordinator can add (`NSStoreType` values), and the one table of how
/// users name them: in `--type`, in a job's `store.type`, and by a file's extension. Known to
/// users as `PersistentStoreCoordinator.StoreType`; what implements each type (opening, file
/// format, metadata, writers, the values it keeps exactly, migration) is mapped in one place,
/// `StoreImplementations.swift`.
///
/// ```swift
/// PersistentStoreCoordinator.StoreType(name: "xml")          // .xml
/// PersistentStoreCoordinator.StoreType.sqlite.rawValue       // "SQLite", as NSStoreType
/// ```
public enum StoreType: String, Sendable, CaseIterable {
    case sqlite = "SQLite"
    case xml = "XML"
    case binary = "Binary"
    case inMemory = "InMemory"

    /// The types a store file can have, in the order messages list them.
    package static let fileTypes: [StoreType] = [.sqlite, .xml, .binary]

    /// The name users write: `sqlite`, `xml`, `binary` (`memory` for the in-memory store).
    public var name: String {
        switch self {
        case .sqlite: "sqlite"
        case .xml: "xml"
        case .binary: "binary"
        case .inMemory: "memory"
        }
    }

    /// "sqlite, xml or binary", for messages.
    package static let fileTypeNames = "sqlite, xml or binary"

    /// The file type a user named (`sqlite`, `xml`, `binary`), nil for anything else.
    public init?(name: String) {
        guard let type = Self.fileTypes.first(where: { $0.name == name }) else { return nil }
        self = type
    }

    /// The file type a store's name implies: `.sqlite`, `.sqlite3`, `.db`, `.store` are
    /// SQLite, `.xml` XML, `.binary` and `.ladebin` binary; nil when the name says nothing.
    package init?(fileExtensionOf url: URL) {
        switch url.pathExtension.lowercased() {
        case "sqlite", "sqlite3", "db", "store": self = .sqlite
        case "xml": self = .xml
        case "binary", "ladebin": self = .binary
        default: return nil
        }
    }

    /// Atomic stores (XML, binary, in-memory) hold every object in memory and rewrite
    /// their whole file at each save.
    package var isAtomic: Bool { self != .sqlite }
}
