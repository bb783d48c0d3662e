import Foundation
import Testing
@testable import Lade

/// Crash safety, shown rather than argued: a child process writes a store over and over (whole
/// saves of an XML or binary store, metadata-only writes of XML, binary and SQLite stores) and
/// is killed with SIGKILL at seeded random moments; after each kill the file must be a
/// complete version, the last one the child reported or the one after it, never a mix.
///
/// The child is this test binary itself, run again with `LADE_CRASH_WRITER` set, which makes
/// `writerProcess()` do the writing (the test target links only the library, so there is no
/// other executable to run). Without the variable that test runs the same writer for three
/// generations of each kind, unkilled, and checks the files.
@Suite("Crash safety of atomic writes (SIGKILL)")
struct AtomicStoreCrashTests {
    enum Mode: String, CaseIterable, CustomTestStringConvertible {
        case xmlSave = "xml-save", binarySave = "binary-save", xmlMetadata = "xml-metadata", binaryMetadata = "binary-metadata", sqliteMetadata = "sqlite-metadata"

        var type: StoreType {
            switch self {
            case .xmlSave, .xmlMetadata: .xml
            case .binarySave, .binaryMetadata: .binary
            case .sqliteMetadata: .sqlite
            }
        }
        var isMetadataOnly: Bool { self == .xmlMetadata || self == .binaryMetadata || self == .sqliteMetadata }
        var testDescription: String { rawValue }
    }

    static let itemCount = 300
    static let killsPerMode = 6

    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [EntityDescription(name: "Item", attributes: [
            AttributeDescription(name: "name", type: .string), AttributeDescription(name: "generation", type: .integer64),
            AttributeDescription(name: "payload", type: .binary),
        ])])
    }

    /// The metadata payload of generation `g`: 64 KiB that tell the generation.
    static func payload(_ g: Int64) -> Data {
        var data = Data(repeating: UInt8(truncatingIfNeeded: g), count: 65_536)
        withUnsafeBytes(of: g.littleEndian) { data.replaceSubrange(0..<8, with: $0) }
        return data
    }

    /// Generation 0: `itemCount` items, metadata "generation" 0.
    static func makeStore(_ mode: Mode, at url: URL) throws {
        let model = try model()
        let store: PersistentStore = switch mode.type {
        case .xml: try XMLStore.create(at: url, model: model)
        case .binary: try BinaryStore.create(at: url, model: model)
        default: try SQLiteStore.create(at: url, model: model)
        }
        var request = StoreSaveRequest()
        var random = SeededGenerator(seed: 7)
        for id in try store.newObjectIDs(for: "Item", count: itemCount) {
            request.inserted.append(.init(objectID: id, attributes: ["name": .string("item \(id.primaryKey!)"), "generation": .integer(0), "payload": .binary(random.bytes(200))], toOne: [:]))
        }
        var metadata = store.metadata
        metadata["generation"] = .integer(0)
        metadata["payload"] = .data(payload(0))
        request.metadata = metadata
        try store.save(request)
    }

    /// Writes the generations after the file's, through `last` (or until killed), calling
    /// `acknowledge` with each generation once its write has returned.
    static func write(_ mode: Mode, at url: URL, through last: Int64 = .max, acknowledge: (Int64) -> Void) throws {
        let model = try model()
        var generation = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)["generation"]?.integerValue ?? 0
        if mode.isMetadataOnly {
            var metadata = try PersistentStoreCoordinator.metadataForPersistentStore(at: url)
            while generation < last {
                generation += 1
                metadata["generation"] = .integer(generation)
                metadata["payload"] = .data(payload(generation))
                try PersistentStoreCoordinator.setMetadata(metadata, at: url)
                acknowledge(generation)
            }
            return
        }
        let store: AtomicStore = mode.type == .xml ? try XMLStore(url: url, model: model) : try BinaryStore(url: url, model: model)
        let items = try store.fetch(StoreFetchRequest(entityName: "Item")).map(\.objectID)
        while generation < last {
            generation += 1
            var request = StoreSaveRequest()
            request.updated = items.map { .init(objectID: $0, attributes: ["generation": .integer(generation)], toOne: [:]) }
            let id = try store.newObjectIDs(for: "Item", count: 1)[0]
            request.inserted = [.init(objectID: id, attributes: ["name": .string("gen \(generation)"), "generation": .integer(generation)], toOne: [:])]
            var metadata = store.metadata
            metadata["generation"] = .integer(generation)
            request.metadata = metadata
            try store.save(request)
            acknowledge(generation)
        }
    }

    /// The generation the file holds, after checking that it is that generation, whole.
    static func verify(_ mode: Mode, at url: URL) throws -> Int64 {
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(ofType: mode.type, at: url)
        let generation = try #require(metadata["generation"]?.integerValue)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try model())
        let store = try coordinator.addPersistentStore(type: mode.type, at: url, readOnly: true)
        #expect(store.metadata == metadata)
        let rows = try store.fetch(StoreFetchRequest(entityName: "Item"))
        if mode.isMetadataOnly {
            #expect(metadata["payload"]?.dataValue == payload(generation), "metadata of generation \(generation) is mixed")
            #expect(rows.count == itemCount && rows.allSatisfy { $0.attributes["generation"] == .integer(0) }, "the objects changed")
            if mode == .sqliteMetadata {
                #expect(try SQLiteConnection(path: url.path, mode: .readOnly).rows("PRAGMA integrity_check").first?.first == .text("ok"))
            }
        } else {
            #expect(rows.count == itemCount + Int(generation), "generation \(generation) has \(rows.count) objects")
            let names: [String] = rows.compactMap { if case .string(let name)? = $0.attributes["name"] { name } else { nil } }
            let original = rows.filter { if case .string(let name)? = $0.attributes["name"] { name.hasPrefix("item ") } else { false } }
            #expect(original.count == itemCount && original.allSatisfy { $0.attributes["generation"] == .integer(generation) }, "objects of several generations")
            #expect(Set(names.filter { $0.hasPrefix("gen ") }) == Set((0..<Int(generation)).map { "gen \($0 + 1)" }))
        }
        return generation
    }

    @Test("the writer: as the kill test's child (LADE_CRASH_WRITER) it writes until killed; here it writes three generations of each kind, each acknowledged, each file whole at the third")
    func writerProcess() throws {
        let environment = ProcessInfo.processInfo.environment
        if let raw = environment["LADE_CRASH_WRITER"], let path = environment["LADE_CRASH_PATH"] {
            let mode = try #require(Mode(rawValue: raw))
            // Until killed: "LADE-ACK <g>" on standard output after each write, read by WriterChild.
            try Self.write(mode, at: URL(fileURLWithPath: path)) { FileHandle.standardOutput.write(Data("LADE-ACK \($0)\n".utf8)) }
            return
        }
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for mode in Mode.allCases {
            let url = directory.appendingPathComponent(mode.rawValue)
            try Self.makeStore(mode, at: url)
            var acknowledged: [Int64] = []
            try Self.write(mode, at: url, through: 3) { acknowledged.append($0) }
            #expect(acknowledged == [1, 2, 3], "\(mode.rawValue)")
            #expect(try Self.verify(mode, at: url) == 3, "\(mode.rawValue)")
        }
    }

    @Test("SIGKILL at seeded moments leaves the old or the new complete version", .slow, arguments: Mode.allCases)
    func killedWriter(mode: Mode) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("store")
        try Self.makeStore(mode, at: url)
        var random = SeededGenerator(seed: 0xC0FFEE + UInt64(Mode.allCases.firstIndex(of: mode)!))
        var killedMidWrite = 0, generations: [Int64] = []
        for kill in 0..<Self.killsPerMode {
            let child = try WriterChild(mode: mode, url: url)
            let anywhere = kill % 2 == 0 || mode == .sqliteMetadata
            // Two finished writes give the cycle time; one is enough to be past start-up.
            try child.waitForAcknowledgements(atLeast: anywhere ? 2 : 1)
            if anywhere {
                // Anywhere in a write cycle: a seeded fraction of the time one write takes.
                usleep(useconds_t(child.cycleTime() * Double(random.int(0...999)) / 1000 * 1_000_000))
            } else {
                // Inside the file write: once the temporary file is there, a seeded 0-3 ms later.
                waitForTemporaryFile(in: directory)
                usleep(useconds_t(random.int(0...3_000)))
            }
            let last = try #require(child.kill())
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".store.lade-") }
            if !leftovers.isEmpty { killedMidWrite += 1 }
            for file in leftovers { try FileManager.default.removeItem(at: directory.appendingPathComponent(file)) }
            let generation = try Self.verify(mode, at: url)
            #expect(generation == last || generation == last + 1, "the file holds generation \(generation); the writer had finished \(last)")
            generations.append(generation)
        }
        if mode != .sqliteMetadata {
            #expect(killedMidWrite > 0, "no kill landed inside a write; the test would prove nothing")
        }
        print("crash safety \(mode.rawValue): \(Self.killsPerMode) kills, \(killedMidWrite) inside a write (temporary file left), generations found \(generations); every file whole")
    }
}

/// Returns once a temporary file of an atomic write appears in `directory` (or after a second).
func waitForTemporaryFile(in directory: URL) {
    let deadline = Date().addingTimeInterval(1)
    while Date() < deadline {
        if let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path), names.contains(where: { $0.contains(".lade-") }) { return }
        usleep(100)
    }
}

/// This test binary, run again as a writer.
final class WriterChild: @unchecked Sendable {
    let process = Process()
    private let output = Pipe()
    private let lock = NSLock()
    /// Writes reported finished, and the generation of the last one.
    private var acknowledgements = 0
    private var lastGeneration: Int64?
    private var times: [Date] = []
    /// The time between the last two writes.
    func cycleTime() -> Double { lock.withLock { times.count < 2 ? 0.05 : times[times.count - 1].timeIntervalSince(times[times.count - 2]) } }
    private var buffer = ""
    private var log = ""

    init(mode: AtomicStoreCrashTests.Mode, url: URL) throws {
        process.executableURL = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        process.arguments = ["--testing-library", "swift-testing", "--filter", "writerProcess"]
        var environment = ProcessInfo.processInfo.environment
        environment["LADE_CRASH_WRITER"] = mode.rawValue
        environment["LADE_CRASH_PATH"] = url.path
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            self?.consume(handle.availableData)
        }
        try process.run()
    }

    private func consume(_ data: Data) {
        lock.withLock {
            buffer += String(decoding: data, as: UTF8.self)
            while let newline = buffer.firstIndex(of: "\n") {
                let line = buffer[..<newline]
                if line.hasPrefix("LADE-ACK "), let generation = Int64(line.dropFirst(9)) {
                    acknowledgements += 1
                    times.append(Date())
                    lastGeneration = generation
                }
                else if log.count < 4000 { log += line + "\n" }
                buffer = String(buffer[buffer.index(after: newline)...])
            }
        }
    }

    /// Waits until the child has finished `count` writes.
    func waitForAcknowledgements(atLeast count: Int) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let (done, running) = (lock.withLock { acknowledgements }, process.isRunning)
            if done >= count { return }
            guard running else { break }
            usleep(500)
        }
        kill()
        throw StoreError(.io, path: "writer child", "the writer did not get through \(count) writes: \(lock.withLock { log })")
    }

    /// Kills the child with SIGKILL and returns the generation of the last write it reported finished.
    @discardableResult
    func kill() -> Int64? {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        // Everything the child wrote before dying is in the pipe; read it to the end.
        output.fileHandleForReading.readabilityHandler = nil
        consume(output.fileHandleForReading.readDataToEndOfFile())
        return lock.withLock { lastGeneration }
    }
}
