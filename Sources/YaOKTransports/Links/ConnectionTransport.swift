import YaOKSupport
import YaOKSystem
import YaOKLoop
import YaOKWire
import YaOKNode

/// What the shared connection mechanism needs of a transport's locked state.
protocol ConnectionTableState {
    associatedtype Connection: SocketConnection
    var connections: [UInt64: Connection] { get set }
    var nextID: UInt64 { get set }
    var closedCount: Int { get set }
    var recentCloses: [ClosedConnection] { get set }
    /// Connections closed to make room for a new one.
    var evicted: Int { get set }
    var opener: (any LinkOpener)? { get }
    var loop: EventLoop? { get }
}

/// One connection table under every transport that turns sockets into links (LAN over TCP,
/// BLE over L2CAP): registering a descriptor, watching writability while bytes wait,
/// opening links, handing received units to them, asking them whether they have
/// authenticated, closing and remembering why. A transport keeps only its policy: slots,
/// deadlines, what a close means for reconnecting or rediscovery.
///
/// Every method named `…Locked` runs under the transport's lock; links are called only
/// outside it.
protocol ConnectionTransport: AnyObject, Sendable {
    associatedtype State: ConnectionTableState
    var state: Locked<State> { get }
    var name: String { get }
    /// The descriptor of connection `id` is ready.
    func connectionReady(_ id: UInt64, _ events: EventLoop.IOEvents)
    /// How the link of connection `id` takes its units (`LinkSender`).
    func linkSender(_ id: UInt64) -> LinkSender
    /// Removes the connection (`removeConnectionLocked`) and applies the transport's policy
    /// to its end; returns its link, for the caller to close outside the lock.
    func closeLocked(_ s: inout State, _ id: UInt64, _ reason: String) -> (any TransportLink)?
}

/// A connection closed under the lock: its link, to be told why outside it.
typealias ClosedLink = ((any TransportLink)?, String)

extension ConnectionTransport {
    // MARK: - The table

    func connectionHandler(_ id: UInt64) -> EventLoop.IOHandler {
        { [weak self] events in self?.connectionReady(id, events) }
    }

    /// The next connection's id.
    func nextConnectionIDLocked(_ s: inout State) -> UInt64 {
        defer { s.nextID += 1 }
        return s.nextID
    }

    /// Registers a new connection's descriptor on the loop (writability too while it
    /// connects) and adds it to the table. Closes its descriptor and returns false when
    /// that fails (no loop: the transport is stopping).
    func addConnectionLocked(_ s: inout State, _ c: State.Connection) -> Bool {
        guard let loop = s.loop else {
            Socket.close(c.fd)
            return false
        }
        c.watchingWrites = c.phase == .connecting
        do {
            try loop.register(fd: c.fd, for: c.watchingWrites ? [.readable, .writable] : .readable, handler: connectionHandler(c.id))
        } catch {
            Socket.close(c.fd)
            return false
        }
        s.connections[c.id] = c
        return true
    }

    /// Watches writability (or stops), keeping the registration (`EventLoop.modify`). When
    /// that fails the descriptor's interest is unknown and nothing may service it again, so
    /// the caller closes the connection: returns why.
    func watchWritesLocked(_ s: inout State, _ c: State.Connection, _ writes: Bool) -> String? {
        guard c.watchingWrites != writes else { return nil }
        guard let loop = s.loop else { return "the \(name) transport stopped" }
        do {
            try loop.modify(fd: c.fd, for: writes ? [.readable, .writable] : .readable)
            c.watchingWrites = writes
            return nil
        } catch {
            return "cannot watch the connection any more: \(error)"
        }
    }

    /// Takes the connection out of the table, unregisters and closes its descriptor at once,
    /// and records why. The transport's `closeLocked` calls it, then applies its policy.
    func removeConnectionLocked(_ s: inout State, _ id: UInt64, _ reason: String) -> State.Connection? {
        guard let c = s.connections.removeValue(forKey: id) else { return nil }
        s.loop?.unregister(fd: c.fd)
        Socket.close(c.fd)
        s.closedCount += 1
        recordCloseLocked(&s, address: c.closeAddress, direction: c.direction, reason: reason)
        return c
    }

    /// Closes every connection (`closeLocked`, the transport's policy included) as the
    /// transport stops; returns their links, for the caller to close outside the lock.
    func closeAllLocked(_ s: inout State, _ reason: String) -> [any TransportLink] {
        s.connections.keys.sorted().compactMap { closeLocked(&s, $0, reason) }
    }

    /// Remembers a close (or a connect that never started) for diagnostics: the last 8.
    func recordCloseLocked(_ s: inout State, address: String, direction: ConnectionDirection, reason: String) {
        if s.recentCloses.count >= 8 { s.recentCloses.removeFirst() }
        s.recentCloses.append(ClosedConnection(address: address, direction: direction, reason: reason, atMs: Clock.milliseconds()))
    }

    /// The connections as the slot policy sees them, oldest first.
    func occupantsLocked<Address: Hashable>(_ s: State, address: (State.Connection) -> Address) -> [SlotPolicy.Occupant<Address>] {
        s.connections.values.sorted { $0.id < $1.id }.map { c in
            SlotPolicy.Occupant(id: c.id, address: address(c), inbound: c.direction == .inbound,
                                open: c.phase == .open, authenticated: c.authenticated, contact: c.contact)
        }
    }

    /// Finds a slot for a new connection with `address` under `policy` (`SlotPolicy`),
    /// closing the connections it evicts (a `noun` — "connection", "channel" — names the
    /// newcomer in their reasons); their links go to `evicted`, for the caller to tell
    /// outside the lock. False, evicting nothing, when no room can be made.
    func makeRoomLocked<Address: Hashable>(_ s: inout State, _ policy: SlotPolicy, for address: Address, inbound: Bool,
                                           noun: String, addressOf: (State.Connection) -> Address,
                                           evicting evicted: inout [ClosedLink]) -> Bool {
        guard let victims = policy.makeRoom(among: occupantsLocked(s, address: addressOf), for: address, inbound: inbound) else {
            return false
        }
        for (id, why) in victims {
            let reason = why == .unfinished ? "evicted: its handshake had not finished and a new \(noun) needed the slot"
                : "evicted: its peer is not a contact and a new \(noun) needed the slot"
            evicted.append((closeLocked(&s, id, reason), reason))
            s.evicted += 1
        }
        return true
    }

    // MARK: - Links

    /// Opens a link over each connection (outside the lock: the node may send at once), with
    /// the MTU `mtu` grants it; one it refuses (why, as a string) is closed instead.
    func openLinks(_ ids: [UInt64], as role: LinkRole, stream: Bool, mtu: (State.Connection) -> Result<Int, ConnectionRefusal>) {
        guard !ids.isEmpty, let opener = state.withLock({ $0.opener }) else { return }
        for id in ids {
            guard let granted = state.withLock({ s in s.connections[id].map(mtu) }) else { continue }
            let size: Int
            switch granted {
            case .success(let value):
                size = value
            case .failure(let refusal):
                let link = state.withLock { s in closeLocked(&s, id, refusal.reason) }
                link?.close(reason: refusal.reason)
                continue
            }
            let state = state
            opener.openLink(
                transport: name, as: role, mtu: size, stream: stream,
                send: linkSender(id),
                closed: { [weak self] reason in self?.linkClosedByNode(id, reason) },
                attach: { link in state.withLock { s in s.connections[id].map { $0.link = link } != nil } },
                failed: { error in state.withLock { s in _ = self.closeLocked(&s, id, "cannot open a link: \(error)") } })
        }
    }

    /// The node ended the link (handshake timeout, protocol violation, node closing).
    func linkClosedByNode(_ id: UInt64, _ reason: String) {
        state.withLock { s in _ = closeLocked(&s, id, "the node closed the link: \(reason)") }
    }

    /// Hands units read from connection `id` to its link, in order. The first one the link
    /// refuses closes the connection, whatever the transport: the node refuses a unit only
    /// when the link is closed or was flooded (and the node is closing it), and feeding it
    /// the units after a dropped one — at this read or the next — would hand it a stream
    /// with a hole in it. Closing frees the slot at once and tells the peer, whose packets
    /// in flight count as failed attempts and go again over a new connection. Returns false
    /// when it closed the connection.
    @discardableResult
    func deliver(_ units: [[UInt8]], from id: UInt64, to link: any TransportLink) -> Bool {
        for unit in units where !link.receive(unit) {
            let reason = "the node refused a unit"
            let dropped = state.withLock { s in closeLocked(&s, id, reason) }
            (dropped ?? link).close(reason: reason)
            return false
        }
        return true
    }

    /// Tells a link its connection is gone after the current work item (the caller is inside
    /// the link: not re-entrantly), or at once when the loop has stopped and runs nothing more.
    func closeLater(_ link: any TransportLink, reason: String) {
        if state.withLock({ $0.loop })?.post({ link.close(reason: reason) }) != true {
            link.close(reason: reason)
        }
    }

    // MARK: - Authentication

    /// The links of open connections not yet known to be authenticated, or whose peer is not
    /// known to be a contact: to ask outside the lock (a link may take the node's lock).
    func linksToAskLocked(_ s: State) -> [(UInt64, any TransportLink)] {
        s.connections.values.compactMap { c -> (UInt64, any TransportLink)? in
            guard !c.authenticated || c.contact != true, c.phase == .open, let link = c.link else { return nil }
            return (c.id, link)
        }
    }

    /// Notes the links' answers (`SlotPolicy.authenticated`, asked outside the lock) on their
    /// connections, where the link is still theirs; returns those connections, for the
    /// transport's policy (strangers' backoff, contacts' endpoints).
    func noteAnswersLocked(_ s: inout State, _ answers: [(UInt64, any TransportLink, Bool?)], now: UInt64) -> [State.Connection] {
        answers.compactMap { id, link, contact in
            guard let c = s.connections[id], c.link === link else { return nil }
            if !c.authenticated {
                c.authenticated = true
                c.authenticatedAt = now
            }
            c.contact = contact
            return c
        }
    }
}

/// Why a transport will not open a link over a connection (its MTU is too small).
struct ConnectionRefusal: Error {
    let reason: String
}
