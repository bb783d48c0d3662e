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
    /// A schema of a PostgreSQL database (`postgresql://…?schema=NAME`): Core Data's SQLite
    /// layout on a database server, for many writers at once (docs/postgresql.md).
    case postgresql = "PostgreSQL"

    /// The types a store file can have, in the order messages list them.
    package static let fileTypes: [StoreType] = [.sqlite, .xml, .binary]

    /// The types users can name (`--type`, a job's `store.type`): the file types and PostgreSQL.
    package static let namedTypes: [StoreType] = fileTypes + [.postgresql]

    /// The name users write: `sqlite`, `xml`, `binary` (`memory` for the in-memory store).
    public var name: String {
        switch self {
        case .sqlite: "sqlite"
        case .xml: "xml"
        case .binary: "binary"
        case .inMemory: "memory"
        case .postgresql: "postgresql"
        }
    }

    /// "sqlite, xml or binary", for messages.
    package static let fileTypeNames = "sqlite, xml or binary"
    /// "sqlite, xml, binary or postgresql", for messages.
    package static let namedTypeNames = "sqlite, xml, binary or postgresql"

    /// The type a user named (`sqlite`, `xml`, `binary`, `postgresql`), nil for anything else.
    public init?(name: String) {
        guard let type = Self.namedTypes.first(where: { $0.name == name }) else { return nil }
        self = type
    }

    /// The type a store location names: PostgreSQL for a `postgresql://` (or `postgres://`)
    /// URL; nil for a file, whose type its name or its first bytes tell.
    package init?(locationOf url: URL) {
        guard let scheme = url.scheme?.lowercased(), PostgreSQLLocation.schemes.contains(scheme) else { return nil }
        self = .postgresql
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
    package var isAtomic: Bool { self != .sqlite && self != .postgresql }

    /// Whether stores of this type live on a database server rather than in a file.
    package var isServer: Bool { self == .postgresql }
}
