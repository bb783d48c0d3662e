import Foundation
import Lade

/// Where a store is, as a user names it: a file path, or a PostgreSQL URL
/// (`postgresql://USER@HOST:PORT/DATABASE?schema=NAME`, or `postgres://`). The one way the
/// command line and the job loader turn a store's name into the URL the library takes: a
/// URL-shaped name is never taken for a file path, nor checked or detected as a file.
///
/// ```swift
/// let store = try StoreLocation("postgresql://lade:s3cret@db/catalog?schema=feed")
/// store.serverType     // .postgresql
/// store.displayName    // "postgresql://lade:***@db/catalog?schema=feed"
/// ```
public struct StoreLocation: Sendable, Equatable {
    /// The URL the library takes: a file URL, or the PostgreSQL URL, password included (never
    /// show it: use ``displayName``).
    public let url: URL
    /// What messages, reports and logs show: a file's path as given, or the URL with any
    /// password as `***`.
    public let displayName: String
    /// The store type a server URL names (PostgreSQL); nil for a file.
    public let serverType: PersistentStoreCoordinator.StoreType?
    /// Whether the URL carries a password (in its user part or as `password=`).
    public let hasPassword: Bool

    /// The store `text` names: a PostgreSQL URL (checked: a schema, a name PostgreSQL keeps,
    /// a URL libpq reads), or a file path, made a URL by `filePath` (default: relative to the
    /// current directory).
    public init(_ text: String, filePath: (String) -> URL = { URL(fileURLWithPath: $0) }) throws {
        guard PostgreSQLLocation.isPostgreSQLURL(text) else {
            if PostgreSQLLocation.isConnectionString(text) {
                throw StoreError(.invalidLocation, path: PostgreSQLLocation.redact(text), Self.connectionStringRefusal)
            }
            url = filePath(text)
            displayName = text
            serverType = nil
            hasPassword = false
            return
        }
        let shown = PostgreSQLLocation.redact(text)
        // What a URL cannot hold as it is (a quote, a space, a letter beyond ASCII) is
        // percent-encoded here, and nothing else: libpq decodes it back. Foundation would
        // encode the whole text, `%` of `host=%2Fsocket` included, which libpq then reads wrong.
        guard let url = URL(string: text.addingPercentEncoding(withAllowedCharacters: Self.urlCharacters) ?? text) else {
            throw StoreError(.invalidLocation, path: shown, "is not a URL Foundation can read; percent-encode spaces, quotes and other special characters (%20, %22, …)")
        }
        let location = try PostgreSQLLocation(url.absoluteString)
        self.url = url
        displayName = shown
        serverType = .postgresql
        hasPassword = location.hasPassword
    }

    /// The location of a store the library already names by `url`.
    public init(url: URL) {
        self.url = url
        displayName = Self.displayName(of: url)
        serverType = PersistentStoreCoordinator.StoreType(locationOf: url)
        hasPassword = serverType != nil && PostgreSQLLocation.carriesPassword(url.absoluteString)
    }

    /// Whether there is a store here: a file, or a schema holding a store's tables (asked of
    /// the server, which must answer: a connection failure is thrown).
    public func exists() throws -> Bool {
        guard isServer else { return FileManager.default.fileExists(atPath: url.path) }
        do {
            _ = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
            return true
        } catch let error as StoreError where error.kind == .notFound {
            return false
        }
    }

    /// The characters a URL holds as they are (RFC 3986's unreserved and reserved ones), and `%`
    /// of an encoding already written.
    private static let urlCharacters = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%")

    /// Whether the store is on a database server rather than in a file.
    public var isServer: Bool { serverType != nil }

    /// Whether `text` names a server store (by its scheme), valid or not.
    public static func isServerURL(_ text: String) -> Bool { PostgreSQLLocation.isPostgreSQLURL(text) }

    /// Whether `text` names a server store with a password in it (an empty one is none), or is a
    /// libpq connection string with one; checked without libpq, so a URL that is wrong in other
    /// ways is still caught.
    public static func carriesPassword(_ text: String) -> Bool {
        PostgreSQLLocation.carriesPassword(text)
    }

    /// Whether `text` is a libpq `key=value` connection string (`host=db dbname=…`), which names
    /// no store here (and is never taken for a file's name, which messages would show).
    public static func isConnectionString(_ text: String) -> Bool {
        PostgreSQLLocation.isConnectionString(text)
    }

    /// Why a connection string is refused where a store is named.
    static let connectionStringRefusal = "is a libpq key=value connection string; Lade names a PostgreSQL store by URL, postgresql://USER@HOST:PORT/DATABASE?schema=NAME, "
        + "with its password in ~/.pgpass or PGPASSWORD (a file whose name starts so is named ./NAME)"

    /// How messages show the store at `url`: a file's path, a server URL with any password as `***`.
    public static func displayName(of url: URL) -> String {
        PersistentStoreCoordinator.StoreType(locationOf: url) != nil ? PostgreSQLLocation.redact(url.absoluteString) : url.path
    }
}
