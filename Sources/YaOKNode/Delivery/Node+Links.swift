import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Links as transports see them: opening, receiving, closing (docs/PROTOCOL.md §5). The
/// work is the engine's (DeliveryEngine+Links.swift).
extension Node {
    /// A handshake that has not finished after this long closes the link.
    public static let handshakeTimeoutMs: Int64 = 10_000
    /// The longest lifetime accepted from a peer: anything longer is clamped in duplicate
    /// records and refused outright above this (a junk packet cannot pin storage for weeks).
    public static let maxAcceptedLifetimeMinutes: UInt16 = 14 * 24 * 60
    /// Bad packets a link may send (dropped one by one) before it is closed.
    static let maxBadUnitsPerLink = 64

    /// The node's event loop, where transports register their sockets.
    public var eventLoop: EventLoop { loop }

    /// Opens a link over a connection a transport made or accepted. `send` transmits one
    /// unit (≤ `mtu` bytes); it is called on the event thread and must not block (queue the
    /// bytes). `closed` is called on the event thread when the node ends the link (handshake
    /// timeout, protocol violation, node closing), so the transport can drop the connection.
    /// Needs the link key, which the first unlock after opening the node loads: before that,
    /// `locked`.
    ///
    /// `stream`: the connection is a byte stream that carries any packet whole (TCP, §4.6), so
    /// the peer never needs to fragment: a fragment arriving on it closes the link at once
    /// (§4.7) and the link keeps no reassembly buffer. Links over small-MTU radios (BLE, an
    /// app's own) leave it false.
    public func openLink(transport: String, role: Link.Role, mtu: Int, stream: Bool = false,
                         send: @escaping @Sendable ([UInt8]) -> Void,
                         closed: @escaping @Sendable (String) -> Void = { _ in }) throws -> Link {
        try openLink(transport: transport, role: role, mtu: mtu, stream: stream, sender: .eventThread(send), closed: closed)
    }

    /// `openLink` for a transport of this package, which says how it takes its units
    /// (`LinkSender`: LAN's from any thread, in one write per flush).
    package func openLink(transport: String, role: Link.Role, mtu: Int, stream: Bool, sender: LinkSender,
                          closed: @escaping @Sendable (String) -> Void) throws -> Link {
        guard mtu >= Fragmenter.minimumMTU, mtu <= 1 << 20 else {
            throw YaOKError(.invalidArgument, "MTU must be \(Fragmenter.minimumMTU) to \(1 << 20) bytes")
        }
        guard !transport.isEmpty, transport.utf8.count <= 32 else {
            throw YaOKError(.invalidArgument, "A transport name is 1 to 32 bytes")
        }
        return try withEngine { engine, _, _ in
            try engine.openLink(transport: transport, role: role, mtu: mtu, stream: stream, node: self, sender: sender, closed: closed)
        }
    }

    /// Closes a link: from the transport (`Link.close`) or from the node (then the
    /// transport's `closed` callback runs). In-flight packets count as failed attempts.
    func closeLink(_ link: Link, reason: String, notifyTransport: Bool) {
        let removed = (try? withEngine { engine, store, keys in try engine.closeLink(link, reason: reason, store, keys) }) ?? false
        if removed, notifyTransport { link.closedByNode(reason) }
    }

    /// What one link may have waiting for the event thread (bytes, and units: a flood of
    /// tiny frames costs more than its bytes), and all links together. A small-MTU link
    /// legitimately queues a thousand fragments for one large message.
    static let maxQueuedBytesPerLink = 1 << 20
    static let maxQueuedUnitsPerLink = 16_384
    static let maxQueuedBytesTotal = 32 << 20

    /// Queues a received unit and makes sure a drain runs on the event thread. Returns false
    /// when the unit was refused: the link is closed, or it overran its share of the queue
    /// (it is then closed: a peer that floods one link cannot starve the others).
    @discardableResult
    func linkReceived(_ link: Link, _ unit: [UInt8]) -> Bool {
        switch queueInbound(unit, from: link.id) {
        case nil:
            return false
        case (false, _)?:
            loop.post { [weak self, link] in
                self?.closeLink(link, reason: "The link sent faster than it could be processed", notifyTransport: true)
            }
            return false
        case (true, _)?:
            return true
        }
    }

    /// Queues a unit or carrier packet for the engine (`DeliveryEngine.queueInbound`) and
    /// posts a drain if none is pending.
    func queueInbound(_ unit: [UInt8], from id: UInt64) -> (accepted: Bool, postDrain: Bool)? {
        let outcome = state.withLock { s -> (accepted: Bool, postDrain: Bool)? in
            guard s.store != nil else { return nil }
            return s.delivery.queueInbound(unit, from: id)
        }
        if let outcome, outcome.postDrain { loop.post { [weak self] in self?.drainInbound() } }
        return outcome
    }

    /// Processes every queued unit in one transaction, synced with the node's lock released
    /// (`withEngineSyncedAfter`). A batch that failed (disk full, a storage error, its sync)
    /// let nothing out: no receipt went out, so the senders try again.
    func drainInbound() {
        _ = try? withEngineSyncedAfter(section: .drain) { engine, store, keys in try engine.drainInbound(store, keys) }
    }
}
