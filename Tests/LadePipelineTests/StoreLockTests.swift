import Foundation
import Lade
import LadePipeline
import Testing

/// One writer per store, whatever path reaches it; readers make nothing.
@Suite("The store's lock")
struct StoreLockTests {
    /// A folder with `real/s.xml` (an empty file is enough for a lock) and `link.xml` naming it.
    func linkedStore() throws -> (directory: URL, real: URL, link: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lade-lock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("real"), withIntermediateDirectories: true)
        let real = directory.appendingPathComponent("real/s.xml")
        try Data("x".utf8).write(to: real)
        let link = directory.appendingPathComponent("link.xml")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "real/s.xml")
        return (directory, real, link)
    }

    /// The writer's lock on `store`, waiting up to 5 s for it (see `waiting`).
    func lock(_ store: URL) throws -> StoreLock {
        try waiting { try StoreLock(store: store) }
    }

    /// `body`, again while it finds the lock busy, for up to 5 s: a process that another test
    /// starts meanwhile holds a copy of every descriptor from its fork to its exec, and with it
    /// a lock released here a moment before.
    func waiting<T>(_ body: () throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(5)
        while true {
            do {
                return try body()
            } catch is StoreLock.Busy where Date() < deadline {
                usleep(10_000)
            }
        }
    }

    @Test("a lock taken through a symbolic link and one taken on the file it names exclude each other, both ways")
    func linkAndFile() throws {
        let (directory, real, link) = try linkedStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (first, second) in [(link, real), (real, link)] {
            let held = try lock(first)
            #expect(held.path == real.path + ".lade-lock")
            #expect(throws: StoreLock.Busy.self, "\(second.lastPathComponent) after \(first.lastPathComponent)") { try StoreLock(store: second) }
            held.release()
            try lock(second).release()
        }
        #expect(!FileManager.default.fileExists(atPath: link.path + ".lade-lock"))
    }

    @Test("a reader's lock makes no lock file, shares with readers, and is turned away while a writer holds the store")
    func forReading() throws {
        let (directory, real, link) = try linkedStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try StoreLock.forReading(store: link) == nil)
        #expect(!FileManager.default.fileExists(atPath: real.path + ".lade-lock"))

        let writer = try lock(real)
        #expect(throws: StoreLock.Busy.self) { try StoreLock.forReading(store: link) }
        writer.release()
        let reader = try #require(try waiting { try StoreLock.forReading(store: link) })
        let other = try #require(try StoreLock.forReading(store: real))
        #expect(throws: StoreLock.Busy.self) { try StoreLock(store: real) }
        reader.release()
        other.release()
        try lock(real).release()
    }

    @Test("a writer's lock on a store with no write permission is refused with store.readOnly, and makes no lock file")
    func readOnlyStore() throws {
        let (directory, real, link) = try linkedStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        try #require(chmod(real.path, 0o444) == 0)
        for store in [real, link] {
            let error = try #require(throws: StoreError.self) { try StoreLock(store: store) }
            #expect(error.kind == .readOnly, "\(error)")
            #expect(error.description.contains("the store is read-only: the file has no write permission (mode 444)"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: real.path + ".lade-lock"))
    }
}
