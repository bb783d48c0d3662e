/// The requested JSON key paths as a tree, flattened into plain memory, so one pass over an
/// object finds every requested key and skips the others without building their values.
///
/// For the paths `sku`, `dimensions.width` and `dimensions.height`, node 0 (the record) has the
/// members `sku` (slot 0) and `dimensions` (child node 1), and node 1 has `width` (slot 1) and
/// `height` (slot 2).
///
/// It also learns the order in which keys come: records of one source usually list their keys
/// in the same order, so the member that followed a key last time is tried first. A tree
/// belongs to one reader, used from one thread.
final class KeyTree {
    struct Member {
        var nameStart: Int
        var nameCount: Int
        /// The value slot this key fills, or -1 when only keys below it were asked for.
        var slot = -1
        /// The node of the keys below it that were asked for, or -1.
        var child = -1
        /// The slots of every path below it, in `slotsBelow`.
        var slotsBelow: Range<Int> = 0..<0
    }

    // Plain memory, not arrays: the scanner reads these for every key of every record.
    let members: UnsafeMutableBufferPointer<Member>
    /// For each node, its members' range in `members`.
    let nodes: UnsafeMutableBufferPointer<Range<Int>>
    let names: UnsafeMutableBufferPointer<UInt8>
    let slotsBelow: UnsafeMutableBufferPointer<Int>
    /// For each member, and then for the start of each node, the member that came next last time (or -1).
    private let guesses: UnsafeMutableBufferPointer<Int>

    /// A tree of `paths`; path `k` fills slot `k`. Paths must be distinct.
    init(paths: [[String]]) {
        // Build with nested dictionaries first, then flatten node by node (breadth first).
        final class Building {
            var order: [String] = []
            var children: [String: Building] = [:]
            var slots: [String: Int] = [:]
        }
        let root = Building()
        for (slot, path) in paths.enumerated() where !path.isEmpty {
            var node = root
            for (depth, key) in path.enumerated() {
                if node.children[key] == nil && node.slots[key] == nil { node.order.append(key) }
                if depth == path.count - 1 {
                    node.slots[key] = slot
                } else {
                    if node.children[key] == nil { node.children[key] = Building() }
                    node = node.children[key]!
                }
            }
        }
        func allSlots(_ node: Building) -> [Int] {
            node.order.flatMap { key in (node.slots[key].map { [$0] } ?? []) + (node.children[key].map(allSlots) ?? []) }
        }
        var members: [Member] = [], nodes: [Range<Int>] = [], names: [UInt8] = [], slotsBelow: [Int] = []
        var queue = [root]
        var head = 0
        while head < queue.count {
            let node = queue[head]
            head += 1
            let first = members.count
            for key in node.order {
                var member = Member(nameStart: names.count, nameCount: key.utf8.count)
                names.append(contentsOf: key.utf8)
                member.slot = node.slots[key] ?? -1
                if let child = node.children[key] {
                    member.child = queue.count
                    queue.append(child)
                    let below = allSlots(child)
                    member.slotsBelow = slotsBelow.count..<slotsBelow.count + below.count
                    slotsBelow.append(contentsOf: below)
                }
                members.append(member)
            }
            nodes.append(first..<members.count)
        }
        func copy<T>(_ array: [T]) -> UnsafeMutableBufferPointer<T> {
            let memory = UnsafeMutableBufferPointer<T>.allocate(capacity: max(array.count, 1))
            _ = memory.initialize(from: array)
            return UnsafeMutableBufferPointer(rebasing: memory[0..<array.count])
        }
        self.members = copy(members)
        self.nodes = copy(nodes)
        self.names = copy(names)
        self.slotsBelow = copy(slotsBelow)
        guesses = copy([Int](repeating: -1, count: members.count + nodes.count))
    }

    deinit {
        members.baseAddress?.deallocate()
        nodes.baseAddress?.deallocate()
        names.baseAddress?.deallocate()
        slotsBelow.baseAddress?.deallocate()
        guesses.baseAddress?.deallocate()
    }

    /// The guess slot for the start of `node`, to pass as `after` for an object's first key.
    @inline(__always)
    func start(of node: Int) -> Int { members.count + node }

    /// The member of `node` named by `key`, or -1; `after` is the previous member matched in
    /// this object (or ``start(of:)``), whose successor last time is tried first.
    @inline(__always)
    func member(of node: Int, named key: UnsafeBufferPointer<UInt8>, after: Int) -> Int {
        let range = nodes[node]
        let guess = guesses[after]
        if guess >= 0 && matches(guess, key) { return guess }
        var m = range.lowerBound
        while m < range.upperBound {
            if matches(m, key) {
                guesses[after] = m
                return m
            }
            m += 1
        }
        return -1
    }

    @inline(__always)
    private func matches(_ m: Int, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        let member = members[m]
        guard member.nameCount == key.count else { return false }
        var k = 0
        while k < key.count {
            if names[member.nameStart + k] != key[k] { return false }
            k += 1
        }
        return true
    }
}
