import Foundation

/// A first-in first-out queue of at most `capacity` items between one producer thread and one
/// consumer: the producer waits while it is full, so a fast reader cannot run ahead of the
/// writer and fill memory.
final class BoundedQueue<Element>: @unchecked Sendable {
    // All state is guarded by `condition`.
    private let condition = NSCondition()
    private var items: [Element] = []
    private let capacity: Int
    private var finished = false
    private var cancelled = false
    /// Items put and taken so far.
    private var putCount = 0
    private var takenCount = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Adds an item, waiting for room; false when the consumer has cancelled. With
    /// `untilTaken`, returns only once the consumer has taken it: a producer faster than the
    /// consumer then holds one finished item, not one queued and one more under way (at
    /// capacity 1 the import's reader keeps one batch less alive, with no wait for the writer
    /// as long as the reader is the faster).
    @discardableResult
    func put(_ item: Element, untilTaken: Bool = false) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !cancelled { condition.wait() }
        guard !cancelled else { return false }
        items.append(item)
        putCount += 1
        condition.broadcast()
        if untilTaken {
            let number = putCount
            while takenCount < number && !cancelled { condition.wait() }
            return takenCount >= number
        }
        return true
    }

    /// No more items will come.
    func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// The consumer stops taking items: a waiting producer is released and later puts fail.
    func cancel() {
        condition.lock()
        cancelled = true
        items.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    /// The next item if one is there now, left in the queue (`take` returns it later); nil
    /// at once otherwise.
    func peek() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        return items.first
    }

    /// The next item, waiting for one; nil once the producer finished and the queue is empty.
    func take() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !finished && !cancelled { condition.wait() }
        guard !items.isEmpty else { return nil }
        let item = items.removeFirst()
        takenCount += 1
        condition.broadcast()
        return item
    }
}

/// Values one thread is done with, released on another: the import's writer hands back each
/// batch it has written, and the reader's thread frees them between its own batches, so the
/// writer (the import's bottleneck) spends no time freeing a batch's rows, which were
/// allocated on the reader's thread anyway.
final class Handback<Element>: @unchecked Sendable {
    // `items` is guarded by `lock`.
    private let lock = NSLock()
    private var items: [Element] = []

    func add(_ item: Element) {
        lock.withLock { items.append(item) }
    }

    /// Releases everything handed back so far, on the calling thread.
    func drain() {
        let taken = lock.withLock { () -> [Element] in
            defer { items.removeAll(keepingCapacity: true) }
            return items
        }
        withExtendedLifetime(taken) {}
    }
}
