import Foundation

/// One run at a time per job on a PostgreSQL store, across machines: a session-level
/// `pg_try_advisory_lock(k1, k2)` held on a connection of its own until `release()` or the
/// process ends (the server frees a session's advisory locks when its connection closes, so a
/// killed run frees the lock). `k1` is a digest of the store's schema, `k2` of the lock's
/// scope (a job's checkpoint key), so different jobs on one store, and one job on different
/// stores, never exclude each other.
///
/// The lock's session sits idle while the run works on its own connection, so it turns off
/// `idle_session_timeout` for itself (a role's or server's setting would end it, and free the
/// lock while the run goes on); a session ended all the same (`pg_terminate_backend`, a server
/// restart) is found by `verify()`, which a run calls before each commit and stops on.
///
/// Related PostgreSQL documentation:
/// <https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS>
package final class PostgreSQLAdvisoryLock: @unchecked Sendable {
    /// Another session holds the lock: its server process and client, when the server says.
    package struct Busy: Error, Sendable {
        package let holder: String?
    }

    private var connection: PostgreSQLConnection?
    private let keys: (Int32, Int32)

    /// Takes the lock for `scope` on the store at `location`, or throws `Busy`.
    package init(location: PostgreSQLLocation, scope: String) throws {
        keys = (Self.digest(location.schema), Self.digest(scope))
        let connection = try PostgreSQLConnection(location)
        // Servers before 14 have no such setting: nothing there ends an idle session.
        _ = try? connection.execute("SET idle_session_timeout = 0")
        let taken = try connection.execute("SELECT pg_try_advisory_lock($1::int4, $2::int4)", [.integer(Int64(keys.0)), .integer(Int64(keys.1))]).text(0, 0)
        guard taken == "t" else {
            let holder = try? connection.execute("""
                SELECT a.pid, COALESCE(a.application_name, ''), COALESCE(host(a.client_addr), 'local socket'), a.backend_start
                FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'advisory' AND l.classid = ($1::int4)::oid AND l.objid = ($2::int4)::oid AND l.objsubid = 2 AND l.granted
                """, [.integer(Int64(keys.0)), .integer(Int64(keys.1))])
            throw Busy(holder: holder.flatMap { result in
                result.count == 0 ? nil : "server process \(result.text(0, 0) ?? "?") of \(result.text(0, 1) ?? "?") from \(result.text(0, 2) ?? "?") since \(result.text(0, 3) ?? "?")"
            })
        }
        self.connection = connection
    }

    /// Lost: the lock's session ended (terminated, timed out, the server restarted), so another
    /// run may hold the lock now.
    package struct Lost: Error, Sendable {}

    /// Throws `Lost` unless this session still holds the lock (one round trip on its connection).
    package func verify() throws {
        guard let connection, connection.isAlive else { throw Lost() }
        let held = try? connection.execute("""
            SELECT count(*) FROM pg_catalog.pg_locks
            WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND classid = ($1::int4)::oid AND objid = ($2::int4)::oid AND objsubid = 2 AND granted
            """, [.integer(Int64(keys.0)), .integer(Int64(keys.1))]).integer(0, 0)
        guard held == 1 else { throw Lost() }
    }

    /// Releases the lock (closing its connection).
    package func release() {
        guard let connection else { return }
        if connection.isAlive {
            _ = try? connection.execute("SELECT pg_advisory_unlock($1::int4, $2::int4)", [.integer(Int64(keys.0)), .integer(Int64(keys.1))])
        }
        self.connection = nil
    }

    deinit { release() }

    /// A stable 32-bit digest (FNV-1a) of `text`, as an `int4` key.
    static func digest(_ text: String) -> Int32 {
        var hash: UInt32 = 0x811c_9dc5
        for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
        return Int32(bitPattern: hash)
    }
}
