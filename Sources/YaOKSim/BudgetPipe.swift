import Synchronization
import YaOKNode

/// Two real nodes joined in memory for one encounter, like `MemoryPipe`, but each direction
/// carries at most `capacity` bytes (the encounter's bandwidth × duration): the unit that
/// would pass it is lost and the link ends, as a radio link ends when two people walk apart.
/// Counts units so the simulation can tell when the nodes have gone quiet.
final class BudgetPipe: Sendable {
    private struct State {
        var used = [0, 0]
        var units = 0
        var exhausted = false
    }
    private let state = Mutex(State())
    private let ends = (toB: PipeEnd(), toA: PipeEnd())
    private let links = Mutex<[Link]>([])

    init(_ a: Node, _ b: Node, capacity: Int, mtu: Int) throws {
        let toB = ends.toB, toA = ends.toA
        let initiator = try a.openLink(transport: "sim", role: .initiator, mtu: mtu, send: { [weak self] unit in
            if self?.admit(unit.count, direction: 0, capacity: capacity) == true { toB.deliver(unit) }
        }, closed: { reason in toB.close(reason) })
        let responder = try b.openLink(transport: "sim", role: .responder, mtu: mtu, send: { [weak self] unit in
            if self?.admit(unit.count, direction: 1, capacity: capacity) == true { toA.deliver(unit) }
        }, closed: { reason in toA.close(reason) })
        links.withLock { $0 = [initiator, responder] }
        toB.connect(responder)
        toA.connect(initiator)
    }

    /// Units passed so far, both ways: unchanged across a check means the nodes went quiet.
    var units: Int { state.withLock { $0.units } }
    var exhausted: Bool { state.withLock { $0.exhausted } }
    /// Bytes passed each way.
    var bytes: Int { state.withLock { $0.used[0] + $0.used[1] } }

    private func admit(_ count: Int, direction: Int, capacity: Int) -> Bool {
        let ok = state.withLock { s -> Bool in
            guard !s.exhausted else { return false }
            guard s.used[direction] + count <= capacity else {
                s.exhausted = true
                return false
            }
            s.used[direction] += count
            s.units += 1
            return true
        }
        if !ok { for link in links.withLock({ $0 }) { link.close(reason: "The encounter ended") } }
        return ok
    }

    func close() {
        for link in links.withLock({ $0 }) { link.close(reason: "The encounter ended") }
    }
}

/// One direction of a pipe: units sent before the far link exists wait for it.
private final class PipeEnd: Sendable {
    private let state = Mutex<(link: Link?, waiting: [[UInt8]])>((nil, []))

    func deliver(_ unit: [UInt8]) {
        let link = state.withLock { s -> Link? in
            if s.link == nil { s.waiting.append(unit) }
            return s.link
        }
        link?.receive(unit)
    }

    func close(_ reason: String) {
        let link = state.withLock { $0.link }
        link?.close(reason: "The other side closed the link: \(reason)")
    }

    func connect(_ link: Link) {
        let waiting = state.withLock { s -> [[UInt8]] in
            s.link = link
            defer { s.waiting = [] }
            return s.waiting
        }
        for unit in waiting { link.receive(unit) }
    }
}
