import Dispatch
import YaOKSupport
import YaOKLoop
import YaOKNode

/// Two real nodes joined in memory for one encounter, through the link API as an app's radio
/// would join them (like `MemoryPipe`), with two differences a simulation needs:
///
/// - Lock-step: what a node sends waits in a queue until the simulation moves it (`run`), in
///   rounds: both nodes finish what they were given, then everything each sent is handed to
///   the other, in order. Each node then sees the same inputs in the same order on every run,
///   whatever its threads did, so even an exchange the budget cuts short ends the same way.
/// - A budget: each direction carries at most `capacity` bytes (the encounter's bandwidth ×
///   what is left of it). The unit that would pass it is lost and the link ends, as a radio
///   link ends when two people walk apart.
final class LockstepPipe {
    /// What the nodes' send callbacks (on their event threads) write and `run` reads.
    private final class Queues: Sendable {
        let units = Locked<[[[UInt8]]]>([[], []])   // 0: a → b, 1: b → a
        func append(_ unit: [UInt8], _ direction: Int) { units.withLock { $0[direction].append(unit) } }
        func take() -> [[[UInt8]]] { units.withLock { q in defer { q = [[], []] }; return q } }
        var count: Int { units.withLock { $0[0].count + $0[1].count } }
    }

    private let queues = Queues()
    private let nodes: (Node, Node)
    private let links: (Link, Link)
    private let capacity: Int
    private var used = [0, 0]
    /// Whether each direction ran out of budget.
    private var cut = [false, false]
    /// The budget ran out (either way): the link ends after the round.
    var exhausted: Bool { cut[0] || cut[1] }
    private(set) var closed = false

    init(_ a: Node, _ b: Node, capacity: Int, mtu: Int) throws {
        nodes = (a, b)
        self.capacity = capacity
        let queues = self.queues
        let initiator = try a.openLink(transport: "sim", role: .initiator, mtu: mtu, send: { queues.append($0, 0) })
        do {
            let responder = try b.openLink(transport: "sim", role: .responder, mtu: mtu, send: { queues.append($0, 1) })
            links = (initiator, responder)
        } catch {
            initiator.close(reason: "The encounter ended")
            throw error
        }
    }

    /// Bytes that crossed, both ways.
    var bytes: Int { used[0] + used[1] }
    /// Bytes that crossed from a to b, and from b to a.
    var bytesEachWay: (Int, Int) { (used[0], used[1]) }

    /// Moves units in rounds until `finished()` says so, the budget is spent, or two rounds
    /// pass with nothing to move. `progress` counts what the nodes did besides sending
    /// (events): a round where it changed is not idle.
    func run(until finished: () -> Bool, progress: () -> Int) {
        var idle = 0
        while idle < 2 && !exhausted {
            settle(progress)
            let moving = queues.take()
            if moving[0].isEmpty && moving[1].isEmpty {
                if finished() { return }
                idle += 1
                continue
            }
            idle = 0
            // Both nodes held at a gate while their units are queued: each then drains the
            // round in one batch, never a batch cut wherever its thread happened to wake.
            let n = LockstepPipe.maxUnitsPerRound
            for start in stride(from: 0, to: max(moving[0].count, moving[1].count), by: n) {
                let gates = (Gate(nodes.0), Gate(nodes.1))
                deliver(moving[0].dropFirst(start).prefix(n), direction: 0, to: links.1)
                deliver(moving[1].dropFirst(start).prefix(n), direction: 1, to: links.0)
                gates.0.open()
                gates.1.open()
            }
        }
    }

    /// Lets both nodes process what already crossed, then ends the link on both sides and
    /// lets what that set off finish. In that order: `Link.close` ends the link at once, and
    /// units still waiting in the node's input queue would be dropped with it (a run then
    /// differed from the next in whether the last message of a cut-short meeting arrived).
    func close(progress: () -> Int) {
        guard !closed else { return }
        closed = true
        settle(progress)
        links.0.close(reason: "The encounter ended")
        links.1.close(reason: "The encounter ended")
        _ = queues.take()
        settle(progress)
    }

    /// Hands `units` over until the direction's budget would be passed; the link then ends
    /// after this round (`exhausted`), the other direction's units of the round still
    /// crossing, as both directions of a radio link carry at once.
    private func deliver(_ units: ArraySlice<[UInt8]>, direction: Int, to link: Link) {
        for unit in units where !cut[direction] {
            guard used[direction] + unit.count <= capacity else {
                cut[direction] = true
                return
            }
            used[direction] += unit.count
            link.receive(unit)
        }
    }


    /// Waits until both nodes have run everything queued on their event threads, and what
    /// that queued in turn: until a pass over both changes neither the units waiting nor
    /// `progress`.
    private func settle(_ progress: () -> Int) {
        while true {
            let before = (queues.count, progress())
            barrier()
            if (queues.count, progress()) == before { return }
        }
    }

    /// Waits until both event threads have run what was queued on them so far (a marker
    /// posted to each; the two run in parallel).
    private func barrier() {
        let done = DispatchSemaphore(value: 0)
        var posted = 0
        for node in [nodes.0, nodes.1] where node.eventLoop.post({ done.signal() }) { posted += 1 }
        for _ in 0..<posted { done.wait() }
    }

    /// Units handed over per gate: far below a node's queue for one link (16,384 units,
    /// 1 MiB), so a round never trips the node's flood guard.
    static let maxUnitsPerRound = 1024

    /// Holds a node's event thread until `open`: created on the simulation thread, it
    /// returns once the thread is held.
    private final class Gate: Sendable {
        private let held = DispatchSemaphore(value: 0)
        private let release = DispatchSemaphore(value: 0)
        private let posted: Bool
        init(_ node: Node) {
            let (held, release) = (held, release)
            posted = node.eventLoop.post {
                held.signal()
                release.wait()
            }
            if posted { held.wait() }
        }
        func open() { if posted { release.signal() } }
    }
}
