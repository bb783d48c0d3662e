import Foundation

/// A step's source read on a thread of its own ("lade reader"), so the writer's thread only
/// writes: records are parsed and mapped there, each as it is read (no batch of records is
/// kept or freed besides the mapped one), and one mapped batch waits in a bounded queue until
/// the writer takes it (the reader is faster than the writer, so a batch more in the queue
/// would only hold memory). Batches the writer has written come back (`handBack`) and are
/// freed on the reader's thread, between its own batches.
final class ReaderThread {
    /// The source's physical size when known (for progress).
    let totalBytes: Int64?
    private let queue = BoundedQueue<Result<MappedBatch, Error>>(capacity: 1)
    private let written = Handback<MappedBatch>()

    /// Starts reading: from now on only the reader's thread uses `reader` and `mapper`.
    init(reader: RecordReader, mapper: RowMapper, batchSize: Int) {
        totalBytes = reader.totalBytes
        let queue = self.queue, written = self.written
        let handOver = ReaderHandOver(reader: reader, mapper: mapper)
        let thread = Thread {
            do {
                while let mapped = try handOver.mapper.nextBatch(from: handOver.reader, maxRecords: batchSize) {
                    guard queue.put(.success(mapped), untilTaken: true) else { break }
                    written.drain()
                }
            } catch {
                queue.put(.failure(error))
            }
            queue.finish()
        }
        thread.name = "lade reader"
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// The next batch (or the damage the reader could not skip past), waiting for it; nil at
    /// the end of the source.
    func next() -> Result<MappedBatch, Error>? {
        queue.take()
    }

    /// The next batch if the reader has it ready, without waiting or taking it (`next` still
    /// returns it): for the writer to prepare while the store finishes the batch before.
    func peek() -> MappedBatch? {
        guard case .success(let batch)? = queue.peek() else { return nil }
        return batch
    }

    /// A batch the writer is done with, to be freed on the reader's thread.
    func handBack(_ batch: MappedBatch) {
        written.add(batch)
    }

    /// Stops reading: the reader's thread ends at its next batch.
    func stop() {
        queue.cancel()
    }
}

/// The reader and mapper, handed to the reader's thread: from then on only that thread uses them.
private final class ReaderHandOver: @unchecked Sendable {
    let reader: RecordReader
    let mapper: RowMapper

    init(reader: RecordReader, mapper: RowMapper) {
        self.reader = reader
        self.mapper = mapper
    }
}
