import YaOKSupport
import YaOKWire

/// CARRY frames (docs/PROTOCOL.md §12.9): handed to the carry thread in order, answered
/// on the loop as they come back (loop thread).
extension RelayServer {
    func carryReceived(_ message: CarryLinkMessage, _ c: RelayConnection) {
        // A relay without carry storage is an `off` node: the meeting is ignored.
        guard let carry else { return }
        c.active = true
        guard c.pendingCarry < configuration.maxPendingCarryPerConnection else {
            counters.withLock { $0.rejected += 1 }
            return endSession(c, RelayErrorFrame(request: 0, code: .unavailable,
                                                 message: "CARRY frames arrive faster than the relay handles them"))
        }
        if !c.carryOpened {
            c.carryOpened = true
            carry.open(c.id, address: c.address)
        }
        c.pendingCarry += 1
        let id = c.id
        carry.receive(message, from: id) { [weak self] replies in
            guard let self else { return }
            self.loop.post {
                guard let c = self.connections[id] else { return }
                c.pendingCarry -= 1
                guard !c.isClosing else { return }
                for reply in replies { c.output.append(.carryFromRelay(reply)) }
                self.flush(c)
                if self.connections[id] != nil { self.updateInterest(c) }
            }
        }
    }
}
