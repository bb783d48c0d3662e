/// The window of a byte stream a reader parses in place: it reads in large chunks, keeps the
/// bytes from a given index on (the current batch, for its raw text), and grows only when one
/// batch or record needs more room, so memory follows the batch, never the input.
final class InputBuffer {
    /// The bytes read and not yet released: `bytes[0..<count]`.
    private(set) var bytes: UnsafeMutablePointer<UInt8>
    private(set) var capacity: Int
    private(set) var count = 0
    /// The stream offset of `bytes[0]`.
    private(set) var offset: Int64 = 0
    /// True once the stream has no more bytes.
    private(set) var isAtEnd = false
    let stream: any ByteStream
    let chunkSize: Int
    /// A read error that came after some bytes of the same fill; thrown by the next fill.
    private var deferredError: (any Error)?

    init(stream: any ByteStream, chunkSize: Int = 256 * 1024) {
        self.stream = stream
        self.chunkSize = chunkSize
        capacity = 2 * chunkSize
        bytes = .allocate(capacity: capacity)
    }

    deinit { bytes.deallocate() }

    var window: Window {
        Window(bytes: UnsafePointer(bytes), count: count, isFinal: isAtEnd, offset: offset)
    }

    /// Reads at least `wanted` more bytes (or up to the end), first dropping the bytes before
    /// `keep`; returns how far the kept bytes moved down (subtract it from indexes into the buffer).
    func fill(keepingFrom keep: Int, wanted: Int) throws -> Int {
        precondition(keep <= count)
        let want = max(wanted, chunkSize)
        let kept = count - keep
        var shift = 0
        if capacity - count < want {
            if kept + want <= capacity {
                (bytes).update(from: bytes + keep, count: kept)
            } else {
                // Grow geometrically so a batch larger than the buffer is copied only a few times.
                let newCapacity = max(capacity * 2, kept + want)
                let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
                larger.update(from: bytes + keep, count: kept)
                bytes.deallocate()
                bytes = larger
                capacity = newCapacity
            }
            shift = keep
            count = kept
            offset += Int64(keep)
        }
        if let deferred = deferredError { throw deferred }
        var got = 0
        while got < want && count < capacity {
            let read: Int
            do {
                read = try stream.read(into: UnsafeMutableRawBufferPointer(start: bytes + count, count: capacity - count))
            } catch where got > 0 {
                // The bytes that did arrive come first (the records of a truncated gzip file up to the cut).
                deferredError = error
                break
            }
            if read == 0 { isAtEnd = true; break }
            count += read
            got += read
        }
        return shift
    }

    /// Drops everything and continues at stream offset `target`: seeks when the stream can,
    /// otherwise reads forward (decompressing, for gzip) and discards. Returns false when the
    /// stream ends before `target`.
    func skip(to target: Int64) throws -> Bool {
        if target >= offset && target <= offset + Int64(count) {
            let drop = Int(target - offset)
            bytes.update(from: bytes + drop, count: count - drop)
            count -= drop
            offset = target
            return true
        }
        if target > offset, try stream.seek(to: target) {
            count = 0
            offset = target
            isAtEnd = false
            return true
        }
        precondition(target > offset, "a reader only skips forward")
        while offset + Int64(count) < target {
            if isAtEnd { return false }
            _ = try fill(keepingFrom: count, wanted: chunkSize)
        }
        return try skip(to: target)
    }

    /// Shrinks the buffer back after one very large record or batch grew it.
    func shrink(keepingFrom keep: Int) -> Int {
        let kept = count - keep
        guard capacity > 16 * chunkSize, kept <= chunkSize else { return 0 }
        let smaller = UnsafeMutablePointer<UInt8>.allocate(capacity: 2 * chunkSize)
        smaller.update(from: bytes + keep, count: kept)
        bytes.deallocate()
        bytes = smaller
        capacity = 2 * chunkSize
        count = kept
        offset += Int64(keep)
        return keep
    }
}

/// The bytes a parser sees: `bytes[0..<count]`, starting at stream offset `offset`;
/// `isFinal` when the stream ends at `count`.
struct Window {
    let bytes: UnsafePointer<UInt8>
    let count: Int
    let isFinal: Bool
    let offset: Int64
}

/// Where a parser stands: the next byte to read, the line it is on, and the records so far.
struct Cursor {
    var index: Int
    var line: Int
    /// The stream offset where `line` starts, for columns.
    var lineStart: Int64
    var recordIndex: Int64
    /// Where a JSON array source stands between its elements.
    var arrayState: JSONArrayState = .beforeArray
}

/// A record found by a parser: its text `start..<end` in the window and the line it starts on
/// (plain data, so that handing it over costs nothing; a problem travels beside it).
struct ParsedRecord {
    var start: Int
    var end: Int
    var line: Int
    var lineStart: Int64
}

/// Why a parser stopped short of a record.
enum ParseStop: Error {
    /// The window ends inside the record: read more and parse it again from its start.
    case needMore
    /// Damage the reader cannot skip past.
    case fatal(ReaderError)
}

/// A source format's record parser. It reads one record at the cursor, writing the requested
/// values into `values` (or what is wrong with it into `problem`), and moves the cursor past
/// it; nil at the end of the source.
protocol RecordParser: AnyObject {
    func next(in window: Window, at cursor: inout Cursor, into values: inout [SourceValue],
              problem: inout RecordProblem?) throws(ParseStop) -> ParsedRecord?
    /// Whether a lone carriage return ends a line (CSV) or is only whitespace (JSON).
    var countsLoneCarriageReturn: Bool { get }
}
