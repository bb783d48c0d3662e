import Foundation

/// The private PostgreSQL server the tests run against: the cluster `make test` starts through
/// `scripts/with-pg-test-cluster` (or `scripts/pg-test-cluster start DIR` by hand), named by the
/// `LADE_TEST_POSTGRES_*` variables that script exports. Each test makes its own schema
/// (`newSchemaName`), one store each, and drops it at the end, so tests run side by side in one
/// database.
public struct PostgresTestServer: Sendable {
    /// The directory of the server's unix socket.
    public let socketDirectory: String
    /// The server's TCP port on 127.0.0.1 (also the number in the socket's file name).
    public let port: Int
    /// A superuser, trusted over the socket without a password.
    public let user: String
    /// The database the stores' schemas go in.
    public let database: String
    /// A role that logs in over TCP with `password` only (scram-sha-256) and may create schemas
    /// in `database`.
    public let passwordUser: String
    public let password: String
    /// The cluster's directory (data, socket, log), when the environment names it.
    public let directory: String?
    /// The directory of PostgreSQL's programs (psql, pg_ctl), when the environment names it.
    public let binDirectory: String?

    /// What went wrong finding or using the test server; `description` says what to do.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A `psql` run that failed: its exit status and standard error.
    public struct PSQLFailure: Error, CustomStringConvertible {
        public let status: Int32
        public let stderr: String
        public var description: String { "psql exited with status \(status): \(stderr)" }
    }

    /// The server the environment names. Throws, never skips: a PostgreSQL test without its
    /// server is a failure of the set-up, to be seen.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> PostgresTestServer {
        let names = [
            "LADE_TEST_POSTGRES_SOCKET", "LADE_TEST_POSTGRES_PORT", "LADE_TEST_POSTGRES_USER",
            "LADE_TEST_POSTGRES_DATABASE", "LADE_TEST_POSTGRES_PASSWORD_USER", "LADE_TEST_POSTGRES_PASSWORD",
        ]
        let missing = names.filter { (environment[$0] ?? "").isEmpty }
        guard missing.isEmpty else {
            throw Failure(description: "the PostgreSQL tests need the private test server: run them through `make test` "
                + "(or `scripts/with-pg-test-cluster swift test ...`); not set: \(missing.joined(separator: ", "))")
        }
        guard let port = Int(environment["LADE_TEST_POSTGRES_PORT"]!), (1...65535).contains(port) else {
            throw Failure(description: "LADE_TEST_POSTGRES_PORT is \"\(environment["LADE_TEST_POSTGRES_PORT"]!)\", not a "
                + "TCP port: use the environment scripts/pg-test-cluster writes (DIR/env)")
        }
        return PostgresTestServer(
            socketDirectory: environment["LADE_TEST_POSTGRES_SOCKET"]!, port: port,
            user: environment["LADE_TEST_POSTGRES_USER"]!, database: environment["LADE_TEST_POSTGRES_DATABASE"]!,
            passwordUser: environment["LADE_TEST_POSTGRES_PASSWORD_USER"]!,
            password: environment["LADE_TEST_POSTGRES_PASSWORD"]!,
            directory: environment["LADE_TEST_POSTGRES_DIR"].flatMap { $0.isEmpty ? nil : $0 },
            binDirectory: environment["LADE_TEST_POSTGRES_BIN"].flatMap { $0.isEmpty ? nil : $0 })
    }

    // MARK: Store URLs

    /// A store URL over the unix socket as the superuser, in libpq's URL form plus Lade's `schema`:
    /// `postgresql://lade@/lade?host=%2Ftmp%2F…%2Fsocket&port=N&schema=NAME`.
    public func storeURL(schema: String) -> String {
        "postgresql://\(Self.encoded(user))@/\(Self.encoded(database))?host=\(Self.encoded(socketDirectory))"
            + "&port=\(port)&schema=\(Self.encoded(schema))"
    }

    /// A store URL over TCP to 127.0.0.1, as `user` (the password user by default); with
    /// `password`, the password is in the URL (for the tests that check it is never printed),
    /// without, it comes from PGPASSWORD or ~/.pgpass.
    public func tcpURL(schema: String, user: String? = nil, password: String? = nil) -> String {
        let login = Self.encoded(user ?? passwordUser) + (password.map { ":" + Self.encoded($0) } ?? "")
        return "postgresql://\(login)@127.0.0.1:\(port)/\(Self.encoded(database))?schema=\(Self.encoded(schema))"
    }

    /// Percent-encodes all but URL's unreserved ASCII characters (letters, digits, `-._~`).
    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    private static let unreserved = CharacterSet(
        charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")

    // MARK: Schemas

    /// A schema name no other call, test or process uses: the label (lowercased, letters, digits
    /// and `_` only) then the process ID, a counter and random hex, within PostgreSQL's 63 bytes.
    public func newSchemaName(_ label: String) -> String {
        var cleaned = String(label.lowercased().map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
        if cleaned.first.map({ !$0.isLetter }) ?? true { cleaned = "s_" + cleaned }
        let suffix = "_\(getpid())_\(SchemaCounter.next())_\(String(UInt32.random(in: .min ... .max), radix: 16))"
        return String(cleaned.prefix(63 - suffix.count)) + suffix
    }

    /// `name` as one SQL identifier: in double quotes, its own double quotes doubled.
    /// `text` as a SQL string literal, a quote inside doubled.
    public static func quotedLiteral(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    public static func quotedIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Drops a schema and everything in it; nothing happens when it does not exist.
    public func dropSchema(_ name: String) throws {
        _ = try psql("DROP SCHEMA IF EXISTS \(Self.quotedIdentifier(name)) CASCADE")
    }

    // MARK: psql

    /// Runs SQL through the real `psql` over the socket as the superuser (unaligned, tuples only,
    /// stopping at the first error); returns its standard output without the final newline.
    @discardableResult
    public func psql(_ sql: String) throws -> String {
        try runPSQL(sql, connection: ["-h", socketDirectory, "-p", String(port), "-U", user, "-d", database], password: nil)
    }

    /// The same over TCP to 127.0.0.1 as `user` (the password user by default), with `password`
    /// given to psql as PGPASSWORD (none: psql must fail, never prompt).
    @discardableResult
    public func psqlOverTCP(_ sql: String, user: String? = nil, password: String?) throws -> String {
        try runPSQL(sql, connection: ["-h", "127.0.0.1", "-p", String(port), "-U", user ?? passwordUser, "-d", database],
                    password: password)
    }

    /// Runs SQL through `psql` with the connection arguments given (`-h`, `-p`, `-U`, `-d`, or a
    /// connection URL with `-d`), and `password` as PGPASSWORD.
    @discardableResult
    public func psql(_ sql: String, connection: [String], password: String? = nil) throws -> String {
        try runPSQL(sql, connection: connection, password: password)
    }

    /// The psql the cluster's programs directory holds, else the one on PATH.
    public var psqlPath: String {
        if let binDirectory, FileManager.default.isExecutableFile(atPath: binDirectory + "/psql") {
            return binDirectory + "/psql"
        }
        return "/usr/bin/env"
    }

    private func runPSQL(_ sql: String, connection: [String], password: String?) throws -> String {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("lade-psql-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        // The SQL is read from a file and both outputs go to files: no pipe can fill and block.
        let script = work.appendingPathComponent("script.sql")
        let out = work.appendingPathComponent("stdout")
        let err = work.appendingPathComponent("stderr")
        try Data(sql.utf8).write(to: script)
        for file in [out, err] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: psqlPath)
        let options = ["-X", "-q", "-A", "-t", "-w", "-v", "ON_ERROR_STOP=1", "-f", script.path] + connection
        process.arguments = (psqlPath == "/usr/bin/env" ? ["psql"] : []) + options
        // psql's own PG* variables from the test's environment (a service, options, another
        // password) must not change which server it reaches or how.
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment["PGCONNECT_TIMEOUT"] = "10"
        if let password { environment["PGPASSWORD"] = password }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        process.waitUntilExit()

        let stdout = String(decoding: try Data(contentsOf: out), as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw PSQLFailure(status: process.terminationStatus, stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self))
        }
        return stdout.hasSuffix("\n") ? String(stdout.dropLast()) : stdout
    }
}

/// The counter in schema names: unique within the process, whatever thread asks.
private enum SchemaCounter {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var counter = 0

    static func next() -> Int {
        lock.withLock {
            counter += 1
            return counter
        }
    }
}

/// A PostgreSQL cluster of one test's own, for the tests that stop the server under a running
/// import (kill safety, a connection lost): `scripts/pg-test-cluster` makes it in a new temporary
/// directory, with its own port and socket. `stop()` (or deinit) stops it and removes the directory.
public final class PrivatePostgresCluster: @unchecked Sendable {
    /// The cluster, as the shared test server is seen: URLs, schema names, psql.
    public let server: PostgresTestServer
    /// The cluster's directory (data, socket, log, env).
    public let directory: String
    private let lock = NSLock()
    private var stopped = false

    /// scripts/pg-test-cluster in this checkout.
    public static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/pg-test-cluster").path

    /// Makes and starts a cluster (a second or two); it runs until `stop()`.
    public init() throws {
        let base = URL(fileURLWithPath: "/tmp").appendingPathComponent("lade-pgp.\(getpid()).\(UUID().uuidString.prefix(8))")
        directory = base.path
        let output: String
        do {
            output = try Self.run("start", directory)
        } catch {
            _ = try? Self.run("stop", directory)
            throw error
        }
        // The script prints `export NAME=value` lines; its values (paths under /tmp/lade-pgp.…,
        // numbers, names) need no shell quoting.
        var environment: [String: String] = [:]
        for line in output.split(separator: "\n") where line.hasPrefix("export ") {
            let assignment = line.dropFirst("export ".count)
            guard let equals = assignment.firstIndex(of: "=") else { continue }
            environment[String(assignment[..<equals])] = String(assignment[assignment.index(after: equals)...])
        }
        server = try PostgresTestServer.fromEnvironment(environment)
    }

    deinit { stop() }

    /// Stops the server as a crash or a power cut would (`pg_ctl stop -m immediate`): clients
    /// lose their connections, nothing is flushed beyond what was committed.
    public func stopImmediately() throws {
        _ = try Self.run("stop-immediate", directory)
    }

    /// Starts the server again on the same data, port and socket (crash recovery first when it
    /// was stopped immediately); returns when it accepts connections.
    public func restart() throws {
        _ = try Self.run("restart", directory)
    }

    /// Stops the server and removes its directory; again is harmless. The data is thrown away,
    /// so the server is stopped immediately: a clean stop's checkpoint takes seconds.
    public func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        _ = try? Self.run("stop-immediate", directory)
        _ = try? Self.run("stop", directory)
    }

    private static func run(_ command: String, _ directory: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script, command, directory]
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("lade-pgctl-\(UUID().uuidString)")
        let out = work.appendingPathExtension("out"), err = work.appendingPathExtension("err")
        for file in [out, err] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        defer { for file in [out, err] { try? FileManager.default.removeItem(at: file) } }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PostgresTestServer.Failure(description: "scripts/pg-test-cluster \(command) \(directory) failed "
                + "(status \(process.terminationStatus)): \(String(decoding: try Data(contentsOf: err), as: UTF8.self))")
        }
        return String(decoding: try Data(contentsOf: out), as: UTF8.self)
    }
}
