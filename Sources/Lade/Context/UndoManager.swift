import Foundation

/// Records changes so they can be undone and redone, in groups (Core Data's `undoManager`, an
/// `NSUndoManager`). Named so that it never collides with Foundation's `ContextUndoManager` (absent
/// from Linux's Foundation, present on Apple's); it keeps that class's vocabulary.
///
/// ```swift
/// context.undoManager = ContextUndoManager()
/// try product.setValue("New name", forKey: "name")
/// context.undoManager?.undo()     // the name is back
/// ```
///
/// A context wraps each change it is asked for (an insert, a delete, a set, with the inverse
/// changes a relationship set makes) in a group of its own unless a group is already open;
/// `beginUndoGrouping()`/`endUndoGrouping()` make one group of several. Undoing every change of
/// an object leaves it unchanged: out of `updatedObjects`, held weakly, not written by a save.
public final class ContextUndoManager {
    typealias Action = () -> Void

    private var undoStack: [[Action]] = []
    private var redoStack: [[Action]] = []
    private var openGroups: [[Action]] = []
    private var isUndoing = false
    private var isRedoing = false

    /// How many groups are kept; 0 keeps all.
    public var levelsOfUndo = 0

    public init() {}

    public var canUndo: Bool { !undoStack.isEmpty || openGroups.first.map { !$0.isEmpty } ?? false }
    public var canRedo: Bool { !redoStack.isEmpty }
    public var groupingLevel: Int { openGroups.count }

    public func beginUndoGrouping() {
        openGroups.append([])
    }

    public func endUndoGrouping() {
        guard let group = openGroups.popLast() else { return }
        if openGroups.isEmpty {
            push(group)
        } else {
            openGroups[openGroups.count - 1] += group
        }
    }

    /// Records the action that undoes a change just made.
    func register(_ action: @escaping Action) {
        if openGroups.isEmpty {
            push([action])
        } else {
            openGroups[openGroups.count - 1].append(action)
        }
    }

    private func push(_ group: [Action]) {
        guard !group.isEmpty else { return }
        if isUndoing {
            redoStack.append(group)
        } else {
            undoStack.append(group)
            if !isRedoing { redoStack.removeAll() }
            if levelsOfUndo > 0 && undoStack.count > levelsOfUndo { undoStack.removeFirst(undoStack.count - levelsOfUndo) }
        }
    }

    /// Undoes the last group (closing an open one first).
    public func undo() {
        while !openGroups.isEmpty { endUndoGrouping() }
        guard let group = undoStack.popLast() else { return }
        isUndoing = true
        openGroups.append([])
        for action in group.reversed() { action() }
        endUndoGrouping()
        isUndoing = false
    }

    /// Redoes the last undone group.
    public func redo() {
        guard let group = redoStack.popLast() else { return }
        isRedoing = true
        openGroups.append([])
        for action in group.reversed() { action() }
        endUndoGrouping()
        isRedoing = false
    }

    public func removeAllActions() {
        undoStack.removeAll()
        redoStack.removeAll()
        openGroups.removeAll()
    }
}
