/// The requested JSON key paths as a tree, flattened into plain arrays, so one pass over an
/// object finds every requested key and skips the others without building their values.
///
/// For the paths `sku`, `dimensions.width` and `dimensions.height`, node 0 (the record) has the
/// members `sku` (slot 0) and `dimensions` (child node 1), and node 1 has `width` (slot 1) and
/// `height` (slot 2).
struct KeyTree {
    struct Member {
        var nameStart: Int
        var nameCount: Int
        /// The value slot this key fills, or -1 when only keys below it were asked for.
        var slot = -1
        /// The node of the keys below it that were asked for, or -1.
        var child = -1
        /// The slots of every path below it, in `KeyTree.slotsBelow`.
        var slotsBelow: Range<Int> = 0..<0
    }

    private(set) var members: [Member] = []
    /// For each node, its members' range in `members`.
    private(set) var nodes: [Range<Int>] = []
    private(set) var names: [UInt8] = []
    private(set) var slotsBelow: [Int] = []

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
    }

    /// The member of `node` named by `key`, or -1. `guess` is tried first: records of one
    /// source usually list their keys in the same order, so the member that followed last time
    /// is usually the one.
    @inline(__always)
    func member(of node: Int, named key: UnsafeBufferPointer<UInt8>, guess: Int) -> Int {
        let range = nodes[node]
        if range.contains(guess) && matches(guess, key) { return guess }
        var m = range.lowerBound
        while m < range.upperBound {
            if matches(m, key) { return m }
            m += 1
        }
        return -1
    }

    @inline(__always)
    private func matches(_ m: Int, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        let member = members[m]
        guard member.nameCount == key.count else { return false }
        return names.withUnsafeBufferPointer { names in
            var k = 0
            while k < key.count {
                if names[member.nameStart + k] != key[k] { return false }
                k += 1
            }
            return true
        }
    }

    /// The number of guess slots a scanner keeps: one after each member, one at the start of each node.
    var guessCount: Int { members.count + nodes.count }

    /// The guess slot for the start of `node`.
    func startGuessSlot(of node: Int) -> Int { members.count + node }
}

