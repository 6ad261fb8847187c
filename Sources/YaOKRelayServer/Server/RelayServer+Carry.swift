import YaOKSupport
import YaOKWire

/// CARRY frames (docs/PROTOCOL.md §12.9): handed to the carry thread in order, answered
/// on the loop as they come back (loop thread). A connection with
/// `maxPendingCarryPerConnection` of them unanswered is not read (`readPaused`): a client
/// that sends faster than the carry thread answers is slowed by TCP, and what waits is at
/// most that many frames and one read's worth (16 KiB).
extension RelayServer {
    func carryReceived(_ message: CarryLinkMessage, _ c: RelayConnection) {
        // A relay without carry storage is an `off` node: the meeting is ignored.
        guard let carry else { return }
        c.active = true
        if !c.carryOpened {
            c.carryOpened = true
            carry.open(c.id, address: c.address)
        }
        c.pendingCarry += 1
        peakPendingCarry = max(peakPendingCarry, c.pendingCarry)
        let id = c.id
        carry.receive(message, from: id) { [weak self] replies, added in
            guard let self else { return }
            if added != (0, 0, 0) {
                self.counters.withLock {
                    $0.carryTaken += Int64(added.taken)
                    $0.carryHanded += Int64(added.handed)
                    $0.carryPurged += Int64(added.purged)
                }
            }
            self.loop.post {
                guard let c = self.connections[id] else { return }
                let wasPaused = self.readPaused(c)
                c.pendingCarry -= 1
                guard !c.isClosing else { return }
                for reply in replies { c.output.append(.carryFromRelay(reply)) }
                self.flush(c)
                guard self.connections[id] != nil else { return }
                self.updateInterest(c)
                // Read again what the pause left unread (TLS may hold decrypted bytes epoll cannot see).
                if wasPaused && !self.readPaused(c) { self.loop.post { [weak self] in self?.ready(id, []) } }
            }
        }
    }
}
