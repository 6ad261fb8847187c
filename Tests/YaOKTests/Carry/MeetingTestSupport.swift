import Foundation
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Nodes that meet over `MemoryPipe` links, with one virtual clock: Alice and Carol are
/// contacts, the others strangers to both (docs/PROTOCOL.md §12).
final class Meeting {
    let clock = TestClock()
    var dirs: [String: TempDir] = [:]
    var nodes: [String: Node] = [:]
    /// No timer is armed: the tests run the engine's timer work (`runDeliveryTimers`).
    let callerRunsTimers: Bool

    init(_ names: [String], callerRunsTimers: Bool = false) throws {
        self.callerRunsTimers = callerRunsTimers
        for name in names {
            let dir = TempDir()
            dirs[name] = dir
            let node = try Node(dataDirectory: dir.path, options: options)
            _ = try node.setup(name: name, pin: testPIN, confirmation: testPIN)
            nodes[name] = node
        }
    }

    var options: Node.Options {
        var options = fastOptions(clock: clock)
        options.callerRunsTimers = callerRunsTimers
        return options
    }

    subscript(_ name: String) -> Node { nodes[name]! }

    /// Makes `a` and `b` contacts of each other; returns (b's id at a, a's id at b).
    @discardableResult
    func befriend(_ a: String, _ b: String) throws -> (Int64, Int64) {
        (try self[a].addContact(card: self[b].profile().text).id, try self[b].addContact(card: self[a].profile().text).id)
    }

    /// Links `a` (initiator) and `b`, waits for both to authenticate, then until `until`
    /// holds (the meeting has done what the test waits for); returns the pipe, open.
    func link(_ a: String, _ b: String, until: () -> Bool) throws -> MemoryPipe {
        let pipe = try MemoryPipe(self[a], self[b])
        _ = eventually { pipe.initiator.isAuthenticated && pipe.responder.isAuthenticated }
        _ = eventually(until)
        return pipe
    }

    /// Links, waits for `until` (by default: both sides' meetings are over), lets the
    /// meeting settle, and closes the link.
    func meet(_ a: String, _ b: String, until: (() -> Bool)? = nil) throws {
        let until = until ?? { [self] in self[a].carryIdle && self[b].carryIdle }
        let pipe = try link(a, b, until: until)
        settle(a, b)
        pipe.close()
        settle(a, b)
    }

    /// Waits until both event threads have processed what was queued (a round of posts).
    func settle(_ names: String...) {
        for _ in 0..<3 {
            for name in names {
                let done = Locked(false)
                self[name].loop.post { done.withLock { $0 = true } }
                _ = eventually { done.withLock { $0 } }
            }
        }
    }

    /// Closes `name` and opens it again from its directory, unlocked (a restart after a kill),
    /// with its options changed by `configure`.
    func reopen(_ name: String, _ configure: (inout Node.Options) -> Void = { _ in }) throws {
        self[name].close()
        var options = options
        configure(&options)
        let node = try Node(dataDirectory: dirs[name]!.path, options: options)
        try node.unlock(pin: testPIN)
        nodes[name] = node
    }

    func finish() {
        nodes.values.forEach { $0.close() }
        dirs.values.forEach { $0.remove() }
    }
}

extension Node {
    /// The copy budgets of the carried packets held, lowest first.
    var carriedBudgets: [UInt8] {
        state.withLock { s in
            ((try? s.store?.carriedEntries(nowMs: s.delivery.now, limit: 10_000)) ?? []).map(\.copyBudget).sorted()
        }
    }

    var carriedCount: Int { carriedBudgets.count }

    /// Carrying is off, or a meeting is open and over: reconciled, nothing asked for,
    /// queued or awaiting an answer.
    var carryIdle: Bool {
        state.withLock { s in
            let c = s.delivery.carry
            if c.mode == .off { return true }
            return !c.sessions.isEmpty && c.sessions.values.allSatisfy {
                ($0.reconciler?.isFinished ?? true) && $0.queue.isEmpty && $0.awaiting.isEmpty && $0.asked.isEmpty
            }
        }
    }

    func incoming(_ conversation: Int64) -> [String] {
        ((try? history(conversation, limit: 1000).messages) ?? []).filter { $0.direction == .incoming }.map(\.text)
    }

    /// Sends a carry payload on every open link (a hostile or scripted peer).
    func sendCarry(_ message: CarryLinkMessage) throws {
        try withEngine { engine, _, _ in
            for id in engine.links.keys.sorted() where engine.links[id]?.isOpen == true {
                try engine.sendOnLink(.carry(message), on: id)
            }
        }
    }
}

extension Node {
    /// The own carried copies' records (`carried_own`): one per copy made and not yet settled.
    func ownCopyRecordCount() throws -> Int {
        try withDatabase { db in try db.rows("SELECT count(*) FROM carried_own") { $0.int(0) }.first ?? 0 }
    }
}
