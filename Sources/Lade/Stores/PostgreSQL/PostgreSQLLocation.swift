import CLibPQ
import Foundation

/// Where a PostgreSQL store is: a libpq connection URL and the schema that is the store.
///
/// `postgresql://user@host:port/database?schema=NAME` (or `postgres://`): everything but
/// `schema` is libpq's own (its URL form, its `PG*` environment variables, `~/.pgpass`,
/// `sslmode`, `host=/socket/dir`), so a URL that works with `psql` works here. `schema` is
/// Lade's: one PostgreSQL schema is one store, so one database holds many stores; it must be
/// named (a store never lands in `public` by accident).
///
/// A password in the URL is kept for libpq and never shown, in whole or in part, however it is
/// written: ``redacted`` is the form every message, report and `description` uses (see
/// `PostgreSQLLocation+Passwords.swift`). A URL whose password's end libpq could read elsewhere
/// than Lade (`@ / ? # &` written raw in it) is refused.
///
/// ```swift
/// let store = try PostgreSQLLocation("postgresql://app@db.internal/catalog?schema=feed&sslmode=require")
/// store.schema      // "feed"
/// store.redacted    // "postgresql://app@db.internal/catalog?schema=feed&sslmode=require"
/// ```
package struct PostgreSQLLocation: Sendable, Hashable, CustomStringConvertible {
    /// The URL as given (password included): for libpq only.
    private let given: String
    /// What libpq is given: the URL without `schema`.
    package let connectionURL: String
    /// The schema that holds the store's tables (never quoted here; SQL quotes it).
    package let schema: String
    /// Whether the URL itself carries a password (the user part, or `password=`; an empty one
    /// is none).
    package let hasPassword: Bool
    /// The URL with any password replaced by `***`.
    package let redacted: String

    /// The schemes that name a PostgreSQL store.
    package static let schemes = ["postgresql", "postgres"]

    /// Whether `text` is meant as a PostgreSQL store URL (by its scheme), whether or not it is a
    /// valid one: such text is never taken for a file path.
    package static func isPostgreSQLURL(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":") else { return false }
        return schemes.contains(text[..<colon].lowercased()) && text[colon...].hasPrefix("://")
    }

    /// The longest identifier PostgreSQL keeps (NAMEDATALEN - 1 bytes); a longer one would be
    /// cut short in silence, so it is refused.
    package static let identifierBytes = 63

    package init(_ text: String) throws {
        redacted = Self.redact(text)
        guard Self.isPostgreSQLURL(text) else {
            throw Self.invalid(redacted, "is not a PostgreSQL URL: write postgresql://USER@HOST:PORT/DATABASE?schema=NAME")
        }
        if text.utf8.contains(0) || text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw Self.invalid(redacted, "holds a control character; write the URL on one line, with special characters percent-encoded")
        }
        if PasswordReading(text).isAmbiguous {
            throw Self.invalid(redacted, "cannot be read one way only: an @ follows a / ? # or another @, or a password= value holds & or #, so where a password ends (and the host begins) cannot be told, "
                + "and libpq would take part of it for a host, port or parameter and show it; percent-encode @ / ? # & in a user name, password or query value (%40 %2F %3F %23 %26), "
                + "and better leave the password out of the URL: ~/.pgpass or PGPASSWORD")
        }
        if text.contains("#") {
            throw Self.invalid(redacted, "has a fragment (#…), which a connection URL cannot have; percent-encode # as %23")
        }
        given = text
        let parts = text.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var kept: [Substring] = []
        var schema: String?
        for parameter in parts.count > 1 ? parts[1].split(separator: "&", omittingEmptySubsequences: true) : [] {
            let key = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
            guard key.removingPercentEncoding == "schema" else { kept.append(parameter); continue }
            guard schema == nil else { throw Self.invalid(redacted, "names schema= twice; a store is one schema") }
            let raw = parameter.dropFirst(key.count + 1)
            // Percent-decoding only, as libpq reads a query (RFC 3986): `+` is `+`, not a space.
            guard let decoded = String(raw).removingPercentEncoding else {
                throw Self.invalid(redacted, "has a schema name whose percent-encoding is broken")
            }
            schema = decoded
        }
        guard let schema else {
            throw Self.invalid(redacted, "names no schema: add ?schema=NAME (one PostgreSQL schema is one store)")
        }
        try Self.checkSchemaName(schema, in: redacted)
        self.schema = schema
        connectionURL = String(parts[0]) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
        hasPassword = try Self.parsedPassword(connectionURL, shown: redacted, secrets: Self.passwords(in: text)) != nil
        try Self.checkStartupParameters(Self.options(connectionURL), in: redacted)
    }

    /// The most bytes of `options` Lade sends: the server refuses a startup packet over 10,000
    /// bytes (`MAX_STARTUP_PACKET_LENGTH`) by closing the connection, which libpq reports as a
    /// server that "terminated abnormally".
    static let optionsBytes = 8_000

    /// Refuses what the server would cut short or refuse when the connection starts, naming the
    /// parameter and its limit: names longer than PostgreSQL keeps (the server cuts
    /// `application_name` to 63 bytes in silence, and a user or database name to 63 bytes,
    /// which then names another), and `options` too long for the startup packet.
    static func checkStartupParameters(_ options: [String: String], in shown: String) throws {
        // The URL as shown, cut: the value refused may be 100 KB long.
        let shown = shown.count > 200 ? String(shown.prefix(200)) + "… (\(shown.utf8.count) bytes)" : shown
        for name in ["user", "dbname", "application_name", "fallback_application_name"] {
            guard let value = options[name], value.utf8.count > identifierBytes else { continue }
            throw invalid(shown, "has \(name) of \(value.utf8.count) bytes; PostgreSQL keeps at most \(identifierBytes) bytes (NAMEDATALEN - 1) and would cut it short, or refuse the connection: give at most \(identifierBytes) bytes")
        }
        if let value = options["options"], value.utf8.count > optionsBytes {
            throw invalid(shown, "has options of \(value.utf8.count) bytes; the server refuses a connection whose startup packet holds more than 10,000 bytes: give at most \(optionsBytes) bytes of options, or set the settings with ALTER ROLE … SET")
        }
    }

    package var description: String { redacted }

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.given == rhs.given }
    package func hash(into hasher: inout Hasher) { hasher.combine(given) }

    /// The password libpq reads from the URL, for taking it out of messages.
    package var password: String? { try? Self.parsedPassword(connectionURL, shown: redacted, secrets: []) }

    /// Refuses a schema name PostgreSQL would change or refuse: empty, longer than 63 bytes (cut
    /// short in silence), NUL (never in a name), `pg_…` (reserved for the system).
    static func checkSchemaName(_ name: String, in shown: String) throws {
        if name.isEmpty { throw invalid(shown, "has an empty schema name; name the store's schema: ?schema=NAME") }
        if name.utf8.count > identifierBytes {
            throw invalid(shown, "has a schema name of \(name.utf8.count) bytes; PostgreSQL keeps \(identifierBytes) and would cut it short: choose a shorter name")
        }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw invalid(shown, "has a control character in the schema name; choose a name without one")
        }
        if name.lowercased().hasPrefix("pg_") {
            throw invalid(shown, "has the schema name \"\(name)\"; names starting with pg_ are PostgreSQL's own: choose another")
        }
    }

    /// libpq's reading of the URL (its error when it cannot read it, without `secrets`), and the
    /// password in it (nil for none or an empty one).
    private static func parsedPassword(_ url: String, shown: String, secrets: [String]) throws -> String? {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &error) else {
            // libpq quotes the token it cannot read, which may be (part of) the password.
            let message = secrets.sorted { $0.count > $1.count }.reduce(error.map { String(cString: $0) } ?? "libpq cannot read it") {
                $0.replacingOccurrences(of: $1, with: "***")
            }
            if let error { PQfreemem(error) }
            throw invalid(shown, "cannot be read as a libpq URL: \(message.trimmingCharacters(in: .whitespacesAndNewlines)) (see https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING)")
        }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password", let value = option.pointee.val {
                return value.pointee == 0 ? nil : String(cString: value)
            }
            option += 1
        }
        return nil
    }

    /// Whether `other` names the same store however its URL is spelled: the same schema in the
    /// same database on the same host and port, as libpq reads them (a part left out, and so
    /// taken from the environment, counts as itself).
    package func isSameStore(as other: PostgreSQLLocation) -> Bool {
        guard schema == other.schema else { return false }
        let keys = ["host", "hostaddr", "port", "dbname"]
        let mine = Self.options(connectionURL), theirs = Self.options(other.connectionURL)
        return keys.allSatisfy { mine[$0] == theirs[$0] }
    }

    /// The connection options libpq reads from `url` (empty when it cannot read it).
    private static func options(_ url: String) -> [String: String] {
        guard let parsed = PQconninfoParse(url, nil) else { return [:] }
        defer { PQconninfoFree(parsed) }
        var result: [String: String] = [:]
        var option = parsed
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { result[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return result
    }

    /// `message` with this URL's password (if any) shown as `***`, for text that came from the
    /// server or libpq.
    package func redacting(_ message: String) -> String {
        guard let password, password.count >= 2 else { return message }
        return message.replacingOccurrences(of: password, with: "***")
    }

    private static func invalid(_ shown: String, _ message: String) -> StoreError {
        StoreError(.invalidLocation, path: shown, message)
    }
}

extension PostgreSQLLocation {
    /// The store's location as the URL stores are named by (its text, password included: a
    /// store's `url` is never shown as is; messages use ``redacted``).
    package var url: URL? { URL(string: given) }

    /// The location `url` names when it is a PostgreSQL URL; nil for a file URL.
    package init?(url: URL) throws {
        guard let scheme = url.scheme, Self.schemes.contains(scheme.lowercased()) else { return nil }
        try self.init(url.absoluteString)
    }
}
