import ArgumentParser
import Foundation
import Lade
import LadePipeline

/// A store named on the command line: a file path, or a PostgreSQL URL (`StoreLocation`).
/// Every command that takes a store reads it through here.
enum StoreArgument {
    /// Refuses a server URL that carries a password (usage, exit 64): on the command line it
    /// would show in `ps` and the shell's history. Called from `validate()`; the password is
    /// never repeated.
    static func refusePassword(_ text: String, role: String = "STORE") throws {
        guard StoreLocation.carriesPassword(text) else { return }
        throw ValidationError("\(role) \(PostgreSQLLocation.redact(text)) carries a password, which a command line shows to anyone (ps, the shell's history): "
            + "leave it out of the URL and put it in ~/.pgpass (host:port:database:user:password, mode 0600) or PGPASSWORD, or name the store in a job file")
    }

    /// The store `text` names (a password in it refused, as by ``refusePassword(_:role:)``).
    static func location(_ text: String) throws -> StoreLocation {
        try refusePassword(text)
        return try StoreLocation(text)
    }
}
