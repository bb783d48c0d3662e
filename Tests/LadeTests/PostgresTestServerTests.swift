import Foundation
import LadeTestSupport
import Testing

/// The private PostgreSQL server `make test` starts is real and reachable as the PostgreSQL
/// tests expect it. Without its environment these tests fail, never skip.
@Suite("The PostgreSQL test server")
struct PostgresTestServerTests {
    @Test("psql over the socket reaches a PostgreSQL 15 server, with fsync on")
    func version() throws {
        let server = try PostgresTestServer.fromEnvironment()
        let version = try server.psql("select version()")
        #expect(version.hasPrefix("PostgreSQL 15"), "\(version)")
        #expect(try server.psql("show fsync") == "on")
        #expect(try server.psql("select current_user") == server.user)
    }

    @Test("a schema can be created, written and dropped, even one whose name holds a double quote")
    func schema() throws {
        let server = try PostgresTestServer.fromEnvironment()
        for name in [server.newSchemaName("CreateDrop"), server.newSchemaName("q") + "\"; DROP"] {
            let quoted = PostgresTestServer.quotedIdentifier(name)
            defer { try? server.dropSchema(name) }
            try server.psql("""
                CREATE SCHEMA \(quoted);
                CREATE TABLE \(quoted)."ZITEM" ("Z_PK" bigint PRIMARY KEY);
                INSERT INTO \(quoted)."ZITEM" VALUES (1), (2);
                """)
            #expect(try server.psql("SELECT count(*) FROM \(quoted).\"ZITEM\"") == "2")
            let exists = "SELECT count(*) FROM pg_namespace WHERE nspname = '\(name.replacingOccurrences(of: "'", with: "''"))'"
            #expect(try server.psql(exists) == "1")
            try server.dropSchema(name)
            #expect(try server.psql(exists) == "0")
            try server.dropSchema(name)  // absent already: no error
        }
    }

    @Test("schema names are unique per call, lowercase identifiers within 63 bytes")
    func schemaNames() throws {
        let server = try PostgresTestServer.fromEnvironment()
        let names = (0..<1000).map { server.newSchemaName($0 % 2 == 0 ? "Import Kill-Test" : String(repeating: "Ä9", count: 40)) }
        #expect(Set(names).count == names.count)
        for name in names {
            #expect(name.utf8.count <= 63, "\(name)")
            #expect(name.first!.isLetter && name.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }, "\(name)")
        }
    }

    @Test("the store URL over the socket is one libpq reads, the schema aside")
    func storeURL() throws {
        let server = try PostgresTestServer.fromEnvironment()
        let url = server.storeURL(schema: "a b\"c")
        #expect(url.hasPrefix("postgresql://\(server.user)@/\(server.database)?host=%2F"), "\(url)")
        #expect(url.hasSuffix("&schema=a%20b%22c"), "\(url)")
        // libpq refuses query parameters it does not know, so the URL is tried without Lade's own.
        let libpqURL = String(url[..<url.range(of: "&schema=")!.lowerBound])
        #expect(try server.psql("select current_user || '@' || current_database()", connection: ["-d", libpqURL])
            == "\(server.user)@\(server.database)")
    }

    @Test("over TCP the password user logs in with its password and may create a schema")
    func passwordLogin() throws {
        let server = try PostgresTestServer.fromEnvironment()
        let name = server.newSchemaName("tcp")
        defer { try? server.dropSchema(name) }
        let quoted = PostgresTestServer.quotedIdentifier(name)
        let answer = try server.psqlOverTCP("""
            CREATE SCHEMA \(quoted);
            CREATE TABLE \(quoted).t (k int);
            SELECT current_user || ' ' || host(inet_server_addr());
            """, password: server.password)
        #expect(answer == "\(server.passwordUser) 127.0.0.1")
        let tcp = server.tcpURL(schema: name)
        #expect(tcp == "postgresql://\(server.passwordUser)@127.0.0.1:\(server.port)/\(server.database)?schema=\(name)")
        let libpqURL = String(tcp[..<tcp.range(of: "?schema=")!.lowerBound])
        #expect(try server.psql("select current_user", connection: ["-d", libpqURL], password: server.password) == server.passwordUser)
    }

    @Test("over TCP a wrong password, or none, is refused")
    func refusedLogin() throws {
        let server = try PostgresTestServer.fromEnvironment()
        let wrong = #expect(throws: PostgresTestServer.PSQLFailure.self) {
            try server.psqlOverTCP("select 1", password: server.password + "x")
        }
        #expect(wrong?.stderr.contains("password authentication failed for user \"\(server.passwordUser)\"") == true, "\(String(describing: wrong))")
        let none = #expect(throws: PostgresTestServer.PSQLFailure.self) {
            try server.psqlOverTCP("select 1", password: nil)
        }
        #expect(none?.stderr.contains("no password supplied") == true, "\(String(describing: none))")
        // The superuser is trusted over the socket only: over TCP it needs a password it has not.
        let superuser = #expect(throws: PostgresTestServer.PSQLFailure.self) {
            try server.psqlOverTCP("select 1", user: server.user, password: "anything")
        }
        #expect(superuser?.stderr.contains("password authentication failed") == true, "\(String(describing: superuser))")
    }

    @Test("without the server's environment the error says how to run the tests")
    func missingEnvironment() throws {
        let error = #expect(throws: PostgresTestServer.Failure.self) {
            try PostgresTestServer.fromEnvironment(["LADE_TEST_POSTGRES_PORT": "5"])
        }
        #expect(error?.description.hasPrefix("the PostgreSQL tests need the private test server: run them through `make test`") == true)
        #expect(error?.description.contains("LADE_TEST_POSTGRES_SOCKET") == true)
        #expect(error?.description.contains("LADE_TEST_POSTGRES_PORT,") == false)
    }
}

/// A cluster of a test's own survives being stopped as a crash would, for the kill-safety tests.
@Suite("A private PostgreSQL cluster", .slow)
struct PrivatePostgresClusterTests {
    @Test("stopped immediately it refuses connections; restarted, every committed row is there; stopped, its directory is gone")
    func stopImmediatelyAndRestart() throws {
        let cluster = try PrivatePostgresCluster()
        defer { cluster.stop() }
        let server = cluster.server
        #expect(server.socketDirectory == cluster.directory + "/socket")
        #expect(try server.psql("CREATE TABLE t (k int); INSERT INTO t SELECT generate_series(1, 1000); SELECT count(*) FROM t") == "1000")

        try cluster.stopImmediately()
        let refused = #expect(throws: PostgresTestServer.PSQLFailure.self) { try server.psql("select 1") }
        #expect(refused?.stderr.contains("No such file or directory") == true || refused?.stderr.contains("Connection refused") == true,
                "\(String(describing: refused))")

        try cluster.restart()
        #expect(try server.psql("SELECT count(*), sum(k) FROM t") == "1000|500500")
        #expect(try server.psqlOverTCP("select current_user", password: server.password) == server.passwordUser)

        cluster.stop()
        #expect(!FileManager.default.fileExists(atPath: cluster.directory))
    }
}
