import Glibc
import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto

/// L2CAP channels: accepting, connecting, reading SDUs, writing SDUs, closing. Every method
/// named `…Locked` runs under the transport's lock; links are called only outside it.
extension BLETransport {
    // MARK: - Accepting

    func acceptReady() {
        let accepted = state.withLock { s -> [UInt64] in
            guard s.running, s.listener >= 0 else { return [] }
            var accepted: [UInt64] = []
            for _ in 0..<8 {
                switch L2CAPSocket.accept(s.listener) {
                case .none, .failed:
                    return accepted
                case .accepted(let fd, let remote):
                    guard s.connections.count < options.maxConnections else {
                        _ = Glibc.close(fd)
                        s.refused += 1
                        continue
                    }
                    if let id = addConnectionLocked(&s, fd: fd, remote: remote, direction: .inbound, phase: .open) {
                        accepted.append(id)
                    }
                }
            }
            return accepted
        }
        openLinks(accepted, initiator: false)
    }

    // MARK: - Connecting

    /// Starts a non-blocking connect to a discovered peer's PSM. The kernel scans for the
    /// peer's connectable advertising, connects (we are the central) and opens the channel;
    /// writability says it is done, SO_ERROR whether it worked.
    func connectLocked(_ s: inout BLEState, to remote: BLEAddress) {
        guard s.connections.count < options.maxConnections, let adapter = s.adapter else { return }
        let fd: Int32
        do {
            fd = try L2CAPSocket.open(adapter: adapter.address, psm: 0, receiveMTU: options.receiveMTU, sendBuffer: options.sendBuffer)
        } catch {
            recordCloseLocked(&s, address: remote.text, direction: .outbound, reason: "\(error)")
            return
        }
        let code = L2CAPSocket.startConnect(fd, to: remote, psm: connectPSMLocked(s, remote))
        guard code == 0 else {
            _ = Glibc.close(fd)
            recordCloseLocked(&s, address: remote.text, direction: .outbound, reason: "connect failed: \(String(cString: strerror(code)))")
            return
        }
        if addConnectionLocked(&s, fd: fd, remote: remote, direction: .outbound, phase: .connecting) != nil {
            pauseDiscoveryLocked(&s)
        }
    }

    private func addConnectionLocked(_ s: inout BLEState, fd: Int32, remote: BLEAddress,
                                     direction: BLEConnection.Direction, phase: BLEConnection.Phase) -> UInt64? {
        guard let loop = s.loop else {
            _ = Glibc.close(fd)
            return nil
        }
        let id = s.nextID
        s.nextID += 1
        let c = BLEConnection(id: id, fd: fd, remote: remote, direction: direction, phase: phase,
                              now: EventLoop.monotonicNanoseconds(), nowMs: Clock.milliseconds())
        if phase == .open { readMTUs(c) }
        do {
            c.watchingWrites = phase == .connecting
            try loop.register(fd: fd, for: phase == .connecting ? [.readable, .writable] : .readable, handler: handler(id))
        } catch {
            _ = Glibc.close(fd)
            return nil
        }
        s.connections[id] = c
        return id
    }

    private func readMTUs(_ c: BLEConnection) {
        c.sendMTU = L2CAPSocket.mtu(c.fd, send: true) ?? 0
        c.receiveMTU = L2CAPSocket.mtu(c.fd, send: false) ?? options.receiveMTU
    }

    private func handler(_ id: UInt64) -> EventLoop.IOHandler {
        { [weak self] events in self?.connectionReady(id, events) }
    }

    /// Opens a link over each channel, with the MTU the peer granted (outside the lock).
    func openLinks(_ ids: [UInt64], initiator: Bool) {
        guard !ids.isEmpty, let opener = state.withLock({ $0.opener }) else { return }
        for id in ids {
            guard let mtu = state.withLock({ $0.connections[id]?.sendMTU }) else { continue }
            guard mtu >= Fragmenter.minimumMTU else {
                let link = state.withLock { s in closeLocked(&s, id, "the peer's MTU (\(mtu)) is below \(Fragmenter.minimumMTU)") }
                link?.close(reason: "MTU too small")
                continue
            }
            do {
                let link = try opener.openLink(
                    transport: name, initiator: initiator, mtu: mtu,
                    send: { [weak self] unit in self?.linkSend(id, unit) },
                    closed: { [weak self] reason in self?.linkClosedByNode(id, reason) })
                let kept = state.withLock { s -> Bool in
                    guard let c = s.connections[id] else { return false }
                    c.link = link
                    return true
                }
                if !kept { link.close(reason: "channel closed") }
            } catch {
                state.withLock { s in _ = closeLocked(&s, id, "cannot open a link: \(error)") }
            }
        }
    }

    // MARK: - Readiness

    func connectionReady(_ id: UInt64, _ events: EventLoop.IOEvents) {
        var units: [[UInt8]] = []
        var connected = false
        let (link, closing) = state.withLock { s -> ((any TransportLink)?, String?) in
            guard let c = s.connections[id] else { return (nil, nil) }
            if c.phase == .connecting {
                let code = Socket.pendingError(c.fd)
                guard code == 0 else {
                    return (closeLocked(&s, id, "connect failed: \(Socket.reason(code))"), nil)
                }
                guard events.contains(.writable) else { return (nil, nil) }
                c.phase = .open
                readMTUs(c)
                connected = true
                watchWritesLocked(&s, c, false)
                requestDiscoveryLocked(&s)
                return (nil, nil)
            }
            if events.contains(.writable), let failure = flushLocked(&s, c) { return failure }
            guard events.contains(.readable) || events.contains(.hangup) || events.contains(.error) else { return (c.link, nil) }
            // A bounded number of SDUs per wake-up (level-triggered: the rest comes next time).
            for _ in 0..<32 {
                let n = s.readBuffer.withUnsafeMutableBytes { recv(c.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n > 0 {
                    c.bytesIn += n
                    c.unitsReceived += 1
                    units.append(Array(s.readBuffer[0..<n]))
                    continue
                }
                // The channel ended: its socket is closed in this very wake-up (see closeLocked);
                // the units read before go to the link first, below.
                if n == 0 { return (closeLocked(&s, id, "the peer closed the channel"), "the peer closed the channel") }
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK { return (c.link, nil) }
                let reason = "receive failed: \(Socket.reason(code))"
                return (closeLocked(&s, id, reason), reason)
            }
            return (c.link, nil)
        }
        if connected {
            openLinks([id], initiator: true)
            return
        }
        if !units.isEmpty, let link {
            for unit in units where !link.receive(unit) {
                let reason = "the node refused a unit"
                let dropped = state.withLock { s in closeLocked(&s, id, reason) }
                dropped?.close(reason: reason)
                return
            }
        }
        if let closing {
            let link = state.withLock { s in closeLocked(&s, id, closing) } ?? link
            link?.close(reason: closing)
        }
    }

    // MARK: - Writing

    /// The link's `send`: one unit, one SDU. Straight to the kernel when nothing is queued;
    /// queued (and writability watched) when it has no room or credits.
    func linkSend(_ id: UInt64, _ unit: [UInt8]) {
        let dropped = state.withLock { s -> ((any TransportLink)?, String)? in
            guard let c = s.connections[id], c.phase == .open else { return nil }
            guard unit.count <= max(c.sendMTU, 1) else {
                let reason = "unit of \(unit.count) bytes exceeds the channel's MTU \(c.sendMTU)"
                return (closeLocked(&s, id, reason), reason)
            }
            if c.queue.isEmpty { c.lastWriteProgress = EventLoop.monotonicNanoseconds() }
            c.queue.append(unit)
            c.queuedBytes += unit.count
            return flushLocked(&s, c)
        }
        guard let (link, reason) = dropped, let link else { return }
        if let loop = state.withLock({ $0.loop }) {
            loop.post { link.close(reason: reason) }
        } else {
            link.close(reason: reason)
        }
    }

    /// Sends queued SDUs until the kernel says EAGAIN (all of them in one go when it takes
    /// them). Closes the channel when a send fails or the queue is over its cap.
    func flushLocked(_ s: inout BLEState, _ c: BLEConnection) -> ((any TransportLink)?, String)? {
        var sent = 0
        defer {
            if sent > 0 {
                c.queue.removeFirst(sent)
                c.lastWriteProgress = EventLoop.monotonicNanoseconds()
            }
        }
        while sent < c.queue.count {
            let unit = c.queue[sent]
            switch L2CAPSocket.send(c.fd, unit) {
            case .sent:
                sent += 1
                c.queuedBytes -= unit.count
                c.bytesOut += unit.count
            case .wouldBlock:
                if c.queuedBytes > options.maxWriteQueueBytes {
                    let reason = "the peer is not reading (\(c.queuedBytes) bytes queued)"
                    return (closeLocked(&s, c.id, reason), reason)
                }
                if !c.watchingWrites { watchWritesLocked(&s, c, true) }
                return nil
            case .failed(let code):
                let reason = "send failed: \(Socket.reason(code))"
                return (closeLocked(&s, c.id, reason), reason)
            }
        }
        if c.watchingWrites { watchWritesLocked(&s, c, false) }
        return nil
    }

    private func watchWritesLocked(_ s: inout BLEState, _ c: BLEConnection, _ writes: Bool) {
        guard let loop = s.loop else { return }
        loop.unregister(fd: c.fd)
        do {
            try loop.register(fd: c.fd, for: writes ? [.readable, .writable] : .readable, handler: handler(c.id))
            c.watchingWrites = writes
        } catch {
            c.watchingWrites = false
        }
    }

    // MARK: - Closing

    func linkClosedByNode(_ id: UInt64, _ reason: String) {
        state.withLock { s in _ = closeLocked(&s, id, "the node closed the link: \(reason)") }
    }

    /// Removes the channel, unregisters and closes its socket at once. Returns its link,
    /// which the caller closes outside the lock.
    ///
    /// At once matters on Linux 6.1 (Debian's 6.1.0, 6.1.192): there, an L2CAP socket that is
    /// still open when its LE link goes down (the peer or our adapter powered off, out of
    /// range) frees the link's HCI channel a second time when it is closed later —
    /// `l2cap_conn_free` calls `hci_chan_del` on the channel `hci_conn_cleanup` already freed
    /// (a use-after-free fixed upstream in 6.13, "Bluetooth: L2CAP: Fix corrupted list in
    /// hci_chan_del"); the kernel panics with "list_del corruption" when it notices. A close
    /// that lands before the kernel has finished the disconnection (it wakes the socket
    /// first) is safe, so a channel the kernel ended is closed in the same wake-up; keeping
    /// it open longer was seen to make the panic more likely, not less.
    func closeLocked(_ s: inout BLEState, _ id: UInt64, _ reason: String) -> (any TransportLink)? {
        guard let c = s.connections.removeValue(forKey: id) else { return nil }
        s.loop?.unregister(fd: c.fd)
        _ = Glibc.close(c.fd)
        s.closedCount += 1
        recordCloseLocked(&s, address: c.remote.text, direction: c.direction, reason: reason)
        // The peer is connected to again only once it is heard again: an LE connect to a
        // device that is not advertising (gone out of range, powered off) waits for the
        // whole timeout, and one started while it comes back was seen to hang until it.
        //
        // And not on the token it advertised while the channel was open, for a while: a
        // controller whose host powered it off can go on advertising (Linux 6.1 leaves
        // advertising instances on at power-off and BlueZ's virtual controllers are not
        // reset on close), and a connection made to that ghost is an LE link the peer's
        // host never learns of — after it powers on, its own connections meet that stale
        // link and no channel opens ("connects time out; the accepted channel never
        // reports connected"). A peer that really comes back advertises a fresh token
        // (PROTOCOL.md §9.1: drawn again whenever its adapter comes back on).
        if c.phase == .open, c.unitsReceived > 0, let peer = s.discovered.removeValue(forKey: c.remote) {
            let now = EventLoop.monotonicNanoseconds()
            if s.staleTokens.count >= options.maxDiscoveredPeers { s.staleTokens.removeAll() }
            s.staleTokens[c.remote] = (peer.token, now + BLETransport.nanoseconds(options.staleTokenHold))
            if s.lostPeers.count >= options.maxDiscoveredPeers { s.lostPeers.removeAll() }
            s.lostPeers[c.remote] = (peer, now)
        }
        if c.phase == .connecting {
            handOverLocked(&s, c.remote)
            requestDiscoveryLocked(&s)
        }
        return c.link
    }

    func recordCloseLocked(_ s: inout BLEState, address: String, direction: BLEConnection.Direction, reason: String) {
        if s.recentCloses.count >= 8 { s.recentCloses.removeFirst() }
        s.recentCloses.append(BLEClosed(address: address, direction: direction, reason: reason, atMs: Clock.milliseconds()))
    }
}
